"""Feetech SCS/STS/SMS bus servos (and Dynamixel Protocol 1.0, the same framing).

    from device.servo import feetech as ft
    ft.write(1, ft.GOAL_POSITION, ft.word(2048, "sts")).hex(" ")   # ff ff 01 05 03 2a 00 08 c4
    ft.sync_write(ft.GOAL_POSITION, 2, {1: ft.word(1000), 2: ft.word(2000)})
    bus = ft.Feetech(port, series="sts"); bus.send_positions([(1, 2048), (2, 1024)])

FF FF ID LEN INST P.. CHK, CHK = ~(ID + LEN + INST + sum P) & 0xFF. Words are little-endian on
STS/SMS and big-endian on SCS; signed registers use sign-magnitude (bit 15 for positions and
speeds). No watchdog on the servo: torque_off broadcasts Torque Enable (40) = 0.
"""

import struct

from device.servo.base import Driver, packet_timeout_s

BROADCAST = 0xFE
PING = 0x01
READ = 0x02
WRITE = 0x03
REG_WRITE = 0x04
ACTION = 0x05
SYNC_READ = 0x82
SYNC_WRITE = 0x83
TORQUE_ENABLE = 40
ACCELERATION = 41
GOAL_POSITION = 42
GOAL_SPEED = 46
LOCK = 55
PRESENT_POSITION = 56


def checksum(body):
    return (~sum(body)) & 0xFF


MAX_PACKET = 250        # the SDKs' cap (LEN is one byte)


def packet(sid, inst, params=b""):
    if len(params) + 6 > MAX_PACKET:
        raise ValueError("feetech: packet of %d bytes is over %d" % (len(params) + 6, MAX_PACKET))
    body = bytes((sid & 0xFF, len(params) + 2, inst)) + bytes(params)
    return b"\xff\xff" + body + bytes((checksum(body),))


def sign_magnitude(value, sign_bit=15):
    """Encode a signed int with the sign in sign_bit (not two's complement)."""
    v = int(value)
    m = (1 << sign_bit) - 1
    return (min(-v, m) | (1 << sign_bit)) if v < 0 else min(v, m)


def from_sign_magnitude(raw, sign_bit=15):
    m = raw & ((1 << sign_bit) - 1)
    return -m if raw & (1 << sign_bit) else m


def word(value, series="sts", signed=True):
    """Two bytes of a 16-bit register in the series' byte order (sign-magnitude if signed)."""
    v = sign_magnitude(value) if signed else int(value) & 0xFFFF
    return struct.pack(">H" if series == "scs" else "<H", v)


def unword(b, series="sts", signed=True):
    v = struct.unpack(">H" if series == "scs" else "<H", b)[0]
    return from_sign_magnitude(v) if signed else v


def ping(sid):
    return packet(sid, PING)


def read(sid, address, size):
    return packet(sid, READ, bytes((address, size)))


def write(sid, address, data):
    return packet(sid, WRITE, bytes((address,)) + bytes(data))


def reg_write(sid, address, data):
    return packet(sid, REG_WRITE, bytes((address,)) + bytes(data))


def action(sid=BROADCAST):
    return packet(sid, ACTION)


def sync_write(address, size, targets):
    """targets: list of (id, data bytes of length size), or a dict (sent in id order)."""
    items = sorted(targets.items()) if hasattr(targets, "items") else targets
    p = bytes((address, size))
    for sid, data in items:
        data = bytes(data)
        if len(data) != size:
            raise ValueError("sync_write: id %d data is %d bytes, not %d" % (sid, len(data), size))
        p += bytes((int(sid),)) + data
    return packet(BROADCAST, SYNC_WRITE, p)


def sync_read(address, size, ids):
    return packet(BROADCAST, SYNC_READ, bytes((address, size)) + bytes(ids))


def pos_ex(position, speed, acc, series="sts"):
    """STS block at 41: acc, position, time 0, speed (7 bytes)."""
    return bytes((acc & 0xFF,)) + word(position, series) + word(0, series, False) + word(speed, series)


def scs_pos(position, time_ms, speed):
    """SCS block at 42: position, time, speed, big-endian (6 bytes)."""
    return word(position, "scs", False) + word(time_ms, "scs", False) + word(speed, "scs", False)


def status(sid, error=0, params=b""):
    return packet(sid, error, params)


def parse_status(data):
    """(id, error, params, used) of the first status packet in data, or None."""
    i = data.find(b"\xff\xff")
    if i < 0 or len(data) < i + 6:
        return None
    n = data[i + 3]
    end = i + 4 + n
    if n < 2 or len(data) < end:
        return None
    if checksum(data[i + 2:end - 1]) != data[end - 1]:
        return None
    return data[i + 2], data[i + 4], bytes(data[i + 5:end - 1]), end


class Feetech(Driver):
    NAME = "feetech"
    UNITS = "units"
    BAUD = 1000000
    RETURN_DELAY_S = 0.0005         # STS3215 Return Delay Time default: 250 x 2 us

    def probe_bytes(self):
        """(request, reply) bytes of the player's power probe (read_torque_enabled)."""
        n = GOAL_SPEED + 2 - TORQUE_ENABLE
        return len(read(1, TORQUE_ENABLE, n)), len(status(1, 0, b"\x00" * n))

    def __init__(self, port, series="sts", echo=False):
        Driver.__init__(self, port, echo)
        self.series = series
        self.ids = []

    def start(self, servos):
        self.ids = [i for i, _ in servos]
        speeds = []
        for sid, s in servos:
            if getattr(s, "max_vel_dps", None) and self.series != "scs":
                # Goal Speed (46) in steps/s: the servo's own cap on top of the limiter
                speeds.append((sid, word(min(3400, int(s.max_vel_dps * s.units_per_deg + 1)), self.series)))
        # (a probe that reads the Goal Speed 0 set here: rebooted, read_torque_enabled)
        self._speed_set = set(i for i, _ in speeds)
        if speeds:
            self.write(sync_write(GOAL_SPEED, 2, speeds))
        self.write(sync_write(TORQUE_ENABLE, 1, [(i, b"\x01") for i in self.ids]))

    def encode_positions(self, cmds):
        items = [(i, word(v, self.series, self.series != "scs")) for i, v in cmds]
        per = (MAX_PACKET - 8) // 3          # servos per sync write (3 bytes each)
        return b"".join(sync_write(GOAL_POSITION, 2, items[k:k + per]) for k in range(0, len(items), per))

    def send_positions(self, cmds):
        self.write(self.encode_positions(cmds))
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)

    def torque_off(self, ids):
        self.write(write(BROADCAST, TORQUE_ENABLE, b"\x00"))
        return True

    def _reply(self, nparams):
        """One status packet's bytes (FF FF ID LEN ERR P.. CHK), the header hunted for as
        scservo_sdk's rxPacket hunts (the bytes before it dropped, a reply's worth at most;
        an id above 0xFD means the FF FF was not the header)."""
        want = 6 + nparams
        data = self.read_exact(want)
        dropped = 0
        while len(data) == want and (data[:2] != b"\xff\xff" or data[2] > 0xFD):
            # FF FF then an id above 0xFD is not a header (an FF before it: a stray byte, as
            # the SDK drops it); else from the next FF FF, or an FF at the end
            i = 1 if data[:2] == b"\xff\xff" else data.find(b"\xff\xff")
            i = i if i > 0 else (want - 1 if data[-1:] == b"\xff" else want)
            dropped += i
            if dropped > want:
                break
            data = data[i:] + self.read_exact(i)
        return data

    def _read_value(self, sid, address, size):
        """The size bytes at address of servo sid, or None (no answer, a bad reply)."""
        try:
            self.flush_input()
        except OSError:
            self.stats["errors"] += 1
            return None
        self.write(read(sid, address, size))
        # scservo_sdk's txRxPacket: setPacketTimeout(data length + 6), one deadline for the
        # reply (34.08 ms at 1 Mbaud), not the port's timeout for every read that comes short
        self.with_deadline(packet_timeout_s(size + 6, self.port_baud()))
        try:
            r = parse_status(self._reply(size))
        finally:
            self.end_deadline()
        if r is None or r[0] != sid or len(r[2]) != size:
            self.stats["errors"] += 1
            return None
        return r[2]

    def read_position(self, sid):
        r = self._read_value(sid, PRESENT_POSITION, 2)
        return None if r is None else unword(r, self.series, self.series != "scs")

    _speed_set = frozenset()

    def read_torque_enabled(self, sid):
        """Torque Enable (40) of servo sid: 1, 0 (back from a power cut: limp), or None (no
        answer: unpowered, booting, a reply lost). Read with the Goal Speed (46) start() set: an
        STS's Goal Position write turns its torque on again, so a servo that rebooted between
        two probes, then took a goal, reads its torque on; its Goal Speed at the power-up 0
        (its maximum) says it rebooted all the same: 0."""
        r = self._read_value(sid, TORQUE_ENABLE, GOAL_SPEED + 2 - TORQUE_ENABLE)
        if r is None:
            return None
        rebooted = sid in self._speed_set and r[GOAL_SPEED - TORQUE_ENABLE:] == b"\x00\x00"
        return 0 if rebooted else r[0]
