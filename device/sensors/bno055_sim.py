"""The BNO055's simulated twin: CHIP_ID, reset, operating modes, UNIT_SEL and data registers.

    from device.sensors.bno055_sim import SimBNO055
    chip = bus.attach(0x28, SimBNO055())
    chip.truth = lambda: {"gyro_rad_s": (0, 0, 0), "accel_m_s2": (0, 0, 9.81),
                          "mag_ut": (20, 0, -40), "quat_wxyz": (1, 0, 0, 0), "temp_c": 24}
    BNO055(bus).init().read_quaternion()

In CONFIG mode the data registers read zero; raw modes fill acc/mag/gyr; fusion modes also fill
the quaternion, Euler angles, linear acceleration and gravity. UNIT_SEL's accel (mg), gyro (rps)
and Euler (rad) bits are honoured. CALIB_STAT (0x35) reads calib_stat (default 0xFF: system,
gyro, accel and mag all at level 3), also after a reset.

Calibration profile (0x55..0x6A, 22 bytes, datasheet 3.6.4 / 3.10), kept simple:
* read in CONFIG mode it is the profile the chip holds: the one written since the last reset,
  else `offsets` (what the chip's own calibration found, default DEFAULT_OFFSETS) when calib_stat
  reports gyro, accel and mag at level 3, else zeros (nothing found yet); outside CONFIG mode the
  registers read zero (not valid there);
* written in CONFIG mode it replaces the profile, and each part written (accel: offsets or
  radius, mag: offsets or radius, gyro: offsets) reports level 3 in CALIB_STAT while the chip is
  in a fusion mode; system reads 3 once all three were written. Writes outside CONFIG mode are
  ignored, as on the chip; a reset (RST_SYS) forgets the profile and the restored levels.
"""

import math
import struct

from device.hal.i2c_sim import RegisterDevice
from device.sensors.bno055 import FUSION_MODES, PROFILE_LEN

_DEFAULTS = {0x00: 0xA0, 0x01: 0xFB, 0x02: 0x32, 0x03: 0x0F, 0x3B: 0x80, 0x3D: 0x00,
             0x35: 0xFF, 0x39: 0x05}
_PROF = 0x55            # ACC_OFFSET_X_LSB .. MAG_RADIUS_MSB 0x6A
_PROF_END = _PROF + PROFILE_LEN
# accel offset x/y/z (mg), mag offset x/y/z (1/16 uT), gyro offset x/y/z (1/16 dps), radii
DEFAULT_OFFSETS = struct.pack("<11h", -14, 27, -9, -182, 311, 64, -2, 1, 0, 1000, 742)


def _part(i):
    """The CALIB_STAT bits of the part profile byte i belongs to (gyro 0x30, accel 0x0C, mag 0x03)."""
    if i < 6 or 18 <= i < 20:
        return 0x0C
    if i < 12 or i >= 20:
        return 0x03
    return 0x30


def _i16(x):
    x = int(round(x))
    return -32768 if x < -32768 else (32767 if x > 32767 else x)


def _rotate_t(q, v):
    """R(q)^T v: a world vector in the sensor frame."""
    w, x, y, z = q
    r = ((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
         (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
         (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)))
    return tuple(r[0][i] * v[0] + r[1][i] * v[1] + r[2][i] * v[2] for i in range(3))


# Clock stretching: "The BNO055 I2C interface uses clock stretching" (datasheet BST-BNO055-DS000
# rev 1.4, 4.6); the data sheet gives no duration. Measured: about 180 us of SCL held low after
# each byte of a multi-byte read (Bosch Sensortec community forum, "BNO055 / Minimum I2C
# communication interval", STM32L4 at 400 kHz, NDOF_FMC_OFF: 8 quaternion bytes in > 2 ms),
# and about 500 accel-only reads a second on a Raspberry Pi whatever the code (el-hult.github.io,
# 2023-02-23 "How fast can you read the BNO055?"): the twin charges 180 us per byte read.
STRETCH_PER_READ_BYTE_S = 180e-6


class SimBNO055(RegisterDevice):
    """truth() -> dict with gyro_rad_s, accel_m_s2 (specific force), mag_ut, quat_wxyz, temp_c."""

    stretch_per_read_byte_s = STRETCH_PER_READ_BYTE_S

    def __init__(self, truth=None, calib_stat=0xFF, offsets=None):
        RegisterDevice.__init__(self)
        self.truth = truth
        self.calib_stat = calib_stat
        self.offsets = bytes(DEFAULT_OFFSETS if offsets is None else offsets)
        if len(self.offsets) != PROFILE_LEN:
            raise ValueError("offsets: %d bytes" % PROFILE_LEN)
        self.resets = 0
        self._reset()

    def _reset(self):
        self.regs[:] = bytes(256)
        for r, v in _DEFAULTS.items():
            self.regs[r] = v
        self.regs[0x35] = self.calib_stat & 0xFF
        self._profile = None            # written since the reset (bytearray), else None
        self.restored = 0               # CALIB_STAT bits of the parts written since the reset

    def profile(self):
        """The 22 profile bytes the chip holds now."""
        if self._profile is not None:
            return bytes(self._profile)
        return self.offsets if (self.calib_stat & 0x3F) == 0x3F else bytes(PROFILE_LEN)

    @property
    def mode(self):
        return self.regs[0x3D] & 0x0F

    def on_write(self, reg, data):
        for i in range(len(data)):
            r = (reg + i) & 0xFF
            if r <= 0x03 or 0x08 <= r <= 0x39:
                continue                          # ids and outputs are read-only
            if r == 0x3F and data[i] & 0x20:
                self.resets += 1
                self._reset()
                continue
            if _PROF <= r < _PROF_END:
                if self.mode == 0:              # CONFIG_MODE only; ignored otherwise
                    if self._profile is None:
                        self._profile = bytearray(self.profile())
                    self._profile[r - _PROF] = data[i]
                    self.restored |= _part(r - _PROF)
                continue
            self.regs[r] = data[i]

    def on_read(self, reg, n):
        if reg + n > 0x08 and reg <= 0x34:
            self._refresh()
        if reg <= 0x35 < reg + n and self.restored:
            c = self.calib_stat & 0xFF
            if self.mode in FUSION_MODES:
                c |= self.restored | (0xC0 if self.restored == 0x3F else 0)
            self.regs[0x35] = c
        if reg < _PROF_END and reg + n > _PROF:
            self.regs[_PROF:_PROF_END] = self.profile() if self.mode == 0 else bytes(PROFILE_LEN)

    def _refresh(self):
        mode = self.mode
        if mode == 0 or self.truth is None:
            self.regs[0x08:0x35] = bytes(0x2D)
            return
        t = self.truth()
        units = self.regs[0x3B]
        ka = (1000.0 / 9.80665) if units & 1 else 100.0          # mg or 1/100 m/s^2
        kg = 900.0 if units & 2 else 16.0 * 180.0 / math.pi      # rps or 1/16 dps
        ke = 900.0 if units & 4 else 16.0 * 180.0 / math.pi      # rad or 1/16 deg
        acc = [_i16(a * ka) for a in t["accel_m_s2"]]
        mag = [_i16(m * 16.0) for m in t.get("mag_ut", (0.0, 0.0, 0.0))]
        gyr = [_i16(g * kg) for g in t["gyro_rad_s"]]
        struct.pack_into("<9h", self.regs, 0x08, *(acc + mag + gyr))
        if mode in FUSION_MODES:
            q = t["quat_wxyz"]
            w, x, y, z = q
            # Euler heading, roll, pitch (datasheet 3.6.5.4 order)
            heading = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
            roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
            pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
            grav = _rotate_t(q, (0.0, 0.0, 9.80665))
            lia = [t["accel_m_s2"][i] - grav[i] for i in range(3)]
            struct.pack_into("<3h", self.regs, 0x1A, _i16(heading * ke), _i16(roll * ke), _i16(pitch * ke))
            struct.pack_into("<4h", self.regs, 0x20, *[_i16(c * 16384.0) for c in q])
            struct.pack_into("<3h", self.regs, 0x28, *[_i16(a * ka) for a in lia])
            struct.pack_into("<3h", self.regs, 0x2E, *[_i16(g * ka) for g in grav])
        else:
            self.regs[0x1A:0x34] = bytes(0x1A)
        self.regs[0x34] = int(t.get("temp_c", 25)) & 0xFF
