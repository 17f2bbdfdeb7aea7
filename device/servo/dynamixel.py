"""ROBOTIS Dynamixel Protocol 2.0: FF FF FD 00 ID LEN INST P.. CRC16, stuffed like the C++ SDK.

    from device.servo import dynamixel as dx
    dx.write(1, dx.GOAL_POSITION, 4, 2048).hex(" ")   # ff ff fd 00 01 09 00 03 74 00 00 08 00 00 42 89
    dx.sync_write(dx.GOAL_POSITION, 4, {1: 1000, 2: 2000})
    bus = dx.Dynamixel(port); bus.start(servos); bus.send_positions([(1, 2048), (2, 1024)])
    bus.set_watchdog(0.1)          # Bus Watchdog (98), 20 ms units: stops the servos itself
    bus.read_position(1)           # a reply waited for the SDK's packet timeout (34 ms at 1 Mbaud)
    bus.read_torque_enabled(1)     # 1; 0 after a power cut (RAM at defaults); None: no answer

CRC-16/BUYPASS over the stuffed packet; FF FF FD inside the packet goes out as FF FF FD FD
(the Python SDK forgets this; we follow the C++ SDK). Status packets are parsed and checked.
"""

import struct

from protocol.crc import crc16_buypass
from device.servo.base import Driver, packet_timeout_s  # noqa: F401 (dx.packet_timeout_s)

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
HARDWARE_ERROR_STATUS = 70
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


def header_at(buf):
    """Where a header can begin in buf: where it is, else where a tail of buf that may begin
    one starts (FF, FF FF, FF FF FD), else len(buf)."""
    i = buf.find(HEADER)
    if i >= 0:
        return i
    for k in (3, 2, 1):
        if buf[len(buf) - k:] == HEADER[:k]:
            return len(buf) - k
    return len(buf)


def status_len_max(nparams):
    """A status packet's length field at most for nparams bytes of data: 0x55, error, params,
    CRC 2, and a stuffed FD after each FF FF FD the error and params can hold (a longer one is
    corrupt: not waited for)."""
    return 4 + nparams + (1 + nparams) // 3


OTHERS_MAX = 2                      # other ids' status packets passed over before the one asked
# how long a request waits for its status packet: the SDK's packet timeout
# (device/servo/base.py packet_timeout_s; protocol2_packet_handler.py txRxPacket:
# packet_length = the READ's data length + 11, 11 for any other instruction; other ids'
# packets included in the one deadline): 34.27 ms for the OpenCR's 16 bytes at 1 Mbaud,
# not a 0.1 s port timeout per reply that does not come


class Dynamixel(Driver):
    NAME = "dynamixel"
    UNITS = "units"
    HAS_WATCHDOG = True
    BAUD = 57600
    RETURN_DELAY_S = 0.0005         # Return Delay Time (9) default: 250 x 2 us

    def probe_bytes(self):
        """(request, reply) bytes of the player's power probe (read_torque_enabled)."""
        return len(read(1, TORQUE_ENABLE, 1)), len(status(1, 0, b"\x00"))

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
        """Arm the Bus Watchdog (98, 20 ms units) on every servo; the timeout armed (s). A 0 goes first: once tripped,
        98 reads -1 and only a 0 clears it (the Goal values stay read-only till then; ROBOTIS
        e-manual, Bus Watchdog (98)), so arming again after a trip takes both writes."""
        units = 0 if timeout_s <= 0 else max(1, min(127, int(timeout_s / 0.02 + 0.5)))
        self.write(sync_write(BUS_WATCHDOG, 1, [(i, 0) for i in self.ids]))
        if units:
            self.write(sync_write(BUS_WATCHDOG, 1, [(i, units) for i in self.ids]))
        # the timeout armed (s): 20 ms units, at most 127 (2.54 s), whatever was asked
        return units * 0.02 if units else False          # (0: none armed, the watchdog off)

    def _reply(self, nparams):
        """One status packet's bytes, and whether they all came: the header hunted for as the
        vendor SDK's rxPacket hunts (the bytes before it dropped, a reply's worth at most: a
        stray byte as the bus turns round, a late reply's tail), then its head (7 bytes) says
        how many follow (a stuffed reply is longer)."""
        hunt_max = 16 + nparams
        head = self.read_exact(7)
        dropped = 0
        while len(head) == 7 and head[:4] != HEADER:
            i = header_at(head)
            dropped += i
            if dropped > hunt_max:
                return head, False
            head = head[i:] + self.read_exact(i)
        if len(head) < 7:
            return head, False
        n = head[5] | (head[6] << 8)
        rest = self.read_exact(n) if 4 <= n <= status_len_max(nparams) else b""
        return head + rest, len(rest) == n

    def read_status(self, sid, nparams):
        """(the bytes read, (id, error, params, used) or None) for the status of servo sid
        carrying nparams bytes: another id's status ahead of it (a late reply on the shared
        bus) passed over, OTHERS_MAX of them, as the vendor SDK's txRxPacket reads on until the
        id it asked answers."""
        seen = b""
        r = None
        # the SDK's packet timeout: one deadline for the reply (device/servo/base.py)
        self.with_deadline(packet_timeout_s(nparams + 11, self.port_baud()))
        try:
            for _ in range(1 + OTHERS_MAX):
                data, whole = self._reply(nparams)
                seen += data
                r = parse_status(data) if whole else None
                if r is None or r[0] == sid:
                    break
        finally:
            self.end_deadline()
        return seen, r

    def _read_value(self, sid, address, size):
        """The size bytes at address of servo sid, or None (no answer, a bad reply)."""
        try:
            self.flush_input()
        except OSError:
            self.stats["errors"] += 1
            return None
        self.write(read(sid, address, size))
        _, r = self.read_status(sid, size)
        if r is None or r[0] != sid or len(r[2]) != size:
            self.stats["errors"] += 1
            return None
        if r[1]:
            self.stats["errors"] += 1
        return r[2]

    def read_position(self, sid):
        r = self._read_value(sid, PRESENT_POSITION, 4)
        return None if r is None else struct.unpack("<i", r)[0]

    def read_hardware_error(self, sid):
        """Hardware Error Status (70) of servo sid: 0, its bits (0x01 input voltage, 0x04
        overheating, 0x08 motor encoder, 0x10 electrical shock, 0x20 overload: the servo shut
        itself down, torque off until a REBOOT or a power cycle), or None (no answer)."""
        r = self._read_value(sid, HARDWARE_ERROR_STATUS, 1)
        return None if r is None else r[0]

    def read_torque_enabled(self, sid):
        """Torque Enable (64) of servo sid: 1, 0 (a servo back from a power cut has its RAM at
        the initial values: torque off), None (no answer: unpowered, booting, a reply lost)."""
        r = self._read_value(sid, TORQUE_ENABLE, 1)
        return None if r is None else r[0]
