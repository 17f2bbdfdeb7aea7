"""A simulated `machine` module for the firmware tests under the wasm MicroPython (and CPython).

    import machine                        # this file, installed as /lib/machine.py
    u = machine.UART(0, baudrate=115200); u.inject(wire_bytes)
    p = machine.PWM(machine.Pin(2), freq=50, duty_ns=0); p.duty_ns(1500000)
    machine.pwms()[0].duty_ns()           # last pulse width; machine.LOG has (pin, ns) when RECORD

Records pulse widths and UART output; allocates nothing per call once set up (RECORD = False),
so heap measurements of the firmware are not disturbed by the simulator.
"""

RECORD = True
LOG = []
_PWMS = []


def reset():
    global RECORD
    RECORD = True
    del LOG[:]
    del _PWMS[:]


def pwms():
    return _PWMS


class Pin:
    OUT = 1
    IN = 0

    def __init__(self, id, mode=None, *args, **kw):
        self.id = id


class PWM:
    def __init__(self, pin, freq=None, duty_ns=None, duty_u16=None):
        self.pin = pin.id
        self._freq = freq or 0
        self._duty_ns = duty_ns or 0
        self.writes = 0
        _PWMS.append(self)

    def freq(self, f=None):
        if f is None:
            return self._freq
        self._freq = f

    def duty_ns(self, v=None):
        if v is None:
            return self._duty_ns
        if v < 0:
            raise ValueError("duty_ns must be >= 0")
        self._duty_ns = v
        self.writes += 1
        if RECORD:
            LOG.append((self.pin, v))

    def duty_u16(self, v=None):
        period_ns = 1000000000 // (self._freq or 50)
        if v is None:
            return self._duty_ns * 65535 // period_ns
        self.duty_ns(v * period_ns // 65535)

    def deinit(self):
        self._duty_ns = 0


class UART:
    def __init__(self, id, baudrate=9600, tx=None, rx=None, **kw):
        self.id = id
        self.baudrate = baudrate
        self.rxq = bytearray()
        self.pos = 0
        self.txq = bytearray()

    def inject(self, data):
        """Test helper: bytes the host sends."""
        if self.pos:
            self.rxq = self.rxq[self.pos:]
            self.pos = 0
        self.rxq += data

    def any(self):
        return len(self.rxq) - self.pos

    def readinto(self, buf, nbytes=None):
        n = len(self.rxq) - self.pos
        m = len(buf) if nbytes is None else nbytes
        if n > m:
            n = m
        if n <= 0:
            return None
        q = self.rxq
        p = self.pos
        for i in range(n):
            buf[i] = q[p + i]
        self.pos = p + n
        return n

    def read(self, n=-1):
        avail = len(self.rxq) - self.pos
        if n < 0 or n > avail:
            n = avail
        if n == 0:
            return None
        b = bytes(self.rxq[self.pos:self.pos + n])
        self.pos += n
        return b

    def write(self, b):
        self.txq += b
        return len(b)


def idle():
    pass
