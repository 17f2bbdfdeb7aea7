"""The AK8963's simulated twin, and the MPU-9250 twin that exposes it through its bypass.

    from device.sensors.ak8963_sim import SimMPU9250
    chip = bus.attach(0x68, SimMPU9250())
    chip.truth = lambda: (gyro_rad_s, accel_m_s2, temp_c)
    chip.mag_truth = lambda: (20.0, 0.0, -40.0)      # uT in the MPU's axes
    # with INT_PIN_CFG.BYPASS_EN set, the AK8963 answers at 0x0C on the same bus

Fuse ROM values ASA are per-chip (given, default 0x80 0x80 0x80 = no adjustment); the data
registers hold the field divided by the adjustment, in the AK8963's own axes, 0.15 uT/LSB.

Hard and soft iron (for calibration tests; none by default): hard_iron_ut (3,) and soft_iron
(3x3 rows) make the chip measure soft_iron @ field + hard_iron_ut (MPU axes) for the field
truth() gives; SimMPU9250 passes them on, and its errors= to the MPU part.
"""

import struct

from device.hal.i2c_sim import RegisterDevice
from device.sensors.mpu6050_sim import SimMPU6050, _i16


class SimAK8963(RegisterDevice):
    def __init__(self, asa=(0x80, 0x80, 0x80), truth=None, hard_iron_ut=None, soft_iron=None):
        RegisterDevice.__init__(self, {0x00: 0x48})
        self.asa = asa
        self.truth = truth
        self.hard_iron_ut = hard_iron_ut
        self.soft_iron = soft_iron

    def on_write(self, reg, data):
        for i in range(len(data)):
            r = (reg + i) & 0xFF
            if r == 0x0A:
                self.regs[r] = data[i]
                if data[i] & 0x0F == 0x0F:
                    self.regs[0x10:0x13] = bytes(self.asa)
            elif r == 0x0B and data[i] & 1:
                self.regs[:] = bytes(256)
                self.regs[0] = 0x48

    def on_read(self, reg, n):
        if reg <= 0x02 < reg + n or reg <= 0x03 < reg + n:
            mode = self.regs[0x0A] & 0x0F
            if mode in (0x01, 0x02, 0x06) and self.truth is not None:
                mx, my, mz = self.truth()                  # MPU axes -> AK8963 axes
                if self.soft_iron is not None:
                    S = self.soft_iron
                    mx, my, mz = (S[0][0] * mx + S[0][1] * my + S[0][2] * mz,
                                  S[1][0] * mx + S[1][1] * my + S[1][2] * mz,
                                  S[2][0] * mx + S[2][1] * my + S[2][2] * mz)
                if self.hard_iron_ut is not None:
                    o = self.hard_iron_ut
                    mx, my, mz = mx + o[0], my + o[1], mz + o[2]
                h = (my, mx, -mz)
                adj = [(a - 128) / 256.0 + 1.0 for a in self.asa]
                words = [_i16(h[k] / 0.15 / adj[k]) for k in range(3)]
                struct.pack_into("<3h", self.regs, 0x03, *words)
                self.regs[0x02] = 0x01                     # DRDY
                self.regs[0x09] = 0x10 if self.regs[0x0A] & 0x10 else 0x00
            else:
                self.regs[0x02] = 0x00


class SimMPU9250(SimMPU6050):
    def __init__(self, truth=None, mag_truth=None, asa=(0x80, 0x80, 0x80), errors=None,
                 hard_iron_ut=None, soft_iron=None):
        SimMPU6050.__init__(self, who_am_i=0x71, truth=truth, errors=errors)
        self.ak = SimAK8963(asa, mag_truth, hard_iron_ut, soft_iron)

    @property
    def mag_truth(self):
        return self.ak.truth

    @mag_truth.setter
    def mag_truth(self, fn):
        self.ak.truth = fn

    def route(self, addr):
        """The AK8963 answers at 0x0C while INT_PIN_CFG.BYPASS_EN is set."""
        if addr == 0x0C and self.regs[0x37] & 0x02:
            return self.ak
        return None
