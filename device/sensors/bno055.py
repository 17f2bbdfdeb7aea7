"""Bosch BNO055 9-axis sensor with on-chip fusion, over I2C (machine.I2C subset, little-endian).

    from device.sensors.bno055 import BNO055
    imu = BNO055(bus, addr=0x28, mode="NDOF")
    imu.init()                                   # CHIP_ID, reset, units, operating mode
    quat_wxyz = imu.read_quaternion()            # fused orientation, sensor -> world
    gyro_rad_s, accel_m_s2, mag_ut, quat_wxyz = imu.read_all()   # one 32-byte burst

Registers, units and scales from the BNO055 datasheet BST-BNO055-DS000 (sections noted):
accel 100 LSB per m/s^2, gyro 900 LSB per rad/s (UNIT_SEL bit1 = 1), mag 16 LSB per uT,
quaternion 2^14 LSB per unit (3.6.5).
"""

import struct

from device.sensors.register import RegisterChip

_CHIP_ID = 0x00         # 0xA0
_ACC_DATA = 0x08        # acc(6) mag(6) gyr(6) eul(6) qua(8): 0x08..0x27, 32 bytes
_QUA_DATA = 0x20
_CALIB_STAT = 0x35      # sys|gyr|acc|mag, 2 bits each, 3 = calibrated
_UNIT_SEL = 0x3B        # bit0 acc mg, bit1 gyro rps, bit2 euler rad, bit4 temp F
_OPR_MODE = 0x3D        # 3.3
_SYS_TRIGGER = 0x3F     # bit5 RST_SYS
_PAGE_ID = 0x07

CHIP_ID = 0xA0
MODES = {"CONFIG": 0x00, "ACCONLY": 0x01, "AMG": 0x07, "IMU": 0x08, "COMPASS": 0x09,
         "M4G": 0x0A, "NDOF_FMC_OFF": 0x0B, "NDOF": 0x0C}
FUSION_MODES = (0x08, 0x09, 0x0A, 0x0B, 0x0C)
ACC_LSB_PER_M_S2 = 100.0
GYR_LSB_PER_RAD_S = 900.0
MAG_LSB_PER_UT = 16.0
QUA_LSB = 16384.0
_UNITS = 0x02           # m/s^2, rad/s, degrees, Celsius


class BNO055(RegisterChip):
    """One chip; read_all() gives raw data and the fused quaternion in one transfer."""

    def __init__(self, i2c, addr=0x28, mode="NDOF", delay_ms=None):
        if mode not in MODES:
            raise ValueError("BNO055 mode must be one of %s" % ", ".join(sorted(MODES)))
        self.i2c = i2c
        self.addr = addr
        self.mode = mode
        self.delay_ms = delay_ms
        self._buf = bytearray(32)
        self._one = bytearray(1)

    def init(self):
        """Check CHIP_ID, reset, select page 0, units, then the operating mode."""
        cid = self._get(_CHIP_ID)
        if cid != CHIP_ID:
            raise OSError(19, "0x%02x: CHIP_ID 0x%02x is not a BNO055" % (self.addr, cid))
        self._set(_OPR_MODE, MODES["CONFIG"])
        self._set(_SYS_TRIGGER, 0x20)          # RST_SYS
        if self.delay_ms is not None:
            self.delay_ms(650)                  # power-on-reset time, datasheet 1.2
        self._set(_PAGE_ID, 0)
        self._set(_UNIT_SEL, _UNITS)
        self._set(_OPR_MODE, MODES[self.mode])
        if self.delay_ms is not None:
            self.delay_ms(20)                   # CONFIG -> any mode switching time, 3.3
        return self

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
        """(gyro_rad_s, accel_m_s2, quat_wxyz): the capture loop's common sensor reading."""
        g, a, m, q = self.read_all()
        return g, a, q
