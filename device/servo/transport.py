"""A serial port that survives being unplugged: writes fail (OSError, counted) while it is gone,
and it reopens itself, at most every retry_s, once it is back.

    port = ReconnectingPort("/dev/ttyACM0", baud=115200)      # or a callable returning the path
    drv = Maestro(port)                                        # drivers take it like a Serial

    port = reopening(first_port, reopen, "the servo bus")       # the first port already open
    port.ensure()                                              # reopen now if it is due

Its `timeout` and `write_timeout` are the open port's, kept for the one opened next (a driver's
packet deadline sets timeout: device/servo/base.py). Only for the host side (pyserial); a
MicroPython board's UART does not go away.
"""

import time

from device.servo.drivers import open_port


class ReconnectingPort:
    def __init__(self, url, baud=115200, timeout_s=0.1, retry_s=0.5, clock=None, opener=None,
                 drain=True):
        self._url = url
        self.drain = drain          # flush() (tcdrain) after each write; a servo bus: False
        self.baud = baud
        self.timeout_s = timeout_s
        self.retry_s = retry_s
        self.clock = clock or time.monotonic
        self._open = opener or open_port
        self.port = None
        self.next_try = 0.0
        self.disconnects = 0
        self.reconnects = 0
        self.failures = 0           # reopen attempts that failed (the port still gone)
        self._settings = {}         # timeout, write_timeout set on us: the port's, this and next
        self._ensure(force=True)

    def _get(self, name, default):
        if self.port is not None:
            return getattr(self.port, name, default)
        return self._settings.get(name, default)

    def _set(self, name, value):
        self._settings[name] = value
        if self.port is not None:
            try:
                setattr(self.port, name, value)
            except Exception:       # (a tty gone while set: found lost at its next use)
                pass

    timeout = property(lambda self: self._get("timeout", self.timeout_s),
                       lambda self, v: self._set("timeout", v))
    write_timeout = property(lambda self: self._get("write_timeout", None),
                             lambda self, v: self._set("write_timeout", v))

    def ensure(self):
        """True if the port is open, after an attempt to reopen it when one is due (retry_s)."""
        return self._ensure()

    def url(self):
        return self._url() if callable(self._url) else self._url

    def _ensure(self, force=False):
        if self.port is not None:
            return True
        now = self.clock()
        if not force and now < self.next_try:
            return False
        self.next_try = now + self.retry_s
        try:
            self.port = self._open(self.url(), self.baud, self.timeout_s)
        except (OSError, ValueError):
            self.port = None
            if not force:
                self.failures += 1
            return False
        for name, value in self._settings.items():
            try:
                setattr(self.port, name, value)
            except Exception:
                pass
        if not force:
            self.reconnects += 1
        return True

    def _lost(self):
        self.disconnects += 1
        try:
            self.port.close()
        except Exception:
            pass
        self.port = None
        self.next_try = self.clock() + self.retry_s

    def write(self, data):
        if not self._ensure():
            raise OSError("%s: port is gone (waiting to reconnect)" % self.url())
        try:
            n = self.port.write(data)
            if self.drain:
                self.port.flush()
            return n
        except Exception as e:      # serial.SerialException, OSError (EIO), termios.error
            self._lost()
            raise OSError("%s: port lost: %s" % (self.url(), e))

    def read(self, n=1):
        if not self._ensure():
            return b""
        try:
            return self.port.read(n)
        except Exception:
            self._lost()
            return b""

    @property
    def in_waiting(self):
        """Bytes waiting to be read; 0 while the port is gone (a port that fails here is lost)."""
        if not self._ensure():
            return 0
        try:
            return self.port.in_waiting
        except Exception:
            self._lost()
            return 0

    def reset_input_buffer(self):
        if self.port is not None:
            try:
                self.port.reset_input_buffer()
            except Exception:
                self._lost()

    def close(self):
        if self.port is not None:
            try:
                self.port.close()
            finally:
                self.port = None


def reopening(first, reopen, what, retry_s=0.5, clock=None, timeout_s=0.1, baud=115200,
              drain=True):
    """A ReconnectingPort named what (its errors say it) whose first port is first (already
    open: an open that fails at the start is the caller's one-line error) and which opens the
    next with reopen(), at most every retry_s."""
    pending = [first]

    def opener(url, baud, timeout):
        return pending.pop() if pending else reopen()
    return ReconnectingPort(what, baud=baud, timeout_s=timeout_s, retry_s=retry_s, clock=clock,
                            opener=opener, drain=drain)
