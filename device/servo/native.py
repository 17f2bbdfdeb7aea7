"""Native driver: our own FRAME packets (protocol/packets.py) to a receiver of our own.

    from device.servo.native import Native
    drv = Native(serial.serial_for_url("/dev/ttyACM0", baudrate=115200, write_timeout=0), bits=16)
    drv.start([(0, servo0), (1, servo1)])     # link header: one row per servo, pulse in us
    drv.send_positions([(0, 1500), (1, 1700)])    # one FRAME16 packet (or skipped whole)
    drv.torque_off([0, 1])                    # a FRAME with every value missing: PWM duty 0

Everything goes through the one paced streamer (device/servo/linkstream.py): the compact header
is repeated every second and whenever the receiver asks (so a receiver that browns out maps
its rows again), frames that the line cannot carry in time are skipped whole. The header's rows
are the servos in start() order, range = each servo's min..max in us, so the receiver can drive
PWM directly. A frame with every value missing makes the receiver stop the pulses (torque off).
"""

from protocol import linkheader, packets as pk, staffcodec as sc
from device.servo.base import Driver
from device.servo.linkstream import LinkStreamer
from device.servo.paced import default_clock


class Native(Driver):
    NAME = "native"
    UNITS = "us"
    BAUD = 115200
    TORQUE_OFF_RETRY = True       # torque_off() says False when the line had no room yet

    def __init__(self, port, bits=16, fps=50.0, baud=None, clock=None, buffer_bytes=4096):
        Driver.__init__(self, port)
        self.bits = bits
        self.fps = fps
        self.baud = baud or getattr(port, "baudrate", None) or self.BAUD
        self.clock = clock or default_clock()
        self.buffer_bytes = buffer_bytes
        self.enc = pk.Encoder()
        self.link = None
        self.rows = []            # (id, lo, hi)
        self._index = {}

    def start(self, servos):
        self.rows = []
        for sid, s in servos:
            self.rows.append((sid, float(s.get("min", 500)), float(s.get("max", 2500))))
        self._open()

    def _open(self):
        self._index = dict((r[0], i) for i, r in enumerate(self.rows))
        blob = linkheader.encode([(str(sid), lo, max(hi, lo + 1)) for sid, lo, hi in self.rows],
                                 self.bits, self.fps)
        if self.link is None:
            self.link = LinkStreamer(self.port, blob, self.bits, baud=self.baud, clock=self.clock,
                                     buffer_bytes=self.buffer_bytes, heartbeat_s=0)
            self.enc = self.link.enc
        else:
            self.link.set_header(blob, self.bits)
        self.link.poll()

    def _codes(self, cmds):
        if not self.rows:
            self.rows = [(i, 500.0, 2500.0) for i, _ in cmds]
            self._open()
        codes = [None] * len(self.rows)
        for sid, v in cmds:
            i = self._index.get(sid)
            if i is not None:
                _, lo, hi = self.rows[i]
                codes[i] = sc.encode(v, lo, max(hi, lo + 1), self.bits)
        return codes

    def encode_positions(self, cmds):
        return self.enc.frame(self._codes(cmds), self.bits)

    def frame_bytes(self, n):
        return len(pk.encode("FRAME8" if self.bits == 8 else "FRAME16", 0, 0, (), b"\x01" * (n * self.bits // 8)))

    def send_positions(self, cmds):
        sent = self.link_frame(self._codes(cmds))
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)
        if not sent:
            self.stats["skipped"] = self.stats.get("skipped", 0) + 1

    def link_frame(self, codes):
        before = self.link.sender.counts["bytes"]
        ok = self.link.frame(codes)
        self.stats["bytes"] += self.link.sender.counts["bytes"] - before
        return ok

    def poll(self):
        """Read the receiver's replies, send a due header: call it when no frame is sent."""
        if self.link is not None:
            self.link.poll()

    def heartbeat(self, uptime_ms, state):
        if self.link is None:
            return
        self.link.poll()
        self.link.sender.send(self.enc.heartbeat(uptime_ms, self.stats["frames"], self.stats["errors"],
                                                 state, self.link.header_id), "heartbeat")

    def torque_off(self, ids):
        """Every value missing: the receiver stops its pulses (PWM duty 0). False when the
        line had no room for it now (the Player retries on every poll until it went)."""
        if self.link is None:
            return False
        codes = [None] * max(1, len(self.rows))
        return self.link_frame(codes)
