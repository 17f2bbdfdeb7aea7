"""Native driver: our own FRAME packets (protocol/packets.py) to a receiver of our own.

    from device.servo.native import Native
    drv = Native(serial.serial_for_url("/dev/ttyACM0", baudrate=115200), bits=16)
    drv.start([(0, servo0), (1, servo1)])     # HELLO + HEADER: one row per servo, pulse in us
    drv.send_positions([(0, 1500), (1, 1700)])    # one FRAME16 packet
    drv.torque_off([0, 1])                    # a FRAME with every value missing + HEARTBEAT failsafe

The header's rows are the servos in start() order, unit "us", range = each servo's min..max,
so the receiver can drive PWM directly. A missing value means "no pulse" to the receiver.
"""

from protocol import packets as pk, staffcodec as sc, staffheader
from device.servo.base import Driver


class Native(Driver):
    NAME = "native"
    UNITS = "us"
    BAUD = 115200

    def __init__(self, port, bits=16, fps=50.0):
        Driver.__init__(self, port)
        self.bits = bits
        self.fps = fps
        self.enc = pk.Encoder()
        self.rows = []            # (id, lo, hi)
        self._index = {}

    def start(self, servos):
        self.rows = []
        for sid, s in servos:
            self.rows.append((sid, float(s.get("min", 500)), float(s.get("max", 2500))))
        self._index = dict((r[0], i) for i, r in enumerate(self.rows))
        h = staffheader.make([{"name": str(sid), "unit": "us", "lo": lo, "hi": max(hi, lo + 1)}
                              for sid, lo, hi in self.rows], fps=self.fps, bits=self.bits)
        self.write(self.enc.hello() + b"".join(self.enc.header(h)))

    def encode_positions(self, cmds):
        if not self.rows:
            self.rows = [(i, 500.0, 2500.0) for i, _ in cmds]
            self._index = dict((r[0], i) for i, r in enumerate(self.rows))
        codes = [None] * len(self.rows)
        for sid, v in cmds:
            i = self._index.get(sid)
            if i is not None:
                _, lo, hi = self.rows[i]
                codes[i] = sc.encode(v, lo, max(hi, lo + 1), self.bits)
        return self.enc.frame(codes, self.bits)

    def frame_bytes(self, n):
        return len(pk.encode("FRAME8" if self.bits == 8 else "FRAME16", 0, 0, (), b"\x01" * (n * self.bits // 8)))

    def send_positions(self, cmds):
        self.write(self.encode_positions(cmds))
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)

    def heartbeat(self, uptime_ms, state):
        self.write(self.enc.heartbeat(uptime_ms, self.stats["frames"], self.stats["errors"], state))

    def torque_off(self, ids):
        self.write(self.enc.frame([None] * max(1, len(self.rows)), self.bits)
                   + self.enc.heartbeat(0, self.stats["frames"], self.stats["errors"], pk.STATE_FAILSAFE))
        return True
