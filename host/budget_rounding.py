"""The codes of a measured budget chosen jointly per frame: smaller errors at the points, same size.

    from host.budget_rounding import joint_codes
    codes = joint_codes(skeleton, values, lo, hi, bits)      # (rows, frames), or None: rounding stays

Rounding each row to its nearest code makes errors that add at every point through the chain
(host/fkerror.py) in whatever direction they fall. Each value has two codes within a step of
it, the nearest and the next on the other side; per frame, the rows (one at a time, all frames
at once, SWEEPS passes) take the other code where that lowers the frame's

    sum over links l and points p of |E_lp|^8,    E = sum_k J_k (decoded_k - value_k)

(linearised, as host/budget_measured.py adds errors) and no point of the frame goes above the
largest error rounding made in it. So no frame's largest error grows, and the errors below it
shrink: on the CMU clips at 24 fps at a budget of 0.11 mm the 99th percentile of the point
errors falls to about 0.6 of rounding's (0.094-0.098 -> 0.056-0.066 mm), the largest by 2-20%,
in 0.6 s a clip.

A code moved off the nearest one adds to the row's differences along time (what the file's
row transform stores, protocol/rowtransform.py): where those are small, a code that jumps by
one costs bits. A code moves only where the second difference of the rounded codes (the row
transform's, dxe: at the first frames the code itself, then the first difference), at
each of the frames whose second difference it enters (three, fewer at the end), is at least
MIN_RESIDUAL_CODES: there the move is lost in the residual. On the CMU clips at 24 fps at
0.16 mm (131_01, one-off) the 99th percentile is 0.0982 mm with 10 and the first and last two
frames never moving (they then held the clip's largest errors), 0.0935 with those frames
moving, 0.0796 / 0.0763 / 0.0755 mm at 3 / 2 / 1, the file 14,904 / 14,905 / 14,912 / 14,911 /
14,921 bytes (at 0: 0.089 mm at 0.19 mm but 6.6% larger files). ACL's reporting then takes a
budget of 0.2 mm (2) or 0.21-0.22 mm (1) instead of 0.16-0.17: the 4 clips' files 62,147 ->
60,230 (2) or 59,969 bytes (1; tools/acl_sizes.py, one-off).

With an aim (aim_mm, `convert --aim-mm A`) the sweeps compare first the number of the frame's
points over 0.98 A, then the sum |E|^8, and THIRD_SWEEPS passes then offer the code on the
rounded code's far side: ACL's reporting (p99 within 0.01 cm) on the 4 CMU clips 59,381 ->
58,657 bytes at budgets 0.227-0.234 mm instead of 0.207-0.218 (benchmarks/compression.py).

Exact forward kinematics then checks every frame: one over the budget (the linearisation off)
keeps its rounded codes.
"""

import numpy as np

from host.fkerror import SHELL_MM, point_errors_mm, point_jacobian
from host.rowtransform import _diff
from host.staff import decode, encode

SWEEPS = 4                    # passes over the rows (a fifth changes under 0.5% of the codes)
MIN_RESIDUAL_CODES = 1        # a code moves only where |second difference| >= this (0: 6% larger files)
CHUNK_FRAMES = 1024           # frames whose Jacobian is held at once
AIM_MARGIN = 0.98             # with an aim: points pushed under 0.98 of it (the linearisation's slack)
THIRD_SWEEPS = 2              # with an aim: passes offering the code beyond the rounded one (the
                              # value's far side, 1.5 steps off at most): points over the aim 0.96 -> 0.64%
AIM_WEIGHT = 1e6              # with an aim: a point over it outweighs any sum |E|^8 of a frame near it


def _movable(codes):
    """(rows, frames) bool: frames whose code may move (each second difference it enters large).
    The second differences are the row transform's (dxe: at frame 0 the code itself, at frame 1
    the first difference), and a last frame's code enters only those there are."""
    c = np.asarray(codes, np.int64)
    F = c.shape[1]
    d2 = _diff(c, 2, edge=True)
    # code t enters the second differences at t, t+1 and t+2 (those before the end)
    pad = np.pad(np.abs(d2), ((0, 0), (0, 2)), constant_values=np.iinfo(np.int64).max)
    near = np.minimum(np.minimum(pad[:, 0:F], pad[:, 1:F + 1]), pad[:, 2:F + 2])
    return near >= MIN_RESIDUAL_CODES


def _cost(n2):
    # sum over a frame's links and points of |E|^8 (n2 = |E|^2)
    return (n2 ** 4).sum(axis=(1, 2))


def _aimed_cost(aim2):
    """The frame's points over the aim (a square), then its sum |E|^8 (in units of the aim,
    below 1 point's worth unless the frame is far over it)."""
    def cost(n2):
        over = (n2 > aim2).sum(axis=(1, 2))
        return over * AIM_WEIGHT + ((n2 / aim2) ** 4).sum(axis=(1, 2))
    return cost


def _chunk(sk, v, lo, hi, step, codes, alt, movable, shell_mm, aim_mm=None, third=None):
    """The codes of frames v (rows, f) after the sweeps; codes, alt: rounded and other codes;
    aim_mm: first fewer points over it, then the sum |E|^8 (None: the sum alone); third: with
    an aim, the code beyond the rounded one, offered after the sweeps."""
    K, F = v.shape
    codes0 = codes.copy()
    J = point_jacobian(sk, v, shell_mm, dtype=np.float64)
    err = lo[:, None] + codes * step[:, None] - v
    E = np.zeros((F, sk.nlinks, 4, 3))
    for (idx, jk), e in zip(J, err):
        E[:, idx] += jk * e[:, None, None, None]
    cap = np.sqrt((E * E).sum(axis=-1)).max(axis=(1, 2))        # each frame's largest error
    cost = _cost if aim_mm is None else _aimed_cost((aim_mm * AIM_MARGIN) ** 2)
    for _ in range(SWEEPS):
        for k in range(K):
            if step[k] <= 0 or not movable[k].any():
                continue
            idx, jk = J[k]
            de = (alt[k] - codes[k]) * step[k]
            old = E[:, idx]
            new = old + jk * de[:, None, None, None]
            n_old = (old * old).sum(axis=-1)
            n_new = (new * new).sum(axis=-1)
            # sum |E|^8 over the links it moves, and the frame's cap
            better = (cost(n_new) < cost(n_old)) & movable[k]
            better &= np.sqrt(n_new.max(axis=(1, 2))) <= cap
            if better.any():
                old[better] = new[better]
                E[:, idx] = old
                codes[k, better], alt[k, better] = alt[k, better], codes[k, better]
    if third is not None:
        # a frame at its rounded code may take the third one (the rounded code's other side),
        # one there may go back; a frame at the other code stays
        c0 = codes0
        for _ in range(THIRD_SWEEPS):
            for k in range(K):
                if step[k] <= 0 or not movable[k].any():
                    continue
                cand = np.where(codes[k] == c0[k], third[k], np.where(codes[k] == third[k], c0[k], codes[k]))
                idx, jk = J[k]
                de = (cand - codes[k]) * step[k]
                old = E[:, idx]
                new = old + jk * de[:, None, None, None]
                n_old = (old * old).sum(axis=-1)
                n_new = (new * new).sum(axis=-1)
                better = (cost(n_new) < cost(n_old)) & movable[k] & (cand != codes[k])
                better &= np.sqrt(n_new.max(axis=(1, 2))) <= cap
                if better.any():
                    old[better] = new[better]
                    E[:, idx] = old
                    codes[k, better] = cand[better]
    return codes


def joint_codes(sk, values, lo, hi, bits, max_error_mm=None, shell_mm=SHELL_MM, aim_mm=None):
    """(rows, frames) codes (uint8/uint16) chosen per frame as above, or None when no code moved.
    values: the skeleton's dofs in order, finite; max_error_mm: frames over it (exact forward
    kinematics) keep the rounded codes (None: each frame no worse than rounding); aim_mm: the
    sweeps first lower the number of points over it (ACL's threshold, whose 99th percentile is
    what ACL reports), then the sum |E|^8, the caps the same, and THIRD_SWEEPS passes then offer
    each frame at its rounded code the code on the rounded code's far side too."""
    v = np.asarray(values, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    top = (1 << bits) - 1
    rounded, _ = encode(v, lo, hi, bits)
    c0 = rounded.astype(np.int64)
    step = (hi - lo) / top
    # the other code within a step: on the other side of the value (inside 0..top)
    x = np.where(step[:, None] > 0, (v - lo[:, None]) / np.where(step > 0, step, 1.0)[:, None], 0.0)
    alt = np.where(x >= c0, c0 + 1, c0 - 1)
    movable = _movable(c0) & (alt >= 0) & (alt <= top) & (step[:, None] > 0)
    third = np.clip(2 * c0 - alt, 0, top) if aim_mm is not None and THIRD_SWEEPS else None
    alt = np.clip(alt, 0, top)
    codes = c0.copy()
    for f in range(0, v.shape[1], CHUNK_FRAMES):
        s = slice(f, f + CHUNK_FRAMES)
        codes[:, s] = _chunk(sk, v[:, s], lo, hi, step, codes[:, s].copy(), alt[:, s].copy(), movable[:, s],
                             shell_mm, aim_mm, None if third is None else third[:, s])
    if (codes == c0).all():
        return None
    dtype = rounded.dtype
    got = decode(codes.astype(dtype), lo, hi, bits)
    e_new = point_errors_mm(sk, v, got, shell_mm).max(axis=1)
    if max_error_mm is None:
        limit = point_errors_mm(sk, v, decode(rounded, lo, hi, bits), shell_mm).max(axis=1)
    else:
        limit = np.full(v.shape[1], max_error_mm * (1 - 1e-6))
    bad = e_new > limit
    codes[:, bad] = c0[:, bad]
    return codes.astype(dtype)
