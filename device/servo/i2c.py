"""I2C buses for the PCA9685 by URL: i2c://N (device.hal's smbus2 backend, imported only then)
or sim-i2c:// (two simulated PCA9685 boards at 0x40 and 0x41, device/servo/emulate/pca9685.py).

    from device.servo.i2c import open_i2c
    bus = open_i2c("sim-i2c://")
    bus.writeto_mem(0x40, 0x00, b"\\x10"); buf = bytearray(1); bus.readfrom_mem_into(0x40, 0, buf)

The interface is machine.I2C's writeto_mem / readfrom_mem_into, so drivers also run on MicroPython.
"""


def open_i2c(url):
    if url.startswith("sim-i2c://"):
        from device.servo.emulate.pca9685 import SimPCA9685Bus
        return SimPCA9685Bus(addresses=(0x40, 0x41))
    if url.startswith("i2c://"):
        from device.hal import open_i2c as hal_open
        return hal_open(url)
    raise ValueError("%s: unknown I2C URL for a PCA9685 (use i2c://N or sim-i2c://)" % url)
