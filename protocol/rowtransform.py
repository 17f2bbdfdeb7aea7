"""Row transforms of a staff file's codes: what the PNG's pixels hold when they are not the codes.

    from protocol import rowtransform
    planes = rowtransform.forward("d2p", codes16)            # rows of 16-bit codes -> 2 x rows rows of bytes
    codes16 == rowtransform.inverse("d2p", planes)           # exact
    orders = rowtransform.parse_orders("2 1 - 3".replace(" ", ""), 4)   # "dxp": one order per row
    planes = rowtransform.forward("dxp", codes16, orders)    # 2 x (rows not "-") rows of bytes
    codes16 == rowtransform.inverse("dxp", planes, orders, frames)
    refs = [(3, 1, -40)]                                     # dxp: row 3 predicted from row 1, m = -40/64
    tx = rowtransform.refs_text(refs)                        # the header's "tx"; parse_refs(tx, orders) == refs
    planes = rowtransform.forward("dxp", codes16, orders, refs)

PNG's filters predict a sample from its left neighbour only (first order), and for 16-bit
samples they work byte by byte, so deflate sees the high and low bytes of every difference in
one alphabet. "d2p" (the header's "t", only for 16-bit staffs) stores per row the second
difference of the codes along time, zigzagged, split into byte planes: the image is 8-bit with
2 x rows rows, first every row's high bytes, then every row's low bytes:

    d_0 = c_0,  d_1 = c_1 - 2 c_0,  d_t = c_t - 2 c_(t-1) + c_(t-2)      (mod 2^16, then in [-2^15, 2^15))
    z = 2 d (d >= 0), -2 d - 1 (d < 0)                                   (zigzag: small |d|, small z)
    plane row r = z >> 8 ;  plane row rows + r = z & 255

and the inverse sums twice (mod 2^16). "dxp" is the same with an order per row (the header's
"to", one character a row): "0".."3" the n-th difference (c_(-1) = c_(-2) = ... = 0; order 0
is the codes themselves, 2 is d2p's), "-" a row left out of the image (every code 0: a row
that never moves; one character alone: every row that order); the planes hold the stored rows
in order, high bytes then low. A row may be
predicted from earlier stored rows (the header's "tx": triples of rows since the last
predicted row (0: the same row again, another reference), how many rows back the reference
is, and m, as Exp-Golomb codes in base64, protocol/staffranges.py's: EG_0(count) EG_0(j),
then per triple EG_0(rows since) EG_0(back - 1) EG_j(zigzag(m))), in its own order n:

    x_it = D^n(c_ref_i)_t  (mod 2^16, signed);   p_t = (sum_i m_i x_it + 32) >> 6   (floor)
    d_t = D^n(c)_t - p_t  (mod 2^16, signed), zigzagged and split as above

(the Euler channels of one joint, a spine's segments, a thumb and its wrist move together: on
the CMU clips 2.3% of the image data). "dxs" is dxp with the low planes in another order:
by the sum of their row's high plane (ties: in row order, low_order), which the reader has
before it needs the low planes; rows of small differences (low bytes skewed towards 0) and of
large ones (low bytes near uniform) then sit together, and deflate's blocks and tables fit
them better (1% of the image data on the CMU clips). "dxe" (the 16-bit default since session
15) is dxs whose differences start at the first frame instead of at zeros before it: frame t
holds the difference of order min(t, n),

    d_t = D^min(t, n)(c)_t,    D^k(c)_t = D^(k-1)(c)_t - D^(k-1)(c)_(t-1)

so only frame 0 holds a code itself (dxs: frames 0..n-1 hold about a code each, c_1 - 2 c_0 at
order 2); the references' x are the same differences of theirs (0.5% of the image data on the
CMU clips at 24 fps). Old files (no "t") hold the codes themselves. Pure Python ints and lists (runs on MicroPython);
host/rowtransform.py has the numpy twin.
"""

from protocol import staffranges
from protocol.errors import FormatError

NAMES = ("d2p", "dxp", "dxs", "dxe")
SORTED = ("dxs", "dxe")       # low planes in the order of their high planes' sums (low_order)
EDGE = ("dxe",)               # the first frames' differences of lower order (_diff's edge)
MASK = 0xFFFF
ORDERS = "0123"               # "dxp" orders a row can have
SKIP = "-"                    # "dxp": the row is not in the image, every code 0
MAX_M = 4096                  # "dxp" cross-row multipliers: 0 < |m| <= MAX_M (|m / 64| <= 64)
SHIFT = 6                     # m in 1/64 (1/256: 0.1% larger files, the header's m longer)
MAX_CODE_ORDER = 16           # "tx": the largest Exp-Golomb order of m


def check(name, where="header"):
    """name (None or a known transform), or FormatError naming it."""
    if name is None or name in NAMES:
        return name
    raise FormatError("%s: unknown row transform %r (this reader knows %s)" % (where, name, ", ".join(NAMES)))


def parse_orders(text, nrows, where="header"):
    """The orders of "dxp"'s "to" text (one per row: 0..3, or -1 for "-"), or FormatError."""
    if isinstance(text, str) and len(text) == 1 and text != SKIP:
        text = text * nrows                         # one order for every row
    if not isinstance(text, str) or len(text) != nrows:
        raise FormatError("%s: 'to' must name one order per row (%d), not %r" % (where, nrows, text))
    out = []
    for ch in text:
        if ch == SKIP:
            out.append(-1)
        elif ch in ORDERS:
            out.append(ORDERS.index(ch))
        else:
            raise FormatError("%s: 'to' holds %r (this reader knows orders %s and %r)" % (where, ch, ORDERS, SKIP))
    if out.count(-1) == nrows:
        raise FormatError("%s: 'to' leaves every row out of the image" % where)
    return out


def _flat(tx, where):
    # the triples of "tx" text, flat: rows since, rows back, m
    if not isinstance(tx, str):
        raise FormatError("%s: 'tx' must be a string (base64), not %r" % (where, tx))
    r = staffranges.BitReader(tx, where, "tx")
    n, j = r.get(), r.get()
    if j > MAX_CODE_ORDER or n > len(tx) * 6:
        raise FormatError("%s: 'tx' starts with %d triples at order %d: not this encoding" % (where, n, j))
    out = []
    for _ in range(n):
        out += [r.get(), r.get() + 1, staffranges.unzig(r.get(j))]
    rest = r.bits[r.pos:]
    if len(rest) >= 6 or any(rest):
        raise FormatError("%s: 'tx' holds bits after its last triple" % where)
    return out


def parse_refs(tx, orders, where="header"):
    """The (row, reference row, m) of dxp's "tx" text (triples: rows since the last predicted
    row (the first: its index + 1; 0: the same row, another reference), rows back to the
    reference, m), or FormatError."""
    if tx is None:
        return []
    tx = _flat(tx, where)
    out, k = [], -1
    for i in range(0, len(tx), 3):
        dk, back, m = tx[i:i + 3]
        k += dk
        j = k - back
        if dk < (1 if not out else 0) or k >= len(orders) or back < 1 or j < 0:
            raise FormatError("%s: 'tx' names row %d predicted from row %d (rows %d, each from an "
                              "earlier one, in order)" % (where, k, j, len(orders)))
        if orders[k] < 0 or orders[j] < 0:
            raise FormatError("%s: 'tx' predicts row %d from row %d, and one of them is not in the image" % (where, k, j))
        if m == 0 or abs(m) > MAX_M:
            raise FormatError("%s: 'tx' multiplier %d of row %d is not in 1..%d (either sign)" % (where, m, k, MAX_M))
        if dk == 0 and any(r[0] == k and r[1] == j for r in out):
            raise FormatError("%s: 'tx' names row %d's reference row %d twice" % (where, k, j))
        out.append((k, j, m))
    return out


def refs_text(refs):
    """The "tx" text of refs (parse_refs' output): m's Exp-Golomb order the shortest."""
    flat, last = [], -1
    for k, j, m in refs:
        flat += [k - last, k - j, m]
        last = k
    return min((flat_text(flat, order) for order in range(MAX_CODE_ORDER + 1)), key=len)


def flat_text(flat, order, extra=()):
    """"tx" text of flat triples (rows since, rows back, m), m at Exp-Golomb order `order`, the
    bits extra after them (none in a valid file); no checks (tests write bad ones with it)."""
    bits = []
    staffranges.put_code(bits, len(flat) // 3)
    staffranges.put_code(bits, order)
    for i in range(0, len(flat), 3):
        staffranges.put_code(bits, flat[i])
        staffranges.put_code(bits, flat[i + 1] - 1)
        staffranges.put_code(bits, staffranges.zig(flat[i + 2]), order)
    return staffranges.bits_text(bits + list(extra))


def _s16(d):
    # d mod 2^16 as a signed number in [-2^15, 2^15)
    d &= MASK
    return d - 0x10000 if d >= 0x8000 else d


def _predicted(xs, ms):
    # p_t = (sum_i m_i x_it + 32) >> 6, x_i the references' differences mod 2^16, signed
    out = [1 << (SHIFT - 1)] * len(xs[0])
    for x, m in zip(xs, ms):
        out = [a + m * _s16(v) for a, v in zip(out, x)]
    return [a >> SHIFT for a in out]


def ref_table(refs):
    """row -> ([reference rows], [m]) of parse_refs' list."""
    t = {}
    for k, j, m in refs:
        t.setdefault(k, ([], []))
        t[k][0].append(j)
        t[k][1].append(m)
    return t


def orders_text(orders):
    """The "to" text of orders (forward's list): one character when every row has one order."""
    text = "".join(SKIP if o < 0 else ORDERS[o] for o in orders)
    return text[:1] if text and text == text[0] * len(text) and text[0] != SKIP else text


def low_order(hi):
    """dxs: the stored rows in the order their low planes are written: by the sum of the row's
    high bytes, ties in row order."""
    return sorted(range(len(hi)), key=lambda r: (sum(hi[r]), r))


def _orders(name, n, orders):
    if name == "d2p":
        return [2] * n
    if orders is None or len(orders) != n:
        raise ValueError("row transform dxp needs one order per row")
    return list(orders)


def _zig(d):
    # the difference mod 2^16 as a signed number in [-2^15, 2^15), zigzagged
    d &= MASK
    if d >= 0x8000:
        d -= 0x10000
    return 2 * d if d >= 0 else -2 * d - 1


def _unzig(z):
    return (z >> 1) if not z & 1 else -((z + 1) >> 1)


def _diff(c, n, edge=False):
    # the n-th difference along time, each with the sample before the first = 0 (edge: frame t
    # of order min(t, n), the differences start at the first frame)
    for k in range(n):
        s = k if edge else 0
        c = c[:s + 1] + [c[i] - c[i - 1] for i in range(s + 1, len(c))]
    return c


def _sum(d, n, edge=False):
    # the inverse: n running sums, mod 2^16 (edge: the k-th from frame k - 1 on)
    for k in range(n - 1, -1, -1):
        s = k if edge else 0
        acc, out = 0, [x & MASK for x in d[:s]]
        for x in d[s:]:
            acc = (acc + x) & MASK
            out.append(acc)
        d = out
    return d


def forward(name, rows, orders=None, refs=()):
    """The byte-plane rows (lists of ints 0..255) of 16-bit code rows: high then low planes of
    the rows in the image (all for d2p; for dxp those whose order is not -1, refs predicted)."""
    check(name)
    ref = ref_table(refs)
    edge = name in EDGE
    hi, lo = [], []
    for c in rows:
        for x in c:
            if not (isinstance(x, int) and 0 <= x <= MASK):
                raise ValueError("row transform %s: code %r is not a 16-bit code (0..65535)" % (name, x))
    for k, (c, n) in enumerate(zip(rows, _orders(name, len(rows), orders))):
        if n < 0:
            continue
        d = _diff(list(c), n, edge)
        if k in ref:
            js, ms = ref[k]
            d = [a - b for a, b in zip(d, _predicted([_diff(list(rows[j]), n, edge) for j in js], ms))]
        zs = [_zig(x) for x in d]
        hi.append([z >> 8 for z in zs])
        lo.append([z & 0xFF for z in zs])
    if name in SORTED:
        lo = [lo[r] for r in low_order(hi)]
    return hi + lo


def inverse(name, planes, orders=None, frames=None, refs=()):
    """The 16-bit code rows of byte-plane rows (forward's output); frames is needed only when
    dxp leaves rows out."""
    check(name)
    if len(planes) % 2:
        raise FormatError("row transform %s: %d plane rows, not an even count (high bytes, then low)"
                          % (name, len(planes)))
    m = len(planes) // 2
    if name in SORTED:
        lo = [None] * m
        for i, r in enumerate(low_order(planes[:m])):
            lo[r] = planes[m + i]
        planes = list(planes[:m]) + lo
    for r in range(m):
        if len(planes[r]) != len(planes[m + r]):
            raise FormatError("row transform %s: plane rows %d and %d differ in length (%d, %d)"
                              % (name, r, m + r, len(planes[r]), len(planes[m + r])))
        for h, l in zip(planes[r], planes[m + r]):
            if not (0 <= h <= 255 and 0 <= l <= 255):
                raise FormatError("row transform %s: plane sample %r / %r is not a byte" % (name, h, l))
    orders = [2] * m if name == "d2p" else list(orders)
    if frames is None:
        frames = len(planes[0]) if planes else 0
    ref = ref_table(refs)
    edge = name in EDGE
    out, r = [], 0
    for k, n in enumerate(orders):
        if n < 0:
            out.append([0] * frames)
            continue
        d = [_unzig((h << 8) | l) for h, l in zip(planes[r], planes[m + r])]
        if k in ref:
            # the references are earlier rows, already decoded
            js, ms = ref[k]
            d = [a + b for a, b in zip(d, _predicted([_diff(out[j], n, edge) for j in js], ms))]
        out.append([x & MASK for x in _sum(d, n, edge)])
        r += 1
    return out
