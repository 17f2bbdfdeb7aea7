"""Forward kinematics of a skeleton, vectorised over frames with numpy.

    from device.body.human import human_model
    from device.body.kinematics import forward_kinematics
    sk = human_model()
    pose = forward_kinematics(sk, sk.home)            # one frame
    pose.link_pos_m.shape                             # (23, 3)
    pose = forward_kinematics(sk, q_frames)           # (F, ndof) -> link_pos_m (F, 23, 3)

For each link, parents first:
    R_link = R_parent,  p_link = p_parent + R_parent @ offset
then each of its dofs in order:
    rotation:    R_link = R_link @ Rot(axis, value * scale)
    translation: p_link = p_link + R_link @ axis * (value * scale)
Feature points: p = p_link + R_link @ position, R = R_link @ R_feature.
"""

import numpy as np


class Pose:
    """World positions (metres) and rotations of every link and feature point."""

    __slots__ = ("link_pos_m", "link_rot", "feature_pos_m", "feature_rot", "dof_axis",
                 "dof_origin_m")

    def __init__(self, link_pos_m, link_rot, feature_pos_m, feature_rot, dof_axis, dof_origin_m):
        self.link_pos_m = link_pos_m        # (F, L, 3)
        self.link_rot = link_rot            # (F, L, 3, 3)
        self.feature_pos_m = feature_pos_m  # (F, K, 3)
        self.feature_rot = feature_rot      # (F, K, 3, 3)
        # world axis and a point on it for every dof, as the dof is applied: the Jacobian of a
        # point p on a descendant link is axis x (p - origin) per radian for a rotation and
        # axis per metre for a translation (times the dof's unit scale)
        self.dof_axis = dof_axis            # (F, ndof, 3)
        self.dof_origin_m = dof_origin_m    # (F, ndof, 3)


def rotation_matrices(axis, angle_rad):
    """Rot(axis, angle) for a unit axis and angles of shape (F,): (F, 3, 3).

    R = I + sin(a) K + (1 - cos(a)) K^2, K the cross-product matrix of the axis (Rodrigues).
    """
    a = np.asarray(angle_rad, float)
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    k2 = k @ k
    s = np.sin(a)[:, None, None]
    c1 = (1.0 - np.cos(a))[:, None, None]
    return np.eye(3)[None] + s * k[None] + c1 * k2[None]


def _axis_rotation(axis, a, R):
    """R @ Rot(axis, a) without building Rot for axis-aligned axes (the common case)."""
    ax = np.abs(axis)
    if ax.max() > 1.0 - 1e-12:
        i = int(ax.argmax())
        if axis[i] < 0:
            a = -a
        c = np.cos(a)[:, None]
        s = np.sin(a)[:, None]
        j, k = (i + 1) % 3, (i + 2) % 3
        out = R.copy()
        # columns j, k of R rotate in their plane: R e_j -> c R e_j + s R e_k, R e_k -> -s R e_j + c R e_k
        out[:, :, j] = c * R[:, :, j] + s * R[:, :, k]
        out[:, :, k] = -s * R[:, :, j] + c * R[:, :, k]
        return out
    return np.matmul(R, rotation_matrices(axis, a))


def forward_kinematics(skeleton, q, root_pos_m=None, root_rot=None):
    """Poses of all links and features for joint values q ((ndof,) or (F, ndof), dof units).

    root_pos_m (F, 3) and root_rot (F, 3, 3), if given, place the root link in the world
    (for a fixed-base skeleton such as the human model).
    """
    q = np.asarray(q, float)
    single = q.ndim == 1
    q2 = q[None, :] if single else q
    if q2.shape[1] != skeleton.ndof:
        raise ValueError("forward_kinematics: %d values per frame for a skeleton of %d dofs"
                         % (q2.shape[1], skeleton.ndof))
    F = q2.shape[0]
    qs = q2 * skeleton.scales[None, :]      # radians / metres
    L = skeleton.nlinks
    pos = np.empty((F, L, 3))
    rot = np.empty((F, L, 3, 3))
    dax = np.empty((F, skeleton.ndof, 3))
    dorg = np.empty((F, skeleton.ndof, 3))
    for i, ln in enumerate(skeleton.links):
        if ln.parent < 0:
            # the root: offset (and root_pos_m) in the world frame, rotation root_rot
            R = np.array(np.broadcast_to(np.eye(3) if root_rot is None else root_rot, (F, 3, 3)))
            p = np.array(np.broadcast_to(ln.offset, (F, 3)))
            if root_pos_m is not None:
                p = p + np.broadcast_to(root_pos_m, (F, 3))
        else:
            Rp = rot[:, ln.parent]
            R = Rp.copy()
            # p = p_parent + R_parent @ offset
            p = pos[:, ln.parent] + Rp @ ln.offset
        for j in ln.dofs:
            d = skeleton.dofs[j]
            dax[:, j] = R @ d.axis
            dorg[:, j] = p
            if d.kind == "rotation":
                R = _axis_rotation(d.axis, qs[:, j], R)
            else:
                # p = p + R @ axis * value
                p = p + (R @ d.axis) * qs[:, j][:, None]
        pos[:, i] = p
        rot[:, i] = R
    K = len(skeleton.features)
    fpos = np.empty((F, K, 3))
    frot = np.empty((F, K, 3, 3))
    for k, f in enumerate(skeleton.features):
        R = rot[:, f.link]
        fpos[:, k] = pos[:, f.link] + R @ f.position
        frot[:, k] = R @ f.rotation()
    if single:
        return Pose(pos[0], rot[0], fpos[0], frot[0], dax[0], dorg[0])
    return Pose(pos, rot, fpos, frot, dax, dorg)


def feature_positions(skeleton, q, names=None):
    """World positions (F, K, 3) of the named feature points (all when names is None)."""
    pose = forward_kinematics(skeleton, q)
    if names is None:
        return pose.feature_pos_m
    idx = [skeleton.feature_names.index(n) for n in names]
    return pose.feature_pos_m[..., idx, :]
