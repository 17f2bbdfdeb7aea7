"""Row transforms of a staff file's codes: what the PNG's pixels hold when they are not the codes.

    from protocol import rowtransform
    planes = rowtransform.forward("d2p", codes16)       # list of rows of 16-bit codes -> 2 x rows of bytes
    codes16 == rowtransform.inverse("d2p", planes)      # exact

PNG's filters predict a sample from its left neighbour only (first order), and for 16-bit
samples they work byte by byte, so deflate sees the high and low bytes of every difference in
one alphabet. "d2p" (the header's "t", only for 16-bit staffs) stores per row the second
difference of the codes along time, zigzagged, split into byte planes: the image is 8-bit with
2 x rows rows, first every row's high bytes, then every row's low bytes:

    d_0 = c_0,  d_1 = c_1 - 2 c_0,  d_t = c_t - 2 c_(t-1) + c_(t-2)      (mod 2^16, then in [-2^15, 2^15))
    z = 2 d (d >= 0), -2 d - 1 (d < 0)                                   (zigzag: small |d|, small z)
    plane row r = z >> 8 ;  plane row rows + r = z & 255

and the inverse sums twice (mod 2^16). Old files (no "t") hold the codes themselves. Pure
Python ints and lists (runs on MicroPython); host/stafffile.py has the numpy twin.
"""

from protocol.errors import FormatError

NAMES = ("d2p",)
MASK = 0xFFFF


def check(name, where="header"):
    """name (None or a known transform), or FormatError naming it."""
    if name is None or name in NAMES:
        return name
    raise FormatError("%s: unknown row transform %r (this reader knows %s)" % (where, name, ", ".join(NAMES)))


def _zig(d):
    # the difference mod 2^16 as a signed number in [-2^15, 2^15), zigzagged
    d &= MASK
    if d >= 0x8000:
        d -= 0x10000
    return 2 * d if d >= 0 else -2 * d - 1


def _unzig(z):
    return (z >> 1) if not z & 1 else -((z + 1) >> 1)


def forward(name, rows):
    """The byte-plane rows (2 x len(rows) lists of ints 0..255) of 16-bit code rows (ints
    0..65535, else ValueError)."""
    check(name)
    hi, lo = [], []
    for c in rows:
        zs = []
        p1 = p2 = 0
        for x in c:
            if not (isinstance(x, int) and 0 <= x <= MASK):
                raise ValueError("row transform %s: code %r is not a 16-bit code (0..65535)" % (name, x))
            # d_t = c_t - 2 c_(t-1) + c_(t-2), with c_(-1) = c_(-2) = 0
            zs.append(_zig(x - 2 * p1 + p2))
            p2, p1 = p1, x
        hi.append([z >> 8 for z in zs])
        lo.append([z & 0xFF for z in zs])
    return hi + lo


def inverse(name, planes):
    """The 16-bit code rows of byte-plane rows (forward's output), or FormatError: planes
    forward cannot make (an odd count, a pair of unequal length, a sample above a byte)."""
    check(name)
    if len(planes) % 2:
        raise FormatError("row transform %s: %d plane rows, not an even count (high bytes, then low)"
                          % (name, len(planes)))
    n = len(planes) // 2
    out = []
    for r in range(n):
        if len(planes[r]) != len(planes[n + r]):
            raise FormatError("row transform %s: plane rows %d and %d differ in length (%d, %d)"
                              % (name, r, n + r, len(planes[r]), len(planes[n + r])))
        c = []
        p1 = p2 = 0
        for h, l in zip(planes[r], planes[n + r]):
            if not (0 <= h <= 255 and 0 <= l <= 255):
                raise FormatError("row transform %s: plane sample %r / %r is not a byte" % (name, h, l))
            # c_t = d_t + 2 c_(t-1) - c_(t-2)  (mod 2^16)
            x = (_unzig((h << 8) | l) + 2 * p1 - p2) & MASK
            c.append(x)
            p2, p1 = p1, x
        out.append(c)
    return out
