"""Joint angles from segment orientations: the capture unit's pass-through estimator.

    from device.capture.orient import OrientEstimator
    est = OrientEstimator(skeleton, dt_s=1/30, imu_links={"l_thigh_imu": 7, ...},
                          mounts={"l_thigh_imu": R_link_sensor (3, 3)})
    est.initialise(skeleton.home)
    q = est.step(obs)     # obs.imu {name: (gyro_rad_s, accel_m_s2[, mag_ut]) | None}, obs.orient {name: quat}

Each IMU gives its segment's world orientation: a BNO055 its fused quaternion, an MPU-6050 a
per-sensor Mahony filter (gyro integration with the calibrated bias, accelerometer tilt
correction; heading drifts), an MPU-9250 the same filter with the magnetometer's correction
(9-axis Mahony: heading held to the calibration heading; readings whose field magnitude or dip
differ from the reference are rejected, as in VQF, and a new field that stays consistent
through 20 s of turning becomes the reference). With R_w(link) = R_w(sensor) R_mount^T, a
link's dofs are the least-squares fit of R_w(parent)^T R_w(link) = R_1(q_1) ... R_n(q_n) (Gauss-Newton on SO(3),
batched over links, warm-started from the previous frame). A link whose sensor is stale keeps
its last angles (prediction by holding). Translation dofs are not observed here and are
returned as NaN (missing). Same interface as device.estimate's make_estimator().
"""

import numpy as np

from device.capture.rot import axis_rot, exp_so3, log_so3, quat_to_mat


HISTORY_FRAMES = 8         # poses kept for a camera frame's markers (0.27 s at 30 Hz)
CARRY_S = 0.3              # a root its markers gave this long ago is carried over frames with no camera frame


class OrientEstimator:
    def __init__(self, skeleton, dt_s, imu_links=None, mounts=None, iters=4, mahony_kp=1.0,
                 sample_dt_s=None, mahony_kp_mag=None, use_mag=True, mag_norm_th=0.1,
                 mag_dip_th_deg=10.0, mag_min_undisturbed_s=0.5, mag_new_time_s=20.0,
                 mag_new_min_gyro_dps=20.0):
        self.sk = skeleton
        self.dt_s = dt_s
        self.sample_dt_s = sample_dt_s      # FIFO sample period (gyro/accel chips), if any
        self.iters = iters
        self.kp = mahony_kp                 # rad/s per unit of the (unitless) cross-product error
        # the magnetometer's gain: the accelerometer's (Mahony et al. 2008 weight both vector
        # errors k_i alike; Madgwick's MahonyAHRS uses one twoKp for the accelerometer and the
        # magnetometer term). Not tuned on any score.
        self.kp_mag = self.kp if mahony_kp_mag is None else mahony_kp_mag
        self.use_mag = bool(use_mag)
        # magnetic disturbance rejection (Laidig & Seel 2023, VQF, defaults magNormTh = 0.1,
        # magDipTh = 10 deg): a reading whose |m| differs from the reference by more than
        # mag_norm_th of it, or whose dip differs by more than mag_dip_th_deg, is not used; after
        # a rejection the field is used again only once it has passed for mag_min_undisturbed_s
        # (VQF's magMinUndisturbedTime = 0.5 s: a magnet's field passes the two tests now and
        # then as the sensor turns, and each such reading pulls the heading far off)
        self.mag_norm_th = mag_norm_th
        self.mag_dip_th_rad = np.radians(mag_dip_th_deg)
        self.mag_min_undisturbed_s = mag_min_undisturbed_s
        # a new magnetic environment (another room, a steel frame nearby for good): a field
        # that stays consistent with itself (the same two tests against a candidate that follows
        # it) for mag_new_time_s while the sensor turns faster than mag_new_min_gyro_dps becomes
        # the reference (VQF's magNewTime = 20 s, magNewMinGyr = 20 deg/s): a field that stays
        # consistent through rotation is the world's, not a magnet carried with the sensor
        self.mag_new_time_s = mag_new_time_s
        self.mag_new_min_gyro_rad_s = np.radians(mag_new_min_gyro_dps)
        self._mag_cand = {}                    # name -> [norm_ut, dip_rad, turning s, readings]
        self.mag_adopted = {}                            # name -> new references adopted
        self._mag_ok_s = {}                              # name -> seconds undisturbed so far
        self._mag_ref = {}                               # name -> (d_ref, norm_ref_ut, dip_ref_rad)
        self.mag_used = {}                               # name -> frames whose mag was used
        self.mag_rejected = {}                           # name -> frames rejected as disturbed
        self.imu_links = dict(imu_links or {})           # feature name -> link index
        self.mounts = {k: np.asarray(v, float) for k, v in (mounts or {}).items()}
        self.gyro_bias = {}                              # name -> (3,) rad/s
        self.q = skeleton.home.copy()
        self.world = np.eye(3)                           # heading re-reference from calibration
        self.health = 1.0
        self._ahrs = {}                                  # name -> R_world_sensor
        self.up = -skeleton.gravity / np.linalg.norm(skeleton.gravity)
        rot = [j for j, d in enumerate(skeleton.dofs) if d.kind == "rotation"]
        self._trans = np.array([j for j, d in enumerate(skeleton.dofs) if d.kind != "rotation"], int)
        self._scale = skeleton.scales
        root = [i for i, ln in enumerate(skeleton.links) if ln.parent < 0][0]
        self._root_trans = np.array([j for j in skeleton.links[root].dofs
                                     if skeleton.dofs[j].kind != "rotation"], int)
        self._feat_index = {f.name: k for k, f in enumerate(skeleton.features) if f.kind == "marker"}
        # link -> its rotation dofs in order; links grouped by count for batched Gauss-Newton
        self.link_rot = {}
        for i, ln in enumerate(skeleton.links):
            js = [j for j in ln.dofs if j in set(rot)]
            if js:
                self.link_rot[i] = js
        # links whose three rotation axes are distinct, orthogonal, axis-aligned: closed form
        self._euler = {}
        for i, js in self.link_rot.items():
            if len(js) != 3:
                continue
            A = np.array([skeleton.dofs[j].axis for j in js])
            if np.allclose(np.abs(A @ A.T), np.eye(3), atol=1e-9):
                flip = np.linalg.det(A) < 0
                M = A.copy()
                if flip:
                    M[2] = -M[2]
                self._euler[i] = (M, -1.0 if flip else 1.0)
        self.sensor_of = {}
        for name, i in self.imu_links.items():
            self.sensor_of.setdefault(i, name)

    def initialise(self, q0):
        self.q = np.array(q0, float)

    MAX_GAP_S = 0.5
    _t_now = None

    def _elapsed(self, name):
        """Seconds since sensor name's last reading (dt_s the first time, at most MAX_GAP_S)."""
        t = self._t_now
        last = self.__dict__.setdefault("_t_sensor", {}).get(name)
        self._t_sensor[name] = t
        if t is None or last is None or not t > last:
            return self.dt_s
        return min(t - last, self.MAX_GAP_S)

    # -- segment orientations ---------------------------------------------------------------
    def _sensor_world(self, name, reading, orient, samples=None):
        """R_world_sensor for one sensor, or None."""
        if name in orient and orient[name] is not None:
            q = np.asarray(orient[name], float)
            if np.linalg.norm(q) < 0.5:          # a chip in a raw mode reports a zero quaternion
                return None
            return getattr(self, "world_by", {}).get(name, self.world) @ quat_to_mat(q)
        if reading is None:
            return None
        gyro, accel = np.asarray(reading[0], float), np.asarray(reading[1], float)
        R = self._ahrs.get(name)
        if R is None:
            return None
        elapsed = self._elapsed(name)
        if samples and self.sample_dt_s:
            seq, dt = samples, self.sample_dt_s
        else:
            # one reading a frame: it integrates over the real time since this sensor's last
            # (frames skipped by the loop, a stale sensor back), at most MAX_GAP_S
            seq, dt = [(gyro, accel)], elapsed
        bias = self.gyro_bias.get(name, 0.0)
        mag_ut = reading[2] if len(reading) > 2 and self.use_mag else None
        if mag_ut is not None:
            R = self._mahony_marg(name, R, seq, dt, bias, np.asarray(mag_ut, float))
            self._ahrs[name] = R
            return R
        for g, a in seq:
            w = np.asarray(g, float) - bias
            a = np.asarray(a, float)
            n = np.linalg.norm(a)
            if n > 1e-6:
                # Mahony: e = a_hat x (R^T up); w' = w + kp e
                w = w + self.kp * np.cross(a / n, R.T @ self.up)
            R = R @ exp_so3(w * dt)
        self._ahrs[name] = R
        return R

    def start_ahrs(self, name, R_world_sensor, mag_ut=None):
        """Initial orientation of a gyro/accel-only sensor (from the calibration pose); mag_ut
        (the mean field in the sensor's axes over the calibration, if it has a magnetometer)
        gives the magnetic reference, else the first reading does (at the orientation then)."""
        self._ahrs[name] = np.asarray(R_world_sensor, float)
        self._mag_ref.pop(name, None)
        self._mag_ok_s.pop(name, None)
        self._mag_cand.pop(name, None)
        if mag_ut is not None:
            self._set_mag_ref(name, self._ahrs[name] @ np.asarray(mag_ut, float))

    def _set_mag_ref(self, name, h_world_ut):
        """The reference field, in the world of the calibration: its horizontal direction (the
        calibration heading's magnetic north), magnitude and dip. None if it has no horizontal
        part (a field along the vertical says nothing about heading)."""
        up = self.up
        # h_up = h . up;  h_hor = h - h_up up
        h_up_ut = float(h_world_ut @ up)
        h_hor_ut = h_world_ut - h_up_ut * up
        norm_ut = float(np.linalg.norm(h_world_ut))
        hor_ut = float(np.linalg.norm(h_hor_ut))
        if norm_ut <= 0 or hor_ut < 1e-3 * norm_ut:
            self._mag_ref[name] = None
            return
        # dip = asin(h_up / |h|) (negative: the field points down, northern hemisphere)
        self._mag_ref[name] = (h_hor_ut / hor_ut, norm_ut, float(np.arcsin(h_up_ut / norm_ut)))

    def _mag_agrees(self, norm_ut, dip_rad, norm_ref_ut, dip_ref_rad):
        """VQF's two tests: |(|m| - |m_ref|)| <= th |m_ref|  and  |dip - dip_ref| <= th_dip."""
        return norm_ut > 0 and abs(norm_ut - norm_ref_ut) <= self.mag_norm_th * norm_ref_ut and \
            abs(dip_rad - dip_ref_rad) <= self.mag_dip_th_rad

    def _mag_candidate(self, name, norm_ut, dip_rad, rate_rad_s, dt_s):
        """Follow a disturbed field as a candidate reference; True once it has stayed consistent
        for mag_new_time_s of turning (time counts only while |w| > mag_new_min_gyro)."""
        c = self._mag_cand.get(name)
        if c is None or not self._mag_agrees(norm_ut, dip_rad, c[0], c[1]):
            self._mag_cand[name] = [norm_ut, dip_rad, 0.0, 1]
            return False
        # the candidate is the running mean of the field since it began: c <- c + (x - c) / (k + 1)
        c[3] += 1
        c[0] += (norm_ut - c[0]) / c[3]
        c[1] += (dip_rad - c[1]) / c[3]
        if rate_rad_s > self.mag_new_min_gyro_rad_s:
            c[2] += dt_s
        if c[2] >= self.mag_new_time_s:
            self._mag_cand.pop(name, None)
            return True
        return False

    def _mahony_marg(self, name, R, seq, dt, bias, mag_ut):
        """The Mahony filter over seq with the magnetometer's correction (MARG form, Madgwick's
        report, 2010, sec. 7 / Mahony, Hamel, Pflimlin 2008): per sample
            h = R m,  b = |h_hor| d_ref + (h . up) up,  e_m = m_hat x (R^T b_hat)
            w' = w - bias + kp (a_hat x R^T up) + kp_mag e_m,  R <- R exp(w' dt)
        b is Madgwick's (|h_xy|, 0, h_z) with the x axis replaced by the reference's horizontal
        direction d_ref (the calibration heading's north): the measured magnitude and dip are
        kept, only the heading is corrected towards the reference. The one mag reading of a
        frame is taken at its last FIFO sample and carried back to each earlier sample by the
        gyro: m_i = P_i m, P_i = exp(w_i dt) ... exp(w_{n-1} dt) (the sensor's rotation since)."""
        if name not in self._mag_ref:
            self._set_mag_ref(name, R @ mag_ut)
        ref = self._mag_ref[name]
        up = self.up
        w_rad_s = np.array([np.asarray(g, float) for g, _ in seq]) - bias      # (n, 3)
        n = len(seq)
        # P_i = R_i^T R_n = exp(w_i dt) P_{i+1}, P_n = I  (R_i: the orientation before step i)
        step = exp_so3(w_rad_s * dt)
        P = np.empty((n, 3, 3))
        acc = np.eye(3)
        for i in range(n - 1, -1, -1):
            acc = step[i] @ acc
            P[i] = acc
        # m_i = P_i m  (the frame's field in the sensor's axes at sample i)
        m_i_ut = P @ mag_ut
        use = ref is not None
        if use:
            d_ref, norm_ref_ut, dip_ref_rad = ref
            norm_ut = float(np.linalg.norm(mag_ut))
            # h_0 = R_0 m_0 (the frame's field in the world, at its first sample)
            h0_ut = R @ m_i_ut[0]
            # dip = asin(h . up / |h|)
            dip_rad = float(np.arcsin(np.clip(h0_ut @ up / max(norm_ut, 1e-12), -1.0, 1.0)))
            # disturbed: |(|m| - |m_ref|)| > th |m_ref|  or  |dip - dip_ref| > th_dip   (VQF)
            if not self._mag_agrees(norm_ut, dip_rad, norm_ref_ut, dip_ref_rad):
                self._mag_ok_s[name] = 0.0
                rate_rad_s = float(np.linalg.norm(w_rad_s, axis=1).mean())
                if self._mag_candidate(name, norm_ut, dip_rad, rate_rad_s, n * dt):
                    self._set_mag_ref(name, h0_ut)   # the field now, at the heading estimated now
                    self.mag_adopted[name] = self.mag_adopted.get(name, 0) + 1
                    self._mag_ok_s[name] = self.mag_min_undisturbed_s
            else:
                self._mag_cand.pop(name, None)
                self._mag_ok_s[name] = self._mag_ok_s.get(name, np.inf) + n * dt
            use = self._mag_ok_s[name] >= self.mag_min_undisturbed_s
            if use:
                self.mag_used[name] = self.mag_used.get(name, 0) + 1
            else:
                self.mag_rejected[name] = self.mag_rejected.get(name, 0) + 1
        for i, (_, a) in enumerate(seq):
            w = w_rad_s[i]
            a = np.asarray(a, float)
            na = np.linalg.norm(a)
            if na > 1e-6:
                # e_a = a_hat x (R^T up);  w' = w + kp e_a
                w = w + self.kp * np.cross(a / na, R.T @ up)
            if use:
                m = m_i_ut[i]
                # h = R m  (world);  h_up = h . up;  h_hor = h - h_up up
                h_ut = R @ m
                h_up_ut = h_ut @ up
                h_hor_ut = h_ut - h_up_ut * up
                # b = |h_hor| d_ref + h_up up   (Madgwick's (|h_xy|, 0, h_z), x -> d_ref)
                b_ut = np.linalg.norm(h_hor_ut) * d_ref + h_up_ut * up
                # e_m = m_hat x (R^T b_hat);  w' += kp_mag e_m
                w = w + self.kp_mag * np.cross(m / np.linalg.norm(m), R.T @ (b_ut / np.linalg.norm(b_ut)))
            R = R @ exp_so3(w * dt)
        return R

    def link_rotation(self, i, q):
        R = np.eye(3)
        for j in self.link_rot.get(i, ()):
            d = self.sk.dofs[j]
            R = R @ axis_rot(d.axis, q[j] * d.scale)
        return R

    def step(self, obs):
        self._t_now = getattr(obs, "t_s", None)
        imu = getattr(obs, "imu", None) or {}
        orient = getattr(obs, "orient", None) or {}
        samples = getattr(obs, "samples", None) or {}
        Rw = {}
        for name, i in self.imu_links.items():
            if self.sensor_of.get(i) != name:
                continue
            Rs = self._sensor_world(name, imu.get(name), orient, samples.get(name))
            if Rs is not None:
                Rw[i] = Rs @ self.mounts.get(name, np.eye(3)).T
        observed = [i for i in self.link_rot if i in Rw]
        self.health = len(observed) / max(1, len(self.link_rot))
        # parents' world orientations; links without a fresh sensor chain from their parent
        world = {}

        def w(i):
            if i < 0:
                return np.eye(3)
            if i not in world:
                world[i] = Rw[i] if i in Rw else w(self.sk.links[i].parent) @ self.link_rotation(i, self.q)
            return world[i]

        groups = {}
        for i in observed:
            target = w(self.sk.links[i].parent).T @ Rw[i]
            n = len(self.link_rot[i])
            key = "euler" if i in self._euler else n
            groups.setdefault(key, []).append((i, target))
        for key, items in groups.items():
            if key == "euler":
                self._euler_solve(items)
            else:
                self._solve(key, items)
        out = self.q.copy()
        root_ok = self._solve_root(obs)
        if not root_ok:
            root_ok = self._carry_root()
        if len(self._trans):
            out[self._trans] = np.nan
        if root_ok:
            out[self._root_trans] = self.q[self._root_trans]
        if self._t_now is not None:
            # the poses of the last frames: a camera frame's markers were seen up to ~0.15 s ago
            hist = self.__dict__.setdefault("_hist", [])
            hist.append((float(self._t_now), self.q.copy()))
            del hist[:-HISTORY_FRAMES]
        return out

    def _solve_root(self, obs, iters=5):
        """Root position from the camera's 2D markers, the body's pose being known from the IMUs:
        min over d of sum |project(p_i + d) - uv_i|^2 (Gauss-Newton, 3 unknowns; the root's
        translation dofs move the whole body along world axes). False if not enough markers."""
        m2 = getattr(obs, "markers2d", None) or {}
        cam = getattr(obs, "camera", None)
        if cam is None or not len(self._root_trans) or not hasattr(cam, "project"):
            return False
        names = [n for n, v in m2.items() if v is not None and n in self._feat_index]
        if len(names) < 3:
            return False
        from device.body.kinematics import forward_kinematics
        q = self.q.copy()
        fi = [self._feat_index[n] for n in names]
        uv = np.array([m2[n] for n in names], float)
        ages = getattr(obs, "markers2d_lag_s", None) or {}
        age = np.array([ages.get(n, 0.0) for n in names], float)
        past = self._pose_then(age) if np.any(age > 0) else None
        if past is None:
            P = forward_kinematics(self.sk, q).feature_pos_m[fi]
            when_s = self._t_now
        else:
            # the markers were seen age s ago (the camera frame's timestamp, each row its own):
            # each where the estimated body was then (the pose history), the root they give
            # the root then, held (carried along the fits' velocity instead, the root's depth
            # from one camera ran away: benchmarks/camera_latency.py's docstring)
            P, root_then = past
            P = P[np.arange(len(fi)), fi]
            q[self._root_trans] = root_then
            when_s = self._t_now - float(age.mean())
        axes = np.array([self.sk.dofs[j].axis * self.sk.dofs[j].scale for j in self._root_trans])
        d = np.zeros(len(self._root_trans))
        eps = 1e-4
        for _ in range(iters):
            base = P + d @ axes
            r = (cam.project(base)[0] - uv).ravel()
            J = np.empty((r.size, len(d)))
            for k in range(len(d)):
                J[:, k] = ((cam.project(base + eps * axes[k])[0] - uv).ravel() - r) / eps
            # robust to a wrong match: drop residuals beyond 3x the median after the first pass
            dd = np.linalg.lstsq(J, -r, rcond=None)[0]
            d = d + dd
            if np.abs(dd).max() < 1e-6:
                break
        res = np.abs(cam.project(P + d @ axes)[0] - uv).max()
        if not np.isfinite(d).all() or res > 20.0:
            return False
        self.q[self._root_trans] = q[self._root_trans] + d
        if when_s is not None:
            # the root as the markers put it, at the time they were seen (held over frames
            # without a camera frame)
            self._fits = [(float(when_s), q[self._root_trans] + d)]
        return True

    def _carry_root(self):
        """A frame without a new camera frame (the camera free-runs beside the loop): the root
        its last markers gave, held up to CARRY_S after they were seen."""
        fits = getattr(self, "_fits", None)
        if not fits or self._t_now is None or self._t_now - fits[-1][0] > CARRY_S:
            return False
        self.q[self._root_trans] = fits[-1][1]
        return True

    def _pose_then(self, age):
        """(feature positions (K, F, 3), root then) for markers seen age (K,) s before now,
        from the pose history (linear between its frames), or None when it does not reach."""
        from device.body.kinematics import forward_kinematics
        hist = getattr(self, "_hist", None)
        if not hist or self._t_now is None:
            return None
        ts = np.array([h[0] for h in hist])
        when = self._t_now - age
        if when.min() < ts[0] - 1e-9:
            return None
        feats = {}

        def pos(j):
            if j not in feats:
                feats[j] = forward_kinematics(self.sk, hist[j][1]).feature_pos_m
            return feats[j]
        # the history frame at or before each marker's time, and the weight of the next one
        j0 = np.clip(np.searchsorted(ts, when, side="right") - 1, 0, len(ts) - 1)
        P = np.empty((len(age), len(pos(int(j0[0]))), 3))
        roots = np.empty((len(age), len(self._root_trans)))
        for k, (j, t) in enumerate(zip(j0.tolist(), when.tolist())):
            w = 0.0
            if j + 1 < len(ts):
                w = min(1.0, max(0.0, (t - ts[j]) / max(ts[j + 1] - ts[j], 1e-9)))
            # r(t) = (1 - w) r_j + w r_j+1 between the history's frames j and j + 1
            P[k] = (1 - w) * pos(j) + (w * pos(j + 1) if w > 0 else 0.0)
            roots[k] = (1 - w) * hist[j][1][self._root_trans] + (w * hist[j + 1][1][self._root_trans] if w > 0 else 0.0)
        return P, roots.mean(axis=0)

    def _euler_solve(self, items):
        """R = R_a(x) R_b(y) R_c(z) with orthonormal a, b, c: in the basis M = [a; b; +-c],
        M R M^T = Rx(x) Ry(y) Rz(+-z), decomposed in closed form:
        y = atan2(R'02, hypot(R'00, R'01)), x = atan2(-R'12, R'22), z = atan2(-R'01, R'00)."""
        idx = np.array([self.link_rot[i] for i, _ in items])
        M = np.stack([self._euler[i][0] for i, _ in items])
        sgn = np.array([self._euler[i][1] for i, _ in items])
        T = np.stack([t for _, t in items])
        Rp = M @ T @ np.swapaxes(M, 1, 2)
        y = np.arctan2(Rp[:, 0, 2], np.hypot(Rp[:, 0, 0], Rp[:, 0, 1]))
        x = np.arctan2(-Rp[:, 1, 2], Rp[:, 2, 2])
        z = np.arctan2(-Rp[:, 0, 1], Rp[:, 0, 0]) * sgn
        a = np.stack([x, y, z], 1)
        sc = self._scale[idx]
        axes = np.stack([[self.sk.dofs[j].axis for j in row] for row in idx])
        a = self._branch(a, axes, idx, sc)
        self.q[idx] = a / sc

    def _solve(self, n, items):
        """Batched Gauss-Newton: q <- q + (J^T J + lam I)^-1 J^T log(R(q)^T R_target)."""
        G = len(items)
        idx = np.array([self.link_rot[i] for i, _ in items])          # (G, n)
        axes = np.stack([[self.sk.dofs[j].axis for j in row] for row in idx])   # (G, n, 3)
        sc = self._scale[idx]                                          # (G, n)
        T = np.stack([t for _, t in items])                            # (G, 3, 3)
        a = self.q[idx] * sc                                           # radians
        lam = 1e-9 * np.eye(n)
        for _ in range(self.iters):
            Rk = axis_rot(axes, a)                                     # (G, n, 3, 3)
            # suffix products S_k = R_{k+1} ... R_n, so the body-frame Jacobian column is S_k^T a_k
            S = [None] * n
            acc = np.broadcast_to(np.eye(3), (G, 3, 3)).copy()
            for k in range(n - 1, -1, -1):
                S[k] = acc
                acc = Rk[:, k] @ acc
            R = acc                                                     # R_1 ... R_n
            r = log_so3(np.swapaxes(R, 1, 2) @ T)                      # (G, 3)
            J = np.stack([np.einsum("gji,gj->gi", S[k], axes[:, k]) for k in range(n)], -1)  # (G, 3, n)
            JT = np.swapaxes(J, 1, 2)
            da = np.linalg.solve(JT @ J + lam, (JT @ r[..., None]))[..., 0]
            a = a + da
        a = (a + np.pi) % (2 * np.pi) - np.pi
        if n == 3:
            a = self._branch(a, axes, idx, sc)
        self.q[idx] = a / sc

    def _branch(self, a, axes, idx, sc):
        """Of the two angle triples of one rotation (distinct orthogonal axes), the one inside
        the dof limits, else the canonical one (|middle| <= 90 deg): a function of the rotation
        alone, so a recording and its truth agree (device.capture.bvhclip.canonical_euler)."""
        ortho = np.abs(np.einsum("gi,gi->g", axes[:, 0], axes[:, 1])) + \
            np.abs(np.einsum("gi,gi->g", axes[:, 1], axes[:, 2])) + \
            np.abs(np.einsum("gi,gi->g", axes[:, 0], axes[:, 2])) < 1e-9
        alt = np.stack([a[:, 0] + np.pi, np.pi - a[:, 1], a[:, 2] + np.pi], 1)
        alt = (alt + np.pi) % (2 * np.pi) - np.pi
        lo = self.sk.lo[idx] * sc
        hi = self.sk.hi[idx] * sc

        def outside(x):
            return (np.maximum(lo - x, 0) + np.maximum(x - hi, 0)).sum(1)
        oa, ob = outside(a), outside(alt)
        pick = np.where(np.abs(oa - ob) > 1e-9, ob < oa, np.abs(alt[:, 1]) < np.abs(a[:, 1]))
        pick &= ortho
        return np.where(pick[:, None], alt, a)

    def predicted_markers2d(self, ahead_s=None):
        return {}
