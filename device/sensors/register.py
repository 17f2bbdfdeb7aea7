"""One-byte register access for chips behind the machine.I2C subset (MicroPython-safe).

    class MyChip(RegisterChip):
        def init(self):
            if self._get(0x75) != 0x68: raise OSError(19, "not my chip")
            self._set(0x6B, 0x00)

Subclasses set self.i2c (readfrom_mem_into / writeto_mem), self.addr and self._one (a
preallocated bytearray(1), so a read allocates nothing).
"""


class RegisterChip:
    def _get(self, reg):
        """The byte in register reg."""
        self.i2c.readfrom_mem_into(self.addr, reg, self._one)
        return self._one[0]

    def _set(self, reg, value):
        """Write one byte (the low 8 bits of value) to register reg."""
        self.i2c.writeto_mem(self.addr, reg, bytes([value & 0xFF]))
