"""ROBOTIS Dynamixel Protocol 2.0: FF FF FD 00 ID LEN INST P.. CRC16, stuffed like the C++ SDK.

    from device.servo import dynamixel as dx
    dx.write(1, dx.GOAL_POSITION, 4, 2048).hex(" ")   # ff ff fd 00 01 09 00 03 74 00 00 08 00 00 42 89
    dx.sync_write(dx.GOAL_POSITION, 4, {1: 1000, 2: 2000})
    bus = dx.Dynamixel(port); bus.start(servos); bus.send_positions([(1, 2048), (2, 1024)])
    bus.set_watchdog(0.1)          # Bus Watchdog (98), 20 ms units: stops the servos itself

CRC-16/BUYPASS over the stuffed packet; FF FF FD inside the packet goes out as FF FF FD FD
(the Python SDK forgets this; we follow the C++ SDK). Status packets are parsed and checked.
"""

import struct

from protocol.crc import crc16_buypass
from device.servo.base import Driver

BROADCAST = 0xFE
PING = 0x01
READ = 0x02
WRITE = 0x03
REBOOT = 0x08
STATUS = 0x55
SYNC_READ = 0x82
SYNC_WRITE = 0x83
BULK_WRITE = 0x93
TORQUE_ENABLE = 64
BUS_WATCHDOG = 98
PROFILE_ACCELERATION = 108
PROFILE_VELOCITY = 112
GOAL_POSITION = 116
PRESENT_POSITION = 132
HEADER = b"\xff\xff\xfd\x00"


def stuff(params):
    """Insert FD after every FF FF FD in the parameter bytes."""
    out = bytearray()
    for b in params:
        out.append(b)
        if b == 0xFD and len(out) >= 3 and out[-3] == 0xFF and out[-2] == 0xFF:
            out.append(0xFD)
    return bytes(out)


def unstuff(params):
    out = bytearray()
    i = 0
    n = len(params)
    while i < n:
        b = params[i]
        out.append(b)
        if b == 0xFD and len(out) >= 3 and out[-3] == 0xFF and out[-2] == 0xFF and i + 1 < n \
                and params[i + 1] == 0xFD:
            i += 1
        i += 1
    return bytes(out)


def packet(sid, inst, params=b""):
    p = stuff(bytes((inst,)) + bytes(params))[1:]
    head = HEADER + bytes((sid & 0xFF,)) + struct.pack("<H", len(p) + 3) + bytes((inst,)) + p
    return head + struct.pack("<H", crc16_buypass(head))


def _val(value, size):
    return struct.pack("<I", int(value) & 0xFFFFFFFF)[:size]


def ping(sid):
    return packet(sid, PING)


def read(sid, address, size):
    return packet(sid, READ, struct.pack("<HH", address, size))


def write(sid, address, size, value):
    return packet(sid, WRITE, struct.pack("<H", address) + _val(value, size))


def reboot(sid):
    return packet(sid, REBOOT)


def sync_write(address, size, targets):
    items = sorted(targets.items()) if hasattr(targets, "items") else targets
    p = struct.pack("<HH", address, size)
    for sid, v in items:
        p += bytes((int(sid),)) + _val(v, size)
    return packet(BROADCAST, SYNC_WRITE, p)


def sync_read(address, size, ids):
    return packet(BROADCAST, SYNC_READ, struct.pack("<HH", address, size) + bytes(ids))


def bulk_write(items):
    """items: (id, address, size, value) each."""
    p = b""
    for sid, address, size, v in items:
        p += bytes((sid,)) + struct.pack("<HH", address, size) + _val(v, size)
    return packet(BROADCAST, BULK_WRITE, p)


def status(sid, error=0, params=b""):
    """A status packet as a servo sends it (used by the emulator)."""
    return packet(sid, STATUS, bytes((error,)) + bytes(params))


def parse_status(data):
    """(id, error, params, used) of the first status packet in data, or None (bad/short)."""
    i = data.find(HEADER)
    if i < 0 or len(data) < i + 11:
        return None
    n = data[i + 5] | (data[i + 6] << 8)
    end = i + 7 + n
    if n < 4 or len(data) < end:
        return None
    if crc16_buypass(data[i:end - 2]) != (data[end - 2] | (data[end - 1] << 8)):
        return None
    if data[i + 7] != STATUS:
        return None
    params = unstuff(data[i + 9:end - 2])
    return data[i + 4], data[i + 8], params, end


class Dynamixel(Driver):
    NAME = "dynamixel"
    UNITS = "units"
    HAS_WATCHDOG = True
    BAUD = 57600

    def __init__(self, port, echo=False):
        Driver.__init__(self, port, echo)
        self.ids = []

    def start(self, servos):
        self.ids = [i for i, _ in servos]
        for sid, s in servos:
            pv = s.get("profile_velocity")
            if pv is None and getattr(s, "max_vel_dps", None):
                pv = int(s.max_vel_dps / 1.374 + 1)      # 0.229 rpm units: the servo's own cap
            if pv is not None:
                self.write(write(sid, PROFILE_VELOCITY, 4, pv))
            if s.get("profile_acceleration") is not None:
                self.write(write(sid, PROFILE_ACCELERATION, 4, s["profile_acceleration"]))
        self.write(sync_write(TORQUE_ENABLE, 1, [(i, 1) for i in self.ids]))

    def encode_positions(self, cmds):
        return sync_write(GOAL_POSITION, 4, list(cmds))

    def send_positions(self, cmds):
        self.write(self.encode_positions(cmds))
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)

    def torque_off(self, ids):
        self.write(write(BROADCAST, TORQUE_ENABLE, 1, 0))
        return True

    def set_watchdog(self, timeout_s):
        units = 0 if timeout_s <= 0 else max(1, min(127, int(timeout_s / 0.02 + 0.5)))
        self.write(sync_write(BUS_WATCHDOG, 1, [(i, units) for i in self.ids]))
        return True

    def read_position(self, sid):
        if hasattr(self.port, "reset_input_buffer"):
            self.port.reset_input_buffer()
        self.write(read(sid, PRESENT_POSITION, 4))
        r = parse_status(self.read_exact(15))
        if r is None or r[0] != sid or len(r[2]) != 4:
            self.stats["errors"] += 1
            return None
        if r[1]:
            self.stats["errors"] += 1
        return struct.unpack("<i", r[2])[0]
