"""A joint's Euler rows as one rotation: grouping, prediction across frames, back to Euler.

    from host.edit._rotation import euler_groups, predict_euler
    groups = euler_groups(staff)            # [EulerGroup(rows, seq, sign, scale_rad, standard)]
    est = predict_euler(values, good, groups, at=mask)       # (rows, frames), NaN where not
    est = predict_euler(values, good, groups, at=mask, given=False)   # whole frame unknown
    full = fill_rotation(values, groups, local_cubic(values))  # fill:rotation (host.edit.fill)

A link whose rotation dofs are three basis-axis rotations (BVH `Zrotation Xrotation Yrotation`,
or the built-in model's flex/abd/rot) is an intrinsic Euler sequence: R = R_a(q0) R_b(q1) R_c(q2)
(docs/ARCHITECTURE.md). For a pixel (row of the group, frame t) the joint's rotation at t is
predicted from the neighbouring frames where all three rows are `good`: the Lagrange cubic of
their quaternions (signs made continuous, two either side; linear with one; held at the ends),
normalised. Then, `given=True` (despike): the angle of this row that, with the two other rows
observed at t, comes nearest the predicted rotation (closed form, so gimbal lock and Euler flips
of the other rows are followed exactly); `given=False` (fill): the Euler angles of the predicted
rotation, in the representation the source uses (middle angle within +-90 deg if every valid
frame of the group has it so, else the one nearest the previous good frame). Either way each
angle is unwrapped (+ k*360 deg) nearest the row's previous good value, as the importer does.
`fill_rotation` uses the rotation for a gap only where it predicts the good frames beside the
gap better than the rows' own cubics. Quaternions are (x, y, z, w) like scipy's, composed with
numpy (quat_from_euler is scipy's Rotation.from_euler(seq).as_quat(), faster; tested).
"""

import warnings
from collections import namedtuple

import numpy as np
from scipy.spatial.transform import Rotation

from host.edit import _predict as P

EulerGroup = namedtuple("EulerGroup", "rows seq sign scale_rad standard")
_AX = "XYZ"


def _basis(axis):
    a = np.asarray(axis, dtype=np.float64)
    k = int(np.argmax(np.abs(a)))
    if abs(abs(a[k]) - 1.0) > 1e-9:
        return None
    return _AX[k], float(np.sign(a[k]))


def euler_groups(staff):
    """The staff's Euler triples: from its skeleton (three basis-axis rotation dofs on one link,
    adjacent axes different), else from BVH-style names `Joint.Zrotation`."""
    from host.edit._base import as_skeleton
    names = staff.names
    found = {}
    sk = as_skeleton(staff.skeleton)
    for i, n in enumerate(names):
        if staff.rows[i].unit not in ("deg", "rad"):
            continue
        if sk is not None:
            try:
                d = sk.dofs[sk.dof_index(n)]
            except (KeyError, ValueError):
                continue
            if d.kind != "rotation":
                continue
            b = _basis(d.axis)
            if b is None:
                continue
            found.setdefault(("link", d.link), []).append((i, b[0], b[1], d.scale))
        elif n.endswith("rotation") and "." in n and n[-9] in _AX:
            found.setdefault(("name", n.rsplit(".", 1)[0]), []).append(
                (i, n[-9], 1.0, np.pi / 180 if staff.rows[i].unit == "deg" else 1.0))
    groups = []
    for items in found.values():
        if len(items) != 3:
            continue
        seq = "".join(it[1] for it in items)
        if seq[0] == seq[1] or seq[1] == seq[2]:
            continue
        rows = np.array([it[0] for it in items])
        sign = np.array([it[2] for it in items])
        scale = np.array([it[3] for it in items], dtype=np.float64)
        mid = staff.values[rows[1]] * sign[1] * scale[1]
        mid = mid[~np.isnan(mid)]
        wrapped = np.abs((mid + np.pi) % (2 * np.pi) - np.pi)
        standard = bool(mid.size and seq[0] != seq[2] and np.all(wrapped <= np.pi / 2 + 1e-6))
        groups.append(EulerGroup(rows, seq, sign, scale, standard))
    return groups


def _axis_rot(axis, ang):
    """(N, 3, 3) rotations by ang (N,) rad about basis axis 'X', 'Y' or 'Z'."""
    c, s = np.cos(ang), np.sin(ang)
    m = np.zeros(ang.shape + (3, 3))
    i = _AX.index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    m[:, i, i] = 1.0
    m[:, j, j] = c
    m[:, k, k] = c
    m[:, k, j] = s
    m[:, j, k] = -s
    return m


def _quat_mul(a, b):
    """Hamilton product of (N, 4) quaternions stored (x, y, z, w) like scipy."""
    x1, y1, z1, w1 = a.T
    x2, y2, z2, w2 = b.T
    return np.stack([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                     w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2], axis=1)


def quat_from_euler(seq, ang_rad):
    """(N, 4) quaternions (x, y, z, w) of intrinsic Euler angles ang_rad (N, 3) about the basis
    axes of seq ('ZXY'): the same as scipy's Rotation.from_euler(seq, ang).as_quat(), faster."""
    out = None
    for k, c in enumerate(seq):
        h = 0.5 * ang_rad[:, k]
        q = np.zeros((ang_rad.shape[0], 4))
        q[:, _AX.index(c)] = np.sin(h)
        q[:, 3] = np.cos(h)
        out = q if out is None else _quat_mul(out, q)
    return out


def _quat_matrix(q):
    """(N, 3, 3) rotation matrices of unit quaternions (x, y, z, w)."""
    x, y, z, w = q.T
    rows = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    return np.stack([np.stack(r, axis=1) for r in rows], axis=1)


def _quat_cubic(q, idx, t):
    """Normalised Lagrange interpolation at t of the quaternions q (N, 4) at frames idx
    (p2, p1, n1, n2; -1 = none), signs continuous with p1 (else n1)."""
    p2, p1, n1, n2 = idx
    anchor = np.where((p1 >= 0)[:, None], q[np.maximum(p1, 0)], q[np.maximum(n1, 0)])

    def get(i):
        x = q[np.maximum(i, 0)]
        x = np.where((np.sum(x * anchor, axis=1) < 0)[:, None], -x, x)
        return np.where((i >= 0)[:, None], x, np.nan)

    y2, y1, z1, z2 = get(p2), get(p1), get(n1), get(n2)
    f2, f1, g1, g2 = (np.where(i >= 0, i, -10 ** 9).astype(np.float64)[:, None] for i in idx)
    tt = t.astype(np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        a2, a1, b1, b2 = tt - f2, tt - f1, tt - g1, tt - g2
        C = (y2 * (a1 * b1 * b2) / ((f2 - f1) * (f2 - g1) * (f2 - g2))
             + y1 * (a2 * b1 * b2) / ((f1 - f2) * (f1 - g1) * (f1 - g2))
             + z1 * (a2 * a1 * b2) / ((g1 - f2) * (g1 - f1) * (g1 - g2))
             + z2 * (a2 * a1 * b1) / ((g2 - f2) * (g2 - f1) * (g2 - g1)))
        M = y1 + (z1 - y1) * ((tt - f1) / (g1 - f1))
    out = np.where(np.isnan(C), M, C)
    out = np.where(np.isnan(out), np.where(np.isnan(y1), z1, y1), out)
    n = np.linalg.norm(out, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return out / n


def _unwrap_near(x, ref, period):
    k = np.floor((x - ref) / period + 0.5)
    return np.where(np.isnan(ref), x, x - k * period)


def predict_euler(values, good, groups, at, given=True):
    """(rows, frames) array: at the pixels of `at` in the groups' rows, the prediction of the
    module docstring from the `good` pixels (NaN elsewhere). `given=True` needs the two other
    rows of the group at that frame in `values` (NaN there: no prediction)."""
    out = np.full(values.shape, np.nan)
    for g in groups:
        rows = g.rows
        q_at = at[rows]
        frames = np.flatnonzero(q_at.any(axis=0))
        if frames.size == 0:
            continue
        jg = good[rows].all(axis=0)
        nb = P.neighbours_at(jg[None, :], np.zeros(frames.size, np.int64), frames)
        p1, p2, n1, n2 = nb
        mark = np.zeros(values.shape[1], bool)
        for i in nb:
            mark[i[i >= 0]] = True
        need = np.flatnonzero(mark)
        if need.size == 0:
            continue
        ang = (values[rows][:, need] * (g.sign * g.scale_rad)[:, None]).T
        qn = quat_from_euler(g.seq, ang)
        q = np.zeros((values.shape[1], 4))
        q[need] = qn
        qp = _quat_cubic(q, (p2, p1, n1, n2), frames)
        ok = ~np.isnan(qp).any(axis=1)
        frames, qp = frames[ok], qp[ok]
        if frames.size == 0:
            continue
        period = 2 * np.pi / (g.scale_rad)
        if given:
            Rp = _quat_matrix(qp)
            obs = values[rows][:, frames] * (g.sign * g.scale_rad)[:, None]
            for c in range(3):
                sel = q_at[c, frames]
                if not sel.any():
                    continue
                o = obs[:, sel]
                R = Rp[sel]
                A = [_axis_rot(g.seq[k], np.nan_to_num(o[k])) for k in range(3)]
                if c == 0:
                    Mx = R @ np.swapaxes(A[1] @ A[2], 1, 2)
                elif c == 1:
                    Mx = np.swapaxes(A[0], 1, 2) @ R @ np.swapaxes(A[2], 1, 2)
                else:
                    Mx = np.swapaxes(A[0] @ A[1], 1, 2) @ R
                i = _AX.index(g.seq[c])
                j, k = (i + 1) % 3, (i + 2) % 3
                w = Mx[:, k, j] - Mx[:, j, k]
                cosp = Mx[:, j, j] + Mx[:, k, k]
                th = np.arctan2(w, cosp) * g.sign[c] / g.scale_rad[c]
                others = [k2 for k2 in range(3) if k2 != c]
                th = np.where(np.isnan(o[others]).any(axis=0), np.nan, th)
                fr = frames[sel]
                ref = _prev_value(values[rows[c]], good[rows[c]], fr)
                out[rows[c], fr] = _unwrap_near(th, ref, period[c])
        else:
            refs = np.vstack([_prev_value(values[r], good[r], frames) for r in rows]).T
            with warnings.catch_warnings():                # at gimbal lock any split will do
                warnings.simplefilter("ignore", UserWarning)
                e = Rotation.from_quat(qp).as_euler(g.seq)                  # middle in +-90
            alt = e + np.array([np.pi, 0.0, np.pi])
            alt[:, 1] = np.pi - e[:, 1]
            cands = []
            for ee in (e, alt):
                x = ee * (g.sign / g.scale_rad)[None, :]
                cands.append(_unwrap_near(x, refs, period[None, :]))
            if g.standard:
                pick = cands[0]
            else:
                d0 = np.nansum(np.abs(cands[0] - refs), axis=1)
                d1 = np.nansum(np.abs(cands[1] - refs), axis=1)
                pick = np.where((d1 < d0)[:, None], cands[1], cands[0])
            for c in range(3):
                sel = q_at[c, frames]
                out[rows[c], frames[sel]] = pick[sel, c]
    return out


def _prev_value(row, good_row, frames):
    """The row's value at the last good frame before each of `frames` (else the first after)."""
    p1, _, n1, _ = P.neighbours_at(good_row[None, :], np.zeros(frames.size, np.int64), frames)
    i = np.where(p1 >= 0, p1, n1)
    return np.where(i >= 0, row[np.maximum(i, 0)], np.nan)


def fill_rotation(values, groups, cubic):
    """values (rows, frames) with the missing pixels of the groups' rows filled on the joint's
    rotation where that explains the neighbouring frames better than the rows' own cubics
    (`cubic`: values with every NaN filled by the local cubic; returned elsewhere).

    For each joint and gap, both models predict the two good frames either side of the gap as
    if they were missing (leave-one-out, in degrees summed over the three rows): a joint turning
    through gimbal lock or an Euler flip is smooth as a rotation and not as angles, a source
    whose rotation jumps (solver output for an uncaptured thumb) is smoother as angles."""
    miss = np.isnan(values)
    good = ~miss
    out = cubic.copy()
    est = predict_euler(values, good, groups, at=miss, given=False)
    # the frames either side of each gap, for every group: one mask, one prediction each way
    side_at = np.zeros(values.shape, bool)
    per = []
    for g in groups:
        rows = g.rows
        frames = np.flatnonzero(miss[rows].any(axis=0) & ~np.isnan(est[rows]).all(axis=0))
        if frames.size == 0:
            continue
        jg = good[rows].all(axis=0)
        p1, _, n1, _ = P.neighbours_at(jg[None, :], np.zeros(frames.size, np.int64), frames)
        for side in (p1, n1):
            side_at[np.ix_(rows, side[side >= 0])] = True
        per.append((g, frames, p1, n1))
    if not per:
        return out
    e_rot = predict_euler(values, good, [x[0] for x in per], at=side_at, given=False)
    rr, tt = np.nonzero(side_at)
    C, L, M, Rr, y1, z1 = P.predictions(values, good, at=(rr, tt))
    ref = np.where(np.isnan(C), M, C)
    e_cub = np.zeros(values.shape)
    e_cub[rr, tt] = np.where(np.isnan(ref), np.where(np.isnan(L), Rr, L), ref)
    d_rot = np.zeros(values.shape)
    d_cub = np.zeros(values.shape)
    with np.errstate(invalid="ignore"):
        d_rot[rr, tt] = np.nan_to_num(np.abs(e_rot[rr, tt] - values[rr, tt]), nan=1e9)
        d_cub[rr, tt] = np.nan_to_num(np.abs(e_cub[rr, tt] - values[rr, tt]), nan=1e9)
    for g, frames, p1, n1 in per:
        rows = g.rows
        err_rot = np.zeros(frames.size)
        err_cub = np.zeros(frames.size)
        for side in (p1, n1):
            ok = side >= 0
            err_rot[ok] += d_rot[rows][:, side[ok]].sum(axis=0)
            err_cub[ok] += d_cub[rows][:, side[ok]].sum(axis=0)
        use = frames[err_rot < err_cub]
        for r in rows:
            gv = values[r, good[r]]
            if gv.size and (gv == gv[0]).all():
                continue          # a still row stays still (its cubic is its value)
            m = miss[r, use] & ~np.isnan(est[r, use])
            out[r, use[m]] = est[r, use[m]]
    return out
