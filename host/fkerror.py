"""The error a decoded staff makes, measured by forward kinematics (ACL's metric), and its Jacobian.

    from host.fkerror import point_errors_mm, point_jacobian
    e = point_errors_mm(skeleton, values, decoded)     # (frames, links) mm: worst of the joint and its 3 points
    J = point_jacobian(skeleton, values)               # per row: (links it moves, (frames, links, 4, 3) mm per unit)

The points of link j are its joint and ACL's virtual vertices, 3 cm along each of the link's
x, y and z axes (ACL's qvv error metric: shell distance 3 cm):

    P_j0 = p_j ,  P_ja = p_j + 0.03 R_j e_a   (a = x, y, z)

and a link's error in a frame is the largest distance between the original and decoded points.
The Jacobian of P with respect to dof k (a row, in its own unit: deg or the file's length unit)
is, for points of the links in dof k's subtree and zero elsewhere,

    rotation:     dP/dq_k = scale_k  u_k x (P - o_k)        u_k, o_k: the dof's world axis and a point on it
    translation:  dP/dq_k = scale_k  u_k

(host/budget_measured.py adds decoding errors through it; the result is checked by
point_errors_mm, exact forward kinematics, before a file says its bound).
"""

import numpy as np

from device.body.kinematics import forward_kinematics

SHELL_MM = 30.0


def points_m(pose, shell_mm=SHELL_MM):
    """(F, L, 4, 3): each link's joint and its three virtual vertices, metres."""
    p = pose.link_pos_m
    r = pose.link_rot
    # P_ja = p_j + shell R_j e_a: the columns of R_j
    v = p[..., None, :] + (shell_mm / 1000.0) * np.swapaxes(r, -1, -2)
    return np.concatenate([p[..., None, :], v], axis=-2)


CHUNK_FRAMES = 8192                   # frames through forward kinematics at once (memory)


def point_errors_mm(skeleton, a, b, shell_mm=SHELL_MM):
    """(F, L) mm: per frame and link, the largest distance between the points of motions a and b
    (rows = the skeleton's dofs in order, (rows, frames))."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    out = np.empty((a.shape[1], skeleton.nlinks))
    for f in range(0, a.shape[1], CHUNK_FRAMES):
        pa = points_m(forward_kinematics(skeleton, a[:, f:f + CHUNK_FRAMES].T), shell_mm)
        pb = points_m(forward_kinematics(skeleton, b[:, f:f + CHUNK_FRAMES].T), shell_mm)
        out[f:f + CHUNK_FRAMES] = np.linalg.norm(pa - pb, axis=-1).max(axis=-1) * 1000.0
    return out


def subtree(skeleton):
    """(L, L) bool: [i, j] when link j is link i or below it."""
    L = skeleton.nlinks
    m = np.eye(L, dtype=bool)
    for j in range(L):
        i = skeleton.links[j].parent
        while i >= 0:
            m[i, j] = True
            i = skeleton.links[i].parent
    return m


def point_jacobian(skeleton, values, shell_mm=SHELL_MM, dtype=np.float32):
    """Per dof k (rows = the skeleton's dofs): (links, J_k), J_k (F, len(links), 4, 3) mm per row
    unit, how the points of the links in dof k's subtree (the only ones it moves) move with it."""
    pose = forward_kinematics(skeleton, np.asarray(values, float).T)
    pts = points_m(pose, shell_mm) * 1000.0                      # (F, L, 4, 3) mm
    ax = pose.dof_axis                                           # (F, K, 3)
    org = pose.dof_origin_m * 1000.0
    below = subtree(skeleton)
    out = []
    for k, d in enumerate(skeleton.dofs):
        links = np.nonzero(below[d.link])[0]
        u = ax[:, k, None, None, :]
        if d.kind == "rotation":
            # dP/dq = scale u x (P - o)
            jk = d.scale * np.cross(u, pts[:, links] - org[:, k, None, None, :])
        else:
            # dP/dq = scale u  (mm per unit: scale is metres per unit)
            jk = d.scale * 1000.0 * np.broadcast_to(u, (pts.shape[0], len(links), 4, 3))
        out.append((links, np.ascontiguousarray(jk, dtype)))
    return out


def jacobian_values(skeleton, frames):
    """How many numbers point_jacobian holds for a clip of that many frames."""
    return int(subtree(skeleton).sum()) * 12 * frames
