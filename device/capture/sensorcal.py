"""Accelerometer and magnetometer calibration (least squares, numpy), for chips that need it.

    from device.capture.sensorcal import fit_magnetometer, fit_accelerometer, apply
    offset_ut, W = fit_magnetometer(mag_ut)          # (N, 3) samples turned through many attitudes
    m_cal = apply(mag_ut, offset_ut, W)              # |m_cal| ~ constant (the local field)
    bias, scale = fit_accelerometer(still_means_m_s2)   # >= 6 still poses (each face up/down)

Magnetometer: hard iron (offset) and soft iron (W, symmetric) from an ellipsoid fit: the
samples satisfy (m - o)^T A (m - o) = 1; fit the general quadric a.x = 1 by linear least
squares, recover o = -A^-1 b/2 and W = sqrtm(A) scaled so |W (m - o)| has the field's median
magnitude; when the samples span too few attitudes for an ellipsoid (eigenvalues not positive
or more than 4:1 apart) a sphere is fitted instead (offset only, W = I). Accelerometer: per-axis bias and scale so every still pose measures |g|:
minimise sum (|s * (a - b)| - g)^2 by Gauss-Newton from b = 0, s = 1.
BNO055 chips calibrate themselves (BNO055.calibration() reads CALIB_STAT).
"""

import numpy as np

G = 9.80665


def fit_magnetometer(mag_ut):
    m = np.asarray(mag_ut, float)
    if m.ndim != 2 or m.shape[1] != 3 or len(m) < 9:
        raise ValueError("fit_magnetometer needs (N >= 9, 3) samples")
    x, y, z = m.T
    # a x^2 + b y^2 + c z^2 + 2d xy + 2e xz + 2f yz + 2g x + 2h y + 2i z = 1
    D = np.stack([x * x, y * y, z * z, 2 * x * y, 2 * x * z, 2 * y * z, 2 * x, 2 * y, 2 * z], 1)
    p = np.linalg.lstsq(D, np.ones(len(m)), rcond=None)[0]
    A = np.array([[p[0], p[3], p[4]], [p[3], p[1], p[5]], [p[4], p[5], p[2]]])
    b = p[6:9]
    o = -np.linalg.solve(A, b)
    # (m - o)^T A (m - o) = 1 + o^T A o
    k = 1.0 + o @ A @ o
    A = A / k
    w, V = np.linalg.eigh(A)
    if np.any(w <= 0) or w.max() / w.min() > 4.0:
        # too few attitudes for an ellipsoid: a sphere (hard iron only),
        # |m|^2 = 2 m.o + (r^2 - |o|^2), linear in (o, c)
        D = np.concatenate([2 * m, np.ones((len(m), 1))], 1)
        sol = np.linalg.lstsq(D, (m * m).sum(1), rcond=None)[0]
        return sol[:3], np.eye(3)
    W = V @ np.diag(np.sqrt(w)) @ V.T          # |W (m - o)| = 1 on the ellipsoid
    field = np.median(np.linalg.norm(m - o, axis=1))
    return o, W * field


def apply(v, offset, W):
    """W (v - offset) for samples v (..., 3)."""
    return (np.asarray(v, float) - offset) @ np.asarray(W, float).T


def fit_accelerometer(still_means_m_s2, g=G, iters=20):
    a = np.asarray(still_means_m_s2, float)
    if a.ndim != 2 or a.shape[1] != 3 or len(a) < 6:
        raise ValueError("fit_accelerometer needs >= 6 still poses")
    b = np.zeros(3)
    s = np.ones(3)
    for _ in range(iters):
        c = s * (a - b)
        n = np.linalg.norm(c, axis=1)
        r = n - g
        # d|c|/ds_i = c_i (a_i - b_i) / |c| ; d|c|/db_i = -c_i s_i / |c|
        J = np.concatenate([c * (a - b) / n[:, None], -c * s / n[:, None]], 1)
        dx = np.linalg.lstsq(J, -r, rcond=None)[0]
        s, b = s + dx[:3], b + dx[3:]
        if np.abs(dx).max() < 1e-12:
            break
    return b, s
