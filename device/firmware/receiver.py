"""The servo receiver: staff frames from a UART drive PWM servos, with failsafe and heartbeats.

    import machine
    from device.firmware import config
    from device.firmware.receiver import Receiver
    rx = Receiver(config.load("/receiver.json"), machine)
    rx.run()                      # forever; or rx.poll(now_ms) once per loop in your own code

Per poll: read what the UART has into a preallocated buffer, push it byte by byte through
link.FrameReader (frames: no allocation; other packets: protocol.packets.Decoder), set servo
targets from each valid frame, move the servos under their velocity limits, and apply the
failsafe when no valid frame came for failsafe.timeout_ms (hold, release or home). A HEARTBEAT
or HELLO from the host is answered with a HEARTBEAT (uptime_ms, frames, dropped, state); with
heartbeat_ms > 0 one is also sent unprompted that often. Corrupted bytes never move a servo:
frames are CRC-checked before use, and every pulse is clamped to the servo's limits.
"""

import time

from protocol import packets as pk
from device.firmware.link import FrameReader, FRAME, OTHER
from device.firmware.servos import ServoBank

try:
    _ticks_diff = time.ticks_diff
except AttributeError:  # CPython (the twin): MicroPython's, for ticks_ms wrapping at 2^30 ms

    def _ticks_diff(a, b):
        # signed difference modulo the ticks period: ((a - b + 2^29) & (2^30 - 1)) - 2^29
        return ((a - b + 0x20000000) & 0x3FFFFFFF) - 0x20000000


class Receiver:
    """counters: frames, dropped, gaps, limited, failsafes, no_map, wrong_rows, too_many_rows
    (headers with more rows than nrows_max, refused), headers,
    bad_headers, released, requests, replies, errors (exceptions caught: the loop never ends)."""

    def __init__(self, cfg, machine, uart=None, nrows_max=64, request_ms=100):
        self.cfg = cfg
        if uart is None:
            u = cfg["uart"]
            uart = machine.UART(u["id"], baudrate=u["baud"], tx=machine.Pin(u["tx"]),
                                rx=machine.Pin(u["rx"]), rxbuf=1024)
        self.uart = uart
        self.rx = bytearray(128)
        self.reader = FrameReader(nrows_max)
        self.bank = ServoBank(cfg["servos"], machine)
        # a link header of 64 named rows is < 2.7 KB: 4 KB bounds what a spliced stream can hold
        self.assembler = pk.HeaderAssembler(max_bytes=4096)
        self.encoder = pk.Encoder(clock_us=self._clock_us)
        self.rows = cfg.get("rows")             # fallback row ranges until a HEADER comes
        self.header_id = 0                      # id of the link header in use (0: none)
        self.hbits = cfg.get("bits", 0)         # its bit depth (0: any, with fallback rows)
        self.bits = 0                           # bit depth the bank is mapped for (0: unmapped)
        self.state = pk.STATE_IDLE
        self.timeout_ms = cfg["failsafe"]["timeout_ms"]
        self.action = cfg["failsafe"]["action"]
        self.heartbeat_ms = cfg.get("heartbeat_ms", 0)
        self.request_ms = request_ms
        self.start_ms = None
        self.now_ms = 0
        self.last_frame_ms = None
        self.last_beat_ms = None
        self.last_request_ms = None
        self.failsafes = 0
        self.no_map = 0
        self.wrong_rows = 0
        self.too_many_rows = 0                  # headers with more rows than nrows_max
        self.headers = 0
        self.released = 0
        self.requests = 0
        self.replies = 0
        self.errors = 0

    def _clock_us(self):
        return (self.now_ms * 1000) & 0xFFFFFF

    def counters(self):
        r = self.reader
        a = self.assembler
        return {"frames": r.frames, "dropped": r.dropped(), "gaps": r.gaps,
                "limited": self.bank.limited, "failsafes": self.failsafes, "no_map": self.no_map,
                "wrong_rows": self.wrong_rows, "too_many_rows": self.too_many_rows, "headers": self.headers,
                "bad_headers": a.bad + a.restarts + a.too_big, "released": self.released,
                "requests": self.requests, "replies": self.replies, "errors": self.errors,
                "state": self.state}

    def heartbeat(self):
        """The HEARTBEAT packet bytes reporting this receiver's counters and its header id."""
        up = _ticks_diff(self.now_ms, self.start_ms) if self.start_ms is not None else 0
        return self.encoder.heartbeat(up, self.reader.frames, self.reader.dropped(), self.state,
                                      self.header_id)

    def _other(self, packets):
        for p in packets:
            if p.name == "HEADER":
                h = self.assembler.add(p)       # never raises; bad or spliced headers counted
                if h is not None and len(h["rows"]) > self.reader.nrows_max:
                    # more rows than this receiver's frames can hold: its frames would all be
                    # dropped; refused (counted), the header held so far stays
                    self.too_many_rows += 1
                elif h is not None:
                    self.headers += 1
                    if h["id"] != self.header_id:
                        self.rows = h["rows"]
                        self.hbits = h["bits"]
                        self.header_id = h["id"]
                        self.bits = 0           # remap at the next frame
            elif p.name == "HEARTBEAT" or p.name == "HELLO":
                self.uart.write(self.heartbeat())
                self.replies += 1

    def _request(self, now_ms):
        # no usable header: ask for one, at most every request_ms
        if self.last_request_ms is None or _ticks_diff(now_ms, self.last_request_ms) >= self.request_ms:
            self.last_request_ms = now_ms
            hid, missing = self.assembler.wanted(self.header_id)
            self.uart.write(self.encoder.request_header(hid, missing))
            self.requests += 1

    def poll(self, now_ms):
        """One pass of the loop at time now_ms (the board's ticks_ms). Never raises."""
        try:
            self._poll(now_ms)
        except Exception:           # MemoryError, a driver error, a bug: count it, keep going
            self.errors += 1
            try:
                self._timeout(now_ms)
                self.bank.tick(now_ms, _ticks_diff)
            except Exception:
                self.errors += 1

    def _poll(self, now_ms):
        self.now_ms = now_ms
        if self.start_ms is None:
            self.start_ms = now_ms
        rx = self.rx
        nrx = len(rx)
        uart = self.uart
        reader = self.reader
        # drain what the UART holds, a buffer at a time (bounded: 16 buffers = 2 KB per pass).
        # Only what any() says is there: on the rp2 port readinto(rx) with fewer bytes waiting
        # than rx holds waits timeout_char (>= 1 ms) for more
        for _ in range(16):
            n = uart.any()
            if n <= 0:
                break
            n = uart.readinto(rx, n if n < nrx else nrx)
            if not n:
                break
            i = 0
            while i < n:
                # the bytes of a packet in one call, then its delimiter through push()
                i = reader.scan(rx, i, n)
                if i >= n:
                    break
                kind = reader.push(0)
                i += 1
                if kind == FRAME:
                    self._frame(now_ms)
                elif kind == OTHER:
                    self._other(reader.packets)
            if n < nrx:
                break
        self._timeout(now_ms)
        self.bank.tick(now_ms, _ticks_diff)
        if self.heartbeat_ms and (self.last_beat_ms is None or
                                  _ticks_diff(now_ms, self.last_beat_ms) >= self.heartbeat_ms):
            self.last_beat_ms = now_ms
            self.uart.write(self.heartbeat())

    def _timeout(self, now_ms):
        # from every state but failsafe: no valid frame for timeout_ms (or none since start)
        if self.state != pk.STATE_FAILSAFE:
            since = self.last_frame_ms if self.last_frame_ms is not None else self.start_ms
            if since is not None and _ticks_diff(now_ms, since) > self.timeout_ms:
                self._failsafe()

    def _frame(self, now_ms):
        r = self.reader
        rows = self.rows
        nrows = r.nrows
        missing = r.missing
        every = True
        for i in range(nrows):
            if not missing[i]:
                every = False
                break
        if every:
            # every value missing: the sender's torque off (and our failsafe: no pulses), obeyed
            # whatever header we hold (it carries no value to map: a sender that restarted with
            # another header must still be able to release the servos)
            self.last_frame_ms = now_ms
            self.bank.release()
            self.released += 1
            self.state = pk.STATE_FAILSAFE
            return
        if rows is None:
            self.no_map += 1
            self._request(now_ms)
            return
        if r.nrows != len(rows) or (self.hbits and r.bits != self.hbits):
            # a frame of another header (its row count or depth): never mapped onto this one
            self.wrong_rows += 1
            self._request(now_ms)
            return
        if r.bits != self.bits:
            self.bank.map_rows(rows, r.bits)
            self.bits = r.bits
        self.last_frame_ms = now_ms
        self.bank.set_targets(r.codes, missing, nrows)
        self.state = pk.STATE_STREAMING

    def _failsafe(self):
        self.state = pk.STATE_FAILSAFE
        self.failsafes += 1
        if self.action == "release":
            self.bank.release()
        elif self.action == "home":
            self.bank.go_home()
        else:
            self.bank.hold()

    def run(self):
        """Loop forever on the board's clock, at most one pass per millisecond: a pass in the
        same ms as the last would tick with dt = 0 (a servo just given a target would get one
        pulse where it was); the CPython twin polls on a 1 ms grid."""
        last = None
        while True:
            now = time.ticks_ms()
            if now != last:
                last = now
                self.poll(now)
            if not self.uart.any():
                time.sleep_ms(1)
            elif time.ticks_ms() == last:
                time.sleep_us(100)


def main(path="/receiver.json"):
    import machine
    from device.firmware import config

    Receiver(config.load(path), machine).run()
