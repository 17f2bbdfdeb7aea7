"""One-byte register access for chips behind the machine.I2C subset (MicroPython-safe).

    class MyChip(RegisterChip):
        def init(self):
            if self._get(0x75) != 0x68: raise OSError(19, "not my chip")
            self._set(0x6B, 0x00)

Subclasses set self.i2c (readfrom_mem_into / writeto_mem), self.addr and self._one (a
preallocated bytearray(1), so a read allocates nothing), and may set self.delay_ms (a callable
replacing the bus's waits; None: wait on the bus, device/hal/busclock.py).

A chip's init() is the blocking run of its init_steps(): a generator doing the transfers and
yielding the milliseconds to wait before the next step (a reset's, a mode switch's), which a
non-blocking caller (device/sensors/health.py SensorSlot) waits out on the bus clock across frames.
"""

from device.hal.busclock import clock_s, wait_ms


class RegisterChip:
    def _get(self, reg):
        """The byte in register reg."""
        self.i2c.readfrom_mem_into(self.addr, reg, self._one)
        return self._one[0]

    def init(self):
        """init_steps() run to the end, each wait waited (on the bus clock, or delay_ms)."""
        for ms in self.init_steps():
            self._wait(ms)
        return self

    def init_steps(self):
        return iter(())

    def _wait(self, ms):
        d = getattr(self, "delay_ms", None)
        if d is not None:
            d(ms)
        else:
            wait_ms(self.i2c, ms)

    def now_s(self):
        """The bus clock (s): the twin's simulated one, or the monotonic clock."""
        return clock_s(self.i2c)

    def _set(self, reg, value):
        """Write one byte (the low 8 bits of value) to register reg."""
        self.i2c.writeto_mem(self.addr, reg, bytes([value & 0xFF]))
