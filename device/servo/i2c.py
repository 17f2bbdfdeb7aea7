"""I2C buses for the PCA9685 by URL: i2c://N (smbus2, imported only then), sim-i2c:// (emulator).

    from device.servo.i2c import open_i2c
    bus = open_i2c("sim-i2c://")           # a simulated PCA9685 register file at 0x40
    bus.writeto_mem(0x40, 0x00, b"\\x10"); buf = bytearray(1); bus.readfrom_mem_into(0x40, 0, buf)

The interface is machine.I2C's writeto_mem / readfrom_mem_into, so drivers also run on MicroPython.
"""


class SmbusI2C:
    """Real bus through smbus2's i2c_rdwr (no 32-byte SMBus block limit)."""

    def __init__(self, busno):
        from smbus2 import SMBus
        self.bus = SMBus(busno)

    def writeto_mem(self, addr, reg, buf):
        from smbus2 import i2c_msg
        self.bus.i2c_rdwr(i2c_msg.write(addr, bytes((reg,)) + bytes(buf)))

    def readfrom_mem_into(self, addr, reg, buf):
        from smbus2 import i2c_msg
        w = i2c_msg.write(addr, bytes((reg,)))
        r = i2c_msg.read(addr, len(buf))
        self.bus.i2c_rdwr(w, r)
        buf[:] = bytes(r)

    def close(self):
        self.bus.close()


def open_i2c(url):
    if url.startswith("sim-i2c://"):
        from device.servo.emulate.pca9685 import SimPCA9685Bus
        return SimPCA9685Bus()
    if url.startswith("i2c://"):
        try:
            return SmbusI2C(int(url[len("i2c://"):] or "1"))
        except ValueError:
            raise ValueError("%s: bus number must be an integer" % url)
    raise ValueError("%s: unknown I2C URL (use i2c://N or sim-i2c://)" % url)
