"""The MPU-6050 family's simulated twin: its register file, reset, sleep, ranges and data registers.

    from device.sensors.mpu6050_sim import SimMPU6050
    chip = bus.attach(0x68, SimMPU6050())
    chip.truth = lambda: ((0.0, 0.0, 0.1), (0.0, 0.0, 9.81), 25.0)  # gyro_rad_s, accel_m_s2, temp_c
    MPU6050(bus).init().read()        # the driver sees what the chip would say

The data registers are refreshed from truth() when a burst read starts at or inside them, and are
quantised, scaled by the configured ranges and saturated at int16, as on the chip. Asleep (the
reset state), the chip returns zeros.
"""

import struct

from device.hal.i2c_sim import RegisterDevice
from device.sensors.mpu6050 import ACCEL_RANGES_G, GYRO_RANGES_DPS, STANDARD_G, DEG

_RESET = {0x6B: 0x40}   # PWR_MGMT_1 resets to SLEEP


def _i16(x):
    x = int(round(x))
    return -32768 if x < -32768 else (32767 if x > 32767 else x)


class SimMPU6050(RegisterDevice):
    """who_am_i 0x68 (MPU-6050), 0x71 (MPU-9250), ... ; truth() -> (gyro_rad_s, accel_m_s2, temp_c)."""

    def __init__(self, who_am_i=0x68, truth=None):
        self.who_am_i = who_am_i
        RegisterDevice.__init__(self)
        self.truth = truth
        self.resets = 0
        self._reset()

    def _reset(self):
        self.regs[:] = bytes(256)
        for r, v in _RESET.items():
            self.regs[r] = v
        self.regs[0x75] = self.who_am_i

    @property
    def asleep(self):
        return bool(self.regs[0x6B] & 0x40)

    def on_write(self, reg, data):
        for i in range(len(data)):
            r = (reg + i) & 0xFF
            if r == 0x75:
                continue                        # read-only
            if r == 0x6B and data[i] & 0x80:
                self.resets += 1
                self._reset()                   # DEVICE_RESET clears itself and the registers
                continue
            self.regs[r] = data[i]

    def on_read(self, reg, n):
        if reg + n > 0x3B and reg <= 0x48:
            self._refresh()

    def _refresh(self):
        if self.asleep or self.truth is None:
            self.regs[0x3B:0x49] = bytes(14)
            return
        gyro, accel, temp_c = self.truth()
        afs = (self.regs[0x1C] >> 3) & 3
        fs = (self.regs[0x1B] >> 3) & 3
        lsb_g = 16384.0 / (ACCEL_RANGES_G[afs] // 2)
        lsb_dps = 131.0 * 250.0 / GYRO_RANGES_DPS[fs]
        if self.who_am_i == 0x68:
            t = (temp_c - 36.53) * 340.0
        else:
            t = (temp_c - 21.0) * 333.87
        words = [_i16(a / STANDARD_G * lsb_g) for a in accel] + [_i16(t)] + \
                [_i16(w / DEG * lsb_dps) for w in gyro]
        struct.pack_into(">7h", self.regs, 0x3B, *words)
