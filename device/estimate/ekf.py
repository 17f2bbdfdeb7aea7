"""The whole-body joint-space EKF: one filter class, the process model decides what it is.

    from device.estimate import make_estimator
    est = make_estimator("ekf", skeleton, dt_s=1 / 60)      # torque state [q, qd, tau], RK4
    est.initialise(q0_dof)                                  # e.g. from device.body.ik
    q_dof = est.step(obs)                                   # predict + update, (ndof,) dof units
    est.predicted_markers2d()                               # {name: (u, v, radius_px)}

Each step (filterpy's equations, full covariance, state in SI units):
  predict   x- = f(x+)  (RK4 / Euler on the dynamics, or the linear CV / CA model)
            P- = A P+ A' + Q
  update    only the observations present make rows (z, h(x-), H, R = diag(r)), then
            S = H P- H' + R = L L'  (Cholesky) ;  U = P- H' L^-T  (one triangular solve)
            x+ = x- + U L^-1 (z - h(x-))          (= x- + K y, K = P- H' S^-1 = U L^-1)
            P+ = P- - U U'                        (= P- - K S K', one BLAS syrk, exactly
                 symmetric; equal to the Joseph form for this optimal K: joseph() below, the
                 former update, agrees to 1e-9 relative on the whole-body filter, at half the
                 cost: 198 x 144 K and K S products are never formed)
            with more rows than states (nz > nx: the whole body's IMUs, 198 x 144, and markers)
            the same update in information form, O(nx^2 nz) instead of O(nx nz^2):
            Y = P-^-1 + H' R^-1 H ;  P+ = Y^-1 ;  x+ = x- + P+ H' R^-1 y
            y' S^-1 y = y' R^-1 y - (H' R^-1 y)' P+ (H' R^-1 y)   (Woodbury; the NIS)
            (Cholesky factors and inverses from LAPACK potrf/potri; equal to the covariance form
            to 1e-12 relative on the whole-body filter; 1.3 ms instead of 2.9 with the camera)
After the update the angles are clamped to the skeleton's ranges (clamp=True).

Time: step(obs) predicts over the real elapsed time since the last observation, in steps of
dt_s: a gap of n frames (frames the capture loop skipped, say) is round(gap / dt_s) predicts,
at most max_gap_steps (1 s of frames; a longer gap predicts that much and counts it in
gaps_truncated). gap_steps counts the extra predicts.
"""

import numpy as np
from scipy.linalg.blas import dsyr2k as _syr2k
from scipy.linalg.blas import dsyrk as _syrk
from scipy.linalg.blas import dtrsm as _trsm
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotri as _potri
from scipy.linalg.lapack import dpotrs as _potrs
from scipy.linalg.lapack import dtrtrs as _trtrs

from device.body import dynamics_numba
from device.body.dynamics import cholesky_lower, cholesky_solve
from device.estimate import camera_numba


def propagate(P, A, Q, tail=0):
    """P- = A P A' + Q, where A's last `tail` rows are those of the identity.

    With A = [[B], [0, I]] (B: the first k = nx - tail rows), by blocks:
      A P A' = [[B P B', (B P)[:, k:]], [((B P)[:, k:])', P[k:, k:]]]
    (2 k nx^2 + ... instead of 2 nx^3 multiply-adds: 30 n^3 instead of 54 n^3 for the torque
    state, whose tau rows are held).
    """
    nx = len(P)
    k = nx - int(tail)
    if tail <= 0 or k <= 0:
        # P- = A P A' + Q
        return A @ P @ A.T + Q
    B = A[:k]
    # BP = B P
    BP = B @ P
    out = np.empty_like(P)
    # P-[:k, :k] = B P B'
    out[:k, :k] = BP @ B.T
    # P-[:k, k:] = B P [0; I] = BP[:, k:] ; P-[k:, :k] its transpose ; P-[k:, k:] = P[k:, k:]
    out[:k, k:] = BP[:, k:]
    out[k:, :k] = BP[:, k:].T
    out[k:, k:] = P[k:, k:]
    # + Q
    out += Q
    return out


_MASKS = {}          # (n, from) -> the (n, n) mask of the triangle written


def symmetrise(P, source="lower"):
    """Copy P's `source` triangle ("lower" or "upper") onto the other one, in place (P
    C-contiguous, square); returns P."""
    n = len(P)
    mask = _MASKS.get((n, source))
    if mask is None:
        mask = _MASKS[(n, source)] = (np.triu(np.ones((n, n), bool), 1) if source == "lower"
                                      else np.tril(np.ones((n, n), bool), -1))
    # P[i, j] = P[j, i] on the other triangle
    np.copyto(P, P.T, where=mask)
    return P


def joseph(P, PHT, K, H, r, S=None, overwrite=False):
    """P+ = (I - K H) P (I - K H)' + K R K', R = diag(r), PHT = P H', S = H P H' + R
    (computed here if not given); exactly symmetric. overwrite: P (C-contiguous) may be
    overwritten with the result.

    The same products associated from the right, so no nx x nx matrix multiplies another:
      L  = (I - K H) P = P - K (P H')'                 (P symmetric)
      P+ = L (I - K H)' + K R K' = L - (L H' - K R) K'
    and L H' = P H' - K (H P H') = PHT - K (S - R), so L H' - K R = PHT - K S:
      P+ = P - K PHT' - (PHT - K S) K'
    Split evenly, U = PHT - K S / 2:  P+ = P - (K U' + U K'), a symmetric rank-2 nz update:
    one BLAS syr2k computes its lower triangle (nx^2 nz multiply-adds), mirrored onto the
    upper one (P's lower triangle is the one read: P is symmetric).
    nx^2 nz + nx nz^2 multiply-adds (nz < 2 nx; fewer than the 3 nx^2 nz of going through L),
    instead of 2 nx^3 + 2 nx^2 nz (the dense form, kept for nz >= 2 nx). Every step is exact
    algebra valid for any gain K (nothing assumes K optimal, where PHT - K S would be 0), so
    this is the Joseph form: an error dK in K still changes P+ only by dK S dK'.
    """
    nx, nz = K.shape
    if nz >= 2 * nx:
        # P+ = (I - K H) P (I - K H)' + K R K'
        IKH = np.eye(nx) - K @ H
        P = IKH @ P @ IKH.T + (K * r) @ K.T
        return 0.5 * (P + P.T)
    if S is None:
        # S = H P H' + R
        S = H @ PHT + np.diag(r)
    # U = PHT - K S / 2  (S symmetric)
    U = K @ S
    U *= -0.5
    U += PHT
    # P+ = P - (K U' + U K'): BLAS (column-major) sees the transposes of these C arrays, so
    # its upper triangle of Pc' = P is our lower one, and trans=1 gives Ka' Ua + Ua' Ka with
    # Ka = K' (nz x nx), Ua = U': K U' + U K'
    own = overwrite and P.flags.c_contiguous
    Pc = _syr2k(-1.0, np.ascontiguousarray(K).T, np.ascontiguousarray(U).T, beta=1.0,
                c=P.T if own else np.array(P.T, order="F"), trans=1, lower=0, overwrite_c=1).T
    return symmetrise(Pc)


class JointEKF:
    """EKF over a skeleton's dofs with a process model (device/estimate/process.py) and a
    measurement model (device/estimate/measurement.py).

    p0_sigma: initial standard deviations of (q rad, qd rad/s, third block) where the third
    block is tau (as an acceleration-equivalent, rad/s^2, scaled by diag M) or qdd (rad/s^2).
    """

    def __init__(self, process, measurement, p0_sigma=(0.03, 0.3, 20.0), clamp=True, camera=None):
        self.process = process
        self.meas = measurement
        self.model = process.model
        self.skeleton = self.model.skeleton
        self.n = self.model.n
        self.nx = process.nx
        self.dt_s = process.dt_s
        self.p0_sigma = p0_sigma
        self.clamp = clamp
        self.camera = camera
        self.lo_si = self.model.to_si(self.skeleton.lo)
        self.hi_si = self.model.to_si(self.skeleton.hi)
        self.x = None
        self.P = None
        self.t_s = None
        self.lin = None
        self.nis = np.nan          # normalised innovation squared of the last update
        self.nz = 0                # rows in the last update
        self.failures = 0          # updates skipped because S was not positive definite
        self.max_gap_steps = max(1, int(round(1.0 / self.dt_s)))
        self.gap_steps = 0         # predicts beyond one per step (gaps between observations)
        self.gaps_truncated = 0    # gaps longer than max_gap_steps predicts

    # -- state ------------------------------------------------------------------------------------
    def initialise(self, q0_dof, qd0_dof=None, p0_sigma=None, t_s=None):
        """Start at q0 (dof units) at rest (or moving at qd0, dof units per second).

        t_s: the time of q0; a first observation at that same time is an update only.
        """
        self.t_s = t_s
        q0 = self.model.to_si(np.asarray(q0_dof, float).reshape(self.n))
        qd0 = None if qd0_dof is None else self.model.to_si(qd0_dof)
        self.x = self.process.initial_state(q0, qd0)
        s = self.p0_sigma if p0_sigma is None else p0_sigma
        n = self.n
        var = np.empty(self.nx)
        var[:n] = s[0] ** 2
        var[n:2 * n] = s[1] ** 2
        self.P = np.diag(var[:self.nx] if self.process.nblocks == 3 else var[:2 * n])
        self.lin = self.process.linearise(self.x)
        if self.process.nblocks == 3:
            if hasattr(self.process, "torque_cov"):
                # tau: the torque covariance of an acceleration uncertainty s[2] (rad/s^2)
                self.P[2 * n:, 2 * n:] = self.process.torque_cov(self.lin.M, np.full(n, s[2] ** 2))
            else:
                self.P[2 * n:, 2 * n:] = np.eye(n) * s[2] ** 2
        return self

    @property
    def q_dof(self):
        return self.model.from_si(self.x[:self.n])

    @property
    def qd_dof(self):
        return self.model.from_si(self.x[self.n:2 * self.n])

    # -- the filter -------------------------------------------------------------------------------
    def predict(self):
        # x- = f(x+) ; P- = A P A' + Q
        x_old = self.x
        try:
            cov = getattr(self.process, "predict_cov", None)
            res = None if cov is None else cov(self.x, self.P, self.lin)
            if res is not None:
                # x- and P- = A P A' + Q by the process model's blocks (A and Q never formed)
                self.x, self.P = res
            else:
                self.x, A, Q = self.process.predict(self.x, self.lin)
                self.P = propagate(self.P, A, Q, getattr(self.process, "identity_tail", 0))
            # (a sum is non-finite when any element is: one reduction instead of a mask)
            if not (np.isfinite(self.x.sum()) and np.isfinite(self.P.sum())):
                raise np.linalg.LinAlgError("non-finite prediction")
            self.lin = self.process.linearise(self.x)
        except (np.linalg.LinAlgError, ValueError):      # singular M, or a non-finite state
            self._recover(x_old)

    def _recover(self, x_old):
        """The state left the model's domain (diverged): restart at the last angles, at rest."""
        self.failures += 1
        q = np.where(np.isfinite(x_old[:self.n]), x_old[:self.n], self.model.to_si(self.skeleton.home))
        q = np.clip(q, self.lo_si, self.hi_si)
        self.initialise(self.model.from_si(q), t_s=self.t_s)

    def update(self, obs, _own_P=False):
        # _own_P: self.P is a fresh prior nobody else holds (step() after predict()), so the
        # update may write into it
        z, h, H, r = self.meas.linearise(self.lin, obs, self.nx)
        self.nz = len(z)
        if self.nz > self.nx and self._update_information(z, h, H, r):
            pass
        elif self.nz:
            P = self.P
            # y = z - h(x)
            y = z - h
            PHT = P @ H.T
            # S = H P H' + R
            S = H @ PHT
            S.flat[::self.nz + 1] += r
            try:
                c = cholesky_lower(S)
            except np.linalg.LinAlgError:
                # P lost definiteness to round-off (or the state diverged): repair, skip this update
                w, V = np.linalg.eigh(0.5 * (P + P.T))
                self.P = (V * np.maximum(w, 1e-12)) @ V.T
                self.failures += 1
                return
            # U' = L^-1 H P (nz, nx), Fortran order: L U' = (P H')' (P symmetric)
            Ut = _trsm(1.0, c, np.asfortranarray(PHT.T), side=0, lower=1, trans_a=0, diag=0,
                       overwrite_b=1)
            # v = L^-1 y ; x = x + U v  (= K y)
            v, info = _trtrs(c, y, lower=1)
            x_new = self.x + Ut.T @ v
            if info != 0 or not np.isfinite(x_new.sum()):          # (non-finite if any element is)
                self._recover(self.x)
                return
            self.x = x_new
            # nis = y' S^-1 y = v' v
            self.nis = float(v @ v)
            # P = P - U U': BLAS (column-major) sees P as P' = P; trans=1 gives Ut' Ut = U U';
            # its upper triangle is our (C order) lower one, mirrored
            own = _own_P and P.flags.c_contiguous
            Pc = _syrk(-1.0, Ut, beta=1.0, c=P.T if own else np.array(P.T, order="F"), trans=1,
                       lower=0, overwrite_c=1).T
            self.P = symmetrise(Pc)
        if self.clamp:
            # a joint at its limit stops: q clipped, an outward velocity zeroed
            n = self.n
            q = self.x[:n]
            qc = np.minimum(np.maximum(q, self.lo_si), self.hi_si)      # (np.clip, fewer calls)
            if (qc != q).any():
                out = ((q < self.lo_si) & (self.x[n:2 * n] < 0)) | ((q > self.hi_si) & (self.x[n:2 * n] > 0))
                self.x[:n] = qc
                self.x[n:2 * n][out] = 0.0
        # self.lin (at the prior) stays: the next predict takes A from it (one dynamics
        # evaluation less per step than re-linearising at the posterior)

    def _update_information(self, z, h, H, r):
        """The update in information form (module docstring); False (nothing changed) when P or
        Y is not positive definite to working precision: the covariance form then runs."""
        # P = Lp Lp' (P symmetric: its transpose, a Fortran-order view of the same memory, is
        # handed to LAPACK as P, no copy)
        Lp, info = _potrf(self.P.T, lower=1, clean=1)
        if info != 0:
            return False
        # P^-1 (lower triangle), in Lp's place
        Pinv, info = _potri(Lp, lower=1, overwrite_c=1)
        if info != 0:
            return False
        # Y = P^-1 + H' R^-1 H = P^-1 + Hs' Hs, Hs = R^-1/2 H (lower triangle, one syrk; Hs' is a
        # Fortran-order view of the C array Hs, so trans=0 gives Hs' Hs without a copy)
        Hs = H * (1.0 / np.sqrt(r))[:, None]
        Y = self._add_HtH(Pinv, Hs)
        Ly, info = _potrf(Y, lower=1, clean=1, overwrite_a=1)
        if info != 0:
            return False
        # y = z - h ; b = H' R^-1 y ; dx = Y^-1 b = P+ H' R^-1 y
        y = z - h
        yr = y / r
        b = H.T @ yr
        dx, info = _potrs(Ly, b, lower=1)
        Pp, info2 = _potri(Ly, lower=1, overwrite_c=1)
        x_new = self.x + dx
        if info != 0 or info2 != 0 or not np.isfinite(x_new.sum()):
            return False
        self.x = x_new
        # P+ = Y^-1: LAPACK's lower triangle (Fortran order) is the upper one of its C-order
        # transpose, mirrored onto the lower in place
        self.P = symmetrise(Pp.T, source="upper")
        # nis = y' S^-1 y = y' R^-1 y - b' dx
        self.nis = float(y @ yr - b @ dx)
        return True

    def _add_HtH(self, Y, Hs):
        """Y + Hs' Hs (lower triangle; Y Fortran order, overwritten). The measurement model's
        row blocks whose H is zero outside the q columns (markers, fused orientations) add
        to Y's (q, q) block only: one syrk per block over the columns it has (the whole
        body's markers and orientations: half of the rows at a third of the width)."""
        blocks = getattr(self.meas, "row_blocks", None)
        n = getattr(self, "n", None)
        if not blocks or sum(b[0] for b in blocks) != len(Hs) or all(c != n for _, c in blocks):
            return _syrk(1.0, Hs.T, beta=1.0, c=Y, trans=0, lower=1, overwrite_c=1)
        start, narrow = 0, []
        for rows, cols in blocks:
            Hb = Hs[start:start + rows]
            start += rows
            if cols == n:
                narrow.append(Hb[:, :n])
            else:
                Y = _syrk(1.0, Hb.T, beta=1.0, c=Y, trans=0, lower=1, overwrite_c=1)
        # Y[:n, :n] += Hb[:, :n]' Hb[:, :n] for the q-only blocks (the rest of their rows is zero)
        Yqq = Y[:n, :n]
        for Hb in narrow:
            Yqq = _syrk(1.0, Hb.T, beta=1.0, c=Yqq, trans=0, lower=1, overwrite_c=1)
        Y[:n, :n] = Yqq
        return Y

    def step(self, obs):
        """Predict one dt and update with obs; returns q (ndof,) in dof units."""
        if self.x is None:
            raise RuntimeError("initialise(q0) the estimator before step()")
        if obs is not None and obs.camera is not None:
            self.camera = obs.camera
        predicted = obs is None or self.t_s is None or obs.t_s > self.t_s + 1e-6 * self.dt_s
        if predicted:
            steps = 1
            if obs is not None and self.t_s is not None:
                # n = round((t_obs - t_last) / dt): predict over the real elapsed time
                steps = max(1, int(round((obs.t_s - self.t_s) / self.dt_s)))
                if steps > self.max_gap_steps:
                    self.gaps_truncated += 1
                    steps = self.max_gap_steps
            for _ in range(steps):
                self.predict()
            self.gap_steps += steps - 1
        if obs is not None:
            self.update(obs, _own_P=predicted)
        self.t_s = obs.t_s if obs is not None else None
        return self.q_dof

    def predicted_markers2d(self, camera=None, k_sigma=3.0, kinds=("marker",), ahead_s=None):
        """Search windows for the next frame: {name: (u_px, v_px, radius_px)}.

        The marker positions ahead_s after the estimate (default one dt: the next frame;
        less for a camera frame seen before it was handed over), q + ahead_s qd, projected;
        the radius is k_sigma times the largest standard deviation of the projected position
        covariance J_uv P_qq J_uv' (plus the pixel noise), J_uv = dproject/dp J(p).
        """
        cam = camera or self.camera
        if cam is None or self.x is None:
            return {}
        n, m = self.n, self.model
        dt = self.dt_s if ahead_s is None else float(ahead_s)
        q = self.x[:n] + dt * self.x[n:2 * n]
        kin = dynamics_numba.kinematics(m, q) if dynamics_numba.available() else m.kinematics(q)
        sk = self.skeleton
        cache = self.__dict__.setdefault("_kind_idx", {})
        idx = cache.get(kinds)
        if idx is None:
            idx = cache[kinds] = np.array([k for k, f in enumerate(sk.features) if f.kind in kinds], int)
        if not len(idx):
            return {}
        if camera_numba.available() and kin.T is not None:
            # the optional compiled path: the same p, uv and J in one pass
            p, uv, J = camera_numba.marker_rows(self.meas, kin, cam, idx)
        else:
            p, _, _ = self.meas.features(kin, idx)
            uv = cam.project(p)
            J = cam.project_jacobian(p) @ m.point_jacobian(kin, self.meas.f_link[idx], p)   # (K, 2, n)
        # Sigma_uv = J P_qq J' (P_qq propagated one step: P_qq + dt^2 P_qdqd + cross terms)
        Pqq = self.P[:n, :n] + dt * (self.P[:n, n:2 * n] + self.P[n:2 * n, :n]) \
            + dt ** 2 * self.P[n:2 * n, n:2 * n]
        # (J P_qq) as one (2K, n) x (n, n) product, then its rows against J's: (K, 2, 2)
        K = len(idx)
        JP = (J.reshape(2 * K, n) @ Pqq).reshape(K, 2, n)
        if camera_numba.available():
            # the same 2 x 2 covariances, eigenvalues and radii, compiled
            rad, ok = camera_numba.radii(JP, J, uv, self.meas.pixel_sigma, k_sigma)
        else:
            cov = np.einsum("kin,kjn->kij", JP, J)
            # the largest eigenvalue of [[a, b], [b, d]]: (a + d) / 2 + sqrt(((a - d) / 2)^2 + b^2)
            a, b, d = cov[:, 0, 0], cov[:, 0, 1], cov[:, 1, 1]
            lam = 0.5 * (a + d) + np.sqrt(0.25 * (a - d) ** 2 + b * b)
            rad = k_sigma * np.sqrt(np.maximum(lam, 0.0) + self.meas.pixel_sigma ** 2)
            ok = np.isfinite(uv).all(axis=1)
        names = self.__dict__.setdefault("_feature_names", [f.name for f in sk.features])
        uvl, radl, okl = uv.tolist(), rad.tolist(), ok.tolist()
        out = {}
        for k, i in enumerate(idx.tolist()):
            if okl[k]:
                out[names[i]] = (uvl[k][0], uvl[k][1], radl[k])
        return out
