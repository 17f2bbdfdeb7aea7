"""A simulated I2C bus: per-address register-file devices with read/write hooks and faults.

    from device.hal.i2c_sim import SimI2C, RegisterDevice
    bus = SimI2C()
    dev = bus.attach(0x68, RegisterDevice({0x75: 0x68}))   # a register file with WHO_AM_I
    buf = bytearray(1); bus.readfrom_mem_into(0x68, 0x75, buf)   # buf == b"\\x68"
    bus.fail(0x68, 3)            # the next 3 transfers to 0x68 raise OSError(EIO)

An absent address raises OSError(ENODEV) like a NACK; register addresses auto-increment.
Multiplexers (device.hal.tca9548a.SimTCA9548A) route addresses to their enabled channels.
"""

EIO = 5
ENODEV = 19


class RegisterDevice:
    """A 256-byte register file. Subclasses override on_read(reg, n) (refresh registers
    before a burst read) and on_write(reg, data) (react to configuration writes)."""

    def __init__(self, init=None):
        self.regs = bytearray(256)
        for r, v in (init or {}).items():
            self.regs[r] = v
        self.reads = 0
        self.writes = 0

    def on_read(self, reg, n):
        pass

    def on_write(self, reg, data):
        for i in range(len(data)):
            self.regs[(reg + i) & 0xFF] = data[i]

    def read(self, reg, n):
        self.reads += 1
        self.on_read(reg, n)
        return bytes(self.regs[(reg + i) & 0xFF] for i in range(n))

    def write(self, reg, data):
        self.writes += 1
        self.on_write(reg, bytes(data))

    def raw_write(self, data):
        """A write without a register byte (multiplexers); default: first byte is a register."""
        if data:
            self.write(data[0], data[1:])


class SimI2C:
    """A bus of simulated devices: machine.I2C-style methods, fault injection, a transfer log."""

    def __init__(self, name="sim"):
        self.name = name
        self.devices = {}
        self._fail = {}
        self.fault_hook = None      # callable(addr) -> True to fail this transfer
        self.transfers = 0
        self.log = None             # a list to record ("r"|"w", addr, reg, bytes) transfers
        self.closed = False

    @classmethod
    def from_url(cls, rest, **options):
        return cls(name=rest or "sim", **options)

    def attach(self, addr, device):
        if addr in self.devices:
            raise ValueError("address 0x%02x is taken on bus %s" % (addr, self.name))
        self.devices[addr] = device
        return device

    def detach(self, addr):
        self.devices.pop(addr, None)

    def fail(self, addr, count=1):
        """Make the next count transfers to addr fail with OSError(EIO)."""
        self._fail[addr] = self._fail.get(addr, 0) + count

    def scan(self):
        found = set(self.devices)
        for d in self.devices.values():
            for a in getattr(d, "routed_addresses", lambda: ())():
                found.add(a)
        return sorted(found)

    def _device(self, addr):
        self.transfers += 1
        if self._fail.get(addr, 0) > 0:
            self._fail[addr] -= 1
            raise OSError(EIO, "simulated I2C error at 0x%02x" % addr)
        if self.fault_hook is not None and self.fault_hook(addr):
            raise OSError(EIO, "simulated I2C error at 0x%02x" % addr)
        dev = self.devices.get(addr)
        if dev is None:
            found = []
            for d in self.devices.values():
                route = getattr(d, "route", None)
                if route is not None:
                    r = route(addr)
                    if r is not None:
                        found.append(r)
            if len(found) > 1:
                # two chips answering at once garble the bus: the master sees an error
                raise OSError(EIO, "bus conflict at 0x%02x on %s" % (addr, self.name))
            dev = found[0] if found else None
        if dev is None:
            raise OSError(ENODEV, "no device at 0x%02x on %s" % (addr, self.name))
        return dev

    def readfrom_mem_into(self, addr, reg, buf):
        data = self._device(addr).read(reg, len(buf))
        buf[:] = data
        if self.log is not None:
            self.log.append(("r", addr, reg, bytes(data)))

    def writeto_mem(self, addr, reg, buf):
        self._device(addr).write(reg, buf)
        if self.log is not None:
            self.log.append(("w", addr, reg, bytes(buf)))

    def writeto(self, addr, buf):
        self._device(addr).raw_write(bytes(buf))
        if self.log is not None:
            self.log.append(("w", addr, None, bytes(buf)))

    def readfrom_into(self, addr, buf):
        buf[:] = self._device(addr).read(0, len(buf))

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
