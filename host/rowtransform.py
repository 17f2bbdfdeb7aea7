"""The numpy twin of protocol/rowtransform.py: 16-bit codes <-> "d2p" / "dxp" byte planes, exactly.

    from host.rowtransform import to_planes, from_planes, choose_orders
    planes = to_planes(codes)                      # d2p: (rows, frames) uint16 -> (2 * rows, frames) uint8
    assert (from_planes(planes) == codes).all()
    orders = choose_orders(codes, missing)         # dxp: per row 0..3, or -1 (left out: every code 0)
    planes = to_planes(codes, orders)              # (2 * rows kept, frames)
    assert (from_planes(planes, orders, codes.shape[1]) == codes).all()
    orders, refs = choose(codes, missing)          # dxp with rows predicted from earlier rows
    planes = to_planes(codes, orders, refs)
    planes = sort_low(planes)                      # dxs: the low planes by their high planes' sums
    assert (unsort_low(planes) == to_planes(codes, orders, refs)).all()
    orders, refs = choose(codes, missing, edge=True)          # dxe: the differences from the first frame
    planes = sort_low(to_planes(codes, orders, refs, edge=True))

Same integers as the pure version (tests check it with hypothesis): the n-th difference of
each row along time (mod 2^16, signed; n = 2 for d2p), zigzagged, high bytes of every row
then low bytes. choose_orders takes per row the order whose zigzagged differences z cost the
least by the estimate sum(log2(1 + z)) (ties: the lower order; on the CMU clips at 24 fps it
picks as well as deflating each choice, and with "-" for the rows that never move the image
data is 1.5% smaller than d2p's). choose adds, per row, up to MAX_REFS earlier rows and
multipliers m (least squares, in 1/64) that predict its differences best, each where it
saves more than the header's triple costs (an estimated 24 bits). edge=True (dxe): frame t
holds the difference of order min(t, n), only frame 0 a code itself.
"""

import numpy as np

from protocol.errors import FormatError
from protocol.rowtransform import MAX_M, SHIFT, ref_table

MAX_ORDER = 3
CHANGE_BITS = 32.0                    # choose_orders: what a change of order costs, about (in the deflated "to"
                                      # and the planes; 10-24: 0.1% larger files on the CMU clips)
SKIP_BITS = 64.0                      # ... and what a row left out of the image saves (its zero planes)
REF_COST_BITS = 24.0                  # what a row's "tx" triple costs in the header, about
MAX_REFS = 3                          # references per predicted row (3 not 2: 0.2% on the CMU clips, dxe; 4: 0.02% more)
CHOOSE_FRAMES = 4096                  # choose's costs on at most this many frames (evenly spread)


def _diff(c, n, edge=False):
    """(rows, frames) int64: the n-th differences (c_(-1) = .. = 0; edge: frame t of order
    min(t, n)) mod 2^16, signed."""
    d = np.asarray(c).astype(np.int64)
    for k in range(n):
        if edge:
            d = np.concatenate([d[:, :k + 1], np.diff(d[:, k:], axis=1)], axis=1)
        else:
            d = np.diff(d, axis=1, prepend=0)
    return _s16(d)


def _s16(d):
    # d mod 2^16 as a signed number in [-2^15, 2^15)
    return ((d + 0x8000) & 0xFFFF) - 0x8000


def _zigzag(d):
    # z = 2 d (d >= 0), -2 d - 1 (d < 0), of d mod 2^16 signed
    d = _s16(d)
    return np.where(d >= 0, 2 * d, -2 * d - 1)


def _zigzag_diff(c, n, edge=False):
    """(rows, frames) int64: the n-th differences mod 2^16, signed, zigzagged."""
    return _zigzag(_diff(c, n, edge))


def _predicted(ms, xs):
    # p_t = (sum_i m_i x_it + 32) >> 6 (floor), x_i the references' differences (signed);
    # ms (..., refs), xs (..., refs, frames)
    return ((np.asarray(ms, np.int64)[..., None] * xs).sum(axis=-2) + (1 << (SHIFT - 1))) >> SHIFT


def choose_orders(codes, missing=None, D=None):
    """Per row: 0..3, or -1 for a row of code 0 throughout (none missing), of least estimated
    cost, a change of order from the row before costing CHANGE_BITS (the header's "to" is
    deflated: a run is nearly free, each change a few bytes) and a row left out saving
    SKIP_BITS; row 0 is kept when every row would be left out (an image has a row). D: the
    differences of each order (_diff), on the frames to judge by (default: all)."""
    c = np.asarray(codes)
    K = c.shape[0]
    m = np.zeros(c.shape, bool) if missing is None else np.asarray(missing, bool)
    if D is None:
        D = [_diff(c, n) for n in range(MAX_ORDER + 1)]
    # cost[s, k] of row k in state s = order 0..3, then 4 = left out: sum over frames of log2(1 + z)
    cost = np.concatenate([np.stack([np.log2(1.0 + _zigzag(d)).sum(axis=1) for d in D]),
                           np.full((1, K), np.inf)])
    skip = ~(c != 0).any(axis=1) & ~m.any(axis=1)
    cost[MAX_ORDER + 1, skip] = -SKIP_BITS
    # the cheapest sequence of states (Viterbi): total[s] = cost[s, k] + min(total[s], min total + CHANGE_BITS)
    back = np.zeros(cost.shape, int)
    total = cost[:, 0].copy() if K else np.zeros(0)
    for k in range(1, K):
        j = int(np.argmin(total))
        stay = total <= total[j] + CHANGE_BITS
        back[:, k] = np.where(stay, np.arange(len(total)), j)
        total = np.where(stay, total, total[j] + CHANGE_BITS) + cost[:, k]
    orders = [0] * K
    st = int(np.argmin(total)) if K else 0
    for k in range(K - 1, -1, -1):
        orders[k] = st if st <= MAX_ORDER else -1
        st = int(back[st, k])
    if K and all(o < 0 for o in orders):
        orders[0] = 0
    return orders


def choose(codes, missing=None, edge=False):
    """(orders, refs) for dxp: choose_orders, then per stored row (in order) the earlier stored
    row, order and multiplier whose prediction costs least, kept when it saves more than
    REF_COST_BITS."""
    c = np.asarray(codes)
    F = c.shape[1]
    cols = np.unique(np.linspace(0, F - 1, min(F, CHOOSE_FRAMES)).astype(int)) if F else np.zeros(0, int)
    D = [_diff(c, n, edge)[:, cols] for n in range(MAX_ORDER + 1)]
    orders = choose_orders(c, missing, D)
    # the cost of each row's own differences at each order: sum of log2(1 + z)
    own = np.stack([np.log2(1.0 + _zigzag(d)).sum(axis=1) for d in D])
    refs = []
    for k in range(c.shape[0]):
        if orders[k] < 0:
            continue
        best = (own[orders[k], k], orders[k], [], [])
        prev = [j for j in range(k) if orders[j] >= 0]
        for n in range(MAX_ORDER + 1) if prev else ():
            got, js = own[n, k], []
            for _ in range(MAX_REFS):
                cand = _best_ref(D[n], cols >= n, k, prev, js)
                if cand is None or cand[0] + REF_COST_BITS * (len(js) + 1) >= got:
                    break
                js = cand[1]
                got = cand[0] + REF_COST_BITS * len(js)
                if got < best[0]:
                    best = (got, n, js, cand[2])
        if best[2]:
            orders[k] = best[1]
            refs += [(k, j, m) for j, m in sorted(zip(best[2], best[3]))]
    return orders, refs


def _best_ref(Dn, fit, k, prev, js):
    """(cost of row k's residual, references js + [the best next one], their m), or None: each
    candidate fitted jointly with js by least squares (m in 1/64, on the frames fit)."""
    cands = [j for j in prev if j not in js]
    if not cands:
        return None
    # X: (candidates, refs, frames), the references js then the candidate
    X = np.stack([Dn[js + [j]] for j in cands])
    Xf = X[:, :, fit].astype(np.float64)
    y = Dn[k]
    yf = y[fit].astype(np.float64)
    # normal equations G a = b per candidate, by pseudo-inverse (G is singular for rows that
    # never change or repeat a reference)
    G = Xf @ np.swapaxes(Xf, 1, 2)
    a = (np.linalg.pinv(G) @ (Xf @ yf)[..., None])[..., 0]
    m = np.clip(np.round(a * (1 << SHIFT)), -MAX_M, MAX_M).astype(np.int64)
    cost = np.log2(1.0 + _zigzag(y[None, :] - _predicted(m, X))).sum(axis=1)
    cost[~m.all(axis=1)] = np.inf
    i = int(np.argmin(cost))
    if not np.isfinite(cost[i]):
        return None
    return float(cost[i]), js + [cands[i]], [int(x) for x in m[i]]


def to_planes(codes, orders=None, refs=(), edge=False):
    """(2 rows kept, frames) uint8: high then low byte planes of the zigzagged differences
    (orders None: d2p, every row at order 2; refs: (row, earlier row, m) predicted)."""
    c = np.asarray(codes)
    if c.ndim != 2 or not np.issubdtype(c.dtype, np.integer) or (c.size and (c.min() < 0 or c.max() > 0xFFFF)):
        raise ValueError("row transform: the codes are not (rows, frames) 16-bit codes (0..65535)")
    if orders is None:
        z = _zigzag_diff(c, 2)
    else:
        o = np.asarray(orders, int)
        kept = np.nonzero(o >= 0)[0]
        d = np.zeros((len(o), c.shape[1]), np.int64)
        for n in np.unique(o[kept]):
            sel = kept[o[kept] == n]
            d[sel] = _diff(c[sel], int(n), edge)
        for k, (js, ms) in ref_table(refs).items():
            d[k] = d[k] - _predicted(ms, _diff(c[js], int(o[k]), edge))
        z = _zigzag(d[kept])
    return np.concatenate([z >> 8, z & 0xFF], axis=0).astype(np.uint8)


def low_order(hi):
    """dxs: (rows,) the stored rows in the order their low planes are written (the pure twin's
    low_order): by the sum of the row's high bytes, ties in row order."""
    return np.argsort(np.asarray(hi, np.int64).sum(axis=1), kind="stable")


def sort_low(planes, order=None):
    """dxs: the planes with the low half in low_order of the high half (or order)."""
    p = np.asarray(planes)
    n = p.shape[0] // 2
    return np.concatenate([p[:n], p[n:][low_order(p[:n]) if order is None else order]], axis=0)


def unsort_low(planes, order=None):
    """The inverse of sort_low: the low half back in row order."""
    p = np.asarray(planes)
    n = p.shape[0] // 2
    out = p.copy()
    out[n + (low_order(p[:n]) if order is None else np.asarray(order, int))] = p[n:]
    return out


def from_planes(planes, orders=None, frames=None, refs=(), edge=False):
    """(rows, frames) uint16 codes of to_planes' output (frames: only when rows were left out),
    or FormatError (planes it cannot make)."""
    p = np.asarray(planes)
    if p.ndim != 2 or p.shape[0] % 2:
        raise FormatError("row transform: planes of shape %s, not 2-D with an even count of rows"
                          % (p.shape,))
    if p.size and (p.min() < 0 or p.max() > 255):
        raise FormatError("row transform: a plane sample is not a byte (0..255)")
    p = p.astype(np.int64)
    n = p.shape[0] // 2
    z = (p[:n] << 8) | p[n:]
    # d = z / 2 (z even), -(z + 1) / 2 (z odd)
    d = np.where(z & 1, -((z + 1) >> 1), z >> 1)
    o = np.full(n, 2) if orders is None else np.asarray(orders, int)
    kept = np.nonzero(o >= 0)[0]
    out = np.zeros((len(o), p.shape[1] if frames is None else frames), np.int64)
    full = np.zeros(out.shape, np.int64)
    full[kept] = d
    ref = ref_table(refs)
    plain = np.array([k for k in kept if k not in ref], int)
    for n in range(int(o.max(initial=0)) + 1):
        sel = plain[o[plain] == n]
        out[sel] = _sums(full[sel], n, edge)
    for k in sorted(ref):
        # the references are earlier rows, already decoded
        js, ms = ref[k]
        out[k] = _sums(full[k:k + 1] + _predicted(ms, _diff(out[js], int(o[k]), edge)), int(o[k]), edge)[0]
    return out.astype(np.uint16)


def _sums(d, n, edge=False):
    # c = n running sums of the differences (mod 2^16; edge: the k-th from frame k on)
    d = np.asarray(d, np.int64)
    for k in range(n - 1, -1, -1):
        s = k if edge else 0
        d = np.concatenate([d[:, :s], np.cumsum(d[:, s:], axis=1)], axis=1) & 0xFFFF
    return d & 0xFFFF
