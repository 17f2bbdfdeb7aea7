"""The BNO055's simulated twin: CHIP_ID, reset and boot, operating modes, UNIT_SEL, data registers
and its calibration status, all on the bus's clock (device/hal/i2c_sim.py now_s).

    from device.sensors.bno055_sim import SimBNO055
    chip = bus.attach(0x28, SimBNO055())
    chip.truth = lambda: {"gyro_rad_s": (0, 0, 0), "accel_m_s2": (0, 0, 9.81),
                          "mag_ut": (20, 0, -40), "quat_wxyz": (1, 0, 0, 0), "temp_c": 24}
    BNO055(bus).init().read_quaternion()     # the driver waits the reset's 650 ms on the bus clock
    chip.power_on(bus.now_s())               # power back after a cut: it boots for 650 ms

Times (datasheet BST-BNO055-DS000): after a reset (RST_SYS) or power-up the chip does not
acknowledge its address for 650 ms (table 0-2, "POR time from reset to config mode"; it NACKs
while booting); a write to OPR_MODE takes effect 7 ms later into CONFIG, 19 ms later out of it
(3.3, table 3-6), and until then the chip stays in its old mode: data registers read zero while
it is still in CONFIG, profile writes are ignored while it has not reached CONFIG. A chip made
here has been powered long before (booted); power_on(t) starts a boot at bus time t.

In CONFIG mode the data registers read zero; raw modes fill acc/mag/gyr; fusion modes also fill
the quaternion, Euler angles, linear acceleration and gravity. UNIT_SEL's accel (mg), gyro (rps)
and Euler (rad) bits are honoured.

CALIB_STAT (0x35; 3.10, 4.3.54; Bosch's calibration application note) is 0 at power-up and after
every reset, and rises in a fusion mode with what the chip sees (its truth, on the bus clock):
* gyro: held still (|gyro| < STILL_RAD_S, |accel| within STILL_ACCEL_M_S2 of g, gravity's
  direction steady within 10 deg): level 3 after GYRO_STILL_S, 1 and 2 on the way;
* accel: static poses, each held still POSE_S, counted when gravity's direction is 45 deg or more
  from every pose before: level = poses // 2 (six poses: 3);
* mag: the field's direction turning through the octants while the chip turns (|gyro| >
  TURN_RAD_S; a figure 8): level = (octants - 2) // 2 (all eight: 3); never from holding still;
* system: the magnetometer's level in the modes that use it (COMPASS, M4G, NDOF*), else the
  lower of gyro and accel; levels do not fall until a reset.
A part whose profile was restored (written in CONFIG mode since the reset, 3.11.4) is used at
once, and its level still starts at 0: it re-validates quickly (gyro still RESTORED_STILL_S, one
pose held RESTORED_STILL_S, the field through two octants while turning). `calib_stat` (default
0xFF) is the best each level reaches where the chip is (0xFD: a magnetometer near steel stays at 1).

Calibration profile (0x55..0x6A, 22 bytes, datasheet 3.6.4 / 3.10), kept simple:
* read in CONFIG mode it is the profile the chip holds: the one written since the last reset,
  else `offsets` (what the chip's own calibration found, default DEFAULT_OFFSETS) once gyro,
  accel and mag have reached level 3, else zeros (nothing found yet); outside CONFIG mode the
  registers read zero (not valid there);
* written in CONFIG mode it replaces the profile; writes outside CONFIG mode are ignored, as on
  the chip; a reset (RST_SYS) or a power cut forgets the profile and the levels.
"""

import math
import struct

from device.hal.i2c_sim import RegisterDevice
from device.sensors.bno055 import FUSION_MODES, PROFILE_LEN

_DEFAULTS = {0x00: 0xA0, 0x01: 0xFB, 0x02: 0x32, 0x03: 0x0F, 0x3B: 0x80, 0x3D: 0x00,
             0x39: 0x05}
_PROF = 0x55            # ACC_OFFSET_X_LSB .. MAG_RADIUS_MSB 0x6A
_PROF_END = _PROF + PROFILE_LEN
# accel offset x/y/z (mg), mag offset x/y/z (1/16 uT), gyro offset x/y/z (1/16 dps), radii
DEFAULT_OFFSETS = struct.pack("<11h", -14, 27, -9, -182, 311, 64, -2, 1, 0, 1000, 742)


BOOT_S = 0.650          # reset / power-up to CONFIG_MODE: no acknowledge meanwhile (table 0-2)
TO_CONFIG_S = 0.007     # any mode -> CONFIG_MODE (table 3-6)
FROM_CONFIG_S = 0.019   # CONFIG_MODE -> any mode
# the calibration model (the data sheet gives the motions, not their thresholds: these are ours)
STILL_RAD_S = 0.05      # 3 deg/s: held still (a gyro's bias is up to 1-2 deg/s)
STILL_ACCEL_M_S2 = 0.5
TURN_RAD_S = 0.3        # 17 deg/s: turning (the magnetometer calibrates)
GYRO_STILL_S = 1.5      # "keep the device still for a few seconds"
POSE_S = 1.0            # a static pose held this long counts
POSE_COS = 0.7071       # ... if gravity is 45 deg or more from every counted pose
STILL_COS = 0.985       # gravity turning 10 deg ends a still moment (another pose)
RESTORED_STILL_S = 0.3
FUSION_DT_S = 0.01      # the fusion (and its calibration) runs at 100 Hz
_MAG_MODES = (0x09, 0x0A, 0x0B, 0x0C)


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
        self.calib_stat = calib_stat            # the best levels reachable here (CALIB_STAT bits)
        self.offsets = bytes(DEFAULT_OFFSETS if offsets is None else offsets)
        if len(self.offsets) != PROFILE_LEN:
            raise ValueError("offsets: %d bytes" % PROFILE_LEN)
        self.resets = 0
        self.booted_at_s = -1.0                 # powered long before: booted
        self._reset()

    def power_on(self, now_s):
        """Power (back) on at bus time now_s: registers at their reset values, boot for BOOT_S."""
        self._reset()
        self.booted_at_s = now_s + BOOT_S

    def _reset(self):
        self.regs[:] = bytes(256)
        for r, v in _DEFAULTS.items():
            self.regs[r] = v
        self._profile = None            # written since the reset (bytearray), else None
        self.restored = 0               # CALIB_STAT bits of the parts written since the reset
        self._mode = 0                  # the mode in effect; a switch under way: _next, _next_at_s
        self._next = None
        self._next_at_s = 0.0
        self.levels = [0, 0, 0, 0]      # sys, gyro, accel, mag
        self._last_s = None
        self._still_s = 0.0
        self._still_dir = None          # gravity's direction while held still
        self._poses = []
        self._octants = 0

    def acks(self, now_s):
        self.now_s = now_s
        if now_s < self.booted_at_s:
            return False                # booting: no acknowledge
        if self._next is not None and now_s >= self._next_at_s:
            self._mode, self._next = self._next, None
        return True

    def profile(self):
        """The 22 profile bytes the chip holds now."""
        if self._profile is not None:
            return bytes(self._profile)
        return self.offsets if min(self.levels[1:]) == 3 else bytes(PROFILE_LEN)

    @property
    def mode(self):
        """The operating mode in effect (a switch written to OPR_MODE takes its time)."""
        return self._mode

    def on_write(self, reg, data):
        for i in range(len(data)):
            r = (reg + i) & 0xFF
            if r <= 0x03 or 0x08 <= r <= 0x39:
                continue                          # ids and outputs are read-only
            if r == 0x3F and data[i] & 0x20:
                self.resets += 1
                self.power_on(self.now_s)         # a reset boots as a power-up does
                continue
            if _PROF <= r < _PROF_END:
                if self.mode == 0:              # CONFIG_MODE only; ignored otherwise
                    if self._profile is None:
                        self._profile = bytearray(self.profile())
                    self._profile[r - _PROF] = data[i]
                    self.restored |= _part(r - _PROF)
                continue
            if r == 0x3D and (data[i] & 0x0F) != (self._mode if self._next is None else self._next):
                self._next = data[i] & 0x0F
                self._next_at_s = self.now_s + (TO_CONFIG_S if self._next == 0 else FROM_CONFIG_S)
            self.regs[r] = data[i]

    def on_read(self, reg, n):
        t = None
        if self.truth is not None and self.mode in FUSION_MODES and (
                self._last_s is None or self.now_s - self._last_s >= FUSION_DT_S):
            t = self.truth()
            self._calibrate(t)          # at the fusion's rate (the bursts of one frame: once)
        if reg + n > 0x08 and reg <= 0x34:
            self._refresh(t)
        if reg <= 0x35 < reg + n:
            lv = self.levels
            self.regs[0x35] = (lv[0] << 6) | (lv[1] << 4) | (lv[2] << 2) | lv[3]
        if reg < _PROF_END and reg + n > _PROF:
            self.regs[_PROF:_PROF_END] = self.profile() if self.mode == 0 else bytes(PROFILE_LEN)

    def _calibrate(self, t):
        """Raise the calibration levels with what the chip has seen since its last read."""
        now = self.now_s
        dt = 0.0 if self._last_s is None else min(now - self._last_s, 0.1)
        self._last_s = now
        g = t["gyro_rad_s"]
        a = t["accel_m_s2"]
        m = t.get("mag_ut", (0.0, 0.0, 0.0))
        w = math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2])
        an = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
        still = w < STILL_RAD_S and abs(an - 9.80665) < STILL_ACCEL_M_S2
        u = (a[0] / an, a[1] / an, a[2] / an) if an > 0 else (0.0, 0.0, 1.0)
        d = self._still_dir
        if still and d is not None and u[0] * d[0] + u[1] * d[1] + u[2] * d[2] > STILL_COS:
            self._still_s += dt
        else:                           # moving, or turned to another pose: still from now
            self._still_s = 0.0
            self._still_dir = u if still else None
        lv = [0, 0, 0, 0]
        # gyro: held still GYRO_STILL_S (RESTORED_STILL_S with its offsets restored)
        need = RESTORED_STILL_S if self.restored & 0x30 else GYRO_STILL_S
        lv[1] = min(3, int(3 * self._still_s / need))
        # accel: distinct static poses
        hold = RESTORED_STILL_S if self.restored & 0x0C else POSE_S
        if still and self._still_s >= hold:
            if all(u[0] * p[0] + u[1] * p[1] + u[2] * p[2] < POSE_COS for p in self._poses):
                self._poses.append(u)
        np_ = len(self._poses)
        lv[2] = min(3, 3 * np_) if self.restored & 0x0C else min(3, np_ // 2)
        # mag: the field's octants while turning
        if w > TURN_RAD_S:
            self._octants |= 1 << ((m[0] > 0) | ((m[1] > 0) << 1) | ((m[2] > 0) << 2))
        k = 0
        for i in range(8):
            k += (self._octants >> i) & 1
        lv[3] = (3 if k >= 2 else 0) if self.restored & 0x03 else min(3, max(0, k - 2) // 2)
        cap = self.calib_stat & 0xFF
        for i in (1, 2, 3, 0):
            if i == 0:                  # the system follows the others as they stand now
                lv[0] = self.levels[3] if self.mode in _MAG_MODES else min(self.levels[1], self.levels[2])
            v = min(lv[i], (cap >> (6 - 2 * i)) & 3)
            if v > self.levels[i]:
                self.levels[i] = v

    def _refresh(self, t=None):
        mode = self.mode
        if mode == 0 or self.truth is None:
            self.regs[0x08:0x35] = bytes(0x2D)
            return
        if t is None:
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
