"""Inverse kinematics by damped least squares, within the skeleton's joint limits.

    from device.body.human import human_model
    from device.body.ik import solve_ik, ik_frames
    sk = human_model()
    q, info = solve_ik(sk, positions={"l_hand_m1": [0.3, 0.2, 1.1], "head_m1": [0, 0, 1.7]})
    q, info = solve_ik(sk, orientations={"l_thigh_imu": R_world})          # (3, 3) rotations
    q, info = solve_ik(sk, pixels={"l_hand_m1": (620.0, 300.0)}, camera=cam, q0=q_prev)
    Q = ik_frames(sk, names, targets_m)       # (F, K, 3) with NaN = missing -> (F, ndof)

Targets name feature points or links (a link's origin / frame). Each iteration (SI units):
  r = stacked residuals (position m, pixels * pixel_weight, orientation rotation vector rad)
  dq = (J' W J + lambda^2 I)^-1 J' W r        (Levenberg-Marquardt damping lambda)
  q = clip(q + dq, lo, hi)                    (projection onto the joint limits)
until the projected step |q_new - q| < tol or max_iter. q, q0 and the result are in dof units. A dof no target moves
stays at q0 (the damping term). ik_frames warm-starts every frame from the previous one.
"""

import numpy as np

from device.body.dynamics import model_of


def _rotvec(R):
    """Rotation vectors (K, 3) of rotation matrices (K, 3, 3) (log map)."""
    c = np.clip((np.trace(R, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
    th = np.arccos(c)
    v = np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], axis=1)
    s = np.sin(th)
    small = s < 1e-6
    f = np.where(small, 0.5, th / (2.0 * np.where(small, 1.0, s)))
    out = v * f[:, None]
    # near pi: axis from the symmetric part (its eigenvector of eigenvalue 1), its sign from
    # the antisymmetric part v = 2 sin(th) axis (eigh picks either sign: below pi the other
    # one is the rotation by -th, a residual the wrong way round)
    big = (th > np.pi - 1e-3)
    if np.any(big):
        for k in np.nonzero(big)[0]:
            w, V = np.linalg.eigh(0.5 * (R[k] + R[k].T))
            a = V[:, -1]
            out[k] = (-a if a @ v[k] < 0.0 else a) * th[k]
    return out


class _Targets:
    def __init__(self, skeleton, names):
        fidx = {f.name: k for k, f in enumerate(skeleton.features)}
        self.link, self.local, self.frot = [], [], []
        for nm in names:
            if nm in fidx:
                f = skeleton.features[fidx[nm]]
                self.link.append(f.link)
                self.local.append(f.position)
                self.frot.append(f.rotation())
            else:
                try:
                    li = skeleton.link_index(nm)
                except KeyError:
                    raise ValueError("IK target %r is neither a feature nor a link of %r"
                                     % (nm, skeleton.name)) from None
                self.link.append(li)
                self.local.append(np.zeros(3))
                self.frot.append(np.eye(3))
        self.link = np.array(self.link, int)
        self.local = np.array(self.local).reshape(-1, 3)
        self.frot = np.array(self.frot).reshape(-1, 3, 3)

    def pose(self, model, kin):
        RL, pL = model.link_frames(kin)
        R = RL[self.link]
        return pL[self.link] + np.einsum("kij,kj->ki", R, self.local), R @ self.frot


class IKProblem:
    """One IK problem, iterated a step at a time (a real-time caller spreads the iterations
    over frames and may move the orientation targets between them).

        prob = IKProblem(sk, orientations={"l_thigh_imu": R}, q_prior=q_seed, prior_weight=0.02)
        q_si = prob.model.to_si(q_seed)
        q_si, step_rad, r = prob.iterate(q_si)          # one damped least squares step
        prob.set_orientations({"l_thigh_imu": R_next})  # the same names, new rotations

    The arguments are solve_ik's (below); q in iterate is in SI units (rad, m).
    """

    def __init__(self, skeleton, positions=None, orientations=None, pixels=None, camera=None,
                 weights=None, damping=1e-2, pixel_weight=1e-3, orientation_weight=0.3,
                 clamp=True, q_prior=None, prior_weight=0.0):
        self.model = model = model_of(skeleton)
        n = model.n
        self.lo, self.hi = model.to_si(skeleton.lo), model.to_si(skeleton.hi)
        self.clamp = clamp
        self.camera = camera
        weights = weights or {}
        P = _present(positions, 3)
        O = _present(orientations, 9)
        X = _present(pixels, 2) if camera is not None else {}
        self.tp = _Targets(skeleton, list(P)) if P else None
        self.to = _Targets(skeleton, list(O)) if O else None
        self.tx = _Targets(skeleton, list(X)) if X else None
        self.orientation_names = list(O)
        self.wp = np.repeat([weights.get(k, 1.0) for k in P], 3)
        self.wo = np.repeat([weights.get(k, 1.0) * orientation_weight for k in O], 3)
        self.wx = np.repeat([weights.get(k, 1.0) * pixel_weight for k in X], 2)
        self.pt = np.array(list(P.values())).reshape(-1, 3)
        self.Rt = np.array([a.reshape(3, 3) for a in O.values()]).reshape(-1, 3, 3)
        self.xt = np.array(list(X.values())).reshape(-1, 2)
        self.targets = len(P) + len(O) + len(X)
        self.damp = damping ** 2 * np.eye(n)
        self.qp = model.to_si(skeleton.home if q_prior is None else np.asarray(q_prior, float))
        self.prior_weight = prior_weight
        self.prior_J = prior_weight * np.eye(n)

    def set_orientations(self, orientations):
        """New rotations for the orientation targets this problem was built with (same names)."""
        self.Rt = np.array([np.asarray(orientations[k], float).reshape(3, 3)
                            for k in self.orientation_names]).reshape(-1, 3, 3)

    def iterate(self, q):
        """One step from q (SI): (q_new, max |q_new - q| rad or m, residual vector at q)."""
        model, n = self.model, self.model.n
        kin = model.kinematics(q)
        rows, Js = [], []
        if self.tp is not None:
            p, _ = self.tp.pose(model, kin)
            rows.append((self.pt - p).ravel() * self.wp)
            Js.append(model.point_jacobian(kin, self.tp.link, p).reshape(-1, n) * self.wp[:, None])
        if self.to is not None:
            _, R = self.to.pose(model, kin)
            # e = log(R_target R') in the world frame ; d e / d q_j = a_j (rotations)
            e = _rotvec(self.Rt @ R.transpose(0, 2, 1))
            rows.append(e.ravel() * self.wo)
            Jw = kin.axis.T[None] * model.angular_jacobian(self.to.link)[:, None, :]
            Js.append(Jw.reshape(-1, n) * self.wo[:, None])
        if self.tx is not None:
            p, _ = self.tx.pose(model, kin)
            uv = self.camera.project(p)
            ok = np.all(np.isfinite(uv), axis=1)
            res = np.where(ok[:, None], self.xt - uv, 0.0)
            J = self.camera.project_jacobian(p) @ model.point_jacobian(kin, self.tx.link, p)
            J = np.where(ok[:, None, None], J, 0.0)
            rows.append(res.ravel() * self.wx)
            Js.append(J.reshape(-1, n) * self.wx[:, None])
        if not rows:
            return q, 0.0, np.zeros(0)
        if self.prior_weight > 0.0:
            # posture prior: w (q_prior - q), Jacobian w I
            rows.append(self.prior_weight * (self.qp - q))
            Js.append(self.prior_J)
        r = np.concatenate(rows)
        J = np.vstack(Js)
        # dq = (J' J + lambda^2 I)^-1 J' r   (weights already applied to rows)
        dq = np.linalg.solve(J.T @ J + self.damp, J.T @ r)
        # the step taken is the projected one: a joint held at its limit keeps a nonzero dq
        q_new = np.clip(q + dq, self.lo, self.hi) if self.clamp else q + dq
        return q_new, float(np.abs(q_new - q).max()), r


def _present(d, size):
    out = {}
    for k, v in (d or {}).items():
        if v is None:
            continue
        a = np.asarray(v, float)
        if a.size == size and np.all(np.isfinite(a)):
            out[k] = a
    return out


def solve_ik(skeleton, positions=None, orientations=None, pixels=None, camera=None, q0=None,
             weights=None, damping=1e-2, max_iter=50, tol_rad=1e-7, pixel_weight=1e-3,
             orientation_weight=0.3, clamp=True, q_prior=None, prior_weight=0.0):
    """Joint values (ndof,) in dof units matching the targets; info = {iterations, rms_residual,
    targets, converged}.

    positions {name: (3,) m}, orientations {name: (3, 3) world rotation}, pixels {name: (u, v)}
    with camera; None or non-finite entries are skipped. weights {name: w} scale residuals.
    orientation_weight: metres per radian (a 0.3 m lever); pixel_weight: metres per pixel.
    q_prior (ndof,) dof units, prior_weight w (m/rad): extra residuals w (q_prior - q) pick,
    among poses that fit equally well, the one nearest q_prior (e.g. the previous frame).
    """
    prob = IKProblem(skeleton, positions, orientations, pixels, camera, weights, damping,
                     pixel_weight, orientation_weight, clamp, q_prior, prior_weight)
    model = prob.model
    q = model.to_si(skeleton.home if q0 is None else np.asarray(q0, float))
    it, r, converged = 0, np.zeros(0), False
    for it in range(1, max_iter + 1):
        q, step, r = prob.iterate(q)
        if not r.size or step < tol_rad:
            converged = True
            break
    info = {"iterations": it, "rms_residual": float(np.sqrt(np.mean(r ** 2))) if r.size else 0.0,
            "targets": prob.targets, "converged": converged}
    return model.from_si(q), info


def ik_frames(skeleton, names, targets_m, q0=None, progress=None, **kw):
    """Frame-by-frame IK on 3D targets (F, K, 3) (NaN = missing), warm-started: (F, ndof).
    progress: called with 1 after each frame (a progress bar's update)."""
    targets_m = np.asarray(targets_m, float)
    out = np.empty((len(targets_m), skeleton.ndof))
    q = q0
    for f, tf in enumerate(targets_m):
        q, _ = solve_ik(skeleton, positions=dict(zip(names, tf)), q0=q, **kw)
        out[f] = q
        if progress is not None:
            progress(1)
    return out
