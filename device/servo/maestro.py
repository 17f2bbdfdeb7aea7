"""Pololu Maestro (Micro 6, Mini 12/18/24): compact and Pololu protocol, optional CRC-7.

    from device.servo.maestro import Maestro, set_target
    set_target(0, 6000) == bytes.fromhex("84 00 70 2E")         # 1500 us in 0.25 us units
    m = Maestro(serial.serial_for_url("/dev/ttyACM0"), device=None, crc=False)
    m.send_positions([(0, 6000), (1, 6400)])                     # one Set Multiple Targets
    m.get_position(0); m.get_errors()

Targets are in quarter microseconds (qus), 14-bit; the controller clamps them to its own
channel limits as well: Min/Max in Maestro Control Center, 992-2000 us as it ships, which cut a
robot whose servos go wider (maestro_limits(robot.servos) lists what to set there). More servos than one board has: Maestros daisy-chained on one TTL
line, each with its own device number, addressed by the Pololu protocol. `boards` lists the
device numbers in channel order, so with channels=24 and boards=[12, 13] channel 30 is
channel 6 of device 13 (the robot file's "controller_options": {"boards": [12, 13]}):

    m = Maestro(port, boards=[12, 13])       # channels 0-23 on device 12, 24-47 on device 13
    m.encode_positions([(23, 6000), (24, 6000)])   # two packets, one per board
 Failsafe: the Maestro's serial timeout + home settings (set in
Maestro Control Center); torque_off sends target 0 (no pulses) to every channel.
"""

import struct

from protocol.crc import crc7_pololu
from device.servo.base import Driver

SET_TARGET = 0x84
SET_SPEED = 0x87
SET_ACCELERATION = 0x89
SET_PWM = 0x8A
GET_POSITION = 0x90
GET_MOVING_STATE = 0x93
SET_MULTIPLE_TARGETS = 0x9F
GET_ERRORS = 0xA1
GO_HOME = 0xA2
MINI_SSC = 0xFF
POLOLU_START = 0xAA
DEFAULT_DEVICE = 12


def maestro_limits(servos):
    """{channel: (Min, Max) qus}: the channel settings a robot needs in Maestro Control Center
    (Channel Settings, Min and Max) so that its description's servo limits are not cut to the
    factory's 992-2000 us (the serial protocol cannot set them)."""
    return dict((s.id, (int(s.min), int(s.max))) for s in servos)


def _v14(v):
    v = int(v)
    if v < 0:
        v = 0
    if v > 0x3FFF:
        v = 0x3FFF
    return bytes((v & 0x7F, (v >> 7) & 0x7F))


def frame(cmd, data=b"", device=None, crc=False):
    """A compact packet (device None) or a Pololu-protocol one, with CRC-7 if asked."""
    if device is None:
        b = bytes((cmd,)) + data
    else:
        b = bytes((POLOLU_START, device & 0x7F, cmd & 0x7F)) + data
    if crc:
        b += bytes((crc7_pololu(b),))
    return b


def set_target(channel, target_qus, device=None, crc=False):
    return frame(SET_TARGET, bytes((channel & 0x7F,)) + _v14(target_qus), device, crc)


def set_multiple_targets(first_channel, targets_qus, device=None, crc=False):
    data = bytes((len(targets_qus) & 0x7F, first_channel & 0x7F))
    for t in targets_qus:
        data += _v14(t)
    return frame(SET_MULTIPLE_TARGETS, data, device, crc)


def set_speed(channel, speed, device=None, crc=False):
    return frame(SET_SPEED, bytes((channel & 0x7F,)) + _v14(speed), device, crc)


def set_acceleration(channel, acceleration, device=None, crc=False):
    return frame(SET_ACCELERATION, bytes((channel & 0x7F,)) + _v14(min(255, acceleration)), device, crc)


def set_pwm(on_time, period, device=None, crc=False):
    return frame(SET_PWM, _v14(on_time) + _v14(period), device, crc)


def get_position(channel, device=None, crc=False):
    return frame(GET_POSITION, bytes((channel & 0x7F,)), device, crc)


def get_moving_state(device=None, crc=False):
    return frame(GET_MOVING_STATE, b"", device, crc)


def get_errors(device=None, crc=False):
    return frame(GET_ERRORS, b"", device, crc)


def go_home(device=None, crc=False):
    return frame(GO_HOME, b"", device, crc)


def mini_ssc(channel, target8):
    return bytes((MINI_SSC, channel & 0xFF, max(0, min(254, int(target8)))))


class Maestro(Driver):
    """A Maestro on a serial port. multi=False for the Micro Maestro 6 (no 0x9F)."""
    NAME = "maestro"
    UNITS = "qus"
    BAUD = 115200

    def __init__(self, port, device=None, crc=False, multi=True, channels=24, boards=None):
        Driver.__init__(self, port)
        def whole(x):
            # an int (numpy integers too: they have __index__), not a bool or a float
            if isinstance(x, (bool, float, str, bytes)):
                return False
            try:
                return int(x) == x
            except (TypeError, ValueError):
                return False
        if not whole(channels) or channels < 1:
            raise ValueError("maestro channels %r: need a whole number of channels per board >= 1"
                             % (channels,))
        channels = int(channels)
        if boards is not None:
            if (isinstance(boards, (str, bytes, dict)) or not hasattr(boards, "__iter__") or not len(boards)
                    or [b for b in boards if not whole(b) or not 0 <= b <= 127]):
                raise ValueError("maestro boards %r: need a list of device numbers 0-127 "
                                 "(controller_options, e.g. [12, 13])" % (boards,))
            boards = [int(b) for b in boards]
            if device is None:
                device = boards[0]
        self.device = device
        self.boards = boards
        self.crc = crc
        self.multi = multi
        self.channels = channels

    def _route(self, channel):
        """(device number or None, channel on that board) of a global channel number."""
        if self.boards is None:
            if not 0 <= channel < self.channels:
                raise ValueError("maestro channel %d: this board has channels 0-%d (daisy-chained "
                                 "boards: controller_options boards)" % (channel, self.channels - 1))
            return self.device, channel
        k = channel // self.channels
        if channel < 0 or k >= len(self.boards):
            raise ValueError("maestro channel %d: %d boards of %d channels have 0-%d"
                             % (channel, len(self.boards), self.channels,
                                len(self.boards) * self.channels - 1))
        return self.boards[k], channel - k * self.channels

    def encode_positions(self, cmds):
        cmds = sorted(cmds)
        out = b""
        i = 0
        while i < len(cmds):
            dev, ch = self._route(cmds[i][0])
            j = i + 1
            if self.multi:
                # one Set Multiple Targets per run of consecutive channels on the same board
                while (j < len(cmds) and cmds[j][0] == cmds[j - 1][0] + 1
                       and cmds[j][0] // self.channels == cmds[i][0] // self.channels):
                    j += 1
            if j - i > 1:
                out += set_multiple_targets(ch, [c[1] for c in cmds[i:j]], dev, self.crc)
            else:
                out += set_target(ch, cmds[i][1], dev, self.crc)
            i = j
        return out

    def send_positions(self, cmds):
        self.write(self.encode_positions(cmds))
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)

    def start(self, servos):
        for ch, s in servos:
            dev, ch = self._route(ch)
            spd = s.get("maestro_speed")
            if spd is not None:
                self.write(set_speed(ch, spd, dev, self.crc))
            acc = s.get("maestro_acceleration")
            if acc is not None:
                self.write(set_acceleration(ch, acc, dev, self.crc))

    def torque_off(self, ids):
        self.write(self.encode_positions([(i, 0) for i in ids]))
        return True

    def go_home(self):
        for dev in self.boards or [self.device]:
            self.write(go_home(dev, self.crc))

    def _ask(self, req, n):
        if hasattr(self.port, "reset_input_buffer"):
            self.port.reset_input_buffer()
        self.write(req)
        return self.read_exact(n)

    def get_position(self, channel):
        dev, channel = self._route(channel)
        r = self._ask(get_position(channel, dev, self.crc), 2)
        return struct.unpack("<H", r)[0] if len(r) == 2 else None

    def get_errors(self):
        """The error bits of every board ORed together (None if a board does not answer)."""
        bits = 0
        for dev in self.boards or [self.device]:
            r = self._ask(get_errors(dev, self.crc), 2)
            if len(r) != 2:
                return None
            bits |= struct.unpack("<H", r)[0]
        return bits

    def get_moving_state(self):
        """True if a servo of any board is still moving (None if a board does not answer)."""
        moving = False
        for dev in self.boards or [self.device]:
            r = self._ask(get_moving_state(dev, self.crc), 1)
            if not r:
                return None
            moving = moving or r[0] != 0
        return moving
