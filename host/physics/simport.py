"""An in-process serial port to a controller emulator, in the twin's simulated time.

    port = SimPort(emu, twin, baud=1000000)
    drv = open_driver("dynamixel", port, clock=port.clock)   # the real driver, its real bytes
    # each byte takes its wire time (10 bits at the baud rate) on the twin's clock: the body
    # moves on while a frame is on the wire, and the emulator acts when the last byte is in
    port.read(27)       # as pyserial's: at once if 27 bytes came, else after port.timeout

No pty, no threads: deterministic. Replies come back after the servo's return delay
(reply_delay_s; XM430 default Return Delay Time 250 x 2 us = 0.5 ms), each byte at the end of its
own wire time. read(n) is pyserial's (serialposix.Serial.read): it returns as soon as n bytes
have arrived, else when `timeout` seconds have passed, with what came; the wait is the twin's
time (the body moves on while the reader blocks: a servo or board that does not answer costs
the reader its timeout, as on the hardware). timeout 0 returns what has arrived at once;
timeout None (pyserial: block until n bytes) waits for bytes that are coming, and is a
RuntimeError when fewer than n ever will (a deterministic twin has nobody else to send them:
it would block for ever). reset_input_buffer drops what has arrived, not a reply still on the
wire (it comes after the flush, as on a tty). `clock()` is the port's own time (continuous,
the twin's steps are 2 ms): the clock a driver's packet deadline reads (device/servo/dynamixel.py).

With usb_s (the host's USB link to the bus adapter) a request reaches the wire at the next USB
frame and a reply's bytes reach the reader at the next frame after they are in: full-speed USB
polls every 1 ms (the OP3's OpenCR is a USB CDC device on its NUC; the SO-101's bus board and a
Maestro are USB serial too). An FTDI adapter (ROBOTIS' U2D2) holds a short reply up to its
latency timer, 16 ms by default (FTDI AN232B-04; ROBOTIS advise setting it to 1 ms): give
usb_s=0.016 for one left at its default.
"""

import math

REPLY_DELAY_S = {"dynamixel": 0.0005,      # XM430 control table 9, default 250 (2 us units)
                 # STS3215: Return Delay Time default 250 x 2 us (LeRobot's feetech.py
                 # configure_motors writes 0; the product's driver leaves it)
                 "feetech": 0.0005}
USB_S = {"dynamixel": 0.001, "feetech": 0.001, "maestro": 0.001}   # full-speed USB frames
_EPS_S = 1e-12
_TOL_S = 1e-10                              # times this close are the same instant


class SimPort:
    def __init__(self, emulator, twin, baud, reply_delay_s=0.0, timeout=0.1, usb_s=0.0):
        self.emu = emulator
        self.usb_s = float(usb_s)
        self.reply_delay_s = reply_delay_s
        self.twin = twin
        self.baud = float(baud or 115200)
        self.byte_s = 10.0 / self.baud          # 8N1: 10 bits a byte
        self._rx = []                           # [t_start_s, bytes]: byte k ends t + (k + 1) byte_s
        self.bus_t_s = 0.0                      # the line is free of bytes from here
        self.t_s = 0.0                          # the port's time (>= the twin's)
        self.bytes_out = 0
        self.bytes_in = 0
        self.timeout = timeout

    def clock(self):
        """The port's time now (s): the twin's, or later within its step."""
        return max(self.t_s, self.twin.time_s)

    def _wait_until(self, t_s):
        # the reader (or writer) blocks until t_s; the body runs on meanwhile
        if t_s > self.t_s:
            self.t_s = t_s
        self.twin.advance_to(t_s)

    def _frame(self, t_s, up):
        """t_s on the USB's frame grid (up: the next frame at or after it; else the last)."""
        if not self.usb_s:
            return t_s
        # (the same absolute tolerance, _TOL_S, as _arrived's: a byte in on a frame is in it)
        k = t_s / self.usb_s
        tol = _TOL_S / self.usb_s
        return (math.ceil(k - tol) if up else math.floor(k + tol)) * self.usb_s

    def _arrived(self, t_s):
        """Bytes the reader has by t_s: in by its last USB frame."""
        t_s = self._frame(t_s, False)
        n = 0
        for t0, data in self._rx:
            k = int((t_s - t0 + _TOL_S) / self.byte_s)
            if k < len(data):
                return n + max(0, k)
            n += len(data)
        return n

    def _time_of(self, n):
        """When the n-th byte waiting (1-based) is in, or None: fewer are coming."""
        for t0, data in self._rx:
            if n <= len(data):
                return self._frame(t0 + n * self.byte_s, True)
            n -= len(data)
        return None

    def _take(self, n):
        out = b""
        while n > 0 and self._rx:
            seg = self._rx[0]
            part = seg[1][:n]
            out += part
            n -= len(part)
            seg[0] += len(part) * self.byte_s
            seg[1] = seg[1][len(part):]
            if not seg[1]:
                self._rx.pop(0)
        return out

    def write(self, b):
        b = bytes(b)
        # t_bus = max(t_bus, next USB frame) + bits / baud: the request waits for the line,
        # then goes out
        self.bus_t_s = max(self.bus_t_s, self._frame(self.clock(), True)) + len(b) * self.byte_s
        self._wait_until(self.bus_t_s)
        self.bytes_out += len(b)
        reply = self.emu.feed(b)
        if reply:
            # the reply starts after the return delay and holds the line for its own wire time
            t0 = self.bus_t_s + self.reply_delay_s
            self._rx.append([t0, bytes(reply)])
            self.bus_t_s = t0 + len(reply) * self.byte_s
        return len(b)

    def read(self, n=1):
        if n <= 0:
            return b""
        now = self.clock()
        have = self._arrived(now)
        if have >= n or self.timeout == 0:
            return self._count(self._take(min(n, have)))
        t_n = self._time_of(n)
        if self.timeout is None:
            if t_n is None:
                raise RuntimeError("SimPort: read(%d) with timeout None would block for ever "
                                   "(%d bytes are coming)" % (n, self._arrived(float("inf"))))
            t = t_n
        else:
            deadline = now + float(self.timeout)
            t = t_n if t_n is not None and t_n <= deadline + _EPS_S else deadline
        self._wait_until(t)
        return self._count(self._take(min(n, self._arrived(t))))

    def _count(self, out):
        self.bytes_in += len(out)
        return out

    @property
    def in_waiting(self):
        return self._arrived(self.clock())

    @property
    def rx(self):
        """Every byte waiting or still on its way (a test's view of the line)."""
        return b"".join(data for _, data in self._rx)

    def reset_input_buffer(self):
        # what has arrived is dropped; a reply still on the wire comes after
        self._take(self._arrived(self.clock()))

    def flush(self):
        pass

    def close(self):
        pass
