"""Optional compiled (numba) rows of the fused orientations (BNO055) for MeasurementModel.linearise.

    from device.estimate.orient_numba import available, orient_rows
    if available():                          # numba installed, MOTIONSTAFF_NUMBA != 0
        e, Hq = orient_rows(meas, kin, idx, Rm)          # (K, 3), (K, 3, n)

What the numpy path computes with features(), a batched product, _rotvec (device/body/ik.py)
and the ancestor mask, per sensor in one pass:
  Rs = R_b f_rot                        (the sensor's rotation; b its dof body, world: identity)
  E  = Rm Rs',  e = log(E): th = acos((tr E - 1) / 2), e = th / (2 sin th) (E21 - E12, E02 - E20, E10 - E01)
                (0.5 (...) where sin th < 1e-6)
  Hq[:, j] = a_j for the rotation dofs j above b (world axes), 0 elsewhere
Rotations within 1e-3 rad of pi take the numpy path's axis (from the symmetric part of E).
tests/test_ekf_fast_paths.py checks it against the numpy path.
"""

import numpy as np

from device.body.dynamics_numba import available, numba  # noqa: F401  (available: re-exported)


def _rows(T, idx, fbw, fb, frame, Rm, anc, rot, axis):
    n = axis.shape[0]
    K = idx.shape[0]
    e = np.empty((K, 3))
    H = np.zeros((K, 3, n))
    big = np.zeros(K, np.bool_)
    Rs = np.empty((3, 3))
    E = np.empty((3, 3))
    for k in range(K):
        f = idx[k]
        b = fbw[f]
        # Rs = R_b f_rot
        for i in range(3):
            for c in range(3):
                Rs[i, c] = T[b, i, 0] * frame[f, 0, c] + T[b, i, 1] * frame[f, 1, c] + T[b, i, 2] * frame[f, 2, c]
        # E = Rm Rs'
        for i in range(3):
            for c in range(3):
                E[i, c] = Rm[k, i, 0] * Rs[c, 0] + Rm[k, i, 1] * Rs[c, 1] + Rm[k, i, 2] * Rs[c, 2]
        # e = log(E)
        cth = (E[0, 0] + E[1, 1] + E[2, 2] - 1.0) / 2.0
        cth = min(max(cth, -1.0), 1.0)
        th = np.arccos(cth)
        s = np.sin(th)
        fac = 0.5 if s < 1e-6 else th / (2.0 * s)
        e[k, 0] = (E[2, 1] - E[1, 2]) * fac
        e[k, 1] = (E[0, 2] - E[2, 0]) * fac
        e[k, 2] = (E[1, 0] - E[0, 1]) * fac
        big[k] = th > np.pi - 1e-3
        bb = fb[f]
        if bb < 0:
            continue                          # a world-fixed sensor: no dof turns it
        for j in range(n):
            if rot[j] and anc[j, bb] != 0.0:
                H[k, 0, j] = axis[j, 0]
                H[k, 1, j] = axis[j, 1]
                H[k, 2, j] = axis[j, 2]
    return e, H, big


if numba is not None:
    _rows = numba.njit(cache=True)(_rows)


def orient_rows(meas, kin, idx, Rm):
    """(e (K, 3) rotation-vector residuals log(Rm Rs'), Hq (K, 3, n) their q columns) of the
    features idx of a MeasurementModel at kin, for measured world rotations Rm (K, 3, 3)."""
    from device.body.ik import _rotvec
    from device.estimate.camera_numba import feature_arrays
    fbw, fb, frame, anc, rot = feature_arrays(meas)
    idx = np.array(idx, np.int64)     # writable: one compiled variant (camera_numba.marker_rows)
    Rm = np.ascontiguousarray(Rm, float)
    e, H, big = _rows(np.ascontiguousarray(kin.T), idx, fbw, fb, frame, Rm, anc, rot,
                      np.ascontiguousarray(kin.axis))
    if big.any():
        # near pi: the numpy path's axis (eigenvector of the symmetric part, signed by v)
        _, Rs, _ = meas.features(kin, idx[big])
        e[big] = _rotvec(Rm[big] @ Rs.transpose(0, 2, 1))
    return e, H
