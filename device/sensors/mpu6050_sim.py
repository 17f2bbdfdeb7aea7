"""The MPU-6050 family's simulated twin: its register file, reset, sleep, ranges and data registers.

    from device.sensors.mpu6050_sim import SimMPU6050
    chip = bus.attach(0x68, SimMPU6050())
    chip.truth = lambda: ((0.0, 0.0, 0.1), (0.0, 0.0, 9.81), 25.0)  # gyro_rad_s, accel_m_s2, temp_c
    MPU6050(bus).init().read()        # the driver sees what the chip would say

The data registers are refreshed from truth() when a burst read starts at or inside them, and are
quantised, scaled by the configured ranges and saturated at int16, as on the chip. Asleep (the
reset state), the chip returns zeros. After DEVICE_RESET, and after power_on(t) (a chip back from
a power cut), it does not acknowledge its address for RESET_S on the bus clock (the register map
gives no time; InvenSense's driver waits 100 ms, the start-up time for register access); a chip
made here has been powered long before.

FIFO (register map 4.6, 4.37-4.39): with USER_CTRL.FIFO_EN and FIFO_EN's accel and gyro bits set,
push_samples() (the simulated body, at sample_rate_hz()) appends 12-byte records (accel x,y,z then
gyro x,y,z, register order); FIFO_COUNT reads the byte count, bursts from FIFO_R_W pop bytes; at
1024 bytes the oldest bytes are dropped and INT_STATUS.FIFO_OFLOW_INT is set.

Chip errors (for calibration tests; none by default): errors={"gyro_bias_rad_s": (3,),
"accel_bias_m_s2": (3,), "accel_scale": (3,)} make the chip report gyro + bias and
scale * accel + bias (per axis) for whatever truth() and push_samples() give.
"""

import struct

from device.hal.i2c_sim import RegisterDevice
from device.sensors.mpu6050 import ACCEL_RANGES_G, GYRO_RANGES_DPS, STANDARD_G, DEG

_RESET = {0x6B: 0x40}   # PWR_MGMT_1 resets to SLEEP
RESET_S = 0.100


def _i16(x):
    x = int(round(x))
    return -32768 if x < -32768 else (32767 if x > 32767 else x)


class SimMPU6050(RegisterDevice):
    """who_am_i 0x68 (MPU-6050), 0x71 (MPU-9250), ... ; truth() -> (gyro_rad_s, accel_m_s2, temp_c)."""

    def __init__(self, who_am_i=0x68, truth=None, errors=None):
        self.who_am_i = who_am_i
        RegisterDevice.__init__(self)
        self.truth = truth
        self.errors = errors
        self.resets = 0
        self.fifo = bytearray()
        self.ready_at_s = -1.0                  # powered long before: ready
        self._reset()

    def power_on(self, now_s):
        """Power (back) on at bus time now_s: reset values, no answer for RESET_S."""
        self._reset()
        self.ready_at_s = now_s + RESET_S

    def acks(self, now_s):
        self.now_s = now_s
        return now_s >= self.ready_at_s

    def _reset(self):
        self.fifo = bytearray()
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
                self.power_on(self.now_s)       # DEVICE_RESET clears itself and the registers
                continue
            if r == 0x6A and data[i] & 0x04:
                self.fifo = bytearray()         # FIFO_RESET (self-clearing)
                self.regs[r] = data[i] & ~0x04
                continue
            self.regs[r] = data[i]

    # -- FIFO ------------------------------------------------------------------------------
    @property
    def fifo_enabled(self):
        return bool(self.regs[0x6A] & 0x40) and (self.regs[0x23] & 0x78) == 0x78 and not self.asleep

    def sample_rate_hz(self):
        """Gyro output rate (8 kHz without the DLPF, 1 kHz with) / (1 + SMPLRT_DIV)."""
        dlpf = self.regs[0x1A] & 7
        return (1000.0 if 0 < dlpf < 7 else 8000.0) / (1 + self.regs[0x19])

    def push_samples(self, samples):
        """Append (gyro_rad_s, accel_m_s2) samples to the FIFO (when it is enabled)."""
        if not self.fifo_enabled:
            return
        for gyro, accel in samples:
            self.fifo += struct.pack(">6h", *self._words(gyro, accel))
        if len(self.fifo) > 1024:
            del self.fifo[:len(self.fifo) - 1024]
            self.regs[0x3A] |= 0x10             # FIFO_OFLOW_INT

    def read(self, reg, n):
        if reg == 0x74:                         # FIFO_R_W: no auto-increment, pops bytes
            self.reads += 1
            out = bytes(self.fifo[:n]) + bytes(max(0, n - len(self.fifo)))
            del self.fifo[:n]
            return out
        if reg <= 0x3A < reg + n:
            v = RegisterDevice.read(self, reg, n)
            self.regs[0x3A] &= ~0x10            # INT_STATUS clears on read
            return v
        return RegisterDevice.read(self, reg, n)

    def _err(self, gyro, accel):
        """(gyro, accel) as this chip reports them: its bias and scale errors applied."""
        e = self.errors
        if not e:
            return gyro, accel
        gb = e.get("gyro_bias_rad_s", (0.0, 0.0, 0.0))
        ab = e.get("accel_bias_m_s2", (0.0, 0.0, 0.0))
        sc = e.get("accel_scale", (1.0, 1.0, 1.0))
        return ([gyro[i] + gb[i] for i in range(3)],
                [accel[i] * sc[i] + ab[i] for i in range(3)])

    def _words(self, gyro, accel):
        gyro, accel = self._err(gyro, accel)
        afs = (self.regs[0x1C] >> 3) & 3
        fs = (self.regs[0x1B] >> 3) & 3
        lsb_g = 16384.0 / (ACCEL_RANGES_G[afs] // 2)
        lsb_dps = 131.0 * 250.0 / GYRO_RANGES_DPS[fs]
        return [_i16(a / STANDARD_G * lsb_g) for a in accel] + [_i16(w / DEG * lsb_dps) for w in gyro]

    def on_read(self, reg, n):
        if reg <= 0x73 and reg + n > 0x72:
            c = len(self.fifo)
            self.regs[0x72], self.regs[0x73] = c >> 8, c & 0xFF
        if reg + n > 0x3B and reg <= 0x48:
            self._refresh()

    def _refresh(self):
        if self.asleep or self.truth is None:
            self.regs[0x3B:0x49] = bytes(14)
            return
        gyro, accel, temp_c = self.truth()
        gyro, accel = self._err(gyro, accel)
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
