"""A CPython stand-in for MicroPython's `machine` module, so the receiver firmware
(device/firmware) runs unchanged on the host: one implementation, on the board and in the twin.

    board = Board(rxbuf=1024)
    rx = Receiver(cfg, board, uart=board.UART(0))     # device/firmware/receiver.py
    board.uart.inject(wire); rx.poll(now_ms)           # bytes in, then one pass of its loop
    board.pwms[0].duty_ns()                            # 0 = no pulses (released)

The UART keeps the board's limits: its receive ring holds rxbuf bytes (MicroPython's rp2 UART:
rxbuf, default 256) and bytes arriving while it is full are lost and counted (`overflow`), as
on the chip; what the firmware writes is collected in `tx`.
"""


class Pin:
    OUT = 1
    IN = 0

    def __init__(self, id, mode=None, *args, **kw):
        self.id = id


class PWM:
    def __init__(self, pin, freq=50, duty_ns=0, duty_u16=None):
        self.pin = pin.id
        self._freq = freq
        self._duty_ns = duty_ns or 0

    def freq(self, f=None):
        if f is None:
            return self._freq
        self._freq = f

    def duty_ns(self, v=None):
        if v is None:
            return self._duty_ns
        self._duty_ns = int(v)


class UART:
    def __init__(self, id=0, baudrate=115200, tx=None, rx=None, rxbuf=256, **kw):
        self.id = id
        self.baudrate = baudrate
        self.rxbuf = rxbuf
        self._rx = bytearray()
        self.tx = bytearray()
        self.overflow = 0

    def inject(self, data):
        """Bytes arriving on RX: what does not fit the ring is lost (counted)."""
        room = self.rxbuf - len(self._rx)
        if len(data) > room:
            self.overflow += len(data) - max(room, 0)
            data = data[:max(room, 0)]
        self._rx += data
        return len(data)

    def any(self):
        return len(self._rx)

    def readinto(self, buf, nbytes=None):
        n = min(len(self._rx), len(buf) if nbytes is None else nbytes)
        if n <= 0:
            return None
        buf[:n] = self._rx[:n]
        del self._rx[:n]
        return n

    def write(self, data):
        self.tx += data
        return len(data)

    def take_tx(self):
        out = bytes(self.tx)
        del self.tx[:]
        return out


class Board:
    """The `machine` module the firmware is given: Pin, PWM, UART classes, and what was made."""

    def __init__(self, rxbuf=1024):
        self.rxbuf = rxbuf
        self.pwms = []
        self.uart = None

    def Pin(self, *a, **kw):
        return Pin(*a, **kw)

    def PWM(self, pin, **kw):
        p = PWM(pin, **kw)
        self.pwms.append(p)
        return p

    def UART(self, id=0, **kw):
        kw.setdefault("rxbuf", self.rxbuf)
        self.uart = UART(id, **kw)
        return self.uart
