"""Observation models h(x) and H = dh/dx for IMUs, 3D markers and 2D markers in one camera.

    from device.estimate.measurement import MeasurementModel
    mm = MeasurementModel(model)                          # model: device.body.dynamics.RigidBodyModel
    z, h, H, r = mm.linearise(lin, obs, nx)               # lin: process.Linearisation at the prior

Only observations present in `obs` make rows (missing ones simply drop out). Rows, in order:
3D markers (x, y, z per marker), 2D markers (u, v), IMUs (gyro xyz, accel xyz), fused
orientations (rotation-vector error in the world, when obs.orient has them). r: variances.

For a feature on link l (world position p, sensor rotation Rs = R_link R_feature):
  marker3d  h = p,              H_q = J(p)  (columns a_j x (p - o_j) or a_j, from FK dof axes)
  marker2d  h = project(p),     H_q = dproject/dp J(p); seen age s before t (obs.markers2d_lag_s):
            h = project(p) - age J_uv qd,  H_qd = -age J_uv  (first order in age)
  gyro      h = Rs' w,          H_qd = Rs' Jw,  H_q[:, i] = -Rs' (a_i x w_i)   (exact)
  accel     h = Rs' (pdd - g),  pdd = J qdd + Jdot qd,
            H = Rs' [-(a_i x (pdd - g)) + d(J qdd)/dq_i ,  Jdot + d(J qd)/dq ,  0] + Rs' J dqdd/dx
  (exact except d(Jdot qd)/dq, second order in qd, which is dropped; dqdd/dx from the process
  model). w_i is the angular velocity of dof i's frame.
"""

import numpy as np

from device.body.dynamics import _cross
from device.body.ik import _rotvec
from device.body import dynamics_numba
from device.estimate import camera_numba, imu_numba, orient_numba


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
        n = model.n
        self._tr3 = np.nonzero(~np.tile(model.is_rot, 3))[0]             # translation columns, x3
        # ancestor mask rows (dofs above each dof body; world row n: none), tiled 3 times
        self._anc3 = np.tile(np.vstack([model.ancf.T, np.zeros((1, n))]), 3)
        self.f_body = model.link_body[self.f_link]                        # dof frame (-1: world)
        self.f_off = model.link_off_m[self.f_link] + self.f_pos           # in that frame
        self.f_body_w = np.where(self.f_body < 0, model.n, self.f_body)    # world: row n
        self.f_frame = np.zeros((len(self.f_link), 4, 4))                 # [f_rot f_off; 0 1]
        self.f_frame[:, :3, :3] = self.f_rot
        self.f_frame[:, :3, 3] = self.f_off
        self.f_frame[:, 3, 3] = 1.0
        self.gyro_sigma = float(gyro_sigma_rad_s)
        self.accel_sigma = float(accel_sigma_m_s2)
        self.marker_sigma = float(marker_sigma_m)
        self.pixel_sigma = float(pixel_sigma_px)
        self.orient_sigma = float(orient_sigma_rad)
        self._imu_cache = {}
        self._idx_cache = {}             # _indices(): feature names -> indices

    def _indices(self, table, what):
        if not table:
            return np.zeros(0, int), []
        # fast path: the same names as a previous frame, none missing, all finite
        keys = tuple(table)
        hit = self._idx_cache.get(keys)
        if hit is not None:
            vals = list(table.values())
            if not any(v is None for v in vals):
                try:
                    arr = np.array(vals, float).reshape(len(vals), -1)
                except ValueError:
                    arr = None
                # (the sum is finite only if every element is)
                if arr is not None and np.isfinite(arr.sum()):
                    return hit, arr
        index = self.index
        names, vals = [], []
        for name, v in table.items():
            if v is not None:
                k = index.get(name)
                if k is None:
                    raise ValueError("%s: no feature named %r in skeleton %r"
                                     % (what, name, self.model.skeleton.name))
                names.append(k)
                vals.append(v)
        try:
            # all readings of one kind have one size: one array, one finiteness test
            arr = np.array(vals, float).reshape(len(vals), -1)
        except ValueError:
            arr = None
        if arr is not None:
            ok = np.isfinite(arr).all(axis=1)                 # NaN or inf: treated as missing
            idx = np.array(names, int)
            if len(names) == len(table):                      # every name known, none None
                if len(self._idx_cache) > 64:
                    self._idx_cache.clear()
                idx.flags.writeable = False
                self._idx_cache[tuple(table)] = idx
            return (idx, arr) if ok.all() else (idx[ok], arr[ok])
        out_n, out_v = [], []
        for k, v in zip(names, vals):
            v = np.asarray(v, float).ravel()
            if not np.all(np.isfinite(v)):
                continue                      # NaN or inf: treated as missing
            out_n.append(k)
            out_v.append(v)
        return np.array(out_n, int), out_v

    def features(self, kin, idx):
        """World positions (K, 3), sensor rotations (K, 3, 3) and dof bodies (K,) of features."""
        # the feature sits at link_off + f_pos in the frame of its link's dof body (world: -1)
        b = self.f_body[idx]
        if kin.T is not None:
            # [Rs | p] = [R_b | p_b] [f_rot f_off; 0 1]: one batched product (world: row n of T)
            F = kin.T[self.f_body_w[idx]] @ self.f_frame[idx]
            return F[:, :, 3], F[:, :, :3], b
        if b.size and b.min() < 0:
            m = self.model
            R = np.concatenate([kin.R, np.eye(3)[None]])[np.where(b < 0, m.n, b)]
            pb = np.concatenate([kin.p_m, np.zeros((1, 3))])[np.where(b < 0, m.n, b)]
        else:
            R, pb = kin.R[b], kin.p_m[b]
        p = pb + (R @ self.f_off[idx][:, :, None])[:, :, 0]
        return p, R @ self.f_rot[idx], b

    def _ages(self, obs, idx):
        """(K,) ages (s) of the 2D markers idx (obs.markers2d_lag_s), or None if all are 0."""
        lag = getattr(obs, "markers2d_lag_s", None)
        if not lag:
            return None
        names = self.__dict__.setdefault("_names", {v: k for k, v in self.index.items()})
        age = np.array([lag.get(names[i], 0.0) for i in idx.tolist()], float)
        return age if np.any(age > 0) else None

    def _mask(self, bodies):
        m = self.model
        return np.where((bodies >= 0)[:, None], m.ancf.T[np.maximum(bodies, 0)], 0.0)   # (K, n)

    def linearise(self, lin, obs, nx):
        """(z, h, H, r) for the observations present in obs, at the state of lin."""
        m = self.model
        n = m.n
        kin = lin.kin
        zs, hs, Hs, rs = [], [], [], []
        # (rows, non-zero columns) of each block: n for the blocks whose H has q columns only
        self.row_blocks = blocks = []
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
            blocks.append((3 * len(idx), n))
        idx, vals = self._indices(obs.markers2d, "markers2d")
        if len(idx) and obs.camera is not None:
            cam = obs.camera
            age = self._ages(obs, idx) if nx >= 2 * n else None
            kin_m = kin
            if age is not None:
                # a camera frame's markers were seen age s ago (its timestamp, each row its own):
                # the body then, to second order, q(t - a) = q - a qd + a^2 / 2 qdd at the
                # frame's mean age a (the velocity and centripetal terms of a limb swinging
                # through 70 ms are not small), each marker on from there to first order
                a0 = float(age.mean())
                q_then = kin.q - a0 * lin.qd + 0.5 * a0 * a0 * lin.qdd
                kin_m = (dynamics_numba.kinematics(m, q_then) if dynamics_numba.available() and kin.T is not None
                         else m.kinematics(q_then))
            kin, kin_now = kin_m, kin
            if camera_numba.available() and kin.T is not None:
                # the optional compiled path: p, uv and d uv / dq in one pass (same values)
                p, uv, Juv = camera_numba.marker_rows(self, kin, cam, idx)
            else:
                p, _, b = self.features(kin, idx)
                uv = cam.project(p)
                Juv = None
            ok = np.all(np.isfinite(uv), axis=1)
            if ok.any():
                idx, p, uv = idx[ok], p[ok], uv[ok]
                H = np.zeros((len(idx), 2, nx))
                if Juv is not None:
                    H[:, :, :n] = Juv[ok]
                else:
                    J = m.point_jacobian(kin, self.f_link[idx], p)
                    H[:, :, :n] = cam.project_jacobian(p) @ J
                cols = n
                if age is not None:
                    a = age[ok]
                    Juv_q = H[:, :, :n]
                    # uv(t - a_i) ~= uv(t - a0) - (a_i - a0) J_uv qd; H_qd = -a_i J_uv
                    uv = uv - (a - a0)[:, None] * (Juv_q @ lin.qd)
                    H[:, :, n:2 * n] = -a[:, None, None] * Juv_q
                    cols = 2 * n
                zs.append(np.concatenate([v for v, o in zip(vals, ok) if o]))
                hs.append(uv.ravel())
                Hs.append(H.reshape(-1, nx))
                rs.append(np.full(2 * len(idx), self.pixel_sigma ** 2))
                blocks.append((2 * len(idx), cols))
            kin = kin_now
        idx, vals = self._indices(obs.imu, "imu")
        if len(idx):
            z, h, H = self._imu(lin, idx, nx)
            zs.append(vals.reshape(-1) if isinstance(vals, np.ndarray) else np.concatenate(vals))
            hs.append(h)
            Hs.append(H)
            # r: gyro_sigma^2 (x3), accel_sigma^2 (x3) per sensor
            rs.append(self._imu_const(idx)[4])
            blocks.append((len(h), nx))
        orient = getattr(obs, "orient", None)
        idx, vals = self._indices(orient, "orient") if orient else (np.zeros(0, int), [])
        if len(idx):
            # fused orientation (BNO055): y = log(R_meas R_s') (world frame), H_q = Jw (the
            # world axes of the rotation dofs above the sensor; exact for a left perturbation)
            Rm = np.array(vals).reshape(-1, 3, 3)
            H = np.zeros((len(idx), 3, nx))
            if orient_numba.available() and kin.T is not None:
                # the optional compiled path: the same residuals and columns in one pass
                e, H[:, :, :n] = orient_numba.orient_rows(self, kin, idx, Rm)
            else:
                _, Rs, b = self.features(kin, idx)
                e = _rotvec(Rm @ Rs.transpose(0, 2, 1))
                rmask = self._mask(b) * m.is_rot[None, :]
                H[:, :, :n] = kin.axis.T[None] * rmask[:, None, :]
            zs.append(e.ravel())
            hs.append(np.zeros(3 * len(idx)))
            Hs.append(H.reshape(-1, nx))
            rs.append(np.full(3 * len(idx), self.orient_sigma ** 2))
            blocks.append((3 * len(idx), n))
        if not zs:
            return np.zeros(0), np.zeros(0), np.zeros((0, nx)), np.zeros(0)
        if len(zs) == 1:                      # one kind of observation: nothing to stack
            return zs[0], hs[0], Hs[0], rs[0]
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

    # skew(u) flattened = [0, -u2, u1, u2, 0, -u0, -u1, u0, 0]: one gather, one product
    _SKEW_IDX = np.array([0, 2, 1, 2, 0, 0, 1, 0, 0])
    _SKEW_SIGN = np.array([0.0, -1.0, 1.0, 1.0, 0.0, -1.0, -1.0, 1.0, 0.0])

    @classmethod
    def _skew(cls, u):
        """(..., 3) -> (..., 3, 3) with skew(u) v = u x v."""
        return (u[..., cls._SKEW_IDX] * cls._SKEW_SIGN).reshape(u.shape[:-1] + (3, 3))

    def _imu_const(self, idx):
        """What the IMU rows of the features idx need that does not change with the state
        (cached per set of sensors): dof bodies, frames, ancestor masks, noise variances."""
        key = idx.tobytes()
        c = self._imu_cache.get(key)
        if c is None:
            m = self.model
            n = m.n
            bw = self.f_body_w[idx]
            mask3 = self._anc3[bw]                                    # (K, 3n): dofs above, x3
            rmask = (mask3[:, :n] * m.is_rot[None, :])[:, None, :]    # rotation dofs above
            r6 = np.r_[np.full(3, self.gyro_sigma ** 2), np.full(3, self.accel_sigma ** 2)]
            c = (bw, self.f_frame[idx], mask3[:, None, :], rmask, np.tile(r6, len(idx)))
            for a in c:
                a.flags.writeable = False              # shared by every frame with these sensors
            if len(self._imu_cache) > 64:
                self._imu_cache.clear()
            self._imu_cache[key] = c
        return c

    def _imu(self, lin, idx, nx):
        """(None, h, H) of the IMUs idx at lin: all sensors at once, one set of array operations.

        With a = the dof axes, o = points on them, and for a vector x of dof rates with spatial
        velocities Vx (x = qd: V; x = qdd: Vq), wx_par / vx(o_j) the motion of the frame dof j's
        axis is fixed in, the point Jacobian's derivative along x (the point's Hessian is
        symmetric, so d(J x)/dq = sum_k x_k dJ/dq_k = "Jdot" with qd replaced by x):
          Jdot_x[:, j] = ad_j x (p - o_j) + a_j x (vx_p - vx(o_j))   (rotation; ad_j = wx_par x a_j)
                       = -(p x ad_j) - (vx_p x a_j) - c_j,  c_j = ad_j x o_j + a_j x vx(o_j)
                       ad_j                                          (translation)
        The blocks (sensor frame: Rs' of each world-frame block below):
          gyro   H_q = -(a_i x w_i) = ad_i (rotations; w_i = w_par + a_i qd_i),  H_qd = Jw
          accel  H_q = -(a_i x f) + d(J qdd)/dq = (f x a_i) + Jdot_qdd,
                 H_qd = Jdot + d(J qd)/dq = 2 Jdot,  + Rs' J dqdd/dx
        (the accelerometer drops d(Jdot qd)/dq, second order in qd; see the module docstring).
        """
        m = self.model
        n = m.n
        kin, qd, qdd = lin.kin, lin.qd, lin.qdd
        bw, frame, mask3, rmask, _ = self._imu_const(idx)
        # velocities and velocity-product accelerations: shared with the bias (RNEA) at lin
        V, Ad = m.motion(kin, qd)
        K = len(idx)
        if imu_numba.available():
            # the optional compiled path: the same rows, per sensor over the dofs above it
            H, RJ, h = imu_numba.imu_rows(m, kin, V, Ad, qdd, bw, frame, nx)
            return None, h.reshape(-1), self._imu_dqdd(lin, H, RJ.reshape(3 * K, n), nx)
        # [Rs | p] = [R_b | p_b] [f_rot f_off; 0 1] (features(), world: row n of T)
        F = kin.T[bw] @ frame
        p, Rs = F[:, :, 3], F[:, :, :3]
        a = kin.axis
        # [V, Vq, A = Ad + Vq] with the world (at rest) as row n
        W = np.zeros((3, n + 1, 6))
        W[0, :n] = V
        W[1, :n] = m.velocities(kin, qdd)
        np.add(Ad, W[1, :n], out=W[2, :n])
        Wb = W[:, bw]                                                 # (3, K, 6) sensor bodies
        # v_p = v_O + w x p (for V and Vq) ; a_O + alpha x p (for A)
        L = Wb[..., 3:] + _cross(Wb[..., :3], p)                      # (3, K, 3)
        w = Wb[0, :, :3]
        # f = pdd - g,  pdd = a_O + alpha x p + w x v_p
        f = L[2] + _cross(w, L[0]) - m.gravity
        # parent-frame motions of every dof for V and Vq: ad_j = w_par x a_j, v(o_j)
        Wp = W[:2, m._par]                                            # (2, n, 6)
        # [ad_j, w_par x (o_j x a_j)] in one product (S_j's linear part o_j x a_j)
        aS = np.concatenate([a, kin.S[:, 3:]], axis=1).reshape(n, 2, 3)
        wx = _cross(Wp[..., None, :3], aS)                            # (2, n, 2, 3)
        ad = wx[:, :, 0]                                              # (2, n, 3)
        # c_j = ad_j x o_j + a_j x (v_par + w_par x o_j) = a_j x v_par + (o_j x a_j) x w_par
        # (Jacobi identity); o_j x a_j = S_j's linear part (rotations: the only columns c enters)
        c = _cross(a, Wp[..., 3:])
        c -= wx[:, :, 1]
        # skew(u) v = u x v for u = p, v_p, vq_p, f: two batched products give every u x column
        Sk = self._skew(np.stack([p, L[0], L[1], f]))                 # (4, K, 3, 3)
        G = np.concatenate([ad[1], ad[0], a]).T                       # (3, 3n): [adq | ad | a]
        Q = Sk[0] @ G                                                 # p x [adq | ad | a]
        Pv = Sk[1:] @ a.T                                             # (3, K, 3, n): u x a_j
        np.negative(Q, out=Q)
        # rotation columns: accel H_q = -(p x adq) - (vq_p x a) - cq + (f x a)
        Q[..., :n] += Pv[2] - Pv[1] - c[1].T
        # Jdot = -(p x ad) - (v_p x a) - c
        Q[..., n:2 * n] -= Pv[0] + c[0].T
        # J = a x (p - o) = -(p x a) + o x a  (o x a: S's linear part)
        Q[..., 2 * n:] += kin.S[:, 3:].T
        X = np.empty((K, 3, 5 * n + 2))
        # world-frame blocks, columns [gyro H_q | gyro H_qd | accel H_q | accel H_qd | J | w | f],
        # rotated into the sensor frames by one batched product with Rs'
        X[:, :, :n] = ad[0].T * rmask                                 # gyro H_q = ad (rotations)
        X[:, :, n:2 * n] = a.T * rmask                                # gyro H_qd = Jw
        # translation columns: accel H_q = adq, Jdot = ad, J = a
        if len(self._tr3):
            Q[:, :, self._tr3] = G[:, self._tr3]
        np.multiply(Q, mask3, out=X[:, :, 2 * n:5 * n])
        X[:, :, 3 * n:4 * n] *= 2.0                                   # accel H_qd = 2 Jdot
        # h = [Rs' w, Rs' f] per sensor: two more columns of the same product
        X[:, :, 5 * n] = w
        X[:, :, 5 * n + 1] = f
        Y = Rs.transpose(0, 2, 1) @ X
        H = np.empty((K, 6, nx))
        H[:, :3, :2 * n] = Y[:, :, :2 * n]
        H[:, 3:, :2 * n] = Y[:, :, 2 * n:4 * n]
        H[:, :, 2 * n:] = 0.0
        h = Y[:, :, 5 * n:].transpose(0, 2, 1)
        return None, h.reshape(-1), self._imu_dqdd(lin, H, Y[:, :, 4 * n:5 * n].reshape(3 * K, n), nx)

    @staticmethod
    def _imu_dqdd(lin, H, RJ, nx):
        """H (K, 6, nx) + the accelerometer rows' Rs' J dqdd/dx (RJ = Rs' J, (3K, n)), as (6K, nx)."""
        K = len(H)
        n = RJ.shape[1]
        # + Rs' J dqdd/dx  (process model: torque -> [Dq, Dqd, M^-1] or [0, 0, M^-1] (h_tau_only),
        # CA -> [0, 0, I], CV -> 0); only the column blocks of dqdd/dx that are not zero
        D = lin.dqdd_dx
        if D is not None:
            if getattr(lin, "tau_only", False) and lin.Minv is not None and nx == 3 * n:
                # the torque model's h_tau_only linearisation: dqdd/dx = [0, 0, M^-1]
                H[:, 3:, 2 * n:] = (RJ @ lin.Minv).reshape(K, 3, n)
            else:
                # (the torque model's h_tau_only linearisation says its q, qd blocks are zero)
                first = nx // n - 1 if getattr(lin, "tau_only", False) else 0
                for s in range(first, nx // n):
                    blk = D[:, s * n:(s + 1) * n]
                    if blk.any():
                        H[:, 3:, s * n:(s + 1) * n] += (RJ @ blk).reshape(K, 3, n)
        return H.reshape(-1, nx)
