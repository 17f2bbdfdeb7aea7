"""The serial twin: a pseudo-terminal whose far end is a UART line paced at the baud rate, behind
a driver buffer of the real size, with seeded faults (damaged bytes, a pulled cable).

    twin = SerialTwin(baud=115200, buffer_bytes=4096, clock=lambda: sim_t[0],
                      faults=LineFaults(rate=0.005, seed=1, unplug=[(4.0, 5.0)]))
    port = serial.serial_for_url(twin.path, baudrate=115200, timeout=0, write_timeout=0)
    port.write(packet)                 # the product writes its side like any serial port
    got = twin.pump()                  # bytes that have crossed the line by clock(), to the far end
    twin.send_back(reply)              # the far end's bytes, paced the same way back to the port

Bytes take their real time: 10 bits a byte (8N1) at `baud` of `clock` seconds (a fake clock in
tests and the demo, so no sleeps). The driver's buffer holds buffer_bytes (4 KiB: the Linux
serial core's transmit ring, UART_XMIT_SIZE; an FT232R has 256 B + the USB host's queue):
a Linux pty takes about 20 KiB before write() says EAGAIN, so the twin enforces the real size
itself: what is written beyond it is lost and counted (`overrun_bytes`), which is harsher than
a real driver (that would return a short write), so a sender that passes here fits on the
hardware. pump() reads the pty at the clock's time: a write is taken as made then, never earlier.
The kernel hands a pty's bytes to the reader asynchronously (a work queue), so a write may be
seen one pump later than it was made: runs on a loaded machine can differ by that much.
Faults act on the line, after the buffer: each byte with probability rate is flipped, dropped
or followed by 1-8 garbage bytes (rate/3 each); in an unplug window nothing crosses either way
(the cable is out; what drains from the buffer meanwhile is lost, as on a real line).
"""

import os
import random
import tty

from device.servo.emulate.pty import close_fds

BITS_PER_BYTE = 10


class LineFaults:
    def __init__(self, rate=0.0, seed=0, unplug=(), start_s=0.0, keep_hits=False):
        self.rate = float(rate)
        self.keep_hits = keep_hits
        self.hits = []              # with keep_hits: offsets (in the line's byte stream) harmed
        self.start_s = float(start_s)
        self.rng = random.Random(seed)
        self.unplug = [tuple(w) for w in unplug]
        self.counts = {"bit_flips": 0, "dropped_bytes": 0, "garbage_bytes": 0, "unplugged_bytes": 0}

    def gone(self, t_s):
        for a, b in self.unplug:
            if a <= t_s < b:
                return True
        return False

    def damage(self, data, t_s, offset=0):
        """The bytes as the far end gets them; offset: the first byte's place in the stream."""
        if self.gone(t_s):
            self.counts["unplugged_bytes"] += len(data)
            if self.keep_hits:
                self.hits.extend(range(offset, offset + len(data)))
            return b""
        if self.rate <= 0 or t_s < self.start_s:
            return data
        rng, rate, out = self.rng, self.rate, bytearray()
        for i, b in enumerate(data):
            r = rng.random()
            if r >= rate:
                out.append(b)
                continue
            if r < rate / 3:
                out.append(b ^ (1 << rng.randrange(8)))
                self.counts["bit_flips"] += 1
            elif r < 2 * rate / 3:
                self.counts["dropped_bytes"] += 1
            else:
                n = rng.randrange(1, 9)
                out.append(b)
                out += bytes(rng.randrange(256) for _ in range(n))
                self.counts["garbage_bytes"] += n
                if self.keep_hits:
                    self.hits.append(offset + i + 1)     # garbage lands before the next byte
                continue
            if self.keep_hits:
                self.hits.append(offset + i)
        return bytes(out)


class WireFifo:
    """Bytes waiting for a UART line, leaving at bytes_per_s: carry(dt_s) returns those that
    crossed the line in dt_s (whole bytes; the line time of a partial byte is kept for the next
    step, and an idle line stores no time). The twin's both directions, and tools that pace a
    line without a pty (tools/replay_live.py), use this one rule.

        w = WireFifo(11520.0); w.fifo += packet; got = w.carry(0.005)   # 57 bytes crossed
    """

    def __init__(self, bytes_per_s):
        self.bytes_per_s = float(bytes_per_s)
        self.fifo = bytearray()
        self.credit = 0.0             # line time not yet used, in bytes

    def carry(self, dt_s):
        # credit += dt x bytes/s; n = min(queued, floor(credit)) bytes cross
        self.credit += dt_s * self.bytes_per_s
        n = min(len(self.fifo), int(self.credit))
        self.credit -= n
        if not self.fifo:
            self.credit = 0.0         # an idle line stores no time
        out = bytes(self.fifo[:n])
        del self.fifo[:n]
        return out


class SerialTwin:
    def __init__(self, baud=115200, buffer_bytes=4096, clock=None, faults=None):
        import time
        self.baud = baud
        self.bytes_per_s = float(baud) / BITS_PER_BYTE
        self.buffer_bytes = buffer_bytes
        self.clock = clock or time.monotonic
        self.faults = faults or LineFaults()
        self.master = self.slave = None
        self.path = None
        self._line = WireFifo(self.bytes_per_s)   # the driver's buffer, not yet on the line
        self._fifo = self._line.fifo
        self._backline = WireFifo(self.bytes_per_s)   # the far end's bytes still to cross
        self._back = self._backline.fifo
        self._t = None
        self._out_off = 0               # bytes that have left the buffer onto the line
        self.counts = {"written": 0, "delivered": 0, "overrun_bytes": 0, "max_fill": 0,
                       "back_bytes": 0}
        self.open()

    def open(self):
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self.slave)
        return self

    def fill(self):
        return len(self._fifo)

    def read_written(self, n, timeout_s=5.0):
        """Tests: the next n bytes the product wrote, raw (the kernel hands a pty's bytes over
        asynchronously, so this waits on them, with select, up to timeout_s for each chunk)."""
        import select
        got = bytearray()
        while len(got) < n:
            r, _, _ = select.select([self.master], [], [], timeout_s)
            if not r:
                break
            got += self._read_master()
        return bytes(got)

    def _read_master(self):
        got = bytearray()
        while True:
            try:
                b = os.read(self.master, 65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:         # no slave open (EIO): nothing written
                break
            if not b:
                break
            got += b
        return got

    def pump(self):
        """Advance the line to clock(): returns the bytes the far end received meanwhile."""
        now = self.clock()
        dt = 0.0 if self._t is None or now < self._t else now - self._t
        self._t = now
        # what the line carried since the last pump, out of the buffer as it was
        out = self._line.carry(dt)
        off = self._out_off
        self._out_off += len(out)
        # then what the product wrote (taken as written now), into a buffer of the real size
        new = self._read_master()
        self.counts["written"] += len(new)
        room = self.buffer_bytes - len(self._fifo)
        if len(new) > room:
            self.counts["overrun_bytes"] += len(new) - room
            new = new[:max(room, 0)]
        self._fifo += new
        if len(self._fifo) > self.counts["max_fill"]:
            self.counts["max_fill"] = len(self._fifo)
        # the far end's replies, paced the same way
        crossed = self._backline.carry(dt)
        if crossed:
            back = self.faults.damage(crossed, now)
            if back:
                try:
                    os.write(self.master, back)
                    self.counts["back_bytes"] += len(back)
                except OSError:
                    pass
        out = self.faults.damage(out, now, off)
        self.counts["delivered"] += len(out)
        return out

    def send_back(self, data):
        """Bytes the far end (the receiver) transmits towards the product's port."""
        if data:
            self._back += data

    def idle(self):
        """True when nothing waits in either direction (the line is quiet)."""
        return not self._fifo and not self._back

    def close(self):
        close_fds(self.master, self.slave)
        self.master = self.slave = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
