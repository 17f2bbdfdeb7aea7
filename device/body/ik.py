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
until |dq| < tol or max_iter. q, q0 and the result are in dof units. A dof no target moves
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
    # near pi: axis from the diagonal
    big = (th > np.pi - 1e-3)
    if np.any(big):
        for k in np.nonzero(big)[0]:
            w, V = np.linalg.eigh(0.5 * (R[k] + R[k].T))
            out[k] = V[:, -1] * th[k]
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


def solve_ik(skeleton, positions=None, orientations=None, pixels=None, camera=None, q0=None,
             weights=None, damping=1e-2, max_iter=50, tol_rad=1e-7, pixel_weight=1e-3,
             orientation_weight=0.3, clamp=True, q_prior=None, prior_weight=0.0):
    """Joint values (ndof,) in dof units matching the targets; info = {iterations, rms_m, ...}.

    positions {name: (3,) m}, orientations {name: (3, 3) world rotation}, pixels {name: (u, v)}
    with camera; None or non-finite entries are skipped. weights {name: w} scale residuals.
    orientation_weight: metres per radian (a 0.3 m lever); pixel_weight: metres per pixel.
    q_prior (ndof,) dof units, prior_weight w (m/rad): extra residuals w (q_prior - q) pick,
    among poses that fit equally well, the one nearest q_prior (e.g. the previous frame).
    """
    model = model_of(skeleton)
    n = model.n
    q = model.to_si(skeleton.home if q0 is None else np.asarray(q0, float))
    lo, hi = model.to_si(skeleton.lo), model.to_si(skeleton.hi)
    weights = weights or {}

    def present(d, size):
        out = {}
        for k, v in (d or {}).items():
            if v is None:
                continue
            a = np.asarray(v, float)
            if a.size == size and np.all(np.isfinite(a)):
                out[k] = a
        return out

    P = present(positions, 3)
    O = present(orientations, 9)
    X = present(pixels, 2) if camera is not None else {}
    tp = _Targets(skeleton, list(P)) if P else None
    to = _Targets(skeleton, list(O)) if O else None
    tx = _Targets(skeleton, list(X)) if X else None
    wp = np.repeat([weights.get(k, 1.0) for k in P], 3)
    wo = np.repeat([weights.get(k, 1.0) * orientation_weight for k in O], 3)
    wx = np.repeat([weights.get(k, 1.0) * pixel_weight for k in X], 2)
    pt = np.array(list(P.values())).reshape(-1, 3)
    Rt = np.array([a.reshape(3, 3) for a in O.values()]).reshape(-1, 3, 3)
    xt = np.array(list(X.values())).reshape(-1, 2)
    it = 0
    lam2 = damping ** 2
    qp = model.to_si(skeleton.home if q_prior is None else np.asarray(q_prior, float))
    r = np.zeros(0)
    for it in range(1, max_iter + 1):
        kin = model.kinematics(q)
        rows, Js = [], []
        if tp is not None:
            p, _ = tp.pose(model, kin)
            rows.append(((pt - p) * 1.0).ravel() * wp)
            Js.append(model.point_jacobian(kin, tp.link, p).reshape(-1, n) * wp[:, None])
        if to is not None:
            _, R = to.pose(model, kin)
            # e = log(R_target R') in the world frame ; d e / d q_j = a_j (rotations)
            e = _rotvec(Rt @ R.transpose(0, 2, 1))
            rows.append(e.ravel() * wo)
            Jw = kin.axis.T[None] * model.angular_jacobian(to.link)[:, None, :]
            Js.append(Jw.reshape(-1, n) * wo[:, None])
        if tx is not None:
            p, _ = tx.pose(model, kin)
            uv = camera.project(p)
            ok = np.all(np.isfinite(uv), axis=1)
            res = np.where(ok[:, None], xt - uv, 0.0)
            J = camera.project_jacobian(p) @ model.point_jacobian(kin, tx.link, p)
            J = np.where(ok[:, None, None], J, 0.0)
            rows.append(res.ravel() * wx)
            Js.append(J.reshape(-1, n) * wx[:, None])
        if not rows:
            break
        if prior_weight > 0.0:
            # posture prior: w (q_prior - q), Jacobian w I
            rows.append(prior_weight * (qp - q))
            Js.append(prior_weight * np.eye(n))
        r = np.concatenate(rows)
        J = np.vstack(Js)
        # dq = (J' J + lambda^2 I)^-1 J' r   (weights already applied to rows)
        dq = np.linalg.solve(J.T @ J + lam2 * np.eye(n), J.T @ r)
        q = q + dq
        if clamp:
            q = np.clip(q, lo, hi)
        if np.abs(dq).max() < tol_rad:
            break
    info = {"iterations": it, "rms_residual": float(np.sqrt(np.mean(r ** 2))) if r.size else 0.0,
            "targets": len(P) + len(O) + len(X)}
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
