"""Optional compiled (numba) 2D-marker rows: pixels and pixel Jacobians of features in one pass.

    from device.estimate.camera_numba import available, marker_rows
    if available():                          # numba installed, MOTIONSTAFF_NUMBA != 0
        p, uv, Juv = marker_rows(meas, kin, cam, idx)    # (K, 3), (K, 2), (K, 2, n)

What MeasurementModel.features + Camera.project + Camera.project_jacobian @
RigidBodyModel.point_jacobian compute with a dozen numpy calls on (K, n, 3) arrays, per feature
over the dofs above it (the numpy path multiplies full-width blocks by their ancestor mask):
  p   = R_b f_off + p_b                     (the feature's dof body b; world: the identity)
  c   = R p + t,  w = K c,  uv = (w0 / w2, w1 / w2)   (NaN at or behind the camera, w2 <= 1e-6)
  D   = duv/dw K R,  duv/dw = [[1/w2, 0, -w0/w2^2], [0, 1/w2, -w1/w2^2]]
  Juv[:, j] = D (a_j x (p - o_j))  (rotation)  or  D a_j  (translation), dofs above b only
Points at or behind the camera get NaN pixels and a zero Jacobian (callers drop them).
tests/test_ekf_fast_paths.py checks it against the numpy path.
"""

import numpy as np

from device.body.dynamics_numba import available, numba  # noqa: F401  (available: re-exported)


def _rows(T, idx, fbw, fb, frame, anc, rot, axis, origin, R, t, Kc, KR):
    n = axis.shape[0]
    K = idx.shape[0]
    p = np.empty((K, 3))
    uv = np.empty((K, 2))
    J = np.zeros((K, 2, n))
    D = np.empty((2, 3))
    for k in range(K):
        f = idx[k]
        b = fbw[f]
        # p = R_b f_off + p_b  ([R_b | p_b] [f_rot f_off; 0 1], its last column)
        for i in range(3):
            p[k, i] = (T[b, i, 0] * frame[f, 0, 3] + T[b, i, 1] * frame[f, 1, 3]
                       + T[b, i, 2] * frame[f, 2, 3]) + T[b, i, 3]
        # c = R p + t ; w = K c
        c0 = (R[0, 0] * p[k, 0] + R[0, 1] * p[k, 1] + R[0, 2] * p[k, 2]) + t[0]
        c1 = (R[1, 0] * p[k, 0] + R[1, 1] * p[k, 1] + R[1, 2] * p[k, 2]) + t[1]
        c2 = (R[2, 0] * p[k, 0] + R[2, 1] * p[k, 1] + R[2, 2] * p[k, 2]) + t[2]
        w0 = Kc[0, 0] * c0 + Kc[0, 1] * c1 + Kc[0, 2] * c2
        w1 = Kc[1, 0] * c0 + Kc[1, 1] * c1 + Kc[1, 2] * c2
        w2 = Kc[2, 0] * c0 + Kc[2, 1] * c1 + Kc[2, 2] * c2
        if not w2 > 1e-6:
            uv[k, 0] = np.nan
            uv[k, 1] = np.nan
            continue
        uv[k, 0] = w0 / w2
        uv[k, 1] = w1 / w2
        # D = duv/dw (K R)
        iz = 1.0 / w2
        e0 = -w0 / (w2 * w2)
        e1 = -w1 / (w2 * w2)
        for i in range(3):
            D[0, i] = iz * KR[0, i] + e0 * KR[2, i]
            D[1, i] = iz * KR[1, i] + e1 * KR[2, i]
        bb = fb[f]
        if bb < 0:
            continue                          # a world-fixed feature: no dof moves it
        for j in range(n):
            if anc[j, bb] == 0.0:
                continue
            a0, a1, a2 = axis[j, 0], axis[j, 1], axis[j, 2]
            if rot[j]:
                # a_j x (p - o_j)
                d0 = p[k, 0] - origin[j, 0]
                d1 = p[k, 1] - origin[j, 1]
                d2 = p[k, 2] - origin[j, 2]
                x0 = a1 * d2 - a2 * d1
                x1 = a2 * d0 - a0 * d2
                x2 = a0 * d1 - a1 * d0
            else:
                x0, x1, x2 = a0, a1, a2
            J[k, 0, j] = D[0, 0] * x0 + D[0, 1] * x1 + D[0, 2] * x2
            J[k, 1, j] = D[1, 0] * x0 + D[1, 1] * x1 + D[1, 2] * x2
    return p, uv, J


def _radii(JP, J, uv, pix2, k_sigma):
    """Search radii k_sigma sqrt(lambda_max(Juv P Juv') + pixel variance) (K,) from JP = Juv P
    and Juv (K, 2, n), and which pixels are finite (K,): predicted_markers2d's last part."""
    K, _, n = J.shape
    rad = np.empty(K)
    ok = np.empty(K, np.bool_)
    for k in range(K):
        a = 0.0
        b = 0.0
        d = 0.0
        for j in range(n):
            a += JP[k, 0, j] * J[k, 0, j]
            b += JP[k, 0, j] * J[k, 1, j]
            d += JP[k, 1, j] * J[k, 1, j]
        # the largest eigenvalue of [[a, b], [b, d]]: (a + d) / 2 + sqrt(((a - d) / 2)^2 + b^2)
        lam = 0.5 * (a + d) + np.sqrt(0.25 * (a - d) ** 2 + b * b)
        rad[k] = k_sigma * np.sqrt(max(lam, 0.0) + pix2)
        ok[k] = np.isfinite(uv[k, 0]) and np.isfinite(uv[k, 1])
    return rad, ok


if numba is not None:
    _rows = numba.njit(cache=True)(_rows)
    _radii = numba.njit(cache=True)(_radii)


def feature_arrays(meas):
    """The measurement model's per-feature arrays the compiled rows read (cached on it)."""
    c = getattr(meas, "_camera_numba", None)
    if c is None:
        m = meas.model
        c = meas._camera_numba = (
            np.ascontiguousarray(meas.f_body_w, np.int64), np.ascontiguousarray(meas.f_body, np.int64),
            np.ascontiguousarray(meas.f_frame, float), np.ascontiguousarray(m.ancf, float),
            np.ascontiguousarray(m.is_rot, np.bool_))
    return c


def marker_rows(meas, kin, cam, idx):
    """(p (K, 3) world, uv (K, 2) pixels, Juv (K, 2, n) = d uv / dq) of the features idx of a
    MeasurementModel at kin (device.body.dynamics.Kinematics) through the Camera cam."""
    fbw, fb, frame, anc, rot = feature_arrays(meas)
    KR = cam.K @ cam.R
    # idx copied: numba compiles a read-only array (the measurement model's cached indices) as
    # a type of its own, one warm-up would not load
    return _rows(np.ascontiguousarray(kin.T), np.array(idx, np.int64), fbw, fb, frame,
                 anc, rot, np.ascontiguousarray(kin.axis), np.ascontiguousarray(kin.origin_m),
                 np.ascontiguousarray(cam.R, float), np.ascontiguousarray(cam.t, float),
                 np.ascontiguousarray(cam.K, float), KR)


def radii(JP, J, uv, pixel_sigma, k_sigma):
    """(radius (K,), finite (K,)) of search windows: see _radii."""
    return _radii(np.ascontiguousarray(JP), np.ascontiguousarray(J), np.ascontiguousarray(uv),
                  float(pixel_sigma) ** 2, float(k_sigma))
