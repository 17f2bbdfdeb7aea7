"""Hiwonder / LewanSoul LX-16A bus servos: 55 55 ID LEN CMD P.. CHK, half duplex, 115200.

    from device.servo.lx16a import move_time_write, LX16A
    move_time_write(1, 500, 0) == bytes.fromhex("55 55 01 07 01 F4 01 00 00 01")
    bus = LX16A(port, echo=True)    # echo: TX and RX share the wire, discard our own bytes
    bus.send_positions([(1, 500), (2, 600)])    # N x MOVE_TIME_WAIT_WRITE + broadcast MOVE_START
    bus.read_position(1)

Positions 0..1000 = 0..240 degrees. No sync write and no watchdog: torque_off broadcasts
LOAD_OR_UNLOAD_WRITE 0.
"""

import struct

from device.servo.base import Driver

BROADCAST = 254
MOVE_TIME_WRITE = 1
MOVE_TIME_READ = 2
MOVE_TIME_WAIT_WRITE = 7
MOVE_START = 11
MOVE_STOP = 12
ID_WRITE = 13
ID_READ = 14
ANGLE_OFFSET_ADJUST = 17
TEMP_READ = 26
VIN_READ = 27
POS_READ = 28
SERVO_OR_MOTOR_MODE_WRITE = 29
LOAD_OR_UNLOAD_WRITE = 31
LOAD_OR_UNLOAD_READ = 32


def checksum(body):
    return (~sum(body)) & 0xFF


def packet(sid, cmd, params=b""):
    body = bytes((sid & 0xFF, len(params) + 3, cmd)) + bytes(params)
    return b"\x55\x55" + body + bytes((checksum(body),))


def _pos(p):
    return max(0, min(1000, int(p)))


def move_time_write(sid, position, time_ms, wait=False):
    return packet(sid, MOVE_TIME_WAIT_WRITE if wait else MOVE_TIME_WRITE,
                  struct.pack("<HH", _pos(position), max(0, min(30000, int(time_ms)))))


def move_start(sid=BROADCAST):
    return packet(sid, MOVE_START)


def move_stop(sid):
    return packet(sid, MOVE_STOP)


def load(sid, on):
    return packet(sid, LOAD_OR_UNLOAD_WRITE, bytes((1 if on else 0,)))


def motor_mode(sid, motor, speed=0):
    return packet(sid, SERVO_OR_MOTOR_MODE_WRITE, struct.pack("<BBh", 1 if motor else 0, 0, speed))


def angle_offset_adjust(sid, offset_units):
    return packet(sid, ANGLE_OFFSET_ADJUST, struct.pack("<b", max(-125, min(125, offset_units))))


def read(sid, cmd):
    return packet(sid, cmd)


def group_move(targets, time_ms):
    """dict or list of (id, position): N x MOVE_TIME_WAIT_WRITE, then MOVE_START broadcast."""
    items = sorted(targets.items()) if hasattr(targets, "items") else targets
    return b"".join(move_time_write(i, p, time_ms, wait=True) for i, p in items)


def parse_reply(data):
    """(id, cmd, params) of one reply packet; None if the bytes are not a valid one."""
    if len(data) < 6 or data[0] != 0x55 or data[1] != 0x55:
        return None
    n = data[3]
    if n < 3 or len(data) < n + 3:
        return None
    body = data[2:3 + n - 1]
    if checksum(body) != data[2 + n]:
        return None
    return data[2], data[4], bytes(data[5:2 + n])


class LX16A(Driver):
    NAME = "lx16a"
    UNITS = "units"
    BAUD = 115200
    RETURN_DELAY_S = 0.0            # (the manual gives none)

    def probe_bytes(self):
        """(request, reply) bytes of the player's power probe (read_torque_enabled)."""
        return len(read(1, LOAD_OR_UNLOAD_READ)), len(packet(1, LOAD_OR_UNLOAD_READ, b"\x00"))

    def __init__(self, port, echo=False, time_ms=0):
        Driver.__init__(self, port, echo)
        self.time_ms = time_ms

    def encode_positions(self, cmds):
        return group_move(list(cmds), self.time_ms) + move_start()

    def send_positions(self, cmds):
        self.write(self.encode_positions(cmds))
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)

    def torque_off(self, ids):
        self.write(load(BROADCAST, False))
        return True

    def _ask(self, sid, cmd, nparams):
        if hasattr(self.port, "reset_input_buffer"):
            self.port.reset_input_buffer()
        self.write(read(sid, cmd))
        r = parse_reply(self.read_exact(6 + nparams))
        if r is None or r[0] != sid or r[1] != cmd:
            self.stats["errors"] += 1
            return None
        return r[2]

    def read_position(self, sid):
        p = self._ask(sid, POS_READ, 2)
        return None if p is None else struct.unpack("<h", p)[0]

    def read_torque_enabled(self, sid):
        """LOAD_OR_UNLOAD_READ of servo sid: 1 (loaded), 0 (unloaded: also a servo back from a
        power cut), None (no answer)."""
        p = self._ask(sid, LOAD_OR_UNLOAD_READ, 1)
        return None if p is None else p[0]

    def read_vin_mv(self, sid):
        p = self._ask(sid, VIN_READ, 2)
        return None if p is None else struct.unpack("<H", p)[0]

    def read_temp_c(self, sid):
        p = self._ask(sid, TEMP_READ, 1)
        return None if p is None else p[0]
