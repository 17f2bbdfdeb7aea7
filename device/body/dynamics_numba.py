"""Optional compiled (numba) path for the dynamics terms of one EKF linearisation.

    from device.body.dynamics_numba import available, linearise_terms
    if available():                                      # numba installed, MOTIONSTAFF_NUMBA != 0
        kin, M, b, Kg = linearise_terms(model, q_si, qd_si)   # model: RigidBodyModel

The same quantities as the numpy functions of device/body/dynamics.py and
device/estimate/process.py, computed in one compiled pass over the dof tree (topological order
outward, reverse order inward) instead of ~120 small numpy operations:
  kin  Kinematics (R, p_m, axis, origin_m, S, T, and the motion cache V, Ad at qd)  = kinematics()
  M    mass matrix (CRBA in world coordinates)                                     = mass_matrix()
  b    bias forces C(q, qd) qd + g (RNEA with qdd = 0)                             = bias()
  Kg   gravity stiffness dg/dq                                                     = gravity_stiffness()
The numpy path stays the reference and the fallback (no numba, or MOTIONSTAFF_NUMBA=0);
tests/test_ekf_fast_paths.py checks the two agree to round-off. Same equations as the numpy code:
  world frame of dof j   R_j = R_par Rloc(q_j), p_j = p_par + R_par (t0_j [+ a_j q_j])
  S_j = [a_j; o_j x a_j] (rotation) or [0; a_j] (translation), a_j = R_par a_loc, o_j = p_par + R_par t0_j
  inertia at the origin  h = m c, J_O = R I_c R' + m (|c|^2 I - c c'), c = p + R com
  composite inertias     Ic_j = sum over the subtree of j
  CRBA                   M_ij = S_i . (Ic_j S_j), i an ancestor of j (or j)
  RNEA (qdd = 0)         v_j = v_par + S_j qd_j, a_j = a_par + (v_par x S_j) qd_j (a_0 = -g),
                         f_j = I_j a_j + v_j x* I_j v_j, b_j = S_j . sum over the subtree of f
  gravity stiffness      see device/estimate/process.py gravity_stiffness()
"""

import os

import numpy as np

try:
    import numba
except ImportError:            # the numpy path is used
    numba = None


def available():
    """True when the compiled path is used (numba importable and MOTIONSTAFF_NUMBA is not 0)."""
    return numba is not None and os.environ.get("MOTIONSTAFF_NUMBA", "1") != "0"


def _kin(q, order, par, t0, axl, rot):
    """(T (n + 1, 3, 4) with the world as row n, axis, origin, S): kinematics() compiled."""
    n = q.shape[0]
    T = np.zeros((n + 1, 3, 4))
    T[n, 0, 0] = 1.0
    T[n, 1, 1] = 1.0
    T[n, 2, 2] = 1.0
    axis = np.empty((n, 3))
    origin = np.empty((n, 3))
    S = np.empty((n, 6))
    Rl = np.empty((3, 3))
    # -- kinematics, outward --------------------------------------------------------------------
    for j in order:
        pw = n if par[j] < 0 else par[j]
        for i in range(3):
            # a_j = R_par a_loc ; o_j = p_par + R_par t0
            axis[j, i] = T[pw, i, 0] * axl[j, 0] + T[pw, i, 1] * axl[j, 1] + T[pw, i, 2] * axl[j, 2]
            origin[j, i] = T[pw, i, 3] + (T[pw, i, 0] * t0[j, 0] + T[pw, i, 1] * t0[j, 1]
                                          + T[pw, i, 2] * t0[j, 2])
        if rot[j]:
            # Rloc = I + sin q K + (1 - cos q) K^2, K = skew(a_loc)
            s = np.sin(q[j])
            c1 = 1.0 - np.cos(q[j])
            x, y, z = axl[j, 0], axl[j, 1], axl[j, 2]
            Rl[0, 0] = 1.0 + c1 * (-z * z - y * y)
            Rl[0, 1] = -s * z + c1 * (x * y)
            Rl[0, 2] = s * y + c1 * (x * z)
            Rl[1, 0] = s * z + c1 * (x * y)
            Rl[1, 1] = 1.0 + c1 * (-z * z - x * x)
            Rl[1, 2] = -s * x + c1 * (y * z)
            Rl[2, 0] = -s * y + c1 * (x * z)
            Rl[2, 1] = s * x + c1 * (y * z)
            Rl[2, 2] = 1.0 + c1 * (-y * y - x * x)
            for i in range(3):
                for k in range(3):
                    T[j, i, k] = T[pw, i, 0] * Rl[0, k] + T[pw, i, 1] * Rl[1, k] + T[pw, i, 2] * Rl[2, k]
                T[j, i, 3] = origin[j, i]
                S[j, i] = axis[j, i]
            # S_lin = o x a
            S[j, 3] = origin[j, 1] * axis[j, 2] - origin[j, 2] * axis[j, 1]
            S[j, 4] = origin[j, 2] * axis[j, 0] - origin[j, 0] * axis[j, 2]
            S[j, 5] = origin[j, 0] * axis[j, 1] - origin[j, 1] * axis[j, 0]
        else:
            for i in range(3):
                for k in range(3):
                    T[j, i, k] = T[pw, i, k]
                T[j, i, 3] = origin[j, i] + axis[j, i] * q[j]
                S[j, i] = 0.0
                S[j, 3 + i] = axis[j, i]
    return T, axis, origin, S


def _terms(q, qd, order, par, t0, axl, rot, mass, com, Iloc, grav):
    n = q.shape[0]
    T, axis, origin, S = _kin(q, order, par, t0, axl, rot)
    # -- inertias at the world origin: m, h = m c, J_O; composite sums inward -------------------
    cm = mass.copy()
    ch = np.empty((n, 3))
    cJ = np.empty((n, 3, 3))
    bh = np.empty((n, 3))
    bJ = np.empty((n, 3, 3))
    RI = np.empty((3, 3))
    c = np.empty(3)
    for j in range(n):
        m = mass[j]
        for i in range(3):
            c[i] = T[j, i, 3] + T[j, i, 0] * com[j, 0] + T[j, i, 1] * com[j, 1] + T[j, i, 2] * com[j, 2]
        cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        for i in range(3):
            for k in range(3):
                RI[i, k] = T[j, i, 0] * Iloc[j, 0, k] + T[j, i, 1] * Iloc[j, 1, k] + T[j, i, 2] * Iloc[j, 2, k]
        for i in range(3):
            bh[j, i] = m * c[i]
            for k in range(3):
                v = RI[i, 0] * T[j, k, 0] + RI[i, 1] * T[j, k, 1] + RI[i, 2] * T[j, k, 2] - m * c[i] * c[k]
                if i == k:
                    v += m * cc
                bJ[j, i, k] = v
    for j in range(n):
        for i in range(3):
            ch[j, i] = bh[j, i]
            for k in range(3):
                cJ[j, i, k] = bJ[j, i, k]
    for jj in range(n - 1, -1, -1):
        j = order[jj]
        p = par[j]
        if p >= 0:
            cm[p] += cm[j]
            for i in range(3):
                ch[p, i] += ch[j, i]
                for k in range(3):
                    cJ[p, i, k] += cJ[j, i, k]
    # -- CRBA: F_j = Ic_j S_j, M_ij = S_i . F_j up the ancestor chain --------------------------
    M = np.zeros((n, n))
    F = np.empty(6)
    for j in range(n):
        _apply(cm[j], ch[j], cJ[j], S[j], F)
        i = j
        while i >= 0:
            v = 0.0
            for k in range(6):
                v += S[i, k] * F[k]
            M[i, j] = v
            M[j, i] = v
            i = par[i]
    # -- RNEA with qdd = 0: velocities and velocity-product accelerations outward --------------
    V = np.empty((n, 6))
    Ad = np.empty((n, 6))
    Sd = np.empty(6)
    for j in order:
        p = par[j]
        for k in range(6):
            vp = V[p, k] if p >= 0 else 0.0
            V[j, k] = vp + S[j, k] * qd[j]
        if p >= 0:
            # Sdot = v_par x S = [w x a; w x b + v x a]
            w0, w1, w2, v0, v1, v2 = V[p, 0], V[p, 1], V[p, 2], V[p, 3], V[p, 4], V[p, 5]
        else:
            w0 = w1 = w2 = v0 = v1 = v2 = 0.0
        a0, a1, a2, b0, b1, b2 = S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5]
        Sd[0] = w1 * a2 - w2 * a1
        Sd[1] = w2 * a0 - w0 * a2
        Sd[2] = w0 * a1 - w1 * a0
        Sd[3] = (w1 * b2 - w2 * b1) + (v1 * a2 - v2 * a1)
        Sd[4] = (w2 * b0 - w0 * b2) + (v2 * a0 - v0 * a2)
        Sd[5] = (w0 * b1 - w1 * b0) + (v0 * a1 - v1 * a0)
        for k in range(6):
            ap = Ad[p, k] if p >= 0 else 0.0
            Ad[j, k] = ap + Sd[k] * qd[j]
    # f_j = I_j (Ad_j - [0; g]) + v_j x* (I_j v_j), summed inward
    f = np.empty((n, 6))
    IV = np.empty(6)
    A = np.empty(6)
    for j in range(n):
        for k in range(3):
            A[k] = Ad[j, k]
            A[3 + k] = Ad[j, 3 + k] - grav[k]
        _apply(mass[j], bh[j], bJ[j], A, F)
        _apply(mass[j], bh[j], bJ[j], V[j], IV)
        w0, w1, w2, v0, v1, v2 = V[j, 0], V[j, 1], V[j, 2], V[j, 3], V[j, 4], V[j, 5]
        n0, n1, n2, g0, g1, g2 = IV[0], IV[1], IV[2], IV[3], IV[4], IV[5]
        # [w; v] x* [n; f] = [w x n + v x f; w x f]
        f[j, 0] = F[0] + (w1 * n2 - w2 * n1) + (v1 * g2 - v2 * g1)
        f[j, 1] = F[1] + (w2 * n0 - w0 * n2) + (v2 * g0 - v0 * g2)
        f[j, 2] = F[2] + (w0 * n1 - w1 * n0) + (v0 * g1 - v1 * g0)
        f[j, 3] = F[3] + (w1 * g2 - w2 * g1)
        f[j, 4] = F[4] + (w2 * g0 - w0 * g2)
        f[j, 5] = F[5] + (w0 * g1 - w1 * g0)
    for jj in range(n - 1, -1, -1):
        j = order[jj]
        p = par[j]
        if p >= 0:
            for k in range(6):
                f[p, k] += f[j, k]
    b = np.empty(n)
    for j in range(n):
        v = 0.0
        for k in range(6):
            v += S[j, k] * f[j, k]
        b[j] = v
    # -- gravity stiffness (device/estimate/process.py gravity_stiffness) ----------------------
    G0, G1, G2 = -grav[0], -grav[1], -grav[2]
    u = np.empty((n, 3))
    z = np.empty((n, 3))
    y = np.empty((n, 3))
    for j in range(n):
        a0, a1, a2 = axis[j, 0], axis[j, 1], axis[j, 2]
        m = cm[j]
        r0 = ch[j, 0] - m * origin[j, 0]
        r1 = ch[j, 1] - m * origin[j, 1]
        r2 = ch[j, 2] - m * origin[j, 2]
        # u = G x a ; ar = a x r
        u[j, 0] = G1 * a2 - G2 * a1
        u[j, 1] = G2 * a0 - G0 * a2
        u[j, 2] = G0 * a1 - G1 * a0
        ar0 = a1 * r2 - a2 * r1
        ar1 = a2 * r0 - a0 * r2
        ar2 = a0 * r1 - a1 * r0
        if rot[j]:
            # z = (a x r) x G ; y = a x r
            z[j, 0] = ar1 * G2 - ar2 * G1
            z[j, 1] = ar2 * G0 - ar0 * G2
            z[j, 2] = ar0 * G1 - ar1 * G0
            y[j, 0], y[j, 1], y[j, 2] = ar0, ar1, ar2
        else:
            # z = -m (G x a) ; y = m a
            for k in range(3):
                z[j, k] = -m * u[j, k]
            y[j, 0], y[j, 1], y[j, 2] = m * a0, m * a1, m * a2
    Kg = np.zeros((n, n))
    for j in range(n):
        # i an ancestor of j (or j), i rotation: dg_j/dq_i = a_i . z_j
        i = j
        while i >= 0:
            if rot[i]:
                Kg[j, i] = axis[i, 0] * z[j, 0] + axis[i, 1] * z[j, 1] + axis[i, 2] * z[j, 2]
            i = par[i]
    # i strictly below j (j an ancestor e of i), e rotation: dg_e/dq_i = y_i . u_e
    for i in range(n):
        e = par[i]
        while e >= 0:
            if rot[e]:
                Kg[e, i] = y[i, 0] * u[e, 0] + y[i, 1] * u[e, 1] + y[i, 2] * u[e, 2]
            e = par[e]
    return T, axis, origin, S, M, V, Ad, b, Kg


def _apply(m, h, J, mot, out):
    # spatial inertia (m, h, J_O) times [alpha; a]: [J alpha + h x a ; m a - h x alpha]
    al0, al1, al2, a0, a1, a2 = mot[0], mot[1], mot[2], mot[3], mot[4], mot[5]
    h0, h1, h2 = h[0], h[1], h[2]
    out[0] = (J[0, 0] * al0 + J[0, 1] * al1 + J[0, 2] * al2) + (h1 * a2 - h2 * a1)
    out[1] = (J[1, 0] * al0 + J[1, 1] * al1 + J[1, 2] * al2) + (h2 * a0 - h0 * a2)
    out[2] = (J[2, 0] * al0 + J[2, 1] * al1 + J[2, 2] * al2) + (h0 * a1 - h1 * a0)
    out[3] = m * a0 - (h1 * al2 - h2 * al1)
    out[4] = m * a1 - (h2 * al0 - h0 * al2)
    out[5] = m * a2 - (h0 * al1 - h1 * al0)


if numba is not None:
    _apply = numba.njit(cache=True)(_apply)
    _kin = numba.njit(cache=True)(_kin)
    _terms = numba.njit(cache=True)(_terms)


def _model_arrays(model):
    arr = getattr(model, "_numba_arrays", None)
    if arr is None:
        arr = model._numba_arrays = (
            np.asarray(model.order, np.int64), np.asarray(model.parent, np.int64),
            np.ascontiguousarray(model.t0_m, float), np.ascontiguousarray(model.axis_local, float),
            np.ascontiguousarray(model.is_rot, np.bool_), np.ascontiguousarray(model.mass_kg, float),
            np.ascontiguousarray(model.com_m, float), np.ascontiguousarray(model.inertia_com, float),
            np.ascontiguousarray(model.gravity, float))
    return arr


def linearise_terms(model, q_si, qd_si):
    """(kin, M, b, Kg) at (q, qd) in SI units: see the module docstring."""
    from device.body.dynamics import Kinematics
    n = model.n
    q = np.asarray(q_si, float)
    if q.shape != (n,) or not np.isfinite(q.sum()):
        raise ValueError("kinematics: q must be %d finite values (rad / m), got shape %s" % (n, q.shape))
    qd = np.array(qd_si, float)
    T, axis, origin, S, M, V, Ad, b, Kg = _terms(q, qd, *_model_arrays(model))
    kin = Kinematics(q, T[:n, :, :3], T[:n, :, 3], axis, origin, S, T)
    kin._vel = (qd, V, Ad)            # model.motion(kin, qd) reads it (the IMU model shares it)
    return kin, M, b, Kg


def kinematics(model, q_si):
    """model.kinematics(q_si) (device/body/dynamics.py) in one compiled pass: the same Kinematics."""
    from device.body.dynamics import Kinematics
    n = model.n
    q = np.asarray(q_si, float)
    if q.shape != (n,) or not np.isfinite(q.sum()):
        raise ValueError("kinematics: q must be %d finite values (rad / m), got shape %s" % (n, q.shape))
    order, par, t0, axl, rot = _model_arrays(model)[:5]
    T, axis, origin, S = _kin(q, order, par, t0, axl, rot)
    return Kinematics(q, T[:n, :, :3], T[:n, :, 3], axis, origin, S, T)
