"""The real I2C bus of a Raspberry Pi through smbus2 (imported only when this backend is chosen).

    from device.hal.i2c_smbus import SmbusI2C
    bus = SmbusI2C(1)                          # /dev/i2c-1; or open_i2c("i2c://1")
    buf = bytearray(14); bus.readfrom_mem_into(0x68, 0x3B, buf)

Every transfer is one i2c_rdwr transaction (write the register, repeated start, read), so
reads are not capped at the SMBus block limit of 32 bytes. "i2c://3?hz=400000" names the clock
the bus was given in /boot/firmware/config.txt (docs/pi.md); the unit's bus budget uses it.
"""

import time


class SmbusI2C:
    """machine.I2C-style methods over smbus2.SMBus.i2c_rdwr."""

    def __init__(self, bus=1, freq_hz=None):
        import smbus2  # lazy: only on a machine with the real bus
        self._smbus2 = smbus2
        self.bus_num = int(bus)
        self.freq_hz = freq_hz      # what config.txt set (the kernel owns the clock); budget only
        self.bus = smbus2.SMBus(self.bus_num)

    @classmethod
    def from_url(cls, rest, **options):
        from device.hal.i2c_sim import parse_hz
        name, hz = parse_hz(rest)
        return cls(int(name or "1"), freq_hz=hz, **options)

    def readfrom_mem_into(self, addr, reg, buf):
        m = self._smbus2.i2c_msg
        w = m.write(addr, [reg & 0xFF])
        r = m.read(addr, len(buf))
        self.bus.i2c_rdwr(w, r)
        buf[:] = bytes(r)

    def writeto_mem(self, addr, reg, buf):
        self.bus.i2c_rdwr(self._smbus2.i2c_msg.write(addr, bytes([reg & 0xFF]) + bytes(buf)))

    def writeto(self, addr, buf):
        self.bus.i2c_rdwr(self._smbus2.i2c_msg.write(addr, bytes(buf)))

    def readfrom_into(self, addr, buf):
        r = self._smbus2.i2c_msg.read(addr, len(buf))
        self.bus.i2c_rdwr(r)
        buf[:] = bytes(r)

    def delay_ms(self, ms):
        """Wait ms milliseconds (a chip's reset or mode-switch time; the twin charges its clock)."""
        time.sleep(ms / 1000.0)

    def now_s(self):
        """The bus clock: the monotonic clock (the twin's is simulated)."""
        return time.monotonic()

    def close(self):
        if self.bus is not None:
            self.bus.close()
            self.bus = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
