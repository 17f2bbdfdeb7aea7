"""The receiver's packet reader: staff FRAME packets decoded without allocating, the rest via protocol.

    r = FrameReader(nrows_max=64)
    for i in range(n):                       # bytes from the UART, one at a time
        kind = r.push(buf[i])                # NONE, FRAME or OTHER
        if kind == FRAME: use r.codes[:r.nrows], r.missing[:r.nrows]
        elif kind == OTHER: for p in r.packets: ...   # protocol.packets.Packet (HELLO, HEADER, ...)

The wire format is protocol/packets.py's (COBS + 0x00, body = type, seq, time, payload, CRC-32
seeded with SCHEMA). FRAME8/16(M) packets, the steady-state traffic, are COBS-decoded in place
into a preallocated body buffer and checked with a CRC-32 kept as two 16-bit halves, so that no
int ever exceeds 2^30 and nothing is allocated per frame on a 32-bit MicroPython port. Every other
packet (rare) is handed, as received, to protocol.packets.Decoder, which validates it in full.
Drops are counted by reason like the Decoder's; a corrupted frame is never delivered.
"""

from protocol import packets as pk
from protocol import crc as _crc

try:
    from binascii import crc32 as _crc32     # C on the rp2 port: ~4 us a byte, not ~60
except ImportError:
    _crc32 = None
_RESIDUE = 0x2144DF1C                        # CRC-32 of any message followed by its own CRC

NONE = 0
FRAME = 1
OTHER = 2

_T_LO = None
_T_HI = None


def _tables():
    # CRC-32 (reflected 0xEDB88320) table split into 16-bit halves, built once
    global _T_LO, _T_HI
    if _T_LO is None:
        lo = []
        hi = []
        for i in range(256):
            c_lo = i
            c_hi = 0
            for _ in range(8):
                # c = (c >> 1) ^ poly if c & 1 else c >> 1, on the halves
                odd = c_lo & 1
                c_lo = (c_lo >> 1) | ((c_hi & 1) << 15)
                c_hi = c_hi >> 1
                if odd:
                    c_lo ^= 0x8320
                    c_hi ^= 0xEDB8
            lo.append(c_lo)
            hi.append(c_hi)
        _T_LO = lo
        _T_HI = hi
    return _T_LO, _T_HI


class FrameReader:
    """Byte-at-a-time reader; see the module docstring. Counters: frames, drops (by reason), gaps."""

    def __init__(self, nrows_max=64, schema=pk.SCHEMA):
        self.t_lo, self.t_hi = _tables()
        # CRC register seeded with the schema: init = schema ^ 0xFFFFFFFF, as two halves
        seed = schema ^ 0xFFFFFFFF
        self.seed_lo = seed & 0xFFFF
        self.seed_hi = (seed >> 16) & 0xFFFF
        self.enc = bytearray(pk.MAX_ENCODED + 1)     # raw packet bytes (for the OTHER path)
        self.body = bytearray(pk.MAX_ENCODED + 1)    # COBS-decoded body + CRC
        self.schema = schema
        # body[:k] views for every frame size up to nrows_max 16-bit rows, made once: slicing
        # per frame would allocate (longer packets take the Python CRC below)
        big = pk.HEAD_SIZE + 2 + ((nrows_max + 7) >> 3) + 2 * nrows_max + pk.CRC_SIZE
        mv = memoryview(self.body)
        self.views = [mv[:k] for k in range(big + 1)]
        self.n = 0                                   # raw bytes so far
        self.m = 0                                   # decoded bytes so far
        self.code = 0                                # COBS bytes left in the current block
        self.block_ff = True                         # current block started with 0xFF (no zero)
        self.overflow = False
        self.bad_cobs = False
        self.nrows_max = nrows_max
        self.codes = [0] * nrows_max
        self.missing = [False] * nrows_max
        self.nrows = 0
        self.bits = 8
        self.seq = 0
        self.time_us = 0
        self.frames = 0
        self.gaps = 0
        self.last_seq = -1
        self.drops = {}
        for r in pk.DROP_REASONS:
            self.drops[r] = 0
        self.drops["rows"] = 0
        self.decoder = pk.Decoder(schema)
        self.packets = []

    def dropped(self):
        return sum(self.drops.values()) + self.decoder.dropped()

    def scan(self, buf, i, n):
        """Take buf[i:n] up to the next 0 byte (not taken); returns its index, or n.

        The same state machine as push() for non-zero bytes, on locals: on the rp2 port a
        push() call costs ~0.26 ms a byte (a byte arrives every 87 us at 115200 baud)."""
        if self.overflow:
            while i < n and buf[i] != 0:
                i += 1
            return i
        enc = self.enc
        body = self.body
        k = self.n
        m = self.m
        code = self.code
        ff = self.block_ff
        top = pk.MAX_ENCODED
        while i < n:
            b = buf[i]
            if b == 0:
                break
            if k >= top:
                self.overflow = True
                self.drops["too_long"] += 1
                while i < n and buf[i] != 0:
                    i += 1
                break
            enc[k] = b
            # in-place COBS decode: a code byte opens a block of code-1 data bytes
            if code == 0:
                if k > 0 and not ff:
                    body[m] = 0
                    m += 1
                code = b - 1
                ff = b == 0xFF
            else:
                body[m] = b
                m += 1
                code -= 1
            k += 1
            i += 1
        self.n = k
        self.m = m
        self.code = code
        self.block_ff = ff
        return i

    def push(self, b):
        """Take one byte; NONE, FRAME (codes ready) or OTHER (self.packets ready)."""
        if b != 0:
            if self.overflow:
                return NONE
            n = self.n
            if n >= pk.MAX_ENCODED:
                self.overflow = True
                self.drops["too_long"] += 1
                return NONE
            self.enc[n] = b
            self.n = n + 1
            # in-place COBS decode: a code byte opens a block of code-1 data bytes
            if self.code == 0:
                if n > 0 and not self.block_ff:
                    self.body[self.m] = 0
                    self.m += 1
                self.code = b - 1
                self.block_ff = b == 0xFF
            else:
                self.body[self.m] = b
                self.m += 1
                self.code -= 1
            return NONE
        # delimiter
        n = self.n
        m = self.m
        over = self.overflow
        left = self.code
        self.n = 0
        self.m = 0
        self.code = 0
        self.block_ff = True
        self.overflow = False
        if over or n == 0:
            return NONE
        if left != 0:
            self.drops["cobs"] += 1
            return NONE
        if n < pk.HEAD_SIZE + pk.CRC_SIZE + 1:
            self.drops["short"] += 1
            return NONE
        t = self.body[0]
        if t < 0x10 or t > 0x13:
            self.enc[n] = 0
            self.packets = self.decoder.feed(memoryview(self.enc)[:n + 1])
            for p in self.packets:
                self._seq(p.seq)
            return OTHER if self.packets else NONE
        return FRAME if self._frame(m) else NONE

    def _crc_bad(self, body, nb):
        # CRC-32 over body[0:nb] on two 16-bit halves
        t_lo = self.t_lo
        t_hi = self.t_hi
        c_lo = self.seed_lo
        c_hi = self.seed_hi
        for i in range(nb):
            k = (c_lo ^ body[i]) & 0xFF
            # c = (c >> 8) ^ T[k]
            c_lo = ((c_lo >> 8) | ((c_hi & 0xFF) << 8)) ^ t_lo[k]
            c_hi = (c_hi >> 8) ^ t_hi[k]
        c_lo ^= 0xFFFF
        c_hi ^= 0xFFFF
        return c_lo != (body[nb] | (body[nb + 1] << 8)) or c_hi != (body[nb + 2] | (body[nb + 3] << 8))

    def _frame(self, m):
        body = self.body
        nb = m - pk.CRC_SIZE
        if nb < pk.HEAD_SIZE:
            self.drops["short"] += 1
            return False
        if _crc32 is not None and nb + pk.CRC_SIZE < len(self.views):
            # the C CRC-32 over body and its CRC: a good frame leaves the residue 0x2144DF1C,
            # below 2^30, so no long int is made (a bad one may make one: rare, and dropped)
            bad = _crc32(self.views[nb + pk.CRC_SIZE], self.schema) != _RESIDUE
        else:
            bad = self._crc_bad(body, nb)
        if bad:
            self.drops["crc"] += 1
            return False
        t = body[0]
        p = pk.HEAD_SIZE
        masked = t == 0x11 or t == 0x13
        wide = t == 0x12 or t == 0x13
        if masked:
            if nb - p < 2:
                self.drops["length"] += 1
                return False
            rows = body[p] | (body[p + 1] << 8)
            p += 2
            mk = (rows + 7) >> 3
            if rows == 0 or nb - p != mk + rows * (2 if wide else 1):
                self.drops["length"] += 1
                return False
            mp = p
            p += mk
        else:
            rows = (nb - p) >> 1 if wide else nb - p
            if rows == 0 or (wide and (nb - p) & 1):
                self.drops["length"] += 1
                return False
        if rows > self.nrows_max:
            self.drops["rows"] += 1
            return False
        codes = self.codes
        missing = self.missing
        for i in range(rows):
            if wide:
                codes[i] = body[p] | (body[p + 1] << 8)
                p += 2
            else:
                codes[i] = body[p]
                p += 1
            missing[i] = masked and (body[mp + (i >> 3)] >> (i & 7)) & 1 == 1
        self.nrows = rows
        self.bits = 16 if wide else 8
        seq = body[1] | (body[2] << 8)
        self._seq(seq)
        self.seq = seq
        self.time_us = body[3] | (body[4] << 8) | (body[5] << 16)
        self.frames += 1
        return True

    def _seq(self, seq):
        # packets missing by sequence number, over every delivered packet (like the Decoder)
        if self.last_seq >= 0:
            self.gaps += (seq - self.last_seq - 1) & 0xFFFF
        self.last_seq = seq
