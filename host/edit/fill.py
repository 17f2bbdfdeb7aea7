"""Fill: interpolate missing values and gaps, before any filter (as mocap tools do).

    from host.edit.fill import fill
    full = fill(staff)                               # "rotation": cubic, joints as rotations
    full = fill(staff, method="cubic")               # local cubic through 4 good neighbours
    full = fill(staff, method="spline")              # one cubic spline through the whole row
    full = fill(staff, method="linear")
    full = fill(staff, method="pchip")               # monotone cubic, never overshoots
    full = fill(staff, method="skeleton")            # from the neighbouring joints (see below)
    full = fill(staff, method="rotation")            # a joint's Euler rows as one rotation
    part = fill(staff, max_gap_s=0.5)                # longer gaps stay missing

"cubic": each missing pixel gets the cubic through the two nearest good pixels either side
(Lagrange, vectorised over the whole image; linear where a side has only one). Gaps at the
start or end hold the nearest good value. "skeleton": each row with gaps is
regressed (least squares) on the rows of the dofs of its own link, its parent link and its
child links over the frames where it is known; the prediction fills the gap, corrected by the
residual interpolated linearly across it so the fill meets the known values at both ends.
Rows without a skeleton (or without neighbours) fall back to cubic. "rotation" (default; host.edit.
_rotation.fill_rotation): the cubic, except on a joint's three Euler rows (a link's three
basis-axis rotation dofs, or BVH `Joint.Zrotation`...) where the joint's rotation interpolated
across the gap (quaternion cubic, signs continuous) turned back into Euler angles (the source's
representation, unwrapped nearest the previous frame) predicts the frames beside the gap better
than the rows' cubics do: through an Euler flip or gimbal lock. A still joint stays still.
"""

import numpy as np
from scipy import interpolate

from host.edit._base import as_skeleton, derive
from protocol.errors import FormatError

METHODS = ("linear", "cubic", "spline", "pchip", "skeleton", "rotation")


def _gap_runs(miss_row):
    """(start, stop) of each run of True in a 1-D bool array."""
    d = np.diff(np.concatenate(([0], miss_row.astype(np.int8), [0])))
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def _fill_row(y, method):
    ok = ~np.isnan(y)
    n_ok = int(ok.sum())
    if n_ok == 0 or n_ok == y.size:
        return y.copy()
    x = np.arange(y.size, dtype=np.float64)
    out = y.copy()
    xs, ys = x[ok], y[ok]
    inside = (x > xs[0]) & (x < xs[-1]) & ~ok
    if method == "linear" or n_ok < 4:
        out[inside] = np.interp(x[inside], xs, ys)
    elif method == "pchip":
        out[inside] = interpolate.PchipInterpolator(xs, ys)(x[inside])
    else:
        out[inside] = interpolate.CubicSpline(xs, ys, bc_type="not-a-knot")(x[inside])
    out[x < xs[0]] = ys[0]
    out[x > xs[-1]] = ys[-1]
    return out


def local_cubic(v):
    """v (rows, frames) with each NaN replaced by the cubic through the two nearest good pixels
    either side (linear with one, held at the ends)."""
    from host.edit._predict import neighbours_at
    miss = np.isnan(v)
    out = v.copy()
    rr, tt = np.nonzero(miss)
    if rr.size == 0:
        return out
    p1, p2, n1, n2 = neighbours_at(~miss, rr, tt)
    t = tt.astype(np.float64)

    def at(i):
        return v[rr, np.maximum(i, 0)]

    y1, y2, z1, z2 = at(p1), at(p2), at(n1), at(n2)
    res = np.full(t.shape, np.nan)
    both = (p1 >= 0) & (n1 >= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        lin = y1 + (z1 - y1) * (t - p1) / (n1 - p1)
        four = both & (p2 >= 0) & (n2 >= 0)
        xs = [p2, p1, n1, n2]
        ys = [y2, y1, z1, z2]
        cub = np.zeros(t.shape)
        for a in range(4):
            w = np.ones(t.shape)
            for b in range(4):
                if a != b:
                    w = w * (t - xs[b]) / (xs[a] - xs[b])
            cub = cub + w * ys[a]
    res = np.where(four, cub, np.where(both, lin, res))
    res = np.where(p1 < 0, z1, np.where(n1 < 0, y1, res))      # ends: hold
    res = np.where((p1 < 0) & (n1 < 0), np.nan, res)            # an all-missing row stays
    out[rr, tt] = res
    return out


def _neighbour_rows(staff, sk):
    """For each row, the indices of other rows whose dofs sit on the same, parent or child links."""
    names = staff.names
    link_of = {}
    for i, n in enumerate(names):
        try:
            link_of[i] = sk.dofs[sk.dof_index(n)].link
        except KeyError:
            pass
    out = {}
    for i, li in link_of.items():
        near = {li}
        if sk.links[li].parent >= 0:
            near.add(sk.links[li].parent)
        near.update(sk.children(li))
        out[i] = [j for j, lj in link_of.items() if j != i and lj in near]
    return out


def fill(staff, method="rotation", max_gap_s=None):
    """A copy of `staff` with missing values interpolated (gaps longer than max_gap_s kept)."""
    if method not in METHODS:
        raise FormatError("fill: method must be one of %s, not %r" % ("/".join(METHODS), method))
    if max_gap_s is not None and not (np.isfinite(max_gap_s) and max_gap_s >= 0):
        raise FormatError("fill: max_gap must be a finite number of seconds >= 0, not %r" % max_gap_s)
    v = staff.values
    miss = np.isnan(v)
    base = method if method not in ("skeleton", "rotation") else "cubic"
    if base == "cubic":
        out = local_cubic(v)
    else:
        out = v.copy()
        for r in np.flatnonzero(miss.any(axis=1)):
            out[r] = _fill_row(v[r], base)
    if method == "skeleton":
        sk = as_skeleton(staff.skeleton)
        if sk is not None:
            neigh = _neighbour_rows(staff, sk)
            first = out.copy()
            for r in np.flatnonzero(miss.any(axis=1)):
                nb = neigh.get(r, [])
                ok = ~miss[r]
                if not nb or ok.sum() < len(nb) + 2 or np.isnan(first[nb]).any():
                    continue
                X = np.vstack([first[nb], np.ones(v.shape[1])]).T
                beta, *_ = np.linalg.lstsq(X[ok], v[r, ok], rcond=None)
                pred = X @ beta
                resid = np.where(ok, v[r] - pred, np.nan)
                out[r] = np.where(ok, v[r], pred + _fill_row(resid, "linear"))
    if method == "rotation":
        from host.edit._rotation import euler_groups, fill_rotation
        groups = euler_groups(staff)
        if groups:
            out = fill_rotation(v, groups, out)
    if max_gap_s is not None:
        longest = int(round(float(max_gap_s) * staff.fps))
        for r in np.flatnonzero(miss.any(axis=1)):
            for a, b in zip(*_gap_runs(miss[r])):
                if b - a > longest:
                    out[r, a:b] = np.nan
    return derive(staff, out)
