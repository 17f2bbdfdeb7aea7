"""A simulated I2C bus: per-address register-file devices with read/write hooks and faults.

    from device.hal.i2c_sim import SimI2C, RegisterDevice
    bus = SimI2C()
    dev = bus.attach(0x68, RegisterDevice({0x75: 0x68}))   # a register file with WHO_AM_I
    buf = bytearray(1); bus.readfrom_mem_into(0x68, 0x75, buf)   # buf == b"\\x68"
    bus.fail(0x68, 3)            # the next 3 transfers to 0x68 raise OSError(EIO)
    bus = SimI2C(freq_hz=400000)  # or open_i2c("sim-i2c://1?hz=400000")
    bus.busy_s, bus.bits          # time the wires were busy, SCL periods
    bus.delay_ms(650); bus.now_s()    # the master waits on the bus clock (no sleeping)

An absent address raises OSError(ENODEV) like a NACK, and so does a chip that does not acknowledge
its address now (its acks(now_s) says False: a BNO055 booting); register addresses auto-increment.

The bus clock now_s(): every transaction's time (below), the master's waits (delay_ms: a driver
waiting out a reset, charged here instead of slept; `master_s` = busy_s + those waits, the time
the master spent on this bus) and the world's idle time between frames (advance_to(t_s), called by
the simulated subject: never backwards). The chips see it at the start of each transaction
(RegisterDevice.acks) and keep their reset, boot and mode-switch times on it.
Multiplexers (device.hal.tca9548a.SimTCA9548A) route addresses to their enabled channels.

Bus time (NXP UM10204, 3.1): every transaction costs its SCL periods at the bus clock. A byte
is 8 data bits and an acknowledge bit (9 periods); START, repeated START and STOP count one
period each (their setup and hold times, t_SU;STA, t_HD;STA, t_SU;STO, are 0.6-4.7 us:
about one period at 100 and 400 kHz). Counted per transaction (transaction_bits):
    register read  (readfrom_mem_into)  S, addr+W, reg, Sr, addr+R, n bytes, P = 30 + 9 n
    register write (writeto_mem)        S, addr+W, reg, n bytes, P             = 20 + 9 n
    plain write / read (writeto, readfrom_into)  S, addr+R/W, n bytes, P       = 11 + 9 n
    an address nobody acknowledges      S, addr, NACK, P                       = 11
A chip that stretches the clock adds its hold time: a device's `stretch_per_read_byte_s` is
charged once per byte it sends (the BNO055, device/sensors/bno055_sim.py). A failed transfer
costs its full time too. `sim_s` (wall) and `sim_cpu_s` (thread CPU) are the time the simulated
chips spent (their registers from the truth): the simulator's work, not the unit's.
"""

import time

try:
    _now = time.perf_counter
    _cpu = time.thread_time
except AttributeError:          # MicroPython
    def _now():
        return time.ticks_us() * 1e-6
    _cpu = _now

EIO = 5
ENODEV = 19
DEFAULT_HZ = 100000          # the Raspberry Pi's default i2c_arm_baudrate
NACK_BITS = 11


def transaction_bits(kind, n):
    """SCL periods of one transaction moving n data bytes (kind: "read_mem", "write_mem",
    "write", "read"); see the module docstring."""
    if kind == "read_mem":
        # S + (addr+W, ACK) + (reg, ACK) + Sr + (addr+R, ACK) + n (byte, ACK) + P
        return 1 + 9 + 9 + 1 + 9 + 9 * n + 1
    if kind == "write_mem":
        # S + (addr+W, ACK) + (reg, ACK) + n (byte, ACK) + P
        return 1 + 9 + 9 + 9 * n + 1
    if kind in ("write", "read"):
        # S + (addr+R/W, ACK) + n (byte, ACK) + P
        return 1 + 9 + 9 * n + 1
    raise ValueError("unknown I2C transaction kind %r" % (kind,))


def parse_hz(rest, default=DEFAULT_HZ):
    """(name, clock Hz) of a bus URL's rest "1?hz=400000" (ValueError on a bad clock)."""
    parts = rest.split("?", 1)
    name, query = parts[0], (parts[1] if len(parts) > 1 else "")
    hz = default
    for part in query.split("&") if query else ():
        kv = part.split("=", 1)
        key, val = kv[0], (kv[1] if len(kv) > 1 else "")
        if key != "hz":
            raise ValueError("I2C bus %r: unknown option %r (only hz=)" % (rest, key))
        try:
            hz = int(val)
        except ValueError:
            raise ValueError("I2C bus %r: hz=%r is not a number" % (rest, val))
    if not 1000 <= hz <= 1000000:
        raise ValueError("I2C bus %r: clock %d Hz is outside 1 kHz .. 1 MHz" % (rest, hz))
    return name, hz


class RegisterDevice:
    """A 256-byte register file. Subclasses override on_read(reg, n) (refresh registers
    before a burst read) and on_write(reg, data) (react to configuration writes)."""

    def __init__(self, init=None):
        self.regs = bytearray(256)
        for r, v in (init or {}).items():
            self.regs[r] = v
        self.reads = 0
        self.writes = 0
        self.now_s = 0.0            # the bus clock at this chip's latest transaction

    def acks(self, now_s):
        """Whether the chip acknowledges its address at bus time now_s (a transaction starts)."""
        self.now_s = now_s
        return True

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

    def __init__(self, name="sim", freq_hz=DEFAULT_HZ):
        self.name = name
        self.freq_hz = int(freq_hz)
        self.busy_s = 0.0           # simulated time the bus was busy
        self.wait_s = 0.0           # the master's waits on this bus (delay_ms)
        self.t_s = 0.0              # the bus clock (now_s): busy time, waits and idle time
        self.bits = 0               # SCL periods sent
        self.stretch_s = 0.0        # of busy_s, time chips held SCL low
        self.sim_s = 0.0            # time of the simulated chips (the simulator's work), wall
        self.sim_cpu_s = 0.0        # ... and thread CPU time
        self.devices = {}
        self._fail = {}
        self.fault_hook = None      # callable(addr) -> True to fail this transfer
        self.transfers = 0
        self.log = None             # a list to record ("r"|"w", addr, reg, bytes) transfers
        self.closed = False

    @classmethod
    def from_url(cls, rest, **options):
        name, hz = parse_hz(rest)
        return cls(name=name or "sim", freq_hz=options.pop("freq_hz", hz), **options)

    def charge(self, bits, stretch_s=0.0):
        """Advance the bus clock by bits SCL periods and stretch_s of clock stretching."""
        self.bits += bits
        self.stretch_s += stretch_s
        dt = bits / float(self.freq_hz) + stretch_s
        self.busy_s += dt
        self.t_s += dt

    def now_s(self):
        """The bus clock (simulated seconds)."""
        return self.t_s

    def delay_ms(self, ms):
        """The master waits ms milliseconds: charged to the bus clock (a real bus sleeps)."""
        self.wait_s += ms / 1000.0
        self.t_s += ms / 1000.0

    def advance_to(self, t_s):
        """The bus idles until t_s (the simulated world's clock); never backwards."""
        if t_s > self.t_s:
            self.t_s = t_s

    @property
    def master_s(self):
        """Time the master spent on this bus: transactions and its waits."""
        return self.busy_s + self.wait_s

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

    def _device(self, addr, kind, n):
        """The device answering at addr, the transaction's bus time charged (also when it fails)."""
        self.transfers += 1
        try:
            dev = self._route(addr)
        except OSError as e:
            self.charge(NACK_BITS if e.args and e.args[0] == ENODEV else transaction_bits(kind, n))
            raise
        acks = getattr(dev, "acks", None)
        if acks is not None and not acks(self.t_s):
            self.charge(NACK_BITS)
            raise OSError(ENODEV, "0x%02x did not acknowledge on %s (busy)" % (addr, self.name))
        stretch = getattr(dev, "stretch_per_read_byte_s", 0.0) if kind in ("read_mem", "read") else 0.0
        self.charge(transaction_bits(kind, n), stretch * n)
        return dev

    def _route(self, addr):
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
        dev = self._device(addr, "read_mem", len(buf))
        t0, c0 = _now(), _cpu()
        data = dev.read(reg, len(buf))
        self.sim_s += _now() - t0
        self.sim_cpu_s += _cpu() - c0
        buf[:] = data
        if self.log is not None:
            self.log.append(("r", addr, reg, bytes(data)))

    def writeto_mem(self, addr, reg, buf):
        dev = self._device(addr, "write_mem", len(buf))
        t0, c0 = _now(), _cpu()
        dev.write(reg, buf)
        self.sim_s += _now() - t0
        self.sim_cpu_s += _cpu() - c0
        if self.log is not None:
            self.log.append(("w", addr, reg, bytes(buf)))

    def writeto(self, addr, buf):
        self._device(addr, "write", len(buf)).raw_write(bytes(buf))
        if self.log is not None:
            self.log.append(("w", addr, None, bytes(buf)))

    def readfrom_into(self, addr, buf):
        buf[:] = self._device(addr, "read", len(buf)).read(0, len(buf))

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
