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
    """World positions (metres) and rotations of every link and feature point.

    Arrays are (F, ...) for F frames (no frame axis for a single frame). Feature points are
    computed when first asked for.
    """

    def __init__(self, skeleton, pos_e, rot_e, dax_e, dorg_e, single):
        # element-major storage: (L, 3, F), (L, 3, 3, F), (ndof, 3, F): each element of every
        # frame is contiguous, which is what makes the per-dof updates fast
        self._sk = skeleton
        self._pos_e, self._rot_e, self._single = pos_e, rot_e, single
        self._dax_e, self._dorg_e = dax_e, dorg_e
        self._feat = None

    def _out(self, a):
        a = np.moveaxis(a, -1, 0)
        return a[0] if self._single else a

    @property
    def link_pos_m(self):
        """(F, L, 3)"""
        return self._out(self._pos_e)

    @property
    def link_rot(self):
        """(F, L, 3, 3)"""
        return self._out(self._rot_e)

    @property
    def dof_axis(self):
        """(F, ndof, 3): the world axis of every dof as it is applied. The Jacobian column of a
        point p on a descendant link is axis x (p - origin) * scale for a rotation and
        axis * scale for a translation."""
        return self._out(self._dax_e)

    @property
    def dof_origin_m(self):
        """(F, ndof, 3): a point on each dof's axis."""
        return self._out(self._dorg_e)

    def _features(self):
        if self._feat is None:
            sk = self._sk
            K = len(sk.features)
            F = self._pos_e.shape[-1]
            fp = np.empty((K, 3, F))
            fr = np.empty((K, 3, 3, F))
            for k, f in enumerate(sk.features):
                R = self._rot_e[f.link]
                # p = p_link + R_link @ position
                fp[k] = self._pos_e[f.link] + np.einsum("ijf,j->if", R, f.position)
                # R = R_link @ R_feature
                fr[k] = np.einsum("ijf,jk->ikf", R, f.rotation())
            self._feat = (fp, fr)
        return self._feat

    @property
    def feature_pos_m(self):
        """(F, K, 3)"""
        return self._out(self._features()[0])

    @property
    def feature_rot(self):
        """(F, K, 3, 3)"""
        return self._out(self._features()[1])


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


def _rotate(R, axis, a):
    """R @ Rot(axis, a) for R of shape (3, 3, F) and angles a (F,)."""
    ax = np.abs(axis)
    if ax.max() > 1.0 - 1e-12:
        i = int(ax.argmax())
        if axis[i] < 0:
            a = -a
        c = np.cos(a)
        s = np.sin(a)
        j, k = (i + 1) % 3, (i + 2) % 3
        out = R.copy()
        # columns j, k turn in their plane: R e_j -> c R e_j + s R e_k, R e_k -> c R e_k - s R e_j
        out[:, j] = R[:, j] * c + R[:, k] * s
        out[:, k] = R[:, k] * c - R[:, j] * s
        return out
    rm = np.moveaxis(rotation_matrices(axis, a), 0, -1)
    return np.einsum("ijf,jkf->ikf", R, rm)


def forward_kinematics(skeleton, q, root_pos_m=None, root_rot=None):
    """Poses of all links and features for joint values q ((ndof,) or (F, ndof), dof units).

    root_pos_m (F, 3) and root_rot (F, 3, 3), if given, place the root link in the world
    (for a fixed-base skeleton such as the human model): p_root = root_pos + offset.
    """
    q = np.asarray(q, float)
    single = q.ndim == 1
    q2 = q[None, :] if single else q
    if q2.ndim != 2 or q2.shape[1] != skeleton.ndof:
        raise ValueError("forward_kinematics: %d values per frame for a skeleton of %d dofs"
                         % (q2.shape[-1], skeleton.ndof))
    F = q2.shape[0]
    qs = np.ascontiguousarray((q2 * skeleton.scales[None, :]).T)     # (ndof, F) radians / metres
    L = skeleton.nlinks
    pos = np.empty((L, 3, F))
    rot = np.empty((L, 3, 3, F))
    dax = np.empty((skeleton.ndof, 3, F))
    dorg = np.empty((skeleton.ndof, 3, F))
    for i, ln in enumerate(skeleton.links):
        if ln.parent < 0:
            if root_rot is None:
                R = np.zeros((3, 3, F))
                R[0, 0] = R[1, 1] = R[2, 2] = 1.0
            else:
                R = np.moveaxis(np.array(np.broadcast_to(root_rot, (F, 3, 3)), float), 0, -1).copy()
            p = np.repeat(ln.offset[:, None], F, axis=1)
            if root_pos_m is not None:
                p = p + np.broadcast_to(root_pos_m, (F, 3)).T
        else:
            Rp = rot[ln.parent]
            R = Rp
            # p = p_parent + R_parent @ offset
            o = ln.offset
            p = pos[ln.parent] + Rp[:, 0] * o[0] + Rp[:, 1] * o[1] + Rp[:, 2] * o[2]
        for j in ln.dofs:
            d = skeleton.dofs[j]
            a = d.axis
            # world axis = R @ axis
            dax[j] = R[:, 0] * a[0] + R[:, 1] * a[1] + R[:, 2] * a[2]
            dorg[j] = p
            if d.kind == "rotation":
                R = _rotate(R, a, qs[j])
            else:
                # p = p + (R @ axis) * value
                p = p + dax[j] * qs[j]
        pos[i] = p
        rot[i] = R
    return Pose(skeleton, pos, rot, dax, dorg, single)


def feature_positions(skeleton, q, names=None):
    """World positions (F, K, 3) of the named feature points (all when names is None)."""
    pose = forward_kinematics(skeleton, q)
    if names is None:
        return pose.feature_pos_m
    idx = [skeleton.feature_names.index(n) for n in names]
    return pose.feature_pos_m[..., idx, :]
