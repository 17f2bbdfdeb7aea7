"""Each row's step from the error the clip's own decoding makes (measured, not the chain's worst case).

    from host.budget_measured import measured_ranges
    lo, hi = measured_ranges(staff, max_error_mm=0.1, bits=16)   # None when the staff cannot be measured

host/budget.py guarantees E for any pose by summing every row's worst case along the chain;
on a real clip the errors of the rows add in different directions and rarely at their worst,
so the measured error is 3-6x below that bound and the steps are finer than they need be.
Here the steps are chosen from the errors decoding actually makes on this clip, at every
joint and ACL's virtual points (3 cm along each bone's axes, host/fkerror.py), every frame:

1. The chain allocation of host/budget.py (on the posed lever arms) for a budget s * E, with
   the largest s (bisection) whose measured error stays within E.
2. Greedy: for every coded row, the grid step at or above g times its step (g = 2^(1/4), then
   2^(1/8)); the rows are tried in order of error added (sum of squares over every point) per
   bit saved (sum over frames of log2(1 + |second difference| / step)) and each is kept if the
   largest error stays within E; passes repeat until none is kept.
3. Exchange (host/budget_exchange.py): a row one grid step coarser where another row, whose
   chain covers every point that then goes over E, takes a finer one and the pair saves bits.

Staff.refit then chooses the codes on these steps jointly per frame (host/budget_rounding.py:
no frame's largest error grows, the others shrink), not by rounding each row alone.

The errors are added through the Jacobian of the points (linear in the decoding errors, which
are below 1e-3 rad: the second-order term is below 1e-4 mm on the CMU clips), then checked by
exact forward kinematics of the decoded values (all frames). What the file then states is measured on this clip: every joint
and every virtual point of every frame within E (a pose outside the clip has no such bound; the
chain allocation, `bound="chain"`, keeps the guarantee for any pose).
"""

import numpy as np

from host import budget
from host.budget_exchange import exchange
from host.fkerror import SHELL_MM, jacobian_values, point_errors_mm, point_jacobian
from host.staff import decode, encode
from protocol import staffranges

MAX_JACOBIAN_VALUES = 30_000_000      # numbers of the Jacobian held at once (float32: 120 MB);
                                      # longer clips are allocated on every n-th frame, checked on all
GROWTH = (2 ** 0.25, 2 ** 0.125)      # the greedy's step factors (2x at once: 0.4% larger files)
ROUNDS = 30                           # passes over the rows per factor, at most


def _measurable(sk, staff):
    v = np.asarray(staff.values, dtype=np.float64)
    return (sk is not None and [d.name for d in sk.dofs] == list(staff.names) and v.shape[1] > 0
            and np.isfinite(v).all())


def _row_error(v, lo_v, hi_v, step, bits):
    """(lo, hi, decoding error (frames,)) of one row at a step."""
    lo, hi = budget.ranges_for(np.array([lo_v]), np.array([hi_v]), np.array([step]), bits)
    c, _ = encode(v[None, :], lo, hi, bits)
    return lo[0], hi[0], decode(c, lo, hi, bits)[0] - v


def _bits_proxy(d2, step):
    """Bits a row costs at a step, roughly: sum of log2(1 + |second difference| / step)."""
    return float(np.log2(1.0 + np.abs(d2) / step).sum())


def _worst(err):
    # the largest distance over the frames, links and points: |E| over the last axis
    return float(np.sqrt((err * err).sum(axis=-1)).max())


def measured_ranges(staff, max_error_mm, bits, shell_mm=SHELL_MM):
    """(lo, hi) per row whose decoded clip has every joint and virtual point within max_error_mm,
    or None (rows not the skeleton's dofs in order, missing values, or no steps that meet it).

    A clip too long for one Jacobian is allocated on every n-th frame; the frames that exact
    forward kinematics then finds over E join them and the allocation runs again, aiming 3%
    lower each time (the frames left out have errors of their own; 5 times at most).
    """
    sk = budget._skeleton(staff)
    if not _measurable(sk, staff):
        return None
    v = np.asarray(staff.values, dtype=np.float64)
    K, F = v.shape
    stride = 1
    while jacobian_values(sk, -(-F // stride)) > MAX_JACOBIAN_VALUES:
        stride += 1
    frames = np.arange(0, F, stride)
    for attempt in range(6):
        steps = _allocate_on(sk, staff, v[:, frames], max_error_mm * (1 - 0.03 * attempt), bits, shell_mm)
        if steps is None:
            return None
        got, over = _verified(sk, v, steps, bits, max_error_mm, shell_mm)
        if got is not None:
            return got
        frames = np.union1d(frames, over)
        if stride == 1:
            frames = np.arange(F)     # every frame was seen: only the linearisation can be off
    return None


def _allocate_on(sk, staff, vs, max_error_mm, bits, shell_mm):
    """Steps (rows,) whose linearised error on the frames vs stays within max_error_mm, or None."""
    K = vs.shape[0]
    e_mm = max_error_mm * (1 - 1e-3)          # linearisation and float ulps: a thousandth kept back
    J = point_jacobian(sk, vs, shell_mm)
    lo_v, hi_v = budget._half_spans(staff.values)
    span = hi_v - lo_v
    a = budget.lever_arms_mm(sk, staff.names, staff.values, shell_mm)

    def errors(steps):
        return [_row_error(vs[k], lo_v[k], hi_v[k], steps[k], bits)[2] for k in range(K)]

    def total(errs):
        return _total(J, errs, vs.shape[1], sk.nlinks)

    # 1. the chain allocation scaled while the measured error stays within E
    def chain(scale):
        step = budget.allocate(a, span, max_error_mm * scale, bits)
        return budget._tighter_steps(sk, staff, a, span, max_error_mm * scale, bits, step, shell_mm)

    lo_s = 1.0
    if chain(lo_s) is None:
        lo_s = budget.min_budget_mm(staff, bits, shell_mm) / max_error_mm * 1.01
    steps = chain(lo_s)
    if steps is None or _worst(total(errors(steps))) > e_mm:
        return None
    hi_s = 64.0 * max(lo_s, 1.0)
    for _ in range(12):
        mid = (lo_s * hi_s) ** 0.5
        st = chain(mid)
        if st is not None and _worst(total(errors(st))) <= e_mm:
            lo_s, steps = mid, st
        else:
            hi_s = mid
        if hi_s / lo_s < 1.02:
            break
    # 2. row by row
    steps = _greedy(vs, lo_v, hi_v, span, np.array(steps, dtype=np.float64), bits, J, e_mm, errors, sk.nlinks)
    # 3. a row coarser where another, finer, pays for it (host/budget_exchange.py)
    d2 = [np.diff(vs[k], 2) if vs.shape[1] > 2 else np.zeros(1) for k in range(K)]
    now = np.array(steps, dtype=np.float64)

    def bits_at(k, s):
        # the greedy's estimate, and a bit a frame for a row that is coded at all
        return _bits_proxy(d2[k], s) + (0.0 if s >= 1.5 * span[k] else 1.0)

    def take(k, s):
        now[k] = s

    return exchange(steps, span, bits, J, e_mm, lambda k, s: _row_error(vs[k], lo_v[k], hi_v[k], s, bits)[2],
                    lambda k, s: bits_at(k, now[k]) - bits_at(k, s), take, total)


def _total(J, errs, frames, links):
    """(F, L, 4, 3) mm: the points' linearised errors, sum over rows of J_k e_k."""
    E = np.zeros((frames, links, 4, 3))
    for (idx, jk), e in zip(J, errs):
        E[:, idx] += jk * e[:, None, None, None]
    return E


def _greedy(vs, lo_v, hi_v, span, steps, bits, J, e_mm, errors, nlinks):
    """Coarser steps row by row while the largest (linearised) error stays within e_mm."""
    K = len(steps)
    errs = errors(steps)
    E = _total(J, errs, vs.shape[1], nlinks)
    # the largest error of each link (frames, points)
    link_max = np.sqrt((E * E).sum(axis=-1)).max(axis=(0, 2))
    d2 = [np.diff(vs[k], 2) if vs.shape[1] > 2 else np.zeros(1) for k in range(K)]

    def trial(k, e2):
        idx, jk = J[k]
        sub = E[:, idx] + jk * (e2 - errs[k])[:, None, None, None]
        m = np.sqrt((sub * sub).sum(axis=-1)).max(axis=(0, 2))
        rest = np.delete(link_max, idx)
        return sub, m, max(float(m.max()), float(rest.max()) if rest.size else 0.0)

    for g in GROWTH:
        for _ in range(ROUNDS):
            cands = []
            for k in range(K):
                if steps[k] >= 1.5 * span[k]:
                    continue                                  # one code already: nothing to save
                s2 = staffranges.step_up(steps[k] * g)
                _, _, e2 = _row_error(vs[k], lo_v[k], hi_v[k], s2, bits)
                idx = J[k][0]
                sub, _, worst = trial(k, e2)
                if worst > e_mm:
                    continue
                saved = _bits_proxy(d2[k], steps[k]) - _bits_proxy(d2[k], s2) + (
                    1.0 if s2 >= 1.5 * span[k] else 0.0)
                old = E[:, idx]
                added = max(float((sub * sub).sum() - (old * old).sum()), 0.0)
                cands.append((added / max(saved, 1e-9), k, s2, e2))
            if not cands:
                break
            cands.sort(key=lambda c: c[0])
            took = 0
            for _, k, s2, e2 in cands:
                sub, m, worst = trial(k, e2)
                if worst <= e_mm:
                    idx = J[k][0]
                    E[:, idx] = sub
                    link_max[idx] = m
                    steps[k], errs[k] = s2, e2
                    took += 1
            if not took:
                break
    return steps


def _verified(sk, v, steps, bits, max_error_mm, shell_mm):
    """((lo, hi), None) once exact forward kinematics of the decoded clip (every frame) is
    within E, else (None, the frames over it)."""
    lo_v, hi_v = budget._half_spans(v)
    lo, hi = budget.ranges_for(lo_v, hi_v, steps, bits)
    c, _ = encode(v, lo, hi, bits)
    err = point_errors_mm(sk, v, decode(c, lo, hi, bits), shell_mm).max(axis=1)
    if err.max() <= max_error_mm * (1 - 1e-6):
        return (lo, hi), None
    return None, np.nonzero(err > max_error_mm * (1 - 1e-3))[0]
