"""Precision by error budget: each row's step so every joint, and a point 3 cm from every bone, stays within E.

    from host.budget import budget_ranges
    lo, hi, bits = budget_ranges(staff, max_error_mm=1.0)      # bits: 8 if 8 bits hold it, else 16
    bound_mm(staff)               # (links,) the guaranteed error at each link's joint and 3 cm points
    budget_ranges(staff, 0.1, bound="measured")   # steps from this clip's own errors (host/budget_measured.py)

The bound (ACL's metric: virtual points at `shell_mm` from every bone, plus the joints): decoding
moves row k by at most e_k (half a step). Telescoping the chain of link transforms from the root
to link j, the error of any point p of link j is at most the sum, over the dofs k above it, of
the displacement that dof's own error causes with every other dof at its decoded value:

    rotation k by d_k (rad) about its joint:  |R(d_k) q - q| = 2 |q_perp| sin(d_k / 2) <= d_k |q|
    translation k by e_k (m) along its axis:  e_k

and |q|, the distance from dof k's joint to p, is at most a_kj = the sum of the bone lengths
(offsets, plus the largest decoded value of any translation on the way, including those of k's
own link listed after k; one listed before k moves the pivot, not the lever) from k's link down
to j, plus `shell_mm`. So  err_j <= sum_k a_kj e_k  (a_kj = 1 for translations), whatever the
pose: a conservative bound, which tests check by forward kinematics on the decoded file.

The motion itself gives shorter arms (posed_arms_mm): a rotation error d moves a point by at most
d |q_perp|, q_perp its offset perpendicular to the axis, and over the motion's own frames that
is at most the largest distance of link j's joint from dof k's axis plus the shell, plus what
the other dofs' decoding can change it by (twice the chain bound, and the axis turned by every
rotation row's error). A twist about a straight bone then has a 3 cm arm, not the limb's
length. budget_ranges allocates on these arms (margins assumed, then checked against the steps
found), bound_mm reports them; the default budget stays 1.5 x the chain arms' 8-bit limit.

The budget is shared along each chain (allocate): each row's share is scale * g_k with
g_k = min_j 1 / (a_kj W_j), W_j the rows above link j still coded; the largest scale meeting
every link's constraint is found by bisection. Rows whose span fits in one code at their share
are stored as a constant (values that never move: within 1/256 of their share), rows the depth cannot span at
their share take its finest step, and the shares are recounted over the rows left.
"""

import math

import numpy as np

from protocol import staffranges
from protocol.errors import FormatError

SHELL_MM = 30.0                       # ACL's virtual points: 3 cm from every bone
DEFAULT_FACTOR = 1.5                  # the import default: 1.5 x the tightest bound 8 bits hold


def _skeleton(staff_or_sk):
    sk = getattr(staff_or_sk, "skeleton", staff_or_sk)
    if isinstance(sk, dict):
        from device.body.skeleton import Skeleton

        sk = Skeleton.from_dict(sk)
    return sk


def lever_arms_mm(skeleton, names, values, shell_mm=SHELL_MM):
    """(rows, links) a_kj: mm of error at link j's points per unit (rad / m) of error in row k.

    values (rows, frames) give each translation's largest magnitude (it lengthens the bones
    below it). FormatError if a row has no dof or the skeleton has no lengths for the metric.
    """
    if skeleton is None:
        raise FormatError("--max-error-mm: this staff has no skeleton, so there are no bone lengths "
                          "to carry an error budget")
    rows = []
    for n in names:
        try:
            rows.append(skeleton.dof_index(n))
        except KeyError:
            raise FormatError("--max-error-mm: row %r is not a dof of skeleton %r" % (n, skeleton.name)) from None
    L = skeleton.nlinks
    off_mm = np.array([np.linalg.norm(ln.offset) for ln in skeleton.links]) * 1000.0
    v = np.asarray(values, dtype=np.float64)
    # each translation's largest magnitude (mm), decoded: the data's plus its span (a step's
    # error is below the span), or plus 0.001 (a constant's error is below 0.0004 of the unit)
    tmax_mm = np.array([max(abs(d.lo), abs(d.hi)) * d.scale * 1000.0 if d.kind == "translation" else 0.0
                        for d in skeleton.dofs])
    moves = np.zeros(len(skeleton.dofs), bool)
    for k, j in enumerate(rows):
        d = skeleton.dofs[j]
        if d.kind == "translation" and v.shape[1] and np.isfinite(v[k]).any():
            x = v[k][np.isfinite(v[k])]
            moves[j] = np.abs(x).max() > 0
            tmax_mm[j] = (np.abs(x).max() + max(x.max() - x.min(), 1e-3)) * d.scale * 1000.0
    link_t = np.zeros(L)
    for j, d in enumerate(skeleton.dofs):
        link_t[d.link] += tmax_mm[j]
    if not ((off_mm > 0).any() or moves.any() or any(
            max(abs(d.lo), abs(d.hi)) > 0 for j, d in enumerate(skeleton.dofs)
            if d.kind == "translation" and j not in rows)):
        raise FormatError("--max-error-mm: skeleton %r has no bone lengths (every offset and "
                          "translation is 0)" % skeleton.name)
    # below[i, j]: the longest a joint of link j (in i's subtree) can be from link i's origin once
    # i's own dofs are applied: the offsets and translations of the links on the way down
    below = np.full((L, L), -1.0)
    for j in range(L):
        below[j, j] = 0.0
        i, acc = j, 0.0
        while skeleton.links[i].parent >= 0:
            acc += off_mm[i] + link_t[i]
            i = skeleton.links[i].parent
            below[i, j] = acc
    a = np.zeros((len(rows), L))
    for k, j in enumerate(rows):
        d = skeleton.dofs[j]
        sub = below[d.link] >= 0
        if d.kind == "rotation":
            # a translation of the same link listed after this rotation is turned by it (a lever);
            # one listed before moves the pivot only
            own = skeleton.links[d.link].dofs
            after = sum(tmax_mm[m] for m in own[own.index(j) + 1:])
            a[k, sub] = (after + below[d.link, sub] + shell_mm) * d.scale
        else:
            a[k, sub] = d.scale * 1000.0
    return a


def posed_arms_mm(skeleton, names, values, a, margin_mm, theta_rad, shell_mm=SHELL_MM):
    """a (lever_arms_mm), tightened by the motion itself: for rotation row k and link j, the
    largest distance over the frames of link j's joint from dof k's axis (not the chain's
    length), plus the shell, plus what decoding can change it by.

    A rotation error d moves a point by at most d |q_perp|, q_perp the part of the point's
    offset from the axis perpendicular to it. In the telescoped chain the other dofs sit at
    decoded values, which move the point and the pivot by at most margin_mm each (the bound
    with a) and turn the axis by at most theta_rad (the sum of every rotation row's error), so
    |q_perp| <= D_perp + shell + 2 margin + 2 theta (D + shell + 2 margin), D the distance to the
    pivot. Rows that are not the skeleton's dofs in order, or missing values, keep a.
    """
    from device.body.kinematics import forward_kinematics

    v = np.asarray(values, dtype=np.float64)
    if [d.name for d in skeleton.dofs] != list(names) or not v.shape[1] or not np.isfinite(v).all():
        return a
    pose = forward_kinematics(skeleton, v.T)
    pos = pose.link_pos_m * 1000.0                        # (F, L, 3) mm
    org = pose.dof_origin_m * 1000.0                      # (F, ndof, 3)
    ax = pose.dof_axis
    ax = ax / np.maximum(np.linalg.norm(ax, axis=-1, keepdims=True), 1e-300)   # (F, ndof, 3) unit
    out = a.copy()
    for k, d in enumerate(skeleton.dofs):
        sub = a[k] > 0
        if d.kind != "rotation" or not sub.any():
            continue
        q = pos[:, sub, :] - org[:, k, None, :]           # (F, J, 3): pivot to joint
        along = np.einsum("fjc,fc->fj", q, ax[:, k, :])
        dist = np.linalg.norm(q, axis=-1)
        # q_perp = q - (q . u) u
        perp = np.sqrt(np.maximum(dist * dist - along * along, 0.0))
        full = dist.max(axis=0) + shell_mm + 2.0 * margin_mm
        lever = perp.max(axis=0) + shell_mm + 2.0 * margin_mm + 2.0 * theta_rad * full
        out[k, sub] = np.minimum(a[k, sub], lever * d.scale)
    return out


def _rot_error_rad(skeleton, names, err):
    """The sum of every rotation row's error, in radians."""
    tot = 0.0
    for n, e in zip(names, err):
        d = skeleton.dofs[skeleton.dof_index(n)]
        if d.kind == "rotation":
            tot += float(e) * d.scale
    return tot


def _tight_arms(skeleton, names, values, a, err, shell_mm):
    """posed_arms_mm with the margins of per-row errors err (row units)."""
    margin = float((a.T @ err).max()) if a.size else 0.0
    return posed_arms_mm(skeleton, names, values, a, margin, _rot_error_rad(skeleton, names, err), shell_mm)


def _half_spans(values):
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    lo = np.where(ok, v, np.inf).min(axis=1) if v.shape[1] else np.zeros(v.shape[0])
    hi = np.where(ok, v, -np.inf).max(axis=1) if v.shape[1] else np.zeros(v.shape[0])
    empty = ~ok.any(axis=1)
    lo[empty] = 0.0
    hi[empty] = 0.0
    return lo, hi


CONST_STEP = staffranges.step_down(1e-9)   # the finest step of a row that never moves


def _sig(x, digits, up):
    """x rounded down (up=False) or up to `digits` significant digits: a short number in the header."""
    q = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    n = math.ceil(x / q - 1e-9) if up else math.floor(x / q + 1e-9)
    s = float("%.*g" % (digits + 1, n * q))
    while (s < x) if up else (s > x):
        n += 1 if up else -1
        s = float("%.*g" % (digits + 1, n * q))
    return s


def _steps_for(span, share, bits):
    """Per row: (step, mode) for an error share (row units); mode 0 constant, 1 coded, 2 forced.

    Steps are on the header's grid (protocol/staffranges.py: M * 2^E, M = 16..31), rounded
    down from twice the share (never above it) or up where the data needs it.
    """
    top = (1 << bits) - 1
    if span <= 0.0:
        # a row that never moves: one code, a step far below its share (1/256 of it, at most
        # 0.001 of the row's unit), so its lo is a short number within 0.4 step of the value
        if not share > 0.0:
            return CONST_STEP, 0
        return max(CONST_STEP, staffranges.step_down(min(2.0 * share / 256.0, 1e-3))), 0
    mid = staffranges.step_up(span * 1.5)             # one code holds the whole row (|v - lo| < 0.4 step)
    if mid / 2.0 <= share:
        return mid, 0
    finest = staffranges.step_up(span / (top - 1.0))  # the depth spans the row: span <= (top - 1) step
    if share * 2.0 < finest:
        return finest, 2
    return max(staffranges.step_down(2.0 * share), finest), 1


def _steps_at(scale, g, span, bits):
    out = [_steps_for(float(x), float(scale * gk), bits) for x, gk in zip(span, g)]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


def allocate(a, span, max_error_mm, bits):
    """Per-row steps (row units) with a @ (step / 2) <= E at every link, or None if bits cannot.

    Each row's share is scale * g_k, g_k = min_j 1 / (a_kj W_j) (W_j: rows above link j still
    coded, not constant or at the depth's finest step); the largest scale that meets E is found
    by bisection (the bound grows with the scale), then W is recounted and the search repeated.
    """
    nrows = a.shape[0]
    if nrows == 0:
        return np.zeros(0)
    coded = np.ones(nrows, bool)
    best = None
    for _ in range(3):
        w = np.maximum((a[coded] > 0).sum(axis=0), 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(a > 0, 1.0 / (a * w), np.inf).min(axis=1)
        g[~np.isfinite(g)] = 1e300 / max(1, nrows)
        lo_s, hi_s = 0.0, max_error_mm
        step, mode = _steps_at(lo_s, g, span, bits)
        if (a.T @ (step / 2.0) > max_error_mm).any():
            return None
        for _ in range(60):
            mid = (lo_s + hi_s) / 2.0
            st, md = _steps_at(mid, g, span, bits)
            if (a.T @ (st / 2.0) <= max_error_mm).all():
                lo_s, step, mode = mid, st, md
            else:
                hi_s = mid
            if hi_s - lo_s <= 1e-4 * hi_s:
                break
        if best is None or (step >= best).all():
            best = step
        coded = mode == 1
        if not coded.any():
            break
    return best


def ranges_for(lo_v, hi_v, step, bits):
    """Per-row lo (the coarsest dyadic number that keeps the data inside) and hi = lo + top * step."""
    top = (1 << bits) - 1
    lo = np.empty_like(step)
    for k in range(len(step)):
        a, b, s = float(lo_v[k]), float(hi_v[k]), float(step[k])
        if b - a <= 0.0:
            lo[k] = staffranges.coarse(a - 0.4 * s, a + 0.4 * s)
        elif s >= 1.5 * (b - a) * (1 - 1e-9):
            # one code: lo within 0.4 step of every value
            lo[k] = staffranges.coarse(b - 0.4 * s, a + 0.4 * s)
        else:
            # every value in [lo, lo + (top - 0.5) step]
            lo[k] = staffranges.coarse(b - (top - 0.5) * s, a)
    return lo, lo + step * top


def budget_ranges(staff, max_error_mm, bits=None, shell_mm=SHELL_MM, bound="chain", how=False):
    """(lo, hi, bits) so the staff meets max_error_mm (8 bits when they can, else 16).

    bits given: that depth or FormatError; FormatError too if 16 bits cannot meet it.
    bound "chain": guaranteed for any pose (the lever arms above); "measured": steps from the
    errors this clip's decoding makes, checked by forward kinematics (host/budget_measured.py),
    or the chain's when the staff cannot be measured (rows not the dofs, missing values).
    how=True: (lo, hi, bits, "chain" or "measured"), the one used.
    """
    if bound not in ("chain", "measured"):
        raise ValueError("bound must be 'chain' or 'measured', not %r" % (bound,))
    if not (max_error_mm > 0 and math.isfinite(max_error_mm)):
        raise ValueError("--max-error-mm must be a positive number of millimetres, not %r" % (max_error_mm,))
    if np.isinf(np.asarray(staff.values, dtype=np.float64)).any():
        r = int(np.nonzero(np.isinf(np.asarray(staff.values, dtype=np.float64)).any(axis=1))[0][0])
        raise ValueError("--max-error-mm: row %r holds a value that is not finite (inf): no range "
                         "holds it within a budget" % staff.names[r])
    sk = _skeleton(staff)
    a = lever_arms_mm(sk, staff.names, staff.values, shell_mm)
    lo_v, hi_v = _half_spans(staff.values)
    for b in ((bits,) if bits else (8, 16)):
        if bound == "measured":
            from host.budget_measured import measured_ranges

            got = measured_ranges(staff, max_error_mm, b, shell_mm)
            if got is not None:
                return (got[0], got[1], b) + (("measured",) if how else ())
        # a millionth kept back: the float arithmetic of encode/decode adds a few ulps per row
        e_mm = max_error_mm * (1 - 1e-6)
        step = allocate(a, hi_v - lo_v, e_mm, b)
        step = _tighter_steps(sk, staff, a, hi_v - lo_v, e_mm, b, step, shell_mm)
        if step is not None:
            lo, hi = ranges_for(lo_v, hi_v, step, b)
            return (lo, hi, b) + (("chain",) if how else ())
    need = min_budget_mm(staff, bits or 16, shell_mm)
    raise FormatError("--max-error-mm %g cannot be met at %d bits (this staff needs at least %.3g mm there%s)"
                      % (max_error_mm, bits or 16, need,
                         ", guaranteed; measured on this clip neither" if bound == "measured" else ""))


def _tighter_steps(sk, staff, a, span, e_mm, bits, step, shell_mm):
    """Steps allocated on the posed lever arms (posed_arms_mm), whose margins (error bound and
    axis turn) are assumed 4x those of the chain allocation `step` (or of the finest steps when
    the chain arms cannot meet e_mm: step None), then checked against the steps found and raised
    (at most 4 rounds); `step` itself if it never closes."""
    if step is None:
        err0 = np.array([_steps_for(float(x), 0.0, bits)[0] for x in span]) / 2.0
    else:
        err0 = step / 2.0
    margin = 4.0 * float((a.T @ err0).max())
    theta = 4.0 * _rot_error_rad(sk, staff.names, err0)
    for _ in range(4):
        t = posed_arms_mm(sk, staff.names, staff.values, a, margin, theta, shell_mm)
        if t is a:
            return step
        s2 = allocate(t, span, e_mm, bits)
        if s2 is None:
            return step
        err = s2 / 2.0
        need_m = float((a.T @ err).max())
        need_t = _rot_error_rad(sk, staff.names, err)
        if need_m <= margin and need_t <= theta:
            return s2
        margin, theta = max(margin, 1.5 * need_m), max(theta, 1.5 * need_t)
    return step


def min_budget_mm(staff, bits, shell_mm=SHELL_MM, posed=True):
    """The smallest budget a depth can meet: every moving row at its finest step (on the posed
    lever arms, or posed=False on the chain's)."""
    sk = _skeleton(staff)
    a = lever_arms_mm(sk, staff.names, staff.values, shell_mm)
    lo_v, hi_v = _half_spans(staff.values)
    finest = np.array([_steps_for(float(x), 0.0, bits)[0] for x in hi_v - lo_v])
    if posed:
        a = _tight_arms(sk, staff.names, staff.values, a, finest / 2.0, shell_mm)
    return float((a.T @ (finest / 2.0)).max())


def bound_mm(staff, shell_mm=SHELL_MM):
    """(links,) the guaranteed error (mm) at each link's joint and 3 cm points for the staff's ranges."""
    sk = _skeleton(staff)
    a = lever_arms_mm(sk, staff.names, staff.values, shell_mm)
    return _tight_arms(sk, staff.names, staff.values, a, staff.max_error(), shell_mm).T @ staff.max_error()


def default_budget_mm(staff):
    """The budget an 8-bit import gets by default: DEFAULT_FACTOR x the tightest one 8 bits
    can meet on the chain's lever arms (rounded up to 2 significant digits; the posed arms
    then give the rows coarser steps for it), or None without bone lengths to carry it."""
    try:
        need = min_budget_mm(staff, 8, posed=False)
    except FormatError:
        return None
    if not need > 0:
        return None
    return _sig(need * DEFAULT_FACTOR, 2, True)
