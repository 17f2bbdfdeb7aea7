"""Optional compiled (numba) step of the batched orientation IK (device/body/ik_batch.py).

    from device.body.ik_batch_numba import available, iterate_batch
    if available():                                   # numba installed, MOTIONSTAFF_NUMBA != 0
        Q_new, step_rad, e_deg = iterate_batch(ik, Q_si)     # ik: OrientationIKBatch

The unit's branch recovery runs a few of these steps in the frames where the filter left the
fused orientations' branch: in numpy one step of 3 seeds is ~60 small operations (0.5-0.7 ms
on this machine, several times that on a Pi 4), the frames that set the unit's p99. Compiled it
is one pass; the numpy OrientationIKBatch.iterate stays the reference and the fallback, and
tests/test_ik_batch_numba.py checks the two agree to round-off. The same equations:
  R_j = R_par Rloc(q_j), Rloc = I + sin q K + (1 - cos q) K^2   (identity for a translation)
  a_j = R_par a_loc                                   world axis of dof j
  R_k = R_body(k) Rf_k                                target k's frame (Rf: the sensor on its link)
  e_k = log(R_target_k R_k')                          rotation vector residual (rad)
  J_k[:, j] = a_j for the rotation dofs above k       (3, n)
  dq = (w^2 J'J + (lambda^2 + w_p^2) I)^-1 (w^2 J'e + w_p^2 (q_prior - q))
  q = clip(q + dq, lo, hi)
"""

import numpy as np

from device.body.dynamics_numba import available, numba  # noqa: F401  (available: re-exported)


def _logmap(M, out):
    """out = log(M) (rotation vector) of a rotation matrix M (3, 3); the same branches as
    device/body/ik.py _rotvec (near pi: the symmetric part's eigenvector, signed by v)."""
    c = (M[0, 0] + M[1, 1] + M[2, 2] - 1.0) / 2.0
    c = min(1.0, max(-1.0, c))
    th = np.arccos(c)
    v0 = M[2, 1] - M[1, 2]
    v1 = M[0, 2] - M[2, 0]
    v2 = M[1, 0] - M[0, 1]
    s = np.sin(th)
    # f = th / (2 sin th), 1/2 when sin th is tiny
    f = 0.5 if s < 1e-6 else th / (2.0 * s)
    out[0], out[1], out[2] = v0 * f, v1 * f, v2 * f
    if th > np.pi - 1e-3:
        Sm = 0.5 * (M + M.T)
        w, V = np.linalg.eigh(Sm)
        a0, a1, a2 = V[0, 2], V[1, 2], V[2, 2]
        if a0 * v0 + a1 * v1 + a2 * v2 < 0.0:
            a0, a1, a2 = -a0, -a1, -a2
        out[0], out[1], out[2] = a0 * th, a1 * th, a2 * th


def _mul(A, B, out):
    """out = A B (3 x 3), without numpy's per-call overhead"""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


def _mul_t(A, B, out):
    """out = A B' (3 x 3)"""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[j, 0] + A[i, 1] * B[j, 1] + A[i, 2] * B[j, 2]


def _iterate(Q, Rt, order, par, axl, rot, body, frot, mask, overlap, qp, w2, diag, pw2, lo, hi, clamp, solve):
    B, n = Q.shape
    K = Rt.shape[0]
    Rw = np.empty((n + 1, 3, 3))
    axis = np.empty((n, 3))
    Rl = np.empty((3, 3))
    Rf = np.empty((3, 3))
    E = np.empty((3, 3))
    e = np.empty((K, 3))
    ek = np.empty(3)
    A = np.empty((n, n))
    b = np.empty(n)
    Q_new = np.empty((B, n))
    step = np.empty(B)
    e_deg = np.empty((B, K))
    for bi in range(B):
        for i in range(3):
            for j in range(3):
                Rw[n, i, j] = 1.0 if i == j else 0.0
        # R_j = R_par Rloc(q_j), a_j = R_par a_loc, outward
        for j in order:
            pw = n if par[j] < 0 else par[j]
            for i in range(3):
                axis[j, i] = Rw[pw, i, 0] * axl[j, 0] + Rw[pw, i, 1] * axl[j, 1] + Rw[pw, i, 2] * axl[j, 2]
            if rot[j]:
                x, y, z = axl[j, 0], axl[j, 1], axl[j, 2]
                sq, vq = np.sin(Q[bi, j]), 1.0 - np.cos(Q[bi, j])
                # Rloc = I + sin q K + (1 - cos q) K^2, K = skew(a), K^2 = a a' - |a|^2 I
                aa = x * x + y * y + z * z
                Rl[0, 0] = 1.0 + vq * (x * x - aa)
                Rl[1, 1] = 1.0 + vq * (y * y - aa)
                Rl[2, 2] = 1.0 + vq * (z * z - aa)
                Rl[0, 1] = -sq * z + vq * x * y
                Rl[1, 0] = sq * z + vq * x * y
                Rl[0, 2] = sq * y + vq * x * z
                Rl[2, 0] = -sq * y + vq * x * z
                Rl[1, 2] = -sq * x + vq * y * z
                Rl[2, 1] = sq * x + vq * y * z
                _mul(Rw[pw], Rl, Rw[j])
            else:
                Rw[j, :, :] = Rw[pw]
        # e_k = log(R_target_k (R_body Rf_k)')
        for k in range(K):
            _mul(Rw[body[k]], frot[k], Rf)
            _mul_t(Rt[k], Rf, E)
            _logmap(E, ek)
            e[k] = ek
            e_deg[bi, k] = np.degrees(np.sqrt(ek[0] ** 2 + ek[1] ** 2 + ek[2] ** 2))
        if not solve:
            Q_new[bi] = Q[bi]
            step[bi] = 0.0
            continue
        # A = w^2 J'J + (lambda^2 + w_p^2) I ; b = w^2 J'e + w_p^2 (q_prior - q)
        # (J_k[:, j] = a_j masked: (J'J)_ij = a_i . a_j times overlap_ij = sum_k mask_ki mask_kj)
        for i in range(n):
            for j in range(i, n):
                v = w2 * overlap[i, j] * (axis[i, 0] * axis[j, 0] + axis[i, 1] * axis[j, 1] + axis[i, 2] * axis[j, 2])
                A[i, j] = v
                A[j, i] = v
            A[i, i] += diag
            acc = 0.0
            for k in range(K):
                acc += mask[k, i] * (axis[i, 0] * e[k, 0] + axis[i, 1] * e[k, 1] + axis[i, 2] * e[k, 2])
            b[i] = w2 * acc + pw2 * (qp[bi if qp.shape[0] > 1 else 0, i] - Q[bi, i])
        dq = np.linalg.solve(A, b)
        m = 0.0
        for i in range(n):
            v = Q[bi, i] + dq[i]
            if clamp:
                v = min(hi[i], max(lo[i], v))
            Q_new[bi, i] = v
            m = max(m, abs(v - Q[bi, i]))
        step[bi] = m
    return Q_new, step, e_deg


if numba is not None:
    _logmap = numba.njit(cache=True)(_logmap)
    _mul = numba.njit(cache=True)(_mul)
    _mul_t = numba.njit(cache=True)(_mul_t)
    _iterate = numba.njit(cache=True)(_iterate)


def _arrays(ik):
    arr = getattr(ik, "_numba_arrays", None)
    if arr is None:
        m = ik.model
        arr = ik._numba_arrays = (
            np.asarray(m.order, np.int64), np.asarray(m.parent, np.int64),
            np.ascontiguousarray(m.axis_local, float), np.ascontiguousarray(m.is_rot, np.bool_),
            np.asarray(ik._body, np.int64), np.ascontiguousarray(ik._frot, float),
            np.ascontiguousarray(ik._mask, float), np.ascontiguousarray(ik._mask.T @ ik._mask, float))
    return arr


def iterate_batch(ik, Q_si, solve=True):
    """OrientationIKBatch.iterate(Q_si), compiled: (Q_new (B, n), max |Q_new - Q| (B,), e_deg (B, K)).
    solve=False: only e_deg at Q (OrientationIKBatch.residual_deg), Q_new = Q."""
    Q = np.ascontiguousarray(Q_si, float)
    order, par, axl, rot, body, frot, mask, overlap = _arrays(ik)
    return _iterate(Q, np.ascontiguousarray(ik.Rt, float), order, par, axl, rot, body, frot, mask, overlap,
                    np.ascontiguousarray(np.atleast_2d(ik.qp), float), ik.w ** 2, ik.lam2 + ik.pw2, ik.pw2,
                    np.ascontiguousarray(ik.lo, float), np.ascontiguousarray(ik.hi, float), bool(ik.clamp), bool(solve))
