"""The demo's serial link: a pseudo-terminal pair, a fault injector, and the unit's packet streamer.

    from host.demo.link import LinkPty, Faults, Streamer
    link = LinkPty().open()                       # link.path is the unit's serial port
    faults = Faults(rate=0.01, seed=3, vanish=[(4.0, 5.2)])   # per-byte damage, port gone 4.0..5.2 s
    st = Streamer(link, header, faults, clock=lambda: sim[0])
    st(k, t_s, values, codes)                     # a CaptureLoop output: one FRAME packet per frame
    data = link.read_pending()                    # what arrived at the other end of the wire

The wire carries protocol/packets.py packets (COBS + CRC-32): HELLO and the staff header
(rows only) first and again every `header_every` frames, then one FRAME8/FRAME16 per captured
frame. Faults damage bytes between the unit's encoder and the pty: bit flips, dropped bytes,
inserted garbage (rate/3 each, seeded), and windows of simulated time in which the port is
gone (the pty pair is closed; writes fail with OSError and are counted; it comes back at a new
path, like a USB adapter that re-enumerates). Streamer.sent maps (seq, time_us) -> codes, the
truth against which a receiver's delivered frames are checked.
"""

import os
import random
import select
import time
import tty

from protocol import packets as pk, staffheader


class LinkPty:
    """A pty pair: the unit writes on the slave (path), the far end reads the master.

    Writes never block: when the pty's buffer is full, on_full() (the far end's reader) is
    called to drain it. `pending` counts bytes written and not yet read by read_pending().
    """

    def __init__(self, on_full=None):
        self.master = self.slave = None
        self.path = None
        self.generation = 0
        self.pending = 0
        self.on_full = on_full

    def open(self):
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        os.set_blocking(self.slave, False)
        self.path = os.ttyname(self.slave)
        self.generation += 1
        self.pending = 0
        return self

    @property
    def up(self):
        return self.master is not None

    def write(self, data):
        if self.slave is None:
            raise OSError("%s: port is gone" % (self.path or "link"))
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.slave, view)
            except BlockingIOError:
                if self.on_full is not None:
                    self.on_full()
                else:
                    select.select([], [self.slave], [], 5.0)
                continue
            self.pending += n
            view = view[n:]
        return len(data)

    def read_pending(self, timeout_s=5.0):
        """Every byte written so far and not yet read (fewer only if none come for timeout_s)."""
        out = bytearray()
        while self.pending > 0 and self.master is not None:
            r, _, _ = select.select([self.master], [], [], timeout_s)
            if not r:
                break
            got = os.read(self.master, self.pending)
            self.pending -= len(got)
            out += got
        return bytes(out)

    def close(self):
        for fd in (self.master, self.slave):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.master = self.slave = None
        self.pending = 0


class Faults:
    """Seeded byte damage (from start_s of simulated time on) and port-vanish windows
    [(start_s, end_s)]. A link damaged from its first byte never carries the staff header (several
    1000-byte packets), so the robot end would never act; tests start damage once it is up."""

    def __init__(self, rate=0.0, seed=0, vanish=(), start_s=0.0):
        self.rate = float(rate)
        self.start_s = float(start_s)
        self.rng = random.Random(seed)
        self.vanish = [tuple(w) for w in vanish]
        self.counts = {"bit_flips": 0, "dropped_bytes": 0, "garbage_bytes": 0, "vanished_writes": 0}

    def gone(self, t_s):
        return any(a <= t_s < b for a, b in self.vanish)

    def damage(self, data, t_s=None):
        if self.rate <= 0 or (t_s is not None and t_s < self.start_s):
            return data
        rng, rate, out = self.rng, self.rate, bytearray()
        for b in data:
            r = rng.random()
            if r >= rate:
                out.append(b)
            elif r < rate / 3:
                out.append(b ^ (1 << rng.randrange(8)))
                self.counts["bit_flips"] += 1
            elif r < 2 * rate / 3:
                self.counts["dropped_bytes"] += 1
            else:
                n = rng.randrange(1, 9)
                out.append(b)
                out += bytes(rng.randrange(256) for _ in range(n))
                self.counts["garbage_bytes"] += n
        return bytes(out)


class Streamer:
    """The unit's live output to the link: encode, damage (faults), write; errors counted."""

    def __init__(self, link, header, faults=None, clock=None, header_every=150, bits=8):
        self.link = link
        self.faults = faults or Faults()
        self.clock = clock
        self.bits = bits
        self.header_every = header_every
        self.enc = pk.Encoder(clock_us=lambda: 0)
        self.rows_header = staffheader.check(dict(header, skeleton=None))
        self.header_bytes = len(self.enc.hello(0)) + sum(
            len(p) for p in self.enc.header(self.rows_header, 0))
        self.enc.seq = 0
        self.sent = {}                  # (seq, time_us) -> codes of every FRAME encoded
        self.keys = []                  # (seq, time_us) of frame k, in capture order
        self.written_at = {}            # (seq, time_us) -> perf_counter when its bytes left
        self.frames = 0                 # frames handed to the port without an error
        self.write_errors = 0
        self.bytes_written = 0
        self.last_written = 0           # bytes that went into the pty on the last call
        self.frame_bytes = []           # encoded size of each FRAME packet
        self._need_header = True

    def __call__(self, k, t_s, values, codes):
        self.last_written = 0
        t_us = int(round(t_s * 1e6)) % pk.TIME_WRAP_US
        wire = b""
        if self._need_header or (self.header_every and k % self.header_every == 0):
            wire += self._header_packets(t_us)
        seq = self.enc.seq
        pkt = self.enc.frame(codes, bits=self.bits, time_us=t_us)
        self.sent[(seq, t_us)] = list(codes)
        self.keys.append((seq, t_us))
        self.frame_bytes.append(len(pkt))
        wire += pkt
        if self.faults.gone(t_s):
            if self.link.up:
                self.link.close()                     # the adapter is unplugged
            self.faults.counts["vanished_writes"] += 1
            self.write_errors += 1
            self._need_header = True
            return
        if not self.link.up:
            self.link.open()                          # plugged back in, at a new path
        data = self.faults.damage(wire, t_s)
        self.link.write(data)
        self._need_header = False
        self.last_written = len(data)
        self.written_at[(seq, t_us)] = time.perf_counter()
        self.bytes_written += len(data)
        self.frames += 1

    def _header_packets(self, t_us):
        return b"".join([self.enc.hello(t_us)] + self.enc.header(self.rows_header, t_us))
