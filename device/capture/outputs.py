"""The unit's outputs from its configuration: native packets, a servo Player, OSC/VMC/gestures.

    from device.capture.outputs import make_outputs
    outs = make_outputs([{"kind": "packets", "url": "loop://", "baud": 115200},
                         {"kind": "player", "robot": "humanoid18", "controller": "native",
                          "port": "loop://"},
                         {"kind": "osc", "target": "127.0.0.1:9000"}], header, skeleton)
    loop.outputs.extend(outs)        # each called (frame_index, t_s, values, codes)

"packets" writes the serial link's native packets (protocol/packets.py: HELLO and the compact
link header first and every second or on request, one FRAME a column, a HEARTBEAT a second) to
a pyserial URL, paced to its baud rate (device/servo/linkstream.py); "player" drives
servos through device.servo's Player (limits, ramp, failsafe); other kinds go to
device.outputs.factory.make_output. Every output has close().
"""

from protocol import packets
from protocol.errors import FormatError


class PacketOutput:
    """The live link (device/servo/linkstream.py): paced, never blocks the capture loop, frames
    whole or skipped whole, the compact header every second and on the receiver's request."""

    def __init__(self, port, header, bits=8, heartbeat_s=1.0, baud=115200, clock=None,
                 buffer_bytes=4096, record=False, reopen=None, reopen_s=1.0):
        from device.servo.linkstream import LinkStreamer
        self.port = port
        # reopen(): a new port for the same device (a USB adapter pulled and plugged back makes
        # the old descriptor fail for good); tried at most every reopen_s while writes fail
        self.reopen = reopen
        self.reopen_s = reopen_s
        self.reopens = 0
        self._errors = 0
        self._last_try = None
        self.header = header
        self.bits = bits
        self.link = LinkStreamer(port, header, bits, baud=baud, clock=clock, heartbeat_s=heartbeat_s,
                                 buffer_bytes=buffer_bytes, record=record)
        self.all_missing = 0        # columns with every value missing: not sent (see __call__)

    @property
    def frames(self):
        return self.link.n["frames_sent"]

    @property
    def dropped(self):
        return self.link.n["frames_skipped"]

    def counts(self):
        out = self.link.counts()
        out["frames_all_missing"] = self.all_missing
        out["reopens"] = self.reopens
        return out

    def _check_port(self):
        errors = self.link.sender.counts["write_errors"]
        if self.reopen is None or errors == self._errors:
            return
        now = self.link.clock()
        if self._last_try is not None and 0 <= now - self._last_try < self.reopen_s:
            return
        self._last_try = now
        try:
            port = self.reopen()
        except Exception:           # still gone (no device node yet): try again later
            return
        try:
            self.close()
        except Exception:
            pass
        self.port = port
        self.link.reopen(port)
        self._errors = self.link.sender.counts["write_errors"]
        self.reopens += 1

    def __call__(self, frame_index, t_s, values, codes):
        self._check_port()
        for c in codes:
            if c is not None:
                self.link.frame(codes, t_s)
                return
        # every value missing (every sensor lost this frame): on the link that is the sender's
        # torque off (SPEC 2), which would drop the robot limp. Send nothing: the receiver holds
        # and, if it lasts, engages its own failsafe (hold / home / release, as configured).
        self.all_missing += 1
        self.link.poll()

    def close(self):
        close = getattr(self.port, "close", None)
        if close is not None:
            close()


class PlayerOutput:
    def __init__(self, player):
        self.player = player
        self.started = False

    def __call__(self, frame_index, t_s, values, codes):
        if not self.started:
            self.player.start()
            self.started = True
        self.player.send_frame([float("nan") if v is None else v for v in values], t_s)
        self.player.poll()

    def close(self):
        if self.started:
            self.player.failsafe()
            self.player.settle()        # a home move runs to its end at the ramp velocity


def make_output(spec, header, skeleton, rate_hz=30.0):
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "packets":
        import serial
        baud = spec.get("baud", 115200)
        port = serial.serial_for_url(spec.get("url", "loop://"), baudrate=baud, timeout=0,
                                     write_timeout=0)
        url = spec.get("url", "loop://")

        def reopen():
            return serial.serial_for_url(url, baudrate=baud, timeout=0, write_timeout=0)
        return PacketOutput(port, header, header["bits"], baud=baud,
                            buffer_bytes=spec.get("buffer_bytes", 4096),
                            reopen=None if url.startswith("loop://") else reopen)
    if kind == "player":
        from device.servo.drivers import open_driver
        from device.servo.player import Player
        from device.servo.robot import load_robot
        robot = load_robot(spec["robot"])
        drv = open_driver(spec.get("controller", "native"), spec.get("port", "loop://"), spec.get("baud"))
        return PlayerOutput(Player(robot, drv, row_names=[r["name"] for r in header["rows"]]))
    if kind is None:
        raise FormatError("unit config: outputs entry %r has no 'kind'" % (spec,))
    from device.outputs.factory import make_output as other
    return other(spec, skeleton, rate_hz=rate_hz)


def make_outputs(specs, header, skeleton, rate_hz=30.0):
    return [make_output(s, header, skeleton, rate_hz) for s in (specs or [])]
