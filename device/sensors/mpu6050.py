"""InvenSense MPU-6050 / MPU-6500 / MPU-9250 accelerometer + gyroscope over I2C (machine.I2C subset).

    from device.sensors.mpu6050 import MPU6050
    imu = MPU6050(bus, addr=0x68, accel_range_g=4, gyro_range_dps=500)
    imu.init()                                    # WHO_AM_I, reset, wake, ranges, filter
    gyro_rad_s, accel_m_s2, temp_c = imu.read()   # one 14-byte burst from ACCEL_XOUT_H
    imu = MPU6050(bus, fifo_rate_hz=250).init()   # FIFO mode: every sample since the last read
    gyro_rad_s, accel_m_s2, temp_c, samples = imu.read()   # samples: [(gyro_rad_s, accel_m_s2)]

Register numbers and scales from the MPU-6000/6050 Register Map rev 4.2 (sections noted).
The 9-axis MPU-9250's magnetometer (AK8963 behind the bypass) is not read here. MicroPython-safe:
no numpy, a preallocated buffer, struct with explicit byte order (the chip is big-endian).
"""

import struct

from device.sensors.register import RegisterChip

_SMPLRT_DIV = 0x19      # 4.2  sample rate = gyro rate / (1 + div)
_CONFIG = 0x1A          # 4.3  DLPF_CFG bits 2:0
_GYRO_CONFIG = 0x1B     # 4.4  FS_SEL bits 4:3 (250, 500, 1000, 2000 dps)
_ACCEL_CONFIG = 0x1C    # 4.5  AFS_SEL bits 4:3 (2, 4, 8, 16 g)
_FIFO_EN = 0x23         # 4.6  bit7 TEMP, 6..4 XG YG ZG, 3 ACCEL
_INT_STATUS = 0x3A      # 4.16 bit4 FIFO_OFLOW_INT
_ACCEL_XOUT_H = 0x3B    # 4.17 accel x,y,z, temp, gyro x,y,z: 7 x int16 big-endian
_USER_CTRL = 0x6A       # 4.27 bit6 FIFO_EN, bit2 FIFO_RESET
_FIFO_COUNTH = 0x72     # 4.37 byte count, big-endian
_FIFO_R_W = 0x74        # 4.38
_PWR_MGMT_1 = 0x6B      # 4.28 bit7 DEVICE_RESET, bit6 SLEEP, bits 2:0 CLKSEL
_WHO_AM_I = 0x75        # 4.32 0x68 (6050), 0x70 (6500), 0x71 (9250), 0x73 (9255)

WHO_AM_I_VALUES = {0x68: "MPU-6050", 0x70: "MPU-6500", 0x71: "MPU-9250", 0x73: "MPU-9255"}
GYRO_RANGES_DPS = (250, 500, 1000, 2000)
ACCEL_RANGES_G = (2, 4, 8, 16)
STANDARD_G = 9.80665
DEG = 3.141592653589793 / 180.0
_FMT = ">7h"
# after DEVICE_RESET: InvenSense's reference driver waits 100 ms (the register map, 4.28, gives
# no time; the product specification's start-up time for register read/write is 100 ms)
RESET_MS = 100


class MPU6050(RegisterChip):
    """One chip. read() returns (gyro_rad_s, accel_m_s2, temp_c) in the chip's own axes."""

    def __init__(self, i2c, addr=0x68, accel_range_g=4, gyro_range_dps=500, dlpf=3, rate_div=0,
                 delay_ms=None, fifo_rate_hz=None):
        if accel_range_g not in ACCEL_RANGES_G:
            raise ValueError("accel_range_g must be one of %r" % (ACCEL_RANGES_G,))
        if gyro_range_dps not in GYRO_RANGES_DPS:
            raise ValueError("gyro_range_dps must be one of %r" % (GYRO_RANGES_DPS,))
        self.i2c = i2c
        self.addr = addr
        self.accel_range_g = accel_range_g
        self.gyro_range_dps = gyro_range_dps
        self.dlpf = dlpf & 7
        self.rate_div = rate_div & 0xFF
        self.delay_ms = delay_ms
        self.fifo_rate_hz = fifo_rate_hz
        if fifo_rate_hz:
            # with the DLPF on the gyro rate is 1 kHz: rate = 1000 / (1 + div)
            self.dlpf = self.dlpf or 1
            self.rate_div = max(0, min(255, int(1000.0 / fifo_rate_hz + 0.5) - 1))
            self.fifo_rate_hz = 1000.0 / (1 + self.rate_div)
        self.overflows = 0
        self._fifo = bytearray(1024)
        self._two = bytearray(2)
        self.model = None
        self._buf = bytearray(14)
        self._one = bytearray(1)
        # LSB per unit: 16384 LSB/g at +-2 g, halving per range step; 131 LSB/dps at 250 dps
        self.accel_lsb_per_g = 16384.0 / (accel_range_g // 2)
        self.gyro_lsb_per_dps = 131.0 * 250.0 / gyro_range_dps

    def init_steps(self):
        """Check WHO_AM_I, reset (100 ms: the chip does not answer meanwhile), wake on the gyro
        PLL, set ranges, filter and rate; init() runs these steps (device/sensors/register.py)."""
        who = self._get(_WHO_AM_I)
        if who not in WHO_AM_I_VALUES:
            raise OSError(19, "0x%02x: WHO_AM_I 0x%02x is not an MPU-6050 family chip" % (self.addr, who))
        self.model = WHO_AM_I_VALUES[who]
        self._set(_PWR_MGMT_1, 0x80)          # DEVICE_RESET (self-clearing)
        yield RESET_MS
        self._set(_PWR_MGMT_1, 0x01)          # wake, clock = PLL with gyro X reference
        self._set(_SMPLRT_DIV, self.rate_div)
        self._set(_CONFIG, self.dlpf)
        self._set(_GYRO_CONFIG, GYRO_RANGES_DPS.index(self.gyro_range_dps) << 3)
        self._set(_ACCEL_CONFIG, ACCEL_RANGES_G.index(self.accel_range_g) << 3)
        if self.fifo_rate_hz:
            self._set(_USER_CTRL, 0x04)          # FIFO_RESET
            self._set(_FIFO_EN, 0x78)            # gyro x, y, z and accel
            self._set(_USER_CTRL, 0x40)          # FIFO on

    def read_fifo(self):
        """Every whole 12-byte record in the FIFO: [(gyro_rad_s, accel_m_s2)], oldest first.
        After an overflow the FIFO is reset (its records are no longer aligned) and counted."""
        self.i2c.readfrom_mem_into(self.addr, _INT_STATUS, self._one)
        if self._one[0] & 0x10:
            self.overflows += 1
            self._set(_USER_CTRL, 0x44)          # FIFO_RESET, keep it on
            return []
        self.i2c.readfrom_mem_into(self.addr, _FIFO_COUNTH, self._two)
        n = ((self._two[0] << 8) | self._two[1]) // 12 * 12
        if n == 0:
            return []
        buf = memoryview(self._fifo)[:n]
        self.i2c.readfrom_mem_into(self.addr, _FIFO_R_W, buf)
        ka = STANDARD_G / self.accel_lsb_per_g
        kg = DEG / self.gyro_lsb_per_dps
        out = []
        for at in range(0, n, 12):
            ax, ay, az, gx, gy, gz = struct.unpack_from(">6h", self._fifo, at)
            out.append(((gx * kg, gy * kg, gz * kg), (ax * ka, ay * ka, az * ka)))
        return out

    def read_raw(self):
        """The seven raw int16 words: ax, ay, az, temp, gx, gy, gz."""
        self.i2c.readfrom_mem_into(self.addr, _ACCEL_XOUT_H, self._buf)
        return struct.unpack_from(_FMT, self._buf, 0)

    def read(self):
        """(gyro_rad_s (x,y,z), accel_m_s2 (x,y,z) specific force, temp_c); in FIFO mode a fourth
        item, the FIFO's samples since the last read."""
        samples = self.read_fifo() if self.fifo_rate_hz else None
        ax, ay, az, t, gx, gy, gz = self.read_raw()
        ka = STANDARD_G / self.accel_lsb_per_g
        kg = DEG / self.gyro_lsb_per_dps
        if self.model == "MPU-6050":
            temp_c = t / 340.0 + 36.53          # 6050 register map 4.18
        else:
            temp_c = t / 333.87 + 21.0          # 6500/9250 register map 4.23
        if samples is not None:
            return (gx * kg, gy * kg, gz * kg), (ax * ka, ay * ka, az * ka), temp_c, samples
        return (gx * kg, gy * kg, gz * kg), (ax * ka, ay * ka, az * ka), temp_c
