"""Staff ranges on a binary grid, packed into a short base64 bit stream (the staff header's "r").

    from protocol import staffranges as sr
    s = sr.step_down(0.0123)              # the largest grid step <= 0.0123: M * 2^E, M in 32..63
    lo = sr.coarse(-7.31, -7.2)           # the coarsest dyadic number in [-7.31, -7.2]: -7.25
    text = sr.pack([lo], [lo + 255 * s], 255)          # "r" text, or None when a range is off the grid
    los, his = sr.unpack(text, 1, 255)                  # exactly the same doubles

A row's range is lo = n * 2^F (any dyadic number) and hi = lo + top * step with step =
M * 2^E, M = 32..63 (a 5-bit mantissa: neighbouring steps differ by at most 1/32). Every
number is exact in binary (double) floating point, so the decoded doubles are the encoder's on
any platform. Stream (protocol/SPEC.md section 6): three Exp-Golomb codes naming the code choice (mode,
order of the step codes, order of the n codes), then per row: the step index k (step_of(k) ==
step) minus its reference (the skeleton's own step for that dof, ref_indices, or 0), as a
signed difference from the first row's (mode 0) or the previous row's (mode 1); n (0, or odd:
n > 0 as n, n < 0 as 1 - n); if n != 0, d = F - (k div 32 - 5) as a signed difference from the
previous such row's. The bits are padded with 0 to a multiple of 6 and written in base64
(A-Z a-z 0-9 + /, no "=" padding). A range that is not exactly on the grid makes pack() return
None (the header then writes the numbers as JSON). MicroPython-safe: ints, floats, math.
"""

import math

from protocol.errors import FormatError

MBITS = 5                     # mantissa bits of a step
MANT = 1 << MBITS             # the step mantissa runs over MANT .. 2 MANT - 1 (32 .. 63)
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
MAX_PREFIX = 64               # the longest Exp-Golomb prefix a reader accepts (values < 2^64)


def step_of(k):
    """The grid step of index k: (32 + k mod 32) * 2^(k div 32 - 5); step_of(0) == 1.0."""
    return math.ldexp(float(MANT + (k & (MANT - 1))), (k >> MBITS) - MBITS)


def index_of(step):
    """k with step_of(k) == step exactly, or None when step is not on the grid."""
    if not (step > 0.0) or step != step or step - step != 0.0:
        return None
    m, e = math.frexp(step)                  # step = m * 2^e, 0.5 <= m < 1
    mi = m * 2.0 * MANT                      # 32 <= mi < 64: step = mi * 2^(e - 6)
    if mi != int(mi):
        return None
    k = (e - 1) * MANT + int(mi) - MANT
    return k if step_of(k) == step else None


def step_down(x):
    """The largest grid step <= x (x > 0)."""
    m, e = math.frexp(x)
    k = (e - 1) * MANT + int(math.floor(m * 2.0 * MANT)) - MANT
    while step_of(k) > x:
        k -= 1
    while step_of(k + 1) <= x:
        k += 1
    return step_of(k)


def step_up(x):
    """The smallest grid step >= x (x > 0)."""
    s = step_down(x)
    if s >= x:
        return s
    return step_of(index_of(s) + 1)


def coarse(a, b):
    """The dyadic number n * 2^F in [a, b] with the largest F (then the smallest |n|); a <= b."""
    if a <= 0.0 <= b:
        return 0.0
    f = math.frexp(max(abs(a), abs(b)))[1] + 1
    while True:
        q = math.ldexp(1.0, f)
        n = math.ceil(a / q) if a > 0 else -math.ceil(-b / q)
        if a <= n * q <= b:
            return n * q
        f -= 1


def _dyadic(x):
    """(n, F) with x == n * 2^F, n odd (or (0, 0) for 0)."""
    if x == 0.0:
        return 0, 0
    m, e = math.frexp(x)
    n = int(m * 9007199254740992.0)         # m * 2^53, exact
    f = e - 53
    while n & 1 == 0:
        n >>= 1
        f += 1
    return n, f


def _zig(v):
    return 2 * v if v >= 0 else -2 * v - 1


def _unzig(u):
    return u >> 1 if u & 1 == 0 else -((u + 1) >> 1)


def _put(bits, u, order=0):
    """Exp-Golomb of order `order` of u >= 0 appended to the list of 0/1 ints."""
    x = (u >> order) + 1
    nb = 0
    while (x >> nb) > 1:
        nb += 1
    bits.extend([0] * nb)
    for i in range(nb, -1, -1):
        bits.append((x >> i) & 1)
    for i in range(order - 1, -1, -1):
        bits.append((u >> i) & 1)


def ref_indices(los, his, top):
    """Reference step indices (the grid step at or below each (hi - lo) / top), or None when a
    range is missing (NaN): what pack and unpack predict each row's step from."""
    out = []
    for lo, hi in zip(los, his):
        s = (hi - lo) / top
        if not (s > 0.0) or s - s != 0.0:
            return None
        out.append(index_of(step_down(s)))
    return out


def _symbols(los, his, top, ref):
    """Per row (k residual, n code, d) or None if a range is off the grid."""
    rows = []
    for i in range(len(los)):
        lo, hi = los[i], his[i]
        k = index_of((hi - lo) / top)
        if k is None or lo + step_of(k) * top != hi:
            return None
        n, f = _dyadic(lo)
        rows.append((k - (ref[i] if ref else 0), 0 if n == 0 else (n if n > 0 else 1 - n), f - ((k >> MBITS) - MBITS)))
    return rows


def _eglen(u, order=0):
    """Bits of the Exp-Golomb code of u >= 0 (what _put appends)."""
    x = (u >> order) + 1
    nb = 0
    while (x >> nb) > 1:
        nb += 1
    return 2 * nb + 1 + order


def _cost(rows, mode, ok, on):
    """Bits _write(rows, mode, ok, on) would write."""
    n = _eglen(mode) + _eglen(ok) + _eglen(on)
    pk, pd = 0, 0
    for i in range(len(rows)):
        kr, u, d = rows[i]
        n += _eglen(_zig(kr - pk), ok) + _eglen(u, on)
        if mode == 1 or i == 0:
            pk = kr
        if u:
            n += _eglen(_zig(d - pd))
            pd = d
    return n


def _write(rows, mode, ok, on):
    """The bit list of rows: mode 0 k residuals against the first row's, 1 against the previous."""
    bits = []
    _put(bits, mode)
    _put(bits, ok)
    _put(bits, on)
    pk, pd = 0, 0
    for i in range(len(rows)):
        kr, u, d = rows[i]
        _put(bits, _zig(kr - pk), ok)
        if mode == 1 or i == 0:
            pk = kr
        _put(bits, u, on)
        if u:
            _put(bits, _zig(d - pd))
            pd = d
    return bits


def pack(los, his, top, ref=None):
    """The "r" text of every row's (lo, hi) at largest code top, or None if any is off the grid.

    ref: reference step indices (ref_indices of the skeleton's dof ranges), or None. The
    shortest of the stream's 2 x 4 x 4 code choices is written (they head the stream).
    """
    rows = _symbols(los, his, top, ref)
    if rows is None:
        return None
    best = None
    for mode in (0, 1):
        for ok in range(4):
            for on in range(4):
                n = _cost(rows, mode, ok, on)
                if best is None or n < best[0]:
                    best = (n, mode, ok, on)
    return bits_text(_write(rows, best[1], best[2], best[3]))


def bits_text(bits):
    """The base64 text of a list of 0/1 ints, 0-padded to a multiple of 6 (no "=")."""
    bits = list(bits)
    while len(bits) % 6:
        bits.append(0)
    out = []
    for i in range(0, len(bits), 6):
        v = 0
        for b in bits[i:i + 6]:
            v = (v << 1) | b
        out.append(_B64[v])
    return "".join(out)


def put_code(bits, u, order=0):
    """Exp-Golomb of order `order` of u >= 0 appended to bits (the codes "r" is made of)."""
    _put(bits, u, order)


def zig(v):
    """A signed number as the non-negative one Exp-Golomb codes: 2v (v >= 0), -2v - 1."""
    return _zig(v)


def unzig(u):
    return _unzig(u)


class BitReader:
    """Exp-Golomb codes from base64 text (a header key's: FormatError names key)."""

    def __init__(self, text, where, key="r"):
        self.where = where
        self.key = key
        self.bits = []
        for ch in text:
            v = _B64.find(ch)
            if v < 0:
                raise FormatError("%s: '%s' holds %r, not base64" % (where, key, ch))
            for i in range(5, -1, -1):
                self.bits.append((v >> i) & 1)
        self.pos = 0

    def _short(self):
        raise FormatError("%s: '%s' ends inside a row (truncated)" % (self.where, self.key))

    def bit(self):
        if self.pos >= len(self.bits):
            self._short()
        self.pos += 1
        return self.bits[self.pos - 1]

    def get(self, order=0):
        nb = 0
        while True:
            if self.pos >= len(self.bits):
                self._short()
            b = self.bits[self.pos]
            self.pos += 1
            if b:
                break
            nb += 1
            if nb > MAX_PREFIX:
                raise FormatError("%s: '%s' holds a number too large" % (self.where, self.key))
        x = 1
        for _ in range(nb):
            if self.pos >= len(self.bits):
                self._short()
            x = (x << 1) | self.bits[self.pos]
            self.pos += 1
        x -= 1
        for _ in range(order):
            x = (x << 1) | self.bit()
        return x


def unpack(text, n, top, ref=None, where="header"):
    """(los, his) of n rows from "r" text (ref as given to pack); FormatError if it is not n
    rows of this encoding."""
    if not isinstance(text, str):
        raise FormatError("%s: 'r' must be a string" % where)
    r = BitReader(text, where)
    mode, ok, on = r.get(), r.get(), r.get()
    if mode > 1 or ok > 8 or on > 8:
        raise FormatError("%s: 'r' does not start with a known code choice" % where)
    los, his = [], []
    pk, pd = 0, 0
    for i in range(n):
        kr = pk + _unzig(r.get(ok))
        if mode == 1 or i == 0:
            pk = kr
        k = kr + (ref[i] if ref else 0)
        u = r.get(on)
        if u == 0:
            lo = 0.0
        else:
            m = u if u & 1 else 1 - u
            pd = pd + _unzig(r.get())
            f = pd + ((k >> MBITS) - MBITS)
            if abs(m) >= (1 << 53) or f > 1000 or f < -1100:
                raise FormatError("%s: 'r' holds a range that is not a finite number" % where)
            lo = math.ldexp(float(m), f)
        if (k >> MBITS) > 1000 or (k >> MBITS) < -1000:
            raise FormatError("%s: 'r' holds a step that is not a finite number" % where)
        hi = lo + step_of(k) * top
        if not (hi > lo) or hi - hi != 0.0 or lo - lo != 0.0:
            raise FormatError("%s: 'r' holds an empty or infinite range" % where)
        los.append(lo)
        his.append(hi)
    if len(r.bits) - r.pos >= 6 or any(r.bits[r.pos:]):
        raise FormatError("%s: 'r' holds more than %d rows" % (where, n))
    return los, his
