"""Bosch BNO055 9-axis sensor with on-chip fusion, over I2C (machine.I2C subset, little-endian).

    from device.sensors.bno055 import BNO055
    imu = BNO055(bus, addr=0x28, mode="NDOF")
    imu.init()                                   # CHIP_ID, reset, units, operating mode
    quat_wxyz = imu.read_quaternion()            # fused orientation, sensor -> world
    gyro_rad_s, accel_m_s2, mag_ut, quat_wxyz = imu.read_all()   # one 32-byte burst
    profile = imu.read_offsets()                 # 22 bytes, once CALIB_STAT says calibrated
    BNO055(bus, profile=profile).init()          # ...restored after the reset (or write_offsets)

Registers, units and scales from the BNO055 datasheet BST-BNO055-DS000 (sections noted):
accel 100 LSB per m/s^2, gyro 900 LSB per rad/s (UNIT_SEL bit1 = 1), mag 16 LSB per uT,
quaternion 2^14 LSB per unit (3.6.5).

Calibration profile (3.6.4 "Sensor calibration data", 3.10 "Reuse of calibration profile"): the
22 bytes ACC_OFFSET_X_LSB 0x55 .. MAG_RADIUS_MSB 0x6A, eleven little-endian int16 (OFFSET_FIELDS:
accel offsets in mg, mag offsets in 1/16 uT, gyro offsets in 1/16 dps, accel radius, mag radius),
valid and writable only in CONFIG_MODE. read_offsets() / write_offsets() switch to CONFIG_MODE,
transfer them in one burst, and switch back to the driver's operating mode; init() writes a
`profile` given to the driver while the chip is still in CONFIG_MODE after its reset (the reset
loses the chip's own calibration). Times: reset to CONFIG_MODE 650 ms (table 0-2: the chip does
not acknowledge meanwhile), mode switches (3.3, table 3-6) any -> CONFIG 7 ms, CONFIG -> any 19 ms
(20 here); the driver waits them on the bus (device/hal/busclock.py: the twin charges its clock, a
real bus sleeps), or through delay_ms(ms) when one is given. init_steps() is init() as steps for a
caller that must not block (device/sensors/health.py).
"""

import struct

from device.sensors.register import RegisterChip

_CHIP_ID = 0x00         # 0xA0
_ACC_DATA = 0x08        # acc(6) mag(6) gyr(6) eul(6) qua(8): 0x08..0x27, 32 bytes
_GYR_DATA = 0x14
_QUA_DATA = 0x20
_CALIB_STAT = 0x35      # sys|gyr|acc|mag, 2 bits each, 3 = calibrated
_UNIT_SEL = 0x3B        # bit0 acc mg, bit1 gyro rps, bit2 euler rad, bit4 temp F
_OPR_MODE = 0x3D        # 3.3
_SYS_TRIGGER = 0x3F     # bit5 RST_SYS
_PAGE_ID = 0x07
_OFFSETS = 0x55         # ACC_OFFSET_X_LSB .. MAG_RADIUS_MSB 0x6A, CONFIG_MODE only (3.6.4)

CHIP_ID = 0xA0
MODES = {"CONFIG": 0x00, "ACCONLY": 0x01, "AMG": 0x07, "IMU": 0x08, "COMPASS": 0x09,
         "M4G": 0x0A, "NDOF_FMC_OFF": 0x0B, "NDOF": 0x0C}
FUSION_MODES = (0x08, 0x09, 0x0A, 0x0B, 0x0C)
ACC_LSB_PER_M_S2 = 100.0
GYR_LSB_PER_RAD_S = 900.0
MAG_LSB_PER_UT = 16.0
QUA_LSB = 16384.0
_UNITS = 0x02           # m/s^2, rad/s, degrees, Celsius
PROFILE_LEN = 22
OFFSET_FIELDS = ("accel_offset_x", "accel_offset_y", "accel_offset_z",
                 "mag_offset_x", "mag_offset_y", "mag_offset_z",
                 "gyro_offset_x", "gyro_offset_y", "gyro_offset_z",
                 "accel_radius", "mag_radius")
RESET_MS = 650          # reset (or power-on) to CONFIG_MODE, datasheet table 0-2 / 3.3
TO_CONFIG_MS = 7        # any mode -> CONFIG_MODE, 3.3 table 3-6
FROM_CONFIG_MS = 20     # CONFIG_MODE -> any mode (19 ms), 3.3 table 3-6
BOOT_POLL_MS = 10       # a part slower than the typical reset: CHIP_ID asked again this often
BOOT_MAX_MS = 1000      # for up to this long past RESET_MS


def decode_offsets(profile):
    """{field: int} of the 22-byte profile (OFFSET_FIELDS order, little-endian int16)."""
    profile = as_profile(profile)
    return dict(zip(OFFSET_FIELDS, struct.unpack("<11h", profile)))


def as_profile(p):
    """The 22 profile bytes of p: bytes-like or a list of 22 ints 0..255, or a dict of the eleven
    OFFSET_FIELDS (int16 each); ValueError otherwise."""
    if isinstance(p, dict):
        v = [p.get(k) for k in OFFSET_FIELDS]
        if not all(isinstance(x, int) and not isinstance(x, bool) and -32768 <= x <= 32767 for x in v):
            raise ValueError("a BNO055 calibration profile needs the int16 fields %s" % ", ".join(OFFSET_FIELDS))
        return struct.pack("<11h", *v)
    if isinstance(p, (int, str)):
        raise ValueError("a BNO055 calibration profile is %d bytes" % PROFILE_LEN)
    try:
        b = bytes(p)
    except (TypeError, ValueError, OverflowError):
        raise ValueError("a BNO055 calibration profile is %d bytes" % PROFILE_LEN)
    if len(b) != PROFILE_LEN:
        raise ValueError("a BNO055 calibration profile is %d bytes, not %d" % (PROFILE_LEN, len(b)))
    return b


class BNO055(RegisterChip):
    """One chip; read_all() gives raw data and the fused quaternion in one transfer."""

    def __init__(self, i2c, addr=0x28, mode="NDOF", delay_ms=None, profile=None):
        """delay_ms: a callable waiting ms milliseconds instead of the bus's own wait (None)."""
        if mode not in MODES:
            raise ValueError("BNO055 mode must be one of %s" % ", ".join(sorted(MODES)))
        self.i2c = i2c
        self.addr = addr
        self.mode = mode
        self.delay_ms = delay_ms
        self.profile = None if profile is None else as_profile(profile)    # written by init()
        self._buf = bytearray(32)
        self._one = bytearray(1)

    def init_steps(self):
        """init() as steps (device/sensors/register.py): check CHIP_ID, reset, then (the chip is in
        CONFIG_MODE after the reset) page 0, units, the calibration profile if the driver has one,
        and the operating mode; yields each wait in ms (the reset's 650, the mode switch's 20)."""
        cid = self._get(_CHIP_ID)
        if cid != CHIP_ID:
            raise OSError(19, "0x%02x: CHIP_ID 0x%02x is not a BNO055" % (self.addr, cid))
        self._set(_OPR_MODE, MODES["CONFIG"])
        self._set(_SYS_TRIGGER, 0x20)          # RST_SYS
        yield RESET_MS                          # the chip does not acknowledge meanwhile
        # 650 ms is the data sheet's typical time: a slower part does not acknowledge yet. Ask
        # CHIP_ID again every BOOT_POLL_MS, up to BOOT_MAX_MS more (as Adafruit's driver
        # polls it), never resetting it again for its being slow
        waited = 0
        while True:
            try:
                if self._get(_CHIP_ID) == CHIP_ID:
                    break
            except OSError:
                pass
            if waited >= BOOT_MAX_MS:
                raise OSError(19, "0x%02x: no BNO055 answer %d ms after its reset" % (self.addr, RESET_MS + waited))
            yield BOOT_POLL_MS
            waited += BOOT_POLL_MS
        self._set(_PAGE_ID, 0)
        self._set(_UNIT_SEL, _UNITS)
        if self.profile is not None:
            self.i2c.writeto_mem(self.addr, _OFFSETS, self.profile)
        self._set(_OPR_MODE, MODES[self.mode])
        yield FROM_CONFIG_MS

    def _enter_config(self):
        self._set(_OPR_MODE, MODES["CONFIG"])
        self._wait(TO_CONFIG_MS)

    def _leave_config(self):
        self._set(_OPR_MODE, MODES[self.mode])
        self._wait(FROM_CONFIG_MS)

    def _in_config(self, transfer, b):
        """transfer(addr, register, b) on the offset registers in CONFIG_MODE, then back to the
        driver's operating mode (also when the transfer fails)."""
        self._enter_config()
        try:
            transfer(self.addr, _OFFSETS, b)
        finally:
            self._leave_config()

    def read_offsets(self):
        """The chip's 22-byte calibration profile (bytes; decode_offsets() names the fields), read
        in CONFIG_MODE; the chip goes back to the driver's operating mode."""
        b = bytearray(PROFILE_LEN)
        self._in_config(self.i2c.readfrom_mem_into, b)
        return bytes(b)

    def write_offsets(self, profile):
        """Write a calibration profile (22 bytes, or the dict of OFFSET_FIELDS) in CONFIG_MODE,
        then go back to the driver's operating mode; returns the 22 bytes written."""
        b = as_profile(profile)
        self._in_config(self.i2c.writeto_mem, b)
        return b

    def calibration(self):
        """(sys, gyro, accel, mag) calibration levels 0..3."""
        c = self._get(_CALIB_STAT)
        return (c >> 6) & 3, (c >> 4) & 3, (c >> 2) & 3, c & 3

    def read_quaternion(self):
        """The fused orientation (w, x, y, z), sensor frame -> world frame."""
        b = bytearray(8)
        self.i2c.readfrom_mem_into(self.addr, _QUA_DATA, b)
        w, x, y, z = struct.unpack_from("<4h", b, 0)
        return (w / QUA_LSB, x / QUA_LSB, y / QUA_LSB, z / QUA_LSB)

    def read_all(self):
        """(gyro_rad_s, accel_m_s2, mag_ut, quat_wxyz) from one 32-byte burst at ACC_DATA."""
        self.i2c.readfrom_mem_into(self.addr, _ACC_DATA, self._buf)
        v = struct.unpack_from("<16h", self._buf, 0)
        ka = 1.0 / ACC_LSB_PER_M_S2
        km = 1.0 / MAG_LSB_PER_UT
        kg = 1.0 / GYR_LSB_PER_RAD_S
        kq = 1.0 / QUA_LSB
        return ((v[6] * kg, v[7] * kg, v[8] * kg), (v[0] * ka, v[1] * ka, v[2] * ka),
                (v[3] * km, v[4] * km, v[5] * km), (v[12] * kq, v[13] * kq, v[14] * kq, v[15] * kq))

    def read(self):
        """(gyro_rad_s, accel_m_s2, quat_wxyz): the capture loop's common sensor reading.

        Three bursts (accel 6, gyro 6, quaternion 8 bytes) instead of read_all's 32: the chip
        stretches the clock after every byte it sends (about 180 us, device/sensors/bno055_sim.py),
        so the 12 magnetometer and Euler bytes between them would cost 2.2 ms of bus a frame
        against the 60 us of the two extra register addresses."""
        b = self._buf
        mv = memoryview(b)
        self.i2c.readfrom_mem_into(self.addr, _ACC_DATA, mv[0:6])
        self.i2c.readfrom_mem_into(self.addr, _GYR_DATA, mv[6:12])
        self.i2c.readfrom_mem_into(self.addr, _QUA_DATA, mv[12:20])
        v = struct.unpack_from("<10h", b, 0)
        ka = 1.0 / ACC_LSB_PER_M_S2
        kg = 1.0 / GYR_LSB_PER_RAD_S
        kq = 1.0 / QUA_LSB
        return ((v[3] * kg, v[4] * kg, v[5] * kg), (v[0] * ka, v[1] * ka, v[2] * ka),
                (v[6] * kq, v[7] * kq, v[8] * kq, v[9] * kq))
