"""Lynxmotion SSC-32 / SSC-32U: ASCII commands, group moves that finish together.

    from device.servo.ssc32 import group_move, SSC32
    group_move({5: 1600, 10: 750}, time_ms=2500) == b"#5P1600#10P750T2500\\r"
    SSC32(port).send_positions([(0, 1500), (1, 1600)])   # one group move, T = frame period

Pulse widths in whole microseconds (never floats). No failsafe on the board: torque_off sends
P0 (pulses stop, forum-documented). Queries: Q (done '.' / moving '+'), QPn (pulse/10).
"""

from device.servo.base import Driver


def _item(ch, pw_us, speed=None):
    s = "#%dP%d" % (int(ch), int(pw_us))
    if speed is not None:
        s += "S%d" % int(speed)
    return s


def single(ch, pw_us, speed=None, time_ms=None):
    s = _item(ch, pw_us, speed)
    if time_ms is not None:
        s += "T%d" % int(time_ms)
    return (s + "\r").encode()


def group_move(targets, time_ms=None, speeds=None, speed=None):
    """targets: dict or list of (ch, pw_us) in order; speeds: per-channel S; speed: S for all."""
    items = targets.items() if hasattr(targets, "items") else targets
    s = ""
    for ch, pw in items:
        sp = speed
        if speeds is not None and ch in speeds:
            sp = speeds[ch]
        s += _item(ch, pw, sp)
    if time_ms is not None:
        s += "T%d" % int(time_ms)
    return (s + "\r").encode()


def query_moving():
    return b"Q\r"


def query_pulse(channels):
    if isinstance(channels, int):
        channels = [channels]
    return (" ".join("QP%d" % c for c in channels) + "\r").encode()


def query_analog(inputs):
    return (" ".join("V%s" % c for c in inputs) + "\r").encode()


def pulse_offset(ch, offset_us):
    return ("#%dPO%d\r" % (ch, max(-100, min(100, int(offset_us))))).encode()


def stop(ch):
    return ("STOP%d\r" % ch).encode()


class SSC32(Driver):
    NAME = "ssc32"
    UNITS = "us"
    BAUD = 115200

    def __init__(self, port, time_ms=None):
        Driver.__init__(self, port)
        self.time_ms = time_ms

    def encode_positions(self, cmds):
        return group_move(list(cmds), self.time_ms)

    def send_positions(self, cmds):
        self.write(self.encode_positions(cmds))
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)

    def torque_off(self, ids):
        self.write(group_move([(i, 0) for i in ids]))
        return True

    def get_pulses_us(self, channels):
        if hasattr(self.port, "reset_input_buffer"):
            self.port.reset_input_buffer()
        self.write(query_pulse(channels))
        r = self.read_exact(len(channels))
        return [b * 10 for b in r]

    def is_moving(self):
        self.write(query_moving())
        r = self.read_exact(1)
        return None if not r else r == b"+"
