"""Rotation helpers (numpy, batched): quaternions w,x,y,z <-> matrices, exp/log maps.

    from device.capture.rot import quat_to_mat, mat_to_quat, exp_so3, log_so3
    R = exp_so3(np.array([0.0, 0.0, np.pi / 2]))     # 90 deg about z
    log_so3(R)                                       # [0, 0, pi/2]
"""

import numpy as np


# quat_to_mat's entries as +-2 times sums of two products of q's components (w, x, y, z), plus
# the identity: R = I + 2 [[-(yy + zz), xy - wz, xz + wy], [xy + wz, -(xx + zz), yz - wx],
# [xz - wy, yz + wx, -(xx + yy)]]; row 4 i + j of _QM maps q_i q_j to the entries it enters
_QM = np.zeros((16, 9))
for _e, _terms in enumerate(((-22, -33), (12, -3), (13, 2), (12, 3), (-11, -33), (23, -1),
                             (13, -2), (23, 1), (-11, -22))):
    for _t in _terms:
        _QM[(abs(_t) // 10) * 4 + abs(_t) % 10, _e] = 2.0 if _t > 0 else -2.0
_QI = np.eye(3).ravel()


def quat_to_mat(q):
    """Rotation matrices (..., 3, 3) of quaternions (..., 4) w, x, y, z (normalised here).

    All products q_i q_j at once, then the entries as one product with _QM (each entry is two
    products times +-2, exact: the same numbers as entry by entry)."""
    q = np.asarray(q, float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    qq = (q[..., :, None] * q[..., None, :]).reshape(q.shape[:-1] + (16,))
    return (qq @ _QM + _QI).reshape(q.shape[:-1] + (3, 3))


def mat_to_quat(R):
    """Unit quaternions (w >= 0) of rotation matrices (..., 3, 3) (Shepperd's method)."""
    R = np.asarray(R, float)
    shp = R.shape[:-2]
    R = R.reshape(-1, 3, 3)
    q = np.empty((R.shape[0], 4))
    tr = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    d = np.stack([tr, R[:, 0, 0], R[:, 1, 1], R[:, 2, 2]], 1)
    k = d.argmax(1)
    for i in range(R.shape[0]):
        r = R[i]
        if k[i] == 0:
            s = 2 * np.sqrt(max(1 + tr[i], 1e-300))
            q[i] = (s / 4, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s)
        elif k[i] == 1:
            s = 2 * np.sqrt(max(1 + r[0, 0] - r[1, 1] - r[2, 2], 1e-300))
            q[i] = ((r[2, 1] - r[1, 2]) / s, s / 4, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s)
        elif k[i] == 2:
            s = 2 * np.sqrt(max(1 + r[1, 1] - r[0, 0] - r[2, 2], 1e-300))
            q[i] = ((r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, s / 4, (r[1, 2] + r[2, 1]) / s)
        else:
            s = 2 * np.sqrt(max(1 + r[2, 2] - r[0, 0] - r[1, 1], 1e-300))
            q[i] = ((r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, s / 4)
    q[q[:, 0] < 0] *= -1
    return q.reshape(shp + (4,))


def skew(v):
    v = np.asarray(v, float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2] = -v[..., 2], v[..., 1]
    S[..., 1, 0], S[..., 1, 2] = v[..., 2], -v[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -v[..., 1], v[..., 0]
    return S


def exp_so3(w):
    """Rotation matrices of rotation vectors w (..., 3) (Rodrigues)."""
    w = np.asarray(w, float)
    th = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    small = th < 1e-8
    ths = np.where(small, 1.0, th)
    a = np.where(small, 1.0, np.sin(ths) / ths)
    b = np.where(small, 0.5, (1 - np.cos(ths)) / ths ** 2)
    return np.eye(3) + a * K + b * (K @ K)


def axis_rot(axes, angles_rad):
    """Rot(axis, angle) for unit axes (..., 3) and angles (...): (..., 3, 3)."""
    return exp_so3(np.asarray(axes, float) * np.asarray(angles_rad, float)[..., None])


def log_so3(R):
    """Rotation vectors (..., 3) of rotation matrices (angle in [0, pi])."""
    R = np.asarray(R, float)
    c = np.clip((np.trace(R, axis1=-2, axis2=-1) - 1) / 2, -1.0, 1.0)
    th = np.arccos(c)
    v = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                  R[..., 1, 0] - R[..., 0, 1]], -1)
    s = np.sin(th)
    small = s < 1e-6
    k = np.where(small, 0.5, th / (2 * np.where(small, 1.0, s)))
    out = v * k[..., None]
    near_pi = small & (th > 3.0)
    if np.any(near_pi):
        for idx in zip(*np.nonzero(np.atleast_1d(near_pi))):
            r = R[idx] if R.ndim > 2 else R
            B = (r + np.eye(3)) / 2
            j = int(np.argmax(np.diag(B)))
            ax = B[:, j] / np.sqrt(max(B[j, j], 1e-300))
            if R.ndim > 2:
                out[idx] = ax * np.pi
            else:
                out = ax * np.pi
    return out
