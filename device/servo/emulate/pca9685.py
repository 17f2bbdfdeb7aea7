"""A simulated I2C bus with PCA9685 register files: auto-increment, SLEEP-only PRE_SCALE, ALL_LED.

    bus = SimPCA9685Bus(addresses=(0x40,), osc_hz=25_000_000)
    PCA9685(bus).init(50); bus.log -> ["W40: 00 10", "W40: FE 79", ...]
    bus.pulse_us(0x40, ch)    # what the pin puts out now (None = no pulses)

writeto_mem(addr, reg, buf) and readfrom_mem_into(addr, reg, buf), like machine.I2C. Address 0
is the general call: data byte 0x06 (SWRST) resets every chip. A missing address raises OSError
(ENODEV), as a real bus does on a NACK.
"""

import errno

from device.servo.emulate.base import Emulator

_POWER_ON = {0x00: 0x11, 0x01: 0x04, 0x02: 0xE2, 0x03: 0xE4, 0x04: 0xE8, 0x05: 0xE0, 0xFE: 0x1E}


class SimPCA9685Bus(Emulator):
    NAME = "pca9685"
    UNITS = "counts"

    def __init__(self, addresses=(0x40,), osc_hz=25000000, clock=None):
        Emulator.__init__(self, clock)
        self.osc_hz = osc_hz
        self.regs = {}
        for a in addresses:
            self.regs[a] = self._reset_regs()
        self.log = []

    def _reset_regs(self):
        r = bytearray(256)
        for k, v in _POWER_ON.items():
            r[k] = v
        for ch in range(16):
            r[0x09 + 4 * ch] = 0x10     # full OFF at power-up
        return r

    def _chip(self, addr):
        if addr not in self.regs:
            raise OSError(errno.ENODEV, "no I2C device at 0x%02X" % addr)
        return self.regs[addr]

    def writeto_mem(self, addr, reg, buf):
        buf = bytes(buf)
        self.log.append(("W%02X: " % addr) + " ".join("%02X" % b for b in bytes((reg,)) + buf))
        with self.lock:
            if addr == 0x00:
                if reg == 0x06 and not buf:
                    for a in self.regs:
                        self.regs[a] = self._reset_regs()
                return
            r = self._chip(addr)
            touched = set()
            for b in buf:
                self._write_reg(r, reg, b)
                touched.add(reg)
                reg = self._next(r, reg)
            for ch in range(16):
                if (0x06 + 4 * ch) in touched or (0x09 + 4 * ch) in touched or touched & {0xFA, 0xFB, 0xFC, 0xFD}:
                    self.record((addr, ch), self.off_counts(addr, ch))
            self.changed.notify_all()

    def _write_reg(self, r, reg, b):
        if reg == 0xFE and not (r[0] & 0x10):
            return                          # PRE_SCALE is writable only while SLEEP = 1
        if 0xFA <= reg <= 0xFD:
            for ch in range(16):
                r[0x06 + 4 * ch + (reg - 0xFA)] = b
        r[reg] = b

    def _next(self, r, reg):
        if not (r[0] & 0x20):
            return reg
        if reg == 0x45:
            return 0x00
        if reg == 0xFE:
            return 0xFA
        return (reg + 1) & 0xFF

    def readfrom_mem_into(self, addr, reg, buf):
        r = self._chip(addr)
        first = reg
        for i in range(len(buf)):
            buf[i] = r[reg]
            reg = self._next(r, reg)
        self.log.append("W%02X: %02X | R%02X: %s" % (addr, first, addr, " ".join("%02X" % b for b in buf)))

    def off_counts(self, addr, ch):
        """None when the channel puts out no pulse (full OFF, or asleep), else OFF - ON counts."""
        r = self.regs[addr]
        b = 0x06 + 4 * ch
        on = r[b] | ((r[b + 1] & 0x1F) << 8)
        off = r[b + 2] | ((r[b + 3] & 0x1F) << 8)
        if off & 0x1000 or r[0] & 0x10:
            return None
        if on & 0x1000:
            return 4096
        return (off - on) % 4096

    def pulse_us(self, addr, ch):
        c = self.off_counts(addr, ch)
        if c is None:
            return None
        period_us = (self.regs[addr][0xFE] + 1) * 4096 * 1e6 / self.osc_hz
        return c * period_us / 4096.0

    def to_deg(self, servo, units):
        if units is None:
            return float("nan")
        us = self.pulse_us(servo[0], servo[1])
        return float("nan") if us is None else (us - 1500.0) * 0.1

    def _feed(self, data):
        return b""
