"""Observation models h(x) and H = dh/dx for IMUs, 3D markers and 2D markers in one camera.

    from device.estimate.measurement import MeasurementModel
    mm = MeasurementModel(model)                          # model: device.body.dynamics.RigidBodyModel
    z, h, H, r = mm.linearise(lin, obs, nx)               # lin: process.Linearisation at the prior

Only observations present in `obs` make rows (missing ones simply drop out). Rows, in order:
3D markers (x, y, z per marker), 2D markers (u, v), IMUs (gyro xyz, accel xyz), fused
orientations (rotation-vector error in the world, when obs.orient has them). r: variances.

For a feature on link l (world position p, sensor rotation Rs = R_link R_feature):
  marker3d  h = p,              H_q = J(p)  (columns a_j x (p - o_j) or a_j, from FK dof axes)
  marker2d  h = project(p),     H_q = dproject/dp J(p)
  gyro      h = Rs' w,          H_qd = Rs' Jw,  H_q[:, i] = -Rs' (a_i x w_i)   (exact)
  accel     h = Rs' (pdd - g),  pdd = J qdd + Jdot qd,
            H = Rs' [-(a_i x (pdd - g)) + d(J qdd)/dq_i ,  Jdot + d(J qd)/dq ,  0] + Rs' J dqdd/dx
  (exact except d(Jdot qd)/dq, second order in qd, which is dropped; dqdd/dx from the process
  model). w_i is the angular velocity of dof i's frame.
"""

import numpy as np

from device.body.dynamics import _cross
from device.body.ik import _rotvec


class MeasurementModel:
    """Stacks observation rows for a skeleton's features (noise standard deviations in SI)."""

    def __init__(self, model, gyro_sigma_rad_s=0.02, accel_sigma_m_s2=0.3, marker_sigma_m=0.005,
                 pixel_sigma_px=2.0, orient_sigma_rad=0.02):
        self.model = model
        sk = model.skeleton
        self.index = {f.name: k for k, f in enumerate(sk.features)}
        self.f_link = np.array([f.link for f in sk.features], int)
        self.f_pos = np.array([f.position for f in sk.features]).reshape(-1, 3)
        self.f_rot = np.array([f.rotation() for f in sk.features]).reshape(-1, 3, 3)
        self.gyro_sigma = float(gyro_sigma_rad_s)
        self.accel_sigma = float(accel_sigma_m_s2)
        self.marker_sigma = float(marker_sigma_m)
        self.pixel_sigma = float(pixel_sigma_px)
        self.orient_sigma = float(orient_sigma_rad)

    def _indices(self, table, what):
        names, vals = [], []
        for name, v in table.items():
            if v is None:
                continue
            if name not in self.index:
                raise ValueError("%s: no feature named %r in skeleton %r"
                                 % (what, name, self.model.skeleton.name))
            v = np.asarray(v, float).ravel()
            if not np.all(np.isfinite(v)):
                continue                      # NaN or inf: treated as missing
            names.append(self.index[name])
            vals.append(v)
        return np.array(names, int), vals

    def features(self, kin, idx):
        """World positions (K, 3), sensor rotations (K, 3, 3) and dof bodies (K,) of features."""
        RL, pL = self.model.link_frames(kin)
        lk = self.f_link[idx]
        R = RL[lk]
        p = pL[lk] + np.einsum("kij,kj->ki", R, self.f_pos[idx])
        return p, R @ self.f_rot[idx], self.model.link_body[lk]

    def _mask(self, bodies):
        m = self.model
        return np.where((bodies >= 0)[:, None], m.ancf.T[np.maximum(bodies, 0)], 0.0)   # (K, n)

    def linearise(self, lin, obs, nx):
        """(z, h, H, r) for the observations present in obs, at the state of lin."""
        m = self.model
        n = m.n
        kin = lin.kin
        zs, hs, Hs, rs = [], [], [], []
        idx, vals = self._indices(obs.markers3d, "markers3d")
        if len(idx):
            p, _, b = self.features(kin, idx)
            J = m.point_jacobian(kin, self.f_link[idx], p)
            H = np.zeros((len(idx), 3, nx))
            H[:, :, :n] = J
            zs.append(np.concatenate(vals))
            hs.append(p.ravel())
            Hs.append(H.reshape(-1, nx))
            rs.append(np.full(3 * len(idx), self.marker_sigma ** 2))
        idx, vals = self._indices(obs.markers2d, "markers2d")
        if len(idx) and obs.camera is not None:
            cam = obs.camera
            p, _, b = self.features(kin, idx)
            uv = cam.project(p)
            ok = np.all(np.isfinite(uv), axis=1)
            if ok.any():
                idx, p, uv = idx[ok], p[ok], uv[ok]
                J = m.point_jacobian(kin, self.f_link[idx], p)
                H = np.zeros((len(idx), 2, nx))
                H[:, :, :n] = cam.project_jacobian(p) @ J
                zs.append(np.concatenate([v for v, o in zip(vals, ok) if o]))
                hs.append(uv.ravel())
                Hs.append(H.reshape(-1, nx))
                rs.append(np.full(2 * len(idx), self.pixel_sigma ** 2))
        idx, vals = self._indices(obs.imu, "imu")
        if len(idx):
            z, h, H = self._imu(lin, idx, nx)
            zs.append(np.concatenate(vals))
            hs.append(h)
            Hs.append(H)
            rs.append(np.tile(np.r_[np.full(3, self.gyro_sigma ** 2), np.full(3, self.accel_sigma ** 2)],
                              len(idx)))
        orient = getattr(obs, "orient", None)
        idx, vals = self._indices(orient, "orient") if orient else (np.zeros(0, int), [])
        if len(idx):
            # fused orientation (BNO055): y = log(R_meas R_s') (world frame), H_q = Jw (the
            # world axes of the rotation dofs above the sensor; exact for a left perturbation)
            _, Rs, b = self.features(kin, idx)
            Rm = np.array(vals).reshape(-1, 3, 3)
            e = _rotvec(Rm @ Rs.transpose(0, 2, 1))
            rmask = self._mask(b) * m.is_rot[None, :]
            H = np.zeros((len(idx), 3, nx))
            H[:, :, :n] = kin.axis.T[None] * rmask[:, None, :]
            zs.append(e.ravel())
            hs.append(np.zeros(3 * len(idx)))
            Hs.append(H.reshape(-1, nx))
            rs.append(np.full(3 * len(idx), self.orient_sigma ** 2))
        if not zs:
            return np.zeros(0), np.zeros(0), np.zeros((0, nx)), np.zeros(0)
        return np.concatenate(zs), np.concatenate(hs), np.vstack(Hs), np.concatenate(rs)

    def imu_predict(self, kin, qd, qdd, idx):
        """Ideal (gyro (K, 3), specific force (K, 3)) of the features idx, sensor frames."""
        V, A = self.model.accelerations(kin, qd, qdd)
        p, Rs, b = self.features(kin, idx)
        w, pdd = self._point_motion(V, A, p, b)
        g = self.model.gravity
        return np.einsum("kji,kj->ki", Rs, w), np.einsum("kji,kj->ki", Rs, pdd - g)

    @staticmethod
    def _point_motion(V, A, p, b):
        Z = np.zeros((1, 6))
        Vb = np.concatenate([V, Z])[b]          # b = -1 picks the zero row (world-fixed)
        Ab = np.concatenate([A, Z])[b]
        w = Vb[:, :3]
        # v_p = v_O + w x p ;  pdd = a_O + alpha x p + w x v_p
        vp = Vb[:, 3:] + _cross(w, p)
        pdd = Ab[:, 3:] + _cross(Ab[:, :3], p) + _cross(w, vp)
        return w, pdd

    @staticmethod
    def _skew(u):
        """(..., 3) -> (..., 3, 3) with skew(u) v = u x v."""
        S = np.zeros(u.shape[:-1] + (3, 3))
        S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -u[..., 2], u[..., 1], -u[..., 0]
        S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = u[..., 2], -u[..., 1], u[..., 0]
        return S

    def _djx_dq(self, kin, Vx, p, b):
        """d(J(q) x)/dq (..., K, 3, n) for a fixed generalised vector x with velocities Vx
        (..., n, 6) = S-sums (leading axes: several vectors at once); p (K, 3), b (K,).

        rotation k: w_k x (a_k x (p - o_k)) + a_k x (v_p - (v_k + w_k x p)), which by
        a x (b x c) = b (a.c) - c (a.b) is  a_k (w_k.p) - w_k (a_k.p) + a_k x v_p - c_k,
        c_k = w_k x (a_k x o_k) + a_k x v_k (the p (w_k.a_k) terms cancel); translation: w_k x a_k
        """
        m = self.model
        a, o = kin.axis, kin.origin_m
        Z = np.zeros(Vx.shape[:-2] + (1, 6))
        Vb = np.concatenate([Vx, Z], axis=-2)[..., b, :]              # (..., K, 6)
        vp = Vb[..., 3:] + _cross(Vb[..., :3], p)                     # (..., K, 3)
        w, v = Vx[..., :3], Vx[..., 3:]                               # (..., n, 3)
        wT = np.swapaxes(w, -1, -2)                                   # (..., 3, n)
        aT = a.T
        # a_k (w_k . p) - w_k (a_k . p)
        rot = aT * (p @ wT)[..., :, None, :] - wT[..., None, :, :] * (p @ aT)[..., :, None, :]
        # + a_k x v_p = -(v_p x a_k)
        rot -= self._skew(vp) @ aT
        c = _cross(w, _cross(a, o)) + _cross(a, v)                    # (..., n, 3)
        rot -= np.swapaxes(c, -1, -2)[..., None, :, :]
        tr = np.swapaxes(_cross(w, a), -1, -2)[..., None, :, :]
        return np.where(m.is_rot, rot, tr)

    def _jdot(self, kin, V, p, b):
        """Jdot (K, 3, n): column j = (w_par x a_j) x (p - o_j) + a_j x (v_p - v(o_j)) (rotation),
        w_par x a_j (translation); w_par, v(o_j): motion of the frame dof j's axis is fixed in.
        Rotation, expanded: -(p x adot_j) - (v_p x a_j) - (adot_j x o_j + a_j x v(o_j))."""
        m = self.model
        a, o = kin.axis, kin.origin_m
        Z = np.zeros((1, 6))
        Vp = np.concatenate([V, Z])[m._par]
        wpar = Vp[:, :3]
        vo = Vp[:, 3:] + _cross(wpar, o)
        Vb = np.concatenate([V, Z])[b]
        vp = Vb[:, 3:] + _cross(Vb[:, :3], p)
        adot = _cross(wpar, a)                                        # (n, 3)
        c = (_cross(adot, o) + _cross(a, vo)).T                       # (3, n)
        rot = -(self._skew(p) @ adot.T) - self._skew(vp) @ a.T - c
        return np.where(m.is_rot, rot, adot.T)

    def _imu(self, lin, idx, nx):
        m = self.model
        n = m.n
        kin, qd, qdd = lin.kin, lin.qd, lin.qdd
        V, A = m.accelerations(kin, qd, qdd)
        p, Rs, b = self.features(kin, idx)
        w, pdd = self._point_motion(V, A, p, b)
        f = pdd - m.gravity
        K = len(idx)
        mask = self._mask(b)                                          # (K, n)
        rmask = mask * m.is_rot[None, :]
        a = kin.axis
        RsT = Rs.transpose(0, 2, 1)
        # world-frame blocks, columns [gyro H_q | gyro H_qd | accel H_q | accel H_qd | J],
        # rotated into the sensor frames by one batched product with Rs'
        X = np.empty((K, 3, 5 * n))
        # gyro: h = Rs' w ; H_qd = Rs' Jw ; H_q[:, i] = -Rs' (a_i x w_i)
        X[:, :, n:2 * n] = a.T[None] * rmask[:, None, :]              # Jw (K, 3, n)
        X[:, :, :n] = -_cross(a, V[:, :3]).T[None] * rmask[:, None, :]
        # accel: h = Rs' (pdd - g); H_q = -(a_i x f) + d(J qdd)/dq, H_qd = Jdot + d(J qd)/dq
        X[:, :, 4 * n:] = m.point_jacobian(kin, self.f_link[idx], p)  # Jv (K, 3, n)
        rotf = -(self._skew(f) @ a.T) * rmask[:, None, :]             # a_i x f = -(f x a_i)
        Vqdd = m.velocities(kin, qdd)
        # d(J qdd)/dq and d(J qd)/dq in one pass (two fixed vectors stacked on a leading axis)
        djx = self._djx_dq(kin, np.stack([Vqdd, V]), p, b)                  # (2, K, 3, n)
        X[:, :, 2 * n:3 * n] = -rotf + djx[0] * mask[:, None, :]
        X[:, :, 3 * n:4 * n] = (self._jdot(kin, V, p, b) + djx[1]) * mask[:, None, :]
        Y = RsT @ X
        H = np.zeros((K, 6, nx))
        H[:, :3, :2 * n] = Y[:, :, :2 * n]
        H[:, 3:, :2 * n] = Y[:, :, 2 * n:4 * n]
        # + Rs' J dqdd/dx  (process model: torque -> [Dq, Dqd, M^-1] or [0, 0, M^-1] (h_tau_only),
        # CA -> [0, 0, I], CV -> 0); only the column blocks of dqdd/dx that are not zero
        D = lin.dqdd_dx
        if D is not None:
            RJ = Y[:, :, 4 * n:]
            for s in range(nx // n):
                blk = D[:, s * n:(s + 1) * n]
                if blk.any():
                    H[:, 3:, s * n:(s + 1) * n] += RJ @ blk
        h = np.concatenate([np.einsum("kji,kj->ki", Rs, w), np.einsum("kji,kj->ki", Rs, f)], axis=1)
        return None, h.ravel(), H.reshape(-1, nx)
