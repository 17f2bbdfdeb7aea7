"""The serial link's packets: one message table, an encoder and a streaming decoder.

    from protocol import packets as pk
    enc = pk.Encoder()                                   # counts seq, stamps time_us
    wire = enc.hello() + b"".join(enc.header(h)) + enc.frame([12, 200, None], bits=8)
    asm = pk.HeaderAssembler()                           # HEADER parts -> the compact link header
    dec = pk.Decoder()
    for p in dec.feed(wire):                             # any bytes at all; never raises
        print(p.name, p.seq, p.fields, p.frame() if p.is_frame() else "")
    dec.drops                                            # {"crc": 0, "cobs": 0, ...}

Wire: COBS(body + CRC-32 LE) + 0x00; body = type u8, seq u16 LE, time_us u24 LE, payload.
The CRC is seeded with the 32-bit SCHEMA hash of the table below (MAVLink's crc_extra), except
for the self-describing HELLO and HEADER packets, which are seeded with 0 and carry SCHEMA in
their payload, so two ends built from different tables refuse each other by name instead of
misreading. protocol/SPEC.md documents every byte (its hex examples are checked by tests).
"""

import struct

from protocol import cobs, crc, linkheader
from protocol.errors import FormatError

VERSION = 2
HEAD_FMT = "<BHBH"          # type, seq, time_us bits 0..7, time_us bits 8..23 (see _head)
HEAD_SIZE = 6
CRC_SIZE = 4
MAX_PAYLOAD = 1000
MAX_BODY = HEAD_SIZE + MAX_PAYLOAD
MAX_ENCODED = cobs.encoded_size_max(MAX_BODY + CRC_SIZE)   # without the 0x00 delimiter
MAX_PACKET_BYTES = MAX_ENCODED + 1                          # with it
TIME_WRAP_US = 1 << 24

# reply codes carried by DOWNLOAD_ERROR.code
ERR_UNKNOWN_REQUEST = 1
ERR_NOT_FOUND = 2
ERR_BAD_RANGE = 3
ERR_BUSY = 4
ERR_IO = 5

# flags carried by DOWNLOAD_REPLY.flags
FLAG_LAST = 1

# The one message table: id, name, struct format of the fixed part, its field names, the name
# of the variable-length tail (or None: no tail allowed), and whether the CRC is schema-seeded.
MESSAGES = (
    (0x01, "HELLO", "<BIH", ("version", "schema", "max_payload"), None, False),
    (0x02, "HEADER", "<IIBB", ("schema", "header_id", "part", "parts"), "linkheader", False),
    (0x03, "HEARTBEAT", "<IIIBI", ("uptime_ms", "frames", "dropped", "state", "header_id"), None, True),
    (0x04, "REQUEST", "<BII", ("what", "header_id", "missing"), None, True),
    (0x10, "FRAME8", "<", (), "codes_u8", True),
    (0x11, "FRAME8M", "<H", ("rows",), "mask_codes_u8", True),
    (0x12, "FRAME16", "<", (), "codes_u16le", True),
    (0x13, "FRAME16M", "<H", ("rows",), "mask_codes_u16le", True),
    (0x20, "DOWNLOAD_LIST", "<H", ("req",), None, True),
    (0x21, "DOWNLOAD_GET", "<HIH", ("req", "offset", "length"), "name_utf8", True),
    (0x22, "DOWNLOAD_REPLY", "<HIB", ("req", "offset", "flags"), "data", True),
    (0x23, "DOWNLOAD_ERROR", "<HB", ("req", "code"), "message_utf8", True),
)
RESERVED = ((0x24, 0x2F, "download"), (0x30, 0x3F, "control"), (0x40, 0xFF, "future"))

# REQUEST.what, and REQUEST.missing meaning "every part"
REQ_HEADER = 1
ALL_PARTS = 0xFFFFFFFF

# heartbeat states
STATE_IDLE = 0
STATE_STREAMING = 1
STATE_FAILSAFE = 2

DROP_REASONS = ("too_long", "short", "cobs", "crc", "unknown_type", "length", "version", "schema")


def _schema_hash():
    # crc_extra idea: names, formats and field names of every message, in id order
    text = "motionstaff-link %d;" % VERSION
    for m in MESSAGES:
        text += "%d %s %s %s %s;" % (m[0], m[1], m[2], " ".join(m[3]), m[4] or "-")
    return crc.crc32(text.encode())


SCHEMA = _schema_hash()


class _Msg:
    __slots__ = ("id", "name", "fmt", "fields", "tail", "seeded", "size")

    def __init__(self, m):
        self.id, self.name, self.fmt, self.fields, self.tail, self.seeded = m
        self.size = struct.calcsize(self.fmt)


BY_ID = {}
BY_NAME = {}
for _m in MESSAGES:
    BY_ID[_m[0]] = BY_NAME[_m[1]] = _Msg(_m)
FRAME_TYPES = (0x10, 0x11, 0x12, 0x13)


def _head(type_id, seq, time_us):
    t = time_us % TIME_WRAP_US
    return struct.pack(HEAD_FMT, type_id, seq & 0xFFFF, t & 0xFF, t >> 8)


def encode(name, seq=0, time_us=0, fields=(), tail=b"", schema=SCHEMA):
    """The wire bytes (COBS, 0x00-terminated) of one packet. fields: tuple in table order."""
    m = BY_NAME.get(name) or BY_ID.get(name)
    if m is None:
        raise FormatError("packet: unknown type %r" % (name,))
    if tail and m.tail is None:
        raise FormatError("packet %s: takes no tail" % m.name)
    try:
        fixed = struct.pack(m.fmt, *fields)
    except Exception as e:
        raise FormatError("packet %s: fields %r: %s" % (m.name, fields, e))
    body = _head(m.id, seq, time_us) + fixed + bytes(tail)
    if len(body) > MAX_BODY:
        raise FormatError("packet %s: payload %d bytes > %d" % (m.name, len(body) - HEAD_SIZE, MAX_PAYLOAD))
    c = crc.crc32(body, schema if m.seeded else 0)
    return cobs.encode(body + struct.pack("<I", c)) + b"\x00"


def frame_payload(codes, bits):
    """(type name, fields, tail) for one column of codes (None = missing)."""
    n = len(codes)
    if bits != 8 and bits != 16:
        raise FormatError("frame: bits must be 8 or 16, not %r" % (bits,))
    top = (1 << bits) - 1
    missing = False
    vals = []
    for c in codes:
        if c is None:
            missing = True
            vals.append(0)
        else:
            c = int(c)
            if c < 0 or c > top:
                raise FormatError("frame: code %d outside 0..%d" % (c, top))
            vals.append(c)
    data = bytes(vals) if bits == 8 else struct.pack("<%dH" % n, *vals)
    if not missing:
        return ("FRAME8" if bits == 8 else "FRAME16"), (), data
    mask = bytearray((n + 7) // 8)
    for i in range(n):
        if codes[i] is None:
            mask[i >> 3] |= 1 << (i & 7)
    return ("FRAME8M" if bits == 8 else "FRAME16M"), (n,), bytes(mask) + data


class Packet:
    """One delivered packet: type id, name, seq, time_us (24-bit), fields dict, tail bytes."""
    __slots__ = ("type", "name", "seq", "time_us", "fields", "tail")

    def __init__(self, type_id, name, seq, time_us, fields, tail):
        self.type = type_id
        self.name = name
        self.seq = seq
        self.time_us = time_us
        self.fields = fields
        self.tail = tail

    def is_frame(self):
        return self.type in FRAME_TYPES

    def frame(self):
        """(bits, codes) of a FRAME* packet; missing codes are None."""
        t = self.type
        bits = 8 if t in (0x10, 0x11) else 16
        data = self.tail
        mask = None
        if t == 0x11 or t == 0x13:
            n = self.fields["rows"]
            k = (n + 7) // 8
            mask = data[:k]
            data = data[k:]
        codes = list(data) if bits == 8 else list(struct.unpack("<%dH" % (len(data) // 2), data))
        if mask is not None:
            for i in range(len(codes)):
                if mask[i >> 3] & (1 << (i & 7)):
                    codes[i] = None
        return bits, codes

    def __repr__(self):
        return "Packet(%s seq=%d time_us=%d %r +%d)" % (self.name, self.seq, self.time_us,
                                                        self.fields, len(self.tail))


def _cobs_decode(p):
    # the decoder's copy of cobs.decode: None instead of an exception (cheaper on junk)
    n = len(p)
    out = bytearray()
    i = 0
    while i < n:
        code = p[i]
        end = i + code
        if end > n:
            return None
        out += p[i + 1:end]
        i = end
        if code != 0xFF and i < n:
            out.append(0)
    return out


class Decoder:
    """Streaming decoder: feed(bytes) -> [Packet]; never raises, never delivers a bad packet.

    Resynchronises at every 0x00. drops counts what was thrown away, by reason (DROP_REASONS);
    gaps counts packets missing by sequence number; peer_schema is set when a HELLO/HEADER
    from an incompatible peer was seen.
    """

    def __init__(self, schema=SCHEMA):
        self.schema = schema
        self._buf = b""
        self._overflow = False
        self.drops = {}
        for r in DROP_REASONS:
            self.drops[r] = 0
        self.delivered = 0
        self.gaps = 0
        self.last_seq = None
        self.peer_schema = None

    def dropped(self):
        return sum(self.drops.values())

    def feed(self, data):
        buf = self._buf + bytes(data) if self._buf else bytes(data)
        parts = buf.split(b"\x00")
        rest = parts.pop()
        out = []
        if self._overflow and parts:
            parts[0] = b""       # the tail of a packet already dropped as too long
            self._overflow = False
        if len(rest) > MAX_ENCODED:
            if not self._overflow:
                self.drops["too_long"] += 1
            self._overflow = True
            rest = b""
        self._buf = rest
        for p in parts:
            if p:
                pkt = self._one(p)
                if pkt is not None:
                    out.append(pkt)
        return out

    def _drop(self, reason):
        self.drops[reason] += 1
        return None

    def _one(self, p):
        n = len(p)
        if n > MAX_ENCODED:
            return self._drop("too_long")
        if n < HEAD_SIZE + CRC_SIZE + 1:
            return self._drop("short")
        body = _cobs_decode(p)
        if body is None:
            return self._drop("cobs")
        nb = len(body) - CRC_SIZE
        if nb < HEAD_SIZE:
            return self._drop("short")
        got = struct.unpack_from("<I", body, nb)[0]
        t = body[0]
        m = BY_ID.get(t)
        mv = memoryview(body)[:nb]
        if m is None:
            if crc.crc32(mv, self.schema) == got or crc.crc32(mv, 0) == got:
                return self._drop("unknown_type")
            return self._drop("crc")
        if crc.crc32(mv, self.schema if m.seeded else 0) != got:
            if self.peer_schema is not None and m.seeded:
                return self._drop("schema")
            return self._drop("crc")
        if nb - HEAD_SIZE < m.size:
            return self._drop("length")
        seq = body[1] | (body[2] << 8)
        time_us = body[3] | (body[4] << 8) | (body[5] << 16)
        vals = struct.unpack_from(m.fmt, body, HEAD_SIZE)
        tail = bytes(body[HEAD_SIZE + m.size:nb])
        if tail and m.tail is None:
            return self._drop("length")
        fields = {}
        for i in range(len(vals)):
            fields[m.fields[i]] = vals[i]
        if t == 0x01 or t == 0x02:
            if t == 0x01 and fields["version"] != VERSION:
                self.peer_schema = fields["schema"]
                return self._drop("version")
            if fields["schema"] != self.schema:
                self.peer_schema = fields["schema"]
                return self._drop("schema")
            self.peer_schema = None
        elif t in FRAME_TYPES and not _frame_ok(t, fields, len(tail)):
            return self._drop("length")
        if self.last_seq is not None:
            self.gaps += (seq - self.last_seq - 1) & 0xFFFF
        self.last_seq = seq
        self.delivered += 1
        return Packet(t, m.name, seq, time_us, fields, tail)


def _frame_ok(t, fields, n):
    if t == 0x10:
        return n > 0
    if t == 0x12:
        return n > 0 and n % 2 == 0
    rows = fields["rows"]
    k = (rows + 7) // 8
    return rows > 0 and n == k + rows * (1 if t == 0x11 else 2)


class Encoder:
    """Builds a sender's packets, numbering them and stamping them with its microsecond clock."""

    def __init__(self, schema=SCHEMA, clock_us=None):
        self.schema = schema
        self.seq = 0
        self._clock = clock_us or _default_clock_us()

    def packet(self, name, fields=(), tail=b"", time_us=None):
        t = self._clock() if time_us is None else time_us
        b = encode(name, self.seq, t, fields, tail, self.schema)
        self.seq = (self.seq + 1) & 0xFFFF
        return b

    def hello(self, time_us=None):
        return self.packet("HELLO", (VERSION, self.schema, MAX_PAYLOAD), b"", time_us)

    def header(self, header, time_us=None, part_bytes=None):
        """The compact link header (protocol/linkheader.py) as a list of HEADER packets.

        header: a staff header (dict, or its JSON text) or a link header blob (bytes). Every part
        carries the header's id (CRC-32 of the blob); part_bytes (default the most that fits)
        cuts it smaller, so a paced sender can interleave frames between the parts."""
        blob = link_blob(header)
        hid = linkheader.header_id(blob)
        room = MAX_PAYLOAD - BY_NAME["HEADER"].size
        if part_bytes:
            room = max(1, min(room, part_bytes))
        parts = (len(blob) + room - 1) // room or 1
        if parts > 255:
            raise FormatError("header: %d bytes is more than 255 packets" % len(blob))
        return [self.packet("HEADER", (self.schema, hid, i, parts), blob[i * room:(i + 1) * room], time_us)
                for i in range(parts)]

    def frame(self, codes, bits=8, time_us=None):
        name, fields, tail = frame_payload(codes, bits)
        return self.packet(name, fields, tail, time_us)

    def heartbeat(self, uptime_ms, frames, dropped, state, header_id=0, time_us=None):
        """header_id: the id of the header this end holds (0: none; a sender answers with it)."""
        return self.packet("HEARTBEAT", (uptime_ms & 0xFFFFFFFF, frames & 0xFFFFFFFF,
                                         dropped & 0xFFFFFFFF, state, header_id & 0xFFFFFFFF),
                           b"", time_us)

    def request_header(self, have_id=0, missing=ALL_PARTS, time_us=None):
        """A receiver's REQUEST for the header: have_id = the header it holds (0 = none) or the
        one it is assembling, missing = bit i set for each part i of it still missing (bit 31:
        parts 31 and up; ALL_PARTS: send everything)."""
        return self.packet("REQUEST", (REQ_HEADER, have_id & 0xFFFFFFFF, missing & 0xFFFFFFFF),
                           b"", time_us)


def link_blob(header):
    """The link header blob of a staff header (dict or JSON text) or of a blob (returned as is)."""
    if isinstance(header, (bytes, bytearray, memoryview)):
        b = bytes(header)
        if b[:1] != b"{":
            return b
        header = b.decode()
    if isinstance(header, str):
        import json
        header = json.loads(header)
    return linkheader.from_staff(header)


def _default_clock_us():
    import time
    if hasattr(time, "ticks_us"):
        return time.ticks_us
    return lambda: time.monotonic_ns() // 1000


class HeaderAssembler:
    """Collects HEADER parts by header id; add(packet) returns the link header dict (see
    protocol/linkheader.py, with "id") once every part of one header has come, else None.

    Never raises. Parts of different headers never join: a part naming another id (or another
    part count) than the parts held starts over, counted in `restarts`. An assembled header whose
    bytes do not hash to its id, or that does not decode, is dropped and counted in `bad`.
    max_bytes bounds what is held (a receiver's memory); a header beyond it counts in `too_big`.
    """

    def __init__(self, max_bytes=16384):
        self.max_bytes = max_bytes
        self._parts = {}
        self._id = None
        self._count = 0
        self._bytes = 0
        self.bad = 0
        self.restarts = 0
        self.too_big = 0
        self.assembled = 0

    def wanted(self, held_id=0):
        """(header_id, missing mask) for a REQUEST: the parts still missing of the header being
        assembled, or (held_id, ALL_PARTS) when none is under way."""
        if self._id is None or not self._count:
            return held_id, ALL_PARTS
        mask = 0
        for i in range(self._count):
            if i not in self._parts:
                mask |= 1 << (i if i < 31 else 31)
        return self._id, mask

    def add(self, p):
        f = p.fields
        hid = f["header_id"]
        part = f["part"]
        parts = f["parts"]
        if part >= parts:
            self.bad += 1
            return None
        if hid != self._id or parts != self._count:
            if self._parts:
                self.restarts += 1
            self._parts = {}
            self._bytes = 0
            self._id = hid
            self._count = parts
        if part not in self._parts:
            self._bytes += len(p.tail)
            if self._bytes > self.max_bytes:
                self.too_big += 1
                self._parts = {}
                self._bytes = 0
                self._id = None
                return None
        self._parts[part] = p.tail
        if len(self._parts) < parts:
            return None
        blob = b"".join([self._parts[i] for i in range(parts)])
        self._parts = {}
        self._bytes = 0
        self._id = None
        if linkheader.header_id(blob) != hid:
            self.bad += 1
            return None
        try:
            h = linkheader.decode(blob)
        except Exception:
            self.bad += 1
            return None
        self.assembled += 1
        return h


def unwrap_time_us(prev_us, t24):
    """A full microsecond time from a 24-bit stamp, the one nearest prev_us (wrap 16.78 s)."""
    d = (t24 - prev_us) % TIME_WRAP_US
    if d >= TIME_WRAP_US // 2:
        d -= TIME_WRAP_US
    return prev_us + d
