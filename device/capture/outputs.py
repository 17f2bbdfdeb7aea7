"""The unit's outputs from its configuration: native packets, a servo Player, OSC/VMC/gestures.

    from device.capture.outputs import make_outputs
    outs = make_outputs([{"kind": "packets", "url": "loop://", "baud": 115200},
                         {"kind": "player", "robot": "humanoid18", "controller": "native",
                          "port": "loop://"},
                         {"kind": "osc", "target": "127.0.0.1:9000"}], header, skeleton)
    loop.outputs.extend(outs)        # each called (frame_index, t_s, values, codes)

"packets" writes the serial link's native packets (protocol/packets.py: HELLO and the staff
HEADER first, then one FRAME a column, a HEARTBEAT a second) to a pyserial URL; "player" drives
servos through device.servo's Player (limits, ramp, failsafe); other kinds go to
device.outputs.factory.make_output. Every output has close().
"""

from protocol import packets
from protocol.errors import FormatError


class PacketOutput:
    def __init__(self, port, header, bits=8, heartbeat_s=1.0):
        self.port = port
        self.header = header
        self.bits = bits
        self.enc = packets.Encoder()
        self.heartbeat_s = heartbeat_s
        self._sent_header = False
        self._last_hb = None
        self.frames = 0
        self.dropped = 0

    def _write(self, data):
        # the port never blocks the capture loop (write_timeout=0): what does not fit is dropped,
        # counted, and the receiver resynchronises on the next packet delimiter
        try:
            n = self.port.write(data)
        except Exception:
            n = 0
        if n is not None and n < len(data):
            self.dropped += 1

    def __call__(self, frame_index, t_s, values, codes):
        if not self._sent_header:
            self._write(self.enc.hello() + b"".join(self.enc.header(self.header)))
            self._sent_header = True
        self._write(self.enc.frame(codes, self.bits))
        self.frames += 1
        if self._last_hb is None or t_s - self._last_hb >= self.heartbeat_s:
            self._write(self.enc.heartbeat(int(t_s * 1000), self.frames, self.dropped, 1))
            self._last_hb = t_s

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

    def close(self):
        if self.started:
            self.player.failsafe()


def make_output(spec, header, skeleton, rate_hz=30.0):
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "packets":
        import serial
        port = serial.serial_for_url(spec.get("url", "loop://"), baudrate=spec.get("baud", 115200),
                                     timeout=0, write_timeout=0)
        return PacketOutput(port, header, header["bits"])
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
