"""A serial port that survives being unplugged: writes fail (OSError, counted) while it is gone,
and it reopens itself, at most every retry_s, once it is back.

    port = ReconnectingPort("/dev/ttyACM0", baud=115200)      # or a callable returning the path
    drv = Maestro(port)                                        # drivers take it like a Serial

Only for the host side (pyserial); a MicroPython board's UART does not go away.
"""

import time

from device.servo.drivers import open_port


class ReconnectingPort:
    def __init__(self, url, baud=115200, timeout_s=0.1, retry_s=0.5, clock=None, opener=None):
        self._url = url
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
        self._ensure(force=True)

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
