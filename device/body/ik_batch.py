"""Orientation-only IK for several seeds side by side: one numpy pass a step for all of them.

    from device.body.ik_batch import OrientationIKBatch
    ik = OrientationIKBatch(sk, ["l_thigh_imu", "pelvis_imu"], seeds_dof, prior_weight=0.02)
    Q = ik.model.to_si(seeds_dof)                 # (B, n) SI
    ik.set_orientations(Rt)                       # (K, 3, 3) world rotations, in names' order
    Q, step_rad, e_deg = ik.iterate(Q)            # one damped least squares step for every seed
    e_deg = ik.residual_deg(Q)                    # (B, K) angle of each target's residual

The same step as device.body.ik.IKProblem with orientation targets only (B of them would cost B
times the Python overhead of one; a real-time caller has a fraction of a frame for them):
  e_k = log(R_target_k R_k')                   rotation vector residual of target k (rad)
  J_k = [a_j for the rotation dofs above k]    (3, n), world axes
  dq = (J' W J + (lambda^2 + w_p^2) I)^-1 (J' W e + w_p^2 (q_prior - q))
  q = clip(q + dq, lo, hi)
with W = orientation_weight^2 and w_p the prior weight, per seed.
"""

import copy

import numpy as np

from device.body import ik_batch_numba
from device.body.dynamics import model_of
from device.body.ik import _rotvec, _Targets


class OrientationIKBatch:
    def __init__(self, skeleton, names, q_prior_dof, orientation_weight=1.0, prior_weight=0.02,
                 damping=1e-2, clamp=True):
        self.model = model = model_of(skeleton)
        self.names = list(names)
        t = _Targets(skeleton, self.names)
        n = model.n
        b = model.link_body[t.link]
        self._body = np.where(b < 0, n, b)          # row n: the world (a world-fixed link)
        self._frot = t.frot
        self._mask = model.angular_jacobian(t.link)  # (K, n): rotation dofs above each target
        self.w = float(orientation_weight)
        self.qp = model.to_si(np.atleast_2d(np.asarray(q_prior_dof, float)))
        self.pw2 = float(prior_weight) ** 2
        self.lam2 = float(damping) ** 2
        self.lo, self.hi = model.to_si(skeleton.lo), model.to_si(skeleton.hi)
        self.clamp = clamp
        self.Rt = None

    def with_prior(self, q_prior_dof):
        """The same targets with another prior (the seeds): a copy that shares the targets'
        arrays (building them is most of a new OrientationIKBatch's cost)."""
        other = copy.copy(self)
        other.qp = self.model.to_si(np.atleast_2d(np.asarray(q_prior_dof, float)))
        other.Rt = None
        return other

    def set_orientations(self, Rt):
        """The targets' world rotations (K, 3, 3), in the order of names."""
        Rt = np.asarray(Rt, float).reshape(len(self.names), 3, 3)
        if not np.isfinite(Rt.sum()):
            raise ValueError("OrientationIKBatch: non-finite target rotation")
        self.Rt = Rt

    def _features(self, Q):
        R, axis = self.model.rotations(Q)
        B = len(Q)
        Rw = np.concatenate([R, np.broadcast_to(np.eye(3), (B, 1, 3, 3))], axis=1)
        return Rw[:, self._body] @ self._frot, axis          # (B, K, 3, 3), (B, n, 3)

    def _residual(self, Rf):
        # e = log(R_target R') per seed and target: (B, K, 3)
        B, K = Rf.shape[:2]
        return _rotvec((self.Rt[None] @ Rf.transpose(0, 1, 3, 2)).reshape(B * K, 3, 3)).reshape(B, K, 3)

    def residual_deg(self, Q_si):
        """(B, K) angle between each target rotation and the pose's (deg)."""
        if ik_batch_numba.available():
            return ik_batch_numba.iterate_batch(self, Q_si, solve=False)[2]
        Rf, _ = self._features(np.asarray(Q_si, float))
        return np.degrees(np.linalg.norm(self._residual(Rf), axis=2))

    def iterate(self, Q_si):
        """One step for every seed: (Q_new (B, n), max |Q_new - Q| per seed, e_deg (B, K) at Q)."""
        if ik_batch_numba.available():
            # the same step compiled (device/body/ik_batch_numba.py)
            return ik_batch_numba.iterate_batch(self, Q_si)
        Q = np.asarray(Q_si, float)
        B, n = Q.shape
        Rf, axis = self._features(Q)
        e = self._residual(Rf)
        # J (B, K, 3, n): column j of target k is the world axis a_j of a rotation dof above k
        J = axis.transpose(0, 2, 1)[:, None] * self._mask[None, :, None, :]
        J = J.reshape(B, -1, n)
        r = e.reshape(B, -1)
        w2 = self.w ** 2
        # A = w^2 J'J + (lambda^2 + w_p^2) I ; b = w^2 J'e + w_p^2 (q_prior - q)
        A = w2 * (J.transpose(0, 2, 1) @ J)
        A[:, np.arange(n), np.arange(n)] += self.lam2 + self.pw2
        b = w2 * np.einsum("bkn,bk->bn", J, r) + self.pw2 * (self.qp - Q)
        dq = np.linalg.solve(A, b[:, :, None])[:, :, 0]
        Q_new = np.clip(Q + dq, self.lo, self.hi) if self.clamp else Q + dq
        return Q_new, np.abs(Q_new - Q).max(axis=1), np.degrees(np.linalg.norm(e, axis=2))
