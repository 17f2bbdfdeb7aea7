"""A paced, never-blocking packet writer for a serial port: whole packets or none.

    ps = PacedSender(port, baud=115200, buffer_bytes=4096, clock=time.monotonic)
    ps.send(packet_bytes, "frame")       # True: handed to the driver whole; False: skipped whole
    ps.counts                            # {"sent_frame": .., "skipped_frame": .., "short_writes": ..}

The port is opened non-blocking (pyserial write_timeout=0: write() returns what the driver took).
The sender keeps a model of the driver's transmit buffer: it drains at baud / bits_per_byte
bytes a second of `clock` (10 bits a byte for 8N1), and a packet is written only if it fits in
the budget = min(buffer_bytes, max_delay_s of line time) on top of what is still queued, so
nothing waits more than max_delay_s in the driver and the capture loop never blocks. When the
driver takes less than a whole packet anyway (a slower line than modelled, a full USB FIFO),
the rest is kept and completed first: nothing else is written until it is, and a packet that
arrives meanwhile is skipped whole, so the line never carries a packet cut by another. After a
write error (port gone) the next packet starts with a 0x00, so the receiver drops the torn one.
"""

import time

BITS_PER_BYTE = 10          # 8N1: start + 8 data + stop


def default_clock():
    """Seconds of a monotonic clock: time.monotonic, or MicroPython's ticks_ms."""
    if hasattr(time, "monotonic"):
        return time.monotonic
    return lambda: time.ticks_ms() / 1000.0


class PacedSender:
    def __init__(self, port, baud=115200, buffer_bytes=4096, max_delay_s=0.1, clock=None,
                 bits_per_byte=BITS_PER_BYTE, min_budget=1100):
        self.port = port
        self.baud = baud
        self.bytes_per_s = float(baud) / bits_per_byte
        self.buffer_bytes = buffer_bytes
        # never below one whole header part (+ a frame), never above the driver's buffer
        self.budget = min(buffer_bytes, max(min_budget, int(max_delay_s * self.bytes_per_s)))
        self.clock = clock or default_clock()
        self.fill = 0.0                 # modelled bytes still in the driver's buffer
        self._t = None
        self._pending = None            # rest of a packet the driver took only part of
        self._resync = False
        self.counts = {"bytes": 0, "short_writes": 0, "write_errors": 0}

    def _count(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def _drain(self):
        now = self.clock()
        if self._t is not None and now > self._t:
            self.fill = max(0.0, self.fill - (now - self._t) * self.bytes_per_s)
        self._t = now

    def room(self):
        """Bytes that can be written now without exceeding the budget (0 while a packet is torn)."""
        self._drain()
        if self._pending is not None and not self._flush():
            return 0
        return max(0, int(self.budget - self.fill))

    def _write(self, view):
        try:
            n = self.port.write(view)
        except Exception:           # OSError (port gone), pyserial's timeouts, queue.Full
            self._count("write_errors")
            self._pending = None
            self._resync = True
            return None
        return len(view) if n is None else n

    def _flush(self):
        # complete a packet the driver took only part of; True when nothing is pending
        view = self._pending
        n = self._write(view)
        if n is None:
            return False
        self.fill += n
        self.counts["bytes"] += n
        if n < len(view):
            self._pending = view[n:]
            return False
        self._pending = None
        return True

    def send(self, data, kind="frame"):
        """Write one packet whole (True) or skip it whole (False), counted as sent_/skipped_kind."""
        need = len(data) + (1 if self._resync else 0)
        if self.room() < need:
            self._count("skipped_" + kind)
            return False
        if self._resync:
            data = b"\x00" + data
            self._resync = False
        n = self._write(memoryview(data))
        if n is None:
            self._count("skipped_" + kind)
            return False
        self.fill += n
        self.counts["bytes"] += n
        if n < len(data):
            self._count("short_writes")
            self._pending = memoryview(data)[n:]
        self._count("sent_" + kind)
        return True

    def busy(self):
        """True while a torn packet waits to be completed."""
        return self._pending is not None and not self._flush()
