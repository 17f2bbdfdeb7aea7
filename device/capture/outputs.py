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
                 buffer_bytes=4096, record=False):
        from device.servo.linkstream import LinkStreamer
        self.port = port
        self.header = header
        self.bits = bits
        self.link = LinkStreamer(port, header, bits, baud=baud, clock=clock, heartbeat_s=heartbeat_s,
                                 buffer_bytes=buffer_bytes, record=record)

    @property
    def frames(self):
        return self.link.n["frames_sent"]

    @property
    def dropped(self):
        return self.link.n["frames_skipped"]

    def counts(self):
        return self.link.counts()

    def __call__(self, frame_index, t_s, values, codes):
        self.link.frame(codes, t_s)

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
        return PacketOutput(port, header, header["bits"], baud=baud,
                            buffer_bytes=spec.get("buffer_bytes", 4096))
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
