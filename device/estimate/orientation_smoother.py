"""Offline (acausal) single-IMU orientation: a Rauch-Tung-Striebel smoother over OrientationEKF.

    from device.estimate.orientation import noise_from_rest, still_segment
    from device.estimate.orientation_smoother import smooth_orientation
    n = still_segment(gyro_rad_s, acc_m_s2, dt_s)               # leading still samples
    sm = smooth_orientation(gyro_rad_s, acc_m_s2, dt_s, **noise_from_rest(gyro_rad_s[:n], acc_m_s2[:n], dt_s))
    sm.q_wxyz            # (N, 4) smoothed orientation, sensor -> Earth (z up): uses every sample
    sm.q_filtered_wxyz   # (N, 4) the causal filter's output on the same run (what a live unit sees)
    sm.bias_rad_s        # (N, 3) smoothed gyro bias
    sm.lever_arm_m       # (N, 3) smoothed lever arm (centre of rotation -> sensor), or None

For recordings, not live use: every estimate uses past and future samples (the counterpart of
vqf's offlineVQF). The forward pass is device/estimate/orientation.py's OrientationEKF, step
by step; it keeps the predicted state and covariance (x_k|k-1, P_k|k-1), the filtered ones
(x_k|k, P_k|k) and the transition Jacobian A_k of every sample. The backward pass runs in the
filter's error state dx = [dtheta (Earth frame, R = exp(dtheta) R_hat), db, dr]:
    C_k     = P_k|k A_k+1' P_k+1|k^-1
    dx_k+1  = x^s_k+1 [-] x_k+1|k     dtheta = log(q^s_k+1 * conj(q_k+1|k)), d(b, r) = (b, r)^s - (b, r)_k+1|k
    x^s_k   = x_k|k [+] C_k dx_k+1    q^s_k = exp(dtheta_k) * q_k|k, (b, r)^s_k = (b, r)_k|k + d(b, r)_k
    P^s_k   = P_k|k + C_k (P^s_k+1 - P_k+1|k) C_k'
With a bias random walk and the filter's rest update, the smoothed bias at any time is informed
by every still period of the recording, before and after it (as VQF offline's bias does).
At the last sample the smoother equals the filter (nothing comes after it).
"""

import numpy as np

from device.estimate.orientation import OrientationEKF, _conj, _exp, _log, _quat_mul
from protocol.errors import FormatError


class Smoothed:
    """The result of smooth_orientation(): smoothed and filtered q (N, 4), b (N, 3), P (N, nx, nx);
    rest (N,) where the filter's rest update ran; lever_arm_m (N, 3) smoothed, or None."""

    __slots__ = ("q_wxyz", "bias_rad_s", "P", "q_filtered_wxyz", "bias_filtered_rad_s", "P_filtered", "rest", "lever_arm_m")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def _check(gyro_rad_s, acc_m_s2, dt_s):
    g = np.asarray(gyro_rad_s, float)
    a = np.asarray(acc_m_s2, float)
    if g.ndim != 2 or g.shape[1] != 3 or a.shape != g.shape:
        raise FormatError("smooth_orientation: gyro and accelerometer must both be (N, 3), got %s and %s"
                          % (g.shape, a.shape))
    if len(g) == 0:
        raise FormatError("smooth_orientation: no samples (empty gyro and accelerometer)")
    bad = np.flatnonzero(~np.all(np.isfinite(g), axis=1))
    if len(bad):
        raise FormatError("smooth_orientation: %d gyro samples are not finite (first at sample %d); "
                          "fill or cut them before smoothing" % (len(bad), bad[0]))
    fin = np.all(np.isfinite(a), axis=1)
    first = np.flatnonzero(fin & (np.linalg.norm(np.where(fin[:, None], a, 0.0), axis=1) > 1e-3))
    if len(first) == 0 or first[0] != 0:
        raise FormatError("smooth_orientation: the first accelerometer sample must be finite and non-zero "
                          "(it sets the initial inclination)")
    try:
        dt = np.asarray(dt_s, float)
    except (TypeError, ValueError):
        raise FormatError("smooth_orientation: dt_s must be a number of seconds, not %r" % (dt_s,)) from None
    if dt.ndim > 1 or (dt.ndim == 1 and len(dt) != len(g)):
        raise FormatError("smooth_orientation: dt_s must be a scalar or one per sample (%d), got shape %s"
                          % (len(g), dt.shape))
    dt = np.broadcast_to(dt, (len(g),)).copy()
    if not np.all(np.isfinite(dt) & (dt > 0)):
        raise FormatError("smooth_orientation: dt_s must be > 0 and finite (a scalar or one per sample)")
    return g, a, dt


def smooth_orientation(gyro_rad_s, acc_m_s2, dt_s, **ekf_options):
    """Forward OrientationEKF + backward RTS over a whole recording.

    gyro_rad_s, acc_m_s2: (N, 3) in the sensor frame; accelerometer rows that are NaN are
    skipped (no correction at that sample), gyro rows must be finite. dt_s: a scalar or (N,)
    (dt_s[k] is the time from sample k-1 to k). ekf_options go to OrientationEKF.
    Returns a Smoothed (see its fields); raises FormatError on bad input."""
    g, a, dt = _check(gyro_rad_s, acc_m_s2, dt_s)
    n = len(g)
    f = OrientationEKF(float(dt[0]), **ekf_options)
    m = f.nx
    qf, bf, Pf = np.empty((n, 4)), np.empty((n, m - 3)), np.empty((n, m, m))
    qp, bp, Pp, A = np.empty((n, 4)), np.empty((n, m - 3)), np.empty((n, m, m)), np.empty((n, m, m))
    rest = np.zeros(n, bool)
    f.step(g[0], a[0])
    qf[0], bf[0], Pf[0] = f.q, f.vector(), f.P
    for k in range(1, n):
        f.predict(g[k], dt[k])
        qp[k], bp[k], Pp[k], A[k] = f.q, f.vector(), f.P, f.A
        f.update(a[k])
        qf[k], bf[k], Pf[k], rest[k] = f.q, f.vector(), f.P, f.rest
    qs, bs, Ps = qf.copy(), bf.copy(), Pf.copy()
    for k in range(n - 2, -1, -1):
        # C_k = P_k|k A_k+1' P_k+1|k^-1   (P symmetric: C' = P_k+1|k^-1 A_k+1 P_k|k)
        C = np.linalg.solve(Pp[k + 1], A[k + 1] @ Pf[k]).T
        # dx_k+1 = x^s_k+1 [-] x_k+1|k : dtheta = log(q^s q_pred^-1) (Earth frame), d(b, r) = (b, r)^s - pred
        d = np.concatenate([_log(_quat_mul(qs[k + 1], _conj(qp[k + 1]))), bs[k + 1] - bp[k + 1]])
        # dx_k = C_k dx_k+1
        dk = C @ d
        # q^s_k = exp(dtheta_k) q_k|k ; (b, r)^s_k = (b, r)_k|k + d(b, r)_k
        q = _quat_mul(_exp(dk[:3]), qf[k])
        qs[k] = q / np.linalg.norm(q)
        bs[k] = bf[k] + dk[3:]
        # P^s_k = P_k|k + C_k (P^s_k+1 - P_k+1|k) C_k'
        Ps[k] = Pf[k] + C @ (Ps[k + 1] - Pp[k + 1]) @ C.T
    return Smoothed(q_wxyz=qs, bias_rad_s=bs[:, :3], P=Ps, q_filtered_wxyz=qf, bias_filtered_rad_s=bf[:, :3],
                    P_filtered=Pf, rest=rest,
                    lever_arm_m=bs[:, 3:6] if m == 9 else None)
