"""The one live-link streamer: frames, the compact header on a schedule and on request, heartbeats,
paced to the baud rate (device/servo/paced.py). Used by capture's PacketOutput and Native.

    ls = LinkStreamer(port, staff_header, baud=115200, clock=time.monotonic)
    ls.frame(codes, t_s)           # one FRAME (True) or skipped whole (False); header parts first
    ls.poll()                      # read the receiver's REQUEST/HEARTBEAT; due header, heartbeat
    ls.counts()                    # frames_sent, frames_skipped, header_repeats, header_requests, ...

Wire: protocol/packets.py. HELLO and the link header (protocol/linkheader.py, cut into parts of
part_bytes so frames interleave) go first, then again every header_every_s (longer on a slow
line: the repeats take at most HEADER_SHARE of it, repeat_s), and at once when
the receiver asks (a REQUEST, or a HEARTBEAT naming another header id than ours, e.g. 0 after
a reset). Frames are stamped with their capture time t_s (24-bit microseconds). record=True
keeps (seq, time_us) -> codes of every frame sent (the truth a test checks a receiver against)
and -> (first, end) byte offsets in the written stream (to tell which frames line faults hit).
"""

from protocol import linkheader, packets as pk
from protocol.errors import FormatError
from device.servo.paced import PacedSender, default_clock


HEADER_SHARE = 0.2      # the most of the line's time the scheduled header repeats take


class LinkStreamer:
    def __init__(self, port, header, bits=None, baud=115200, buffer_bytes=4096, clock=None,
                 header_every_s=1.0, heartbeat_s=1.0, part_bytes=64, max_delay_s=0.1,
                 record=False):
        self.port = port
        self.clock = clock or default_clock()
        self.sender = PacedSender(port, baud, buffer_bytes, max_delay_s, self.clock)
        self.enc = pk.Encoder(clock_us=lambda: int(self.clock() * 1e6))
        self.decoder = pk.Decoder()
        self.header_every_s = header_every_s
        self.heartbeat_s = heartbeat_s
        self.part_bytes = part_bytes
        self.record = record
        self.sent = {}
        self.offsets = {}
        self._queue = []            # header parts still to send (indices)
        self._urgent = True
        self._last_header = None
        self._last_hb = None
        self.n = {"frames_sent": 0, "frames_skipped": 0, "header_repeats": 0,
                  "header_parts_sent": 0, "header_requests": 0, "parts_resent": 0, "heartbeats": 0,
                  "receiver_heartbeats": 0}
        self.receiver = None        # fields of the receiver's last HEARTBEAT
        self.set_header(header, bits)

    def set_header(self, header, bits=None):
        """A new header (staff header dict, JSON or link header blob): sent before the next frame."""
        self.blob = pk.link_blob(header)
        h = linkheader.decode(self.blob)
        nrows = len(h["rows"])
        if bits and bits != h["bits"]:
            raise FormatError("link: frames of %d bits under a %d-bit header (the receiver would "
                              "drop every one)" % (bits, h["bits"]))
        bits = h["bits"]
        # the largest frame (masked): rows u16 + mask + codes must fit one packet
        payload = 2 + (nrows + 7) // 8 + nrows * (bits // 8)
        if payload > pk.MAX_PAYLOAD:
            raise FormatError("link: %d rows at %d bits make %d-byte frames, more than a packet "
                              "carries (%d)" % (nrows, bits, payload, pk.MAX_PAYLOAD))
        self.header_id = h["id"]
        self.nrows = nrows
        self.bits = bits
        room = max(1, min(self.part_bytes, pk.MAX_PAYLOAD - pk.BY_NAME["HEADER"].size))
        self._tails = [self.blob[i:i + room] for i in range(0, len(self.blob), room)]
        # the scheduled repeat takes at most HEADER_SHARE of the line: its period is
        # header_every_s, or the header's line time / HEADER_SHARE when that is longer (at 9600
        # baud a 64-row header is ~1.1 s of line: repeated every second it left no room for
        # frames); a receiver that lacks it asks (REQUEST, HEARTBEAT), and that goes at once
        line_s = sum(pk.HEAD_SIZE + 10 + len(t) + pk.CRC_SIZE + 4 for t in self._tails) / self.sender.bytes_per_s
        self.repeat_s = max(self.header_every_s or 0.0, line_s / HEADER_SHARE) if self.header_every_s else 0.0
        # the budget holds the whole header and two frames behind it (never above the buffer)
        frame_max = 24 + self.nrows * (self.bits // 8) + self.nrows // 8
        need = len(self.blob) + 30 * (len(self._tails) + 1) + 2 * frame_max
        s = self.sender
        s.budget = min(s.buffer_bytes, max(s.budget, need))
        self._hello = True
        self._urgent = True
        self._starving = False
        self._fresh = True          # this header is not wholly on the line yet: frames wait
        self._frame_len = 0
        self._queue = []            # parts of a previous header still queued: this one instead
        self._due_header(True)

    def reopen(self, port):
        """The same link on a new port (the device came back): HELLO and the header first."""
        self.port = port
        s = self.sender
        s.port = port
        s.fill = 0.0
        s.credit = 0.0
        s._pending = None
        s._resync = True            # a 0x00 first: whatever the receiver holds of a cut packet ends
        self.decoder = pk.Decoder()
        self._hello = True
        self._queue = []
        self._due_header(True)

    def _due_header(self, urgent=False):
        self._urgent = self._urgent or urgent
        if self._queue:
            return
        self._queue = list(range(len(self._tails)))
        self._last_header = self.clock()
        self.n["header_repeats"] += 1

    def _due_parts(self, mask):
        # the parts a receiver assembling our header still lacks (bit 31: 31 and up)
        want = [i for i in range(len(self._tails)) if mask & (1 << (i if i < 31 else 31))]
        for i in want:
            if i not in self._queue:
                self._queue.append(i)
        if want:
            self._urgent = True
            self.n["parts_resent"] += len(want)

    def _send_header_parts(self, after_bytes=0):
        s = self.sender
        if self._hello:
            if not s.send(self.enc.hello(), "hello"):
                return False
            self._hello = False
        parts = len(self._tails)
        # a scheduled repeat leaves room for the next two frames (it never pushes a frame out);
        # the first header and one the receiver asked for go first
        reserve = 0 if (self._urgent or self._starving) else 2 * self._frame_len
        while self._queue:
            i = self._queue[0]
            tail = self._tails[i]
            need = pk.HEAD_SIZE + 10 + len(tail) + pk.CRC_SIZE + 4 + reserve
            # a scheduled repeat trickles in between frames: a part only onto an idle line, or
            # right behind the frame just sent (after_bytes), so no frame waits behind it (it
            # waited behind the whole header, 100 ms every second at 115200 baud, before); once
            # it has taken 0.25 s (starving) a part goes ahead of each frame within the frames'
            # max_delay_s of queued line time; the first header and a requested one go whole
            if self._urgent:
                budget = None
            elif self._starving:
                budget = max(s.delay_bytes, need)
            else:
                budget = need + after_bytes
            if s.room(budget) < need:
                return False
            s.send(self.enc.packet("HEADER", (self.enc.schema, self.header_id, i, parts), tail), "header",
                   credit=self._urgent)
            self._queue.pop(0)
            self.n["header_parts_sent"] += 1
            if self._starving and not self._urgent:
                self._starving = False      # one part ahead of the frames, then a frame again
                return not self._queue
        self._urgent = False
        self._fresh = False
        return True

    def _read_replies(self):
        read = getattr(self.port, "read", None)
        if read is None:
            return
        for _ in range(8):
            try:
                waiting = getattr(self.port, "in_waiting", 256)
                data = read(min(max(waiting, 0), 4096)) if waiting else b""
            except Exception:
                return
            if not data:
                return
            for p in self.decoder.feed(data):
                if p.name == "REQUEST" and p.fields["what"] == pk.REQ_HEADER:
                    self.n["header_requests"] += 1
                    f = p.fields
                    if f["header_id"] == self.header_id and f["missing"] != pk.ALL_PARTS:
                        self._due_parts(f["missing"])     # only what it lacks (0: nothing)
                    else:
                        self._due_header(True)
                elif p.name == "HEARTBEAT":
                    self.n["receiver_heartbeats"] += 1
                    self.receiver = p.fields
                    if p.fields["header_id"] != self.header_id:
                        self.n["header_requests"] += 1
                        self._due_header(True)

    def _scheduled(self):
        """Parts of a scheduled repeat are queued (not the first header, not asked for, not
        starving): they go behind frames, not ahead of them."""
        return bool(self._queue) and not self._urgent and not self._starving

    def poll(self, _defer=False):
        """Read what the receiver said; send due header parts and the heartbeat. Never blocks.
        (_defer: frame() sends a scheduled repeat's parts behind its frame instead.)"""
        self._read_replies()
        now = self.clock()
        # a clock that stepped back (an injected clock, a wrapped tick count): the marks follow
        # it, so the repeats and heartbeats go on at their period instead of stopping
        if now < self._last_header:
            self._last_header = now - self.repeat_s
        if self._last_hb is not None and now < self._last_hb:
            self._last_hb = None
        if self.repeat_s and now - self._last_header >= self.repeat_s:
            self._due_header()
        # a full line never starves the repeat: past 0.25 s its parts go ahead of the frames one
        # at a time, each within the frames' max_delay_s of queued line time (a frame that would
        # take a waiting part's room is skipped whole), so the repeat goes on and no frame waits
        # behind a header burst
        self._starving = bool(self._queue) and not self._urgent and now - self._last_header > 0.25
        if not (_defer and self._scheduled()):
            self._send_header_parts()
        if self.heartbeat_s and (self._last_hb is None or now - self._last_hb >= self.heartbeat_s):
            hb = self.enc.heartbeat(int(now * 1000), self.n["frames_sent"], self.n["frames_skipped"],
                                    pk.STATE_STREAMING, self.header_id)
            if self.sender.send(hb, "heartbeat"):
                self._last_hb = now
                self.n["heartbeats"] += 1

    def frame(self, codes, t_s=None):
        """Send one frame (codes in header row order, None = missing), stamped t_s (default now)."""
        self.poll(_defer=True)
        t_us = int(round((self.clock() if t_s is None else t_s) * 1e6)) % pk.TIME_WRAP_US
        seq = self.enc.seq
        pkt = self.enc.frame(codes, self.bits, time_us=t_us)
        self._frame_len = len(pkt)
        before = self.sender.counts["bytes"]
        # a frame of a header not yet wholly sent would be read with the receiver's old ranges
        # (same row count): it waits, skipped whole, until that header is on the line
        if not (self._fresh and self._queue) and not self._starving and \
                self.sender.send(pkt, "frame", self.sender.frame_budget(), self.sender.in_burst()):
            self.n["frames_sent"] += 1
            if self.record:
                self.sent[(seq, t_us)] = list(codes)
                # its bytes' place in the stream written (the 0x00 before it included)
                self.offsets[(seq, t_us)] = (before - 1, before + len(pkt))
            if self._scheduled():
                self._send_header_parts(self.sender.counts["bytes"] - before)
            return True
        self.n["frames_skipped"] += 1
        if self._scheduled():
            self._send_header_parts()
        return False

    def counts(self):
        out = dict(self.n)
        out.update(self.sender.counts)
        return out
