"""AKM AK8963 magnetometer (inside the MPU-9250), reached through the MPU's I2C bypass.

    from device.sensors.mpu6050 import MPU6050
    from device.sensors.ak8963 import AK8963, MPU9250
    imu = MPU9250(bus, addr=0x68).init()          # MPU init + bypass + AK8963 16-bit, 100 Hz
    gyro_rad_s, accel_m_s2, temp_c, mag_ut = imu.read()   # mag in the MPU's accel/gyro axes

Registers (AK8963 datasheet MS1356, 8.3): WIA 0x00 = 0x48, ST1 0x02 (DRDY), HXL..HZH 0x03-0x08
(int16 little-endian), ST2 0x09 (HOFL overflow; reading it ends the measurement), CNTL1 0x0A
(mode 0x06 = continuous 100 Hz, 0x0F = fuse ROM, bit4 = 16-bit), ASAX..Z 0x10-0x12 (sensitivity
adjustment: H_adj = H * ((ASA - 128) / 256 + 1)). 16-bit output: 0.15 uT per LSB. Its axes are
the MPU's with x and y swapped and z negated (MPU-9250 product specification, 9.1).
"""

import struct

from device.sensors.mpu6050 import MPU6050

_WIA = 0x00
_ST1 = 0x02
_CNTL1 = 0x0A
_ASAX = 0x10
_INT_PIN_CFG = 0x37     # MPU-9250: bit1 BYPASS_EN
WIA = 0x48
UT_PER_LSB_16 = 0.15


class AK8963:
    def __init__(self, i2c, addr=0x0C):
        self.i2c = i2c
        self.addr = addr
        self.adj = (1.0, 1.0, 1.0)
        self._buf = bytearray(8)
        self._one = bytearray(1)

    def init(self):
        self.i2c.readfrom_mem_into(self.addr, _WIA, self._one)
        if self._one[0] != WIA:
            raise OSError(19, "0x%02x: WIA 0x%02x is not an AK8963" % (self.addr, self._one[0]))
        self.i2c.writeto_mem(self.addr, _CNTL1, b"\x00")        # power down
        self.i2c.writeto_mem(self.addr, _CNTL1, b"\x0f")        # fuse ROM access
        asa = bytearray(3)
        self.i2c.readfrom_mem_into(self.addr, _ASAX, asa)
        self.adj = tuple((a - 128) / 256.0 + 1.0 for a in asa)
        self.i2c.writeto_mem(self.addr, _CNTL1, b"\x00")
        self.i2c.writeto_mem(self.addr, _CNTL1, b"\x16")        # 16-bit, continuous 100 Hz
        return self

    def read_ut(self):
        """(x, y, z) in uT in the MPU's axes, or None (no new data, or magnetic overflow)."""
        self.i2c.readfrom_mem_into(self.addr, _ST1, self._buf)   # ST1, 6 data bytes, ST2
        if not self._buf[0] & 1 or self._buf[7] & 0x08:
            return None
        hx, hy, hz = struct.unpack_from("<3h", self._buf, 1)
        k = UT_PER_LSB_16
        mx, my, mz = hx * k * self.adj[0], hy * k * self.adj[1], hz * k * self.adj[2]
        return (my, mx, -mz)


class MPU9250(MPU6050):
    """An MPU-6050-family driver that also reads the AK8963 through the bypass."""

    def __init__(self, i2c, addr=0x68, **kw):
        MPU6050.__init__(self, i2c, addr, **kw)
        self.mag = AK8963(i2c)
        self.last_mag_ut = None

    def init_steps(self):
        for ms in MPU6050.init_steps(self):
            yield ms
        self.i2c.writeto_mem(self.addr, _INT_PIN_CFG, b"\x02")   # BYPASS_EN
        self.mag.init()

    def read(self):
        r = MPU6050.read(self)
        m = self.mag.read_ut()
        if m is not None:
            self.last_mag_ut = m
        return r + (self.last_mag_ut,)
