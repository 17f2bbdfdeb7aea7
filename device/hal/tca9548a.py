"""TCA9548A 8-channel I2C multiplexer: real driver (any bus) and its simulated twin.

    from device.hal.tca9548a import TCA9548A, SimTCA9548A
    mux = TCA9548A(bus, addr=0x70)
    ch3 = mux.channel(3)          # a bus object: selects channel 3 before each transfer
    imu = MPU6050(ch3)            # so a suit carries identical IMUs at one address

The chip has one control register written without a register byte: bit n enables channel n.
The driver caches the selection and rewrites it only when another channel is wanted (or after
an error, when the chip's state is unknown). Several multiplexers on one bus (0x70..0x77) know
each other: selecting a channel on one first disables every channel of the others, so two
identical sensors are never connected at once.
"""

# id(bus) -> the TCA9548A objects on that bus
_PEERS = {}

from device.hal.busclock import clock_s, wait_ms
from device.hal.i2c_sim import RegisterDevice


class TCA9548A:
    """The multiplexer on a parent bus; channel(n) gives a bus object for channel n."""

    def __init__(self, bus, addr=0x70):
        self.bus = bus
        self.addr = addr
        self._selected = None
        try:
            peers = bus.tca9548a_peers
        except AttributeError:
            peers = []
            try:
                bus.tca9548a_peers = peers
            except AttributeError:      # a bus object without attributes (MicroPython)
                peers = _PEERS.setdefault(id(bus), [])
        self.peers = peers
        self.peers.append(self)

    def disable(self):
        if self._selected != -1:
            try:
                self.bus.writeto(self.addr, bytes([0]))
            except OSError:
                self._selected = None
                raise
            self._selected = -1

    def select(self, n):
        if self._selected != n:
            for other in self.peers:
                if other is not self:
                    other.disable()
            try:
                self.bus.writeto(self.addr, bytes([1 << n]))
            except OSError:
                self._selected = None
                raise
            self._selected = n

    def channel(self, n):
        if not 0 <= n <= 7:
            raise ValueError("TCA9548A channel must be 0..7, not %r" % (n,))
        return MuxChannel(self, n)


class MuxChannel:
    """The bus seen through one channel of a TCA9548A (machine.I2C subset)."""

    def __init__(self, mux, n):
        self.mux = mux
        self.n = n

    def _do(self, fn, *args):
        self.mux.select(self.n)
        try:
            return fn(*args)
        except OSError:
            self.mux._selected = None
            raise

    def readfrom_mem_into(self, addr, reg, buf):
        # _do inlined: the capture loop's every sensor read passes here (three a BNO055 a frame)
        mux = self.mux
        if mux._selected != self.n:
            mux.select(self.n)
        try:
            mux.bus.readfrom_mem_into(addr, reg, buf)
        except OSError:
            mux._selected = None
            raise

    def writeto_mem(self, addr, reg, buf):
        self._do(self.mux.bus.writeto_mem, addr, reg, buf)

    def writeto(self, addr, buf):
        self._do(self.mux.bus.writeto, addr, buf)

    def readfrom_into(self, addr, buf):
        self._do(self.mux.bus.readfrom_into, addr, buf)

    def delay_ms(self, ms):
        wait_ms(self.mux.bus, ms)

    def now_s(self):
        return clock_s(self.mux.bus)


class SimTCA9548A(RegisterDevice):
    """The simulated chip: a control register and eight downstream device tables."""

    def __init__(self):
        RegisterDevice.__init__(self)
        self.control = 0
        self.channels = [dict() for _ in range(8)]

    def attach(self, channel, addr, device):
        if addr in self.channels[channel]:
            raise ValueError("address 0x%02x is taken on channel %d" % (addr, channel))
        self.channels[channel][addr] = device
        return device

    def raw_write(self, data):
        self.writes += 1
        if data:
            self.control = data[-1]

    def read(self, reg, n):
        self.reads += 1
        return bytes([self.control] * n)

    def route(self, addr):
        """The device answering at addr on the enabled channels (None if none)."""
        found = None
        for ch in range(8):
            if self.control & (1 << ch):
                dev = self.channels[ch].get(addr)
                if dev is None:
                    # a device that exposes another behind it (an MPU-9250's bypass)
                    for d in self.channels[ch].values():
                        r = getattr(d, "route", None)
                        dev = r(addr) if r is not None else None
                        if dev is not None:
                            break
                if dev is not None:
                    if found is not None:
                        return None  # two devices answering: a bus conflict; treat as NACK
                    found = dev
        return found

    def routed_addresses(self):
        out = set()
        for ch in range(8):
            if self.control & (1 << ch):
                out.update(self.channels[ch])
        return out
