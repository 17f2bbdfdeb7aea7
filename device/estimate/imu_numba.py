"""Optional compiled (numba) IMU rows for MeasurementModel._imu: numpy without numba.

    from device.estimate.imu_numba import available, imu_rows
    if available():                          # numba installed, MOTIONSTAFF_NUMBA != 0
        H, RJ, h = imu_rows(model, kin, V, Ad, qdd, bw, frame, nx)

Per sensor, only over the dofs above it (the numpy path multiplies full-width blocks by their
ancestor mask), the same columns as MeasurementModel._imu (its docstring has the equations):
  gyro   H_q = Rs' ad_j (rotations),  H_qd = Rs' a_j (rotations)
  accel  H_q = Rs' (-(p x adq_j) + f x a_j - vq_p x a_j - cq_j)      (rotation j; translation: adq_j)
         H_qd = 2 Rs' (-(p x ad_j) - v_p x a_j - c_j)               (translation: 2 ad_j)
  J      RJ = Rs' (-(p x a_j) + o_j x a_j)                          (translation: a_j)
  h      [Rs' w, Rs' f]
H comes back (K, 6, nx) with its tau columns zero, RJ (K, 3, n) for the caller's + Rs' J dqdd/dx.
tests/test_ekf_fast_paths.py checks it against the numpy path.
"""

import numpy as np

from device.body.dynamics_numba import available, numba  # noqa: F401  (available: re-exported)


def _rows(T, frame, bw, V, Ad, S, axis, qdd, order, par, rot, anc, grav, nx):
    n = V.shape[0]
    K = bw.shape[0]
    # Vq_j = Vq_par + S_j qdd_j (velocities of qdd), outward
    Vq = np.empty((n, 6))
    for j in order:
        p = par[j]
        for i in range(6):
            Vq[j, i] = (Vq[p, i] if p >= 0 else 0.0) + S[j, i] * qdd[j]
    # per dof, for the parent's motion under qd (r = 0) and qdd (r = 1):
    #   ad_j = w_par x a_j ;  c_j = a_j x v_par - w_par x (o_j x a_j)
    ad = np.zeros((2, n, 3))
    c = np.zeros((2, n, 3))
    for j in range(n):
        p = par[j]
        if p < 0:
            continue
        a0, a1, a2 = axis[j, 0], axis[j, 1], axis[j, 2]
        s0, s1, s2 = S[j, 3], S[j, 4], S[j, 5]
        for r in range(2):
            W = V if r == 0 else Vq
            w0, w1, w2, v0, v1, v2 = W[p, 0], W[p, 1], W[p, 2], W[p, 3], W[p, 4], W[p, 5]
            ad[r, j, 0] = w1 * a2 - w2 * a1
            ad[r, j, 1] = w2 * a0 - w0 * a2
            ad[r, j, 2] = w0 * a1 - w1 * a0
            c[r, j, 0] = (a1 * v2 - a2 * v1) - (w1 * s2 - w2 * s1)
            c[r, j, 1] = (a2 * v0 - a0 * v2) - (w2 * s0 - w0 * s2)
            c[r, j, 2] = (a0 * v1 - a1 * v0) - (w0 * s1 - w1 * s0)
    H = np.zeros((K, 6, nx))
    RJ = np.zeros((K, 3, n))
    h = np.empty((K, 6))
    Rs = np.empty((3, 3))
    pt = np.empty(3)
    L = np.empty((3, 3))
    w = np.empty(3)
    f = np.empty(3)
    X = np.empty((3, 5))
    for k in range(K):
        b = bw[k]
        # [Rs | p] = [R_b | p_b] [f_rot f_off; 0 1]
        for i in range(3):
            for m in range(3):
                Rs[i, m] = T[b, i, 0] * frame[k, 0, m] + T[b, i, 1] * frame[k, 1, m] + T[b, i, 2] * frame[k, 2, m]
            pt[i] = (T[b, i, 0] * frame[k, 0, 3] + T[b, i, 1] * frame[k, 1, 3]
                     + T[b, i, 2] * frame[k, 2, 3]) + T[b, i, 3]
        # v_p, vq_p, a_p (rows of L) = v_O + w x p for V, Vq, A = Ad + Vq at the body
        for r in range(3):
            if b < n:
                if r == 0:
                    g0, g1, g2, l0, l1, l2 = V[b, 0], V[b, 1], V[b, 2], V[b, 3], V[b, 4], V[b, 5]
                elif r == 1:
                    g0, g1, g2, l0, l1, l2 = Vq[b, 0], Vq[b, 1], Vq[b, 2], Vq[b, 3], Vq[b, 4], Vq[b, 5]
                else:
                    g0, g1, g2 = Ad[b, 0] + Vq[b, 0], Ad[b, 1] + Vq[b, 1], Ad[b, 2] + Vq[b, 2]
                    l0, l1, l2 = Ad[b, 3] + Vq[b, 3], Ad[b, 4] + Vq[b, 4], Ad[b, 5] + Vq[b, 5]
            else:
                g0 = g1 = g2 = l0 = l1 = l2 = 0.0
            if r == 0:
                w[0], w[1], w[2] = g0, g1, g2
            L[r, 0] = l0 + (g1 * pt[2] - g2 * pt[1])
            L[r, 1] = l1 + (g2 * pt[0] - g0 * pt[2])
            L[r, 2] = l2 + (g0 * pt[1] - g1 * pt[0])
        # f = pdd - g = a_p + w x v_p - g
        f[0] = L[2, 0] + (w[1] * L[0, 2] - w[2] * L[0, 1]) - grav[0]
        f[1] = L[2, 1] + (w[2] * L[0, 0] - w[0] * L[0, 2]) - grav[1]
        f[2] = L[2, 2] + (w[0] * L[0, 1] - w[1] * L[0, 0]) - grav[2]
        for i in range(3):
            h[k, i] = Rs[0, i] * w[0] + Rs[1, i] * w[1] + Rs[2, i] * w[2]
            h[k, 3 + i] = Rs[0, i] * f[0] + Rs[1, i] * f[1] + Rs[2, i] * f[2]
        if b >= n:
            continue
        p0, p1, p2 = pt[0], pt[1], pt[2]
        for j in range(n):
            if not anc[j, b]:
                continue
            a0, a1, a2 = axis[j, 0], axis[j, 1], axis[j, 2]
            if rot[j]:
                # world columns: gyro H_q, gyro H_qd, accel H_q, accel H_qd, J
                X[0, 0], X[1, 0], X[2, 0] = ad[0, j, 0], ad[0, j, 1], ad[0, j, 2]
                X[0, 1], X[1, 1], X[2, 1] = a0, a1, a2
                q0, q1, q2 = ad[1, j, 0], ad[1, j, 1], ad[1, j, 2]
                # -(p x adq) + (f x a - vq_p x a - cq)
                e0 = (f[1] * a2 - f[2] * a1) - (L[1, 1] * a2 - L[1, 2] * a1)
                e1 = (f[2] * a0 - f[0] * a2) - (L[1, 2] * a0 - L[1, 0] * a2)
                e2 = (f[0] * a1 - f[1] * a0) - (L[1, 0] * a1 - L[1, 1] * a0)
                X[0, 2] = -(p1 * q2 - p2 * q1) + (e0 - c[1, j, 0])
                X[1, 2] = -(p2 * q0 - p0 * q2) + (e1 - c[1, j, 1])
                X[2, 2] = -(p0 * q1 - p1 * q0) + (e2 - c[1, j, 2])
                d0, d1, d2 = ad[0, j, 0], ad[0, j, 1], ad[0, j, 2]
                # 2 (-(p x ad) - (v_p x a + c))
                X[0, 3] = 2.0 * (-(p1 * d2 - p2 * d1) - ((L[0, 1] * a2 - L[0, 2] * a1) + c[0, j, 0]))
                X[1, 3] = 2.0 * (-(p2 * d0 - p0 * d2) - ((L[0, 2] * a0 - L[0, 0] * a2) + c[0, j, 1]))
                X[2, 3] = 2.0 * (-(p0 * d1 - p1 * d0) - ((L[0, 0] * a1 - L[0, 1] * a0) + c[0, j, 2]))
                # -(p x a) + o x a
                X[0, 4] = -(p1 * a2 - p2 * a1) + S[j, 3]
                X[1, 4] = -(p2 * a0 - p0 * a2) + S[j, 4]
                X[2, 4] = -(p0 * a1 - p1 * a0) + S[j, 5]
            else:
                for i in range(3):
                    X[i, 0] = 0.0
                    X[i, 1] = 0.0
                    X[i, 2] = ad[1, j, i]
                    X[i, 3] = 2.0 * ad[0, j, i]
                    X[i, 4] = axis[j, i]
            # rotated into the sensor frame: Y = Rs' X
            for i in range(3):
                r0, r1, r2 = Rs[0, i], Rs[1, i], Rs[2, i]
                H[k, i, j] = r0 * X[0, 0] + r1 * X[1, 0] + r2 * X[2, 0]
                H[k, i, n + j] = r0 * X[0, 1] + r1 * X[1, 1] + r2 * X[2, 1]
                H[k, 3 + i, j] = r0 * X[0, 2] + r1 * X[1, 2] + r2 * X[2, 2]
                H[k, 3 + i, n + j] = r0 * X[0, 3] + r1 * X[1, 3] + r2 * X[2, 3]
                RJ[k, i, j] = r0 * X[0, 4] + r1 * X[1, 4] + r2 * X[2, 4]
    return H, RJ, h


if numba is not None:
    _rows = numba.njit(cache=True)(_rows)


def imu_rows(model, kin, V, Ad, qdd, bw, frame, nx):
    """(H (K, 6, nx) with zero tau columns, RJ (K, 3, n), h (K, 6)): see the module docstring."""
    arr = getattr(model, "_imu_numba_arrays", None)
    if arr is None:
        arr = model._imu_numba_arrays = (
            np.asarray(model.order, np.int64), np.asarray(model.parent, np.int64),
            np.ascontiguousarray(model.is_rot, np.bool_), np.ascontiguousarray(model.anc, np.bool_),
            np.ascontiguousarray(model.gravity, float))
    order, par, rot, anc, grav = arr
    return _rows(np.ascontiguousarray(kin.T), frame, np.asarray(bw, np.int64), V, Ad, kin.S, kin.axis,
                 np.asarray(qdd, float), order, par, rot, anc, grav, int(nx))
