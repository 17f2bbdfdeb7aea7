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
except AttributeError:  # CPython: plain ints

    def _ticks_diff(a, b):
        return a - b


RXBUF = 4096


class Receiver:
    """counters: frames, dropped, gaps, limited, failsafes, no_map, replies."""

    def __init__(self, cfg, machine, uart=None, nrows_max=64):
        self.cfg = cfg
        if uart is None:
            u = cfg["uart"]
            # rxbuf: a HEADER burst (about 1 KB) arrives faster than a Pico's Python parses it
            # (about 0.25 ms a byte; 115200 baud brings a byte every 87 us): the default
            # 256-byte ring overflowed on the emulated rp2 port and lost the header
            uart = machine.UART(u["id"], baudrate=u["baud"], tx=machine.Pin(u["tx"]),
                                rx=machine.Pin(u["rx"]), rxbuf=RXBUF)
        self.uart = uart
        self.rx = bytearray(128)
        self.reader = FrameReader(nrows_max)
        self.bank = ServoBank(cfg["servos"], machine)
        self.assembler = pk.HeaderAssembler()
        self.encoder = pk.Encoder(clock_us=self._clock_us)
        self.rows = cfg.get("rows")             # fallback row ranges until a HEADER comes
        self.bits = 0
        self.state = pk.STATE_IDLE
        self.timeout_ms = cfg["failsafe"]["timeout_ms"]
        self.action = cfg["failsafe"]["action"]
        self.heartbeat_ms = cfg.get("heartbeat_ms", 0)
        self.start_ms = None
        self.now_ms = 0
        self.last_frame_ms = None
        self.last_beat_ms = None
        self.failsafes = 0
        self.no_map = 0
        self.replies = 0

    def _clock_us(self):
        return (self.now_ms * 1000) & 0xFFFFFF

    def counters(self):
        r = self.reader
        return {"frames": r.frames, "dropped": r.dropped(), "gaps": r.gaps,
                "limited": self.bank.limited, "failsafes": self.failsafes, "no_map": self.no_map,
                "replies": self.replies, "state": self.state}

    def heartbeat(self):
        """The HEARTBEAT packet bytes reporting this receiver's counters."""
        up = _ticks_diff(self.now_ms, self.start_ms) if self.start_ms is not None else 0
        return self.encoder.heartbeat(up, self.reader.frames, self.reader.dropped(), self.state)

    def _other(self, packets):
        for p in packets:
            if p.name == "HEADER":
                h = self.assembler.add(p)
                if h is not None:
                    self.rows = h["rows"]
                    self.bits = 0       # remap at the next frame
            elif p.name == "HEARTBEAT" or p.name == "HELLO":
                self.uart.write(self.heartbeat())
                self.replies += 1

    def poll(self, now_ms):
        """One pass of the loop at time now_ms (the board's ticks_ms)."""
        self.now_ms = now_ms
        if self.start_ms is None:
            self.start_ms = now_ms
        rx = self.rx
        reader = self.reader
        # drain what the UART holds, a buffer at a time (bounded: 16 buffers = 2 KB per pass)
        for _ in range(16):
            n = self.uart.readinto(rx)
            if not n:
                break
            for i in range(n):
                kind = reader.push(rx[i])
                if kind == FRAME:
                    self._frame(now_ms)
                elif kind == OTHER:
                    self._other(reader.packets)
            if n < len(rx):
                break
        if self.state == pk.STATE_STREAMING and \
                _ticks_diff(now_ms, self.last_frame_ms) > self.timeout_ms:
            self._failsafe()
        self.bank.tick(now_ms, _ticks_diff)
        if self.heartbeat_ms and (self.last_beat_ms is None or
                                  _ticks_diff(now_ms, self.last_beat_ms) >= self.heartbeat_ms):
            self.last_beat_ms = now_ms
            self.uart.write(self.heartbeat())

    def _frame(self, now_ms):
        r = self.reader
        if r.bits != self.bits:
            if self.rows is None:
                self.no_map += 1
                return
            self.bank.map_rows(self.rows, r.bits)
            self.bits = r.bits
        self.bank.set_targets(r.codes, r.missing, r.nrows)
        self.last_frame_ms = now_ms
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
        """Loop forever on the board's clock."""
        while True:
            self.poll(time.ticks_ms())
            if not self.uart.any():
                time.sleep_ms(1)


def main(path="/receiver.json"):
    import machine
    from device.firmware import config

    Receiver(config.load(path), machine).run()
