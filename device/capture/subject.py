"""The simulated subject: a body performing a motion, wearing IMUs, driving the sim chips.

    from device.capture.subject import Subject
    subj = Subject(skeleton, clip_or_fn, sensors=[{"name": "l_thigh_imu", "chip": "bno055",
                   "link": "l_thigh"}], seed=1)
    subj.attach(spec, sim_bus)     # puts a SimBNO055 / SimMPU6050 (behind a SimTCA9548A) on it
    subj.advance(t_s)              # the body at t (the chips' truth callables read this state)
    subj.q_true(t_s)               # the TRUE joint values (dof units) for --truth

Its sensors are the honest ones by default (HONEST below; noise={"profile": "ideal"}: IDEAL).
The body is a skeleton moved by a clip (device.capture.bvhclip.Clip: its own BVH skeleton, so
the truth is exactly the clip's rotations: its channels, each joint's triple in its canonical
form (|middle| <= 90 deg, the same rotation), linearly interpolated) or by a function t -> q. The
subject first stands still in the skeleton's home pose for calib_s seconds (the calibration
pose), then blends into the motion over blend_s. Each IMU is mounted on its link with a seeded
random misalignment (mount_error_deg) that calibration must find, and has gyro bias, bias drift
(random walk), white noise on every channel, fused-orientation noise and sample-time jitter.
Transfers fail with probability dropout (the bus fault hook) and scheduled outages power a
chip off and on again (it comes back in its reset state and boots on its bus's clock: 650 ms for
a BNO055, 100 ms for an MPU-6050). The subject's time is the world's: advance(t_s) lets every bus
it is attached to idle until t_s (SimI2C.advance_to), counted from where the bus's clock stood at
the first time step after the chips were attached (the drivers' start-up waits come before the
capture's t = 0); a bus ahead (a driver waited in a frame) keeps its clock. Everything is seeded.
"""

import numpy as np

from device.body.kinematics import forward_kinematics
from device.capture.rot import exp_so3, log_so3, mat_to_quat
from device.hal.tca9548a import SimTCA9548A
from device.sensors.bno055_sim import SimBNO055
from device.sensors.mpu6050_sim import SimMPU6050

IDEAL = {
    "gyro_noise_dps": 0.1, "gyro_bias_dps": 0.5, "gyro_bias_walk_dps_sqrt_s": 0.02,
    "accel_noise_m_s2": 0.03, "accel_bias_m_s2": 0.05, "quat_noise_deg": 0.15,
    "mag_noise_ut": 0.3, "mount_error_deg": 8.0, "jitter_s": 0.0005, "dropout": 0.001,
    # the honest sensor model's terms (zero here: the ideal sensors; see HONEST)
    "stance_error_deg": 0.0, "stm_gain": 0.0, "accel_scale": 0.0,
    "skew_s": 0.0, "fused_heading_walk_deg_sqrt_s": 0.0, "fused_offset_deg": 0.0,
    "fused_lag_s": 0.0, "thigh_sag_gain": 0.0, "thigh_sag_lead_s": 0.0,
}
# Honest sensors (issue 17): what a person wearing the unit gives, magnitudes from the real
# recording's residuals where it has them (benchmarks/realimu.py, Neura-Sparse S02: Xsens MTx
# against Vicon), from data sheets where not:
#   stance_error_deg  the calibration stance is not the model's home pose: every rotation dof
#                     off by N(0, 2.5 deg) while standing (calibration bakes it into the mounts);
#                     the real trial's offset errors after calibration are 0.5-5 deg per angle
#   stm_gain          soft-tissue motion: skin and muscle slide over the bone as the joints at
#                     both ends of the segment move; the sensor turns by C (q - q_stance) over
#                     those joints' dofs (not a floating root's), C (3 x m) entries N(0, 0.05
#                     rad/rad): about 5 deg on a shank whose knee flexes 60 deg (Cappozzo et al.
#                     1996: 2-8 deg on the thigh in gait). NOT fitted to the real trial: its knee
#                     errors left after the offset (4.8-5.5 deg RMS, Xsens and ours alike) would
#                     need 0.15 (4.0 deg in the simulation), but they include the Vicon markers'
#                     own soft tissue, and at 0.1 the simulated gyros stop looking like hinges
#                     (the functional calibration's axes 20-50 deg off), which the real gyros do
#                     (87-94 % of each segment's swing about one axis)
#   accel_scale       per-axis scale error N(0, 1 %) (BMA280 in the BNO055: sensitivity
#                     tolerance +-1 %; MPU-6050: +-3 %, data sheet PS-MPU-6000A 6.2)
#   skew_s            each sensor's samples are taken up to 5 ms apart (the I2C reads of one
#                     frame are sequential; a BNO055's 100 Hz fusion output is not synchronised
#                     to the bus read: uniform 0..skew_s)
#   fused_*           BNO055 fusion: a constant offset N(0, 2 deg) per axis, heading random walk
#                     0.3 deg/sqrt(s) (data sheet BST-BNO055-DS000: heading accuracy +-2.5 deg;
#                     on the real trial each Xsens segment's heading against Vicon moved by -1.2
#                     to +5.0 deg between the first and last 2 s of the 9.5 s walk, median 0.4;
#                     0.3 deg/sqrt(s) gives 0.9 deg sd over 9.5 s), and a fusion lag of 10 ms
#                     (one 100 Hz fusion step; the trial's reference lag, 2 samples, is the
#                     Vicon trigger's, not a fusion lag)
#   thigh_sag_*       a thigh sensor's turn about its segment's flexion axis is (1 - gain) of the
#                     hip's flexion from the stance plus lead_s times its rate: FITTED to the real
#                     trial, where each thigh's sensor pitch against Vicon's thigh is 0.85 / 0.94 of
#                     it and 28 / 21 ms ahead (least squares est = c + g ref + tau dref/dt, after
#                     the functional calibration; shanks and feet 1.00-1.04 and under 5 ms, so only
#                     thighs). The muscle mass under the thigh sensor, or Vicon's own thigh markers:
#                     the reference cannot tell, the sensor model carries the residual either way
#   gyro_bias_walk    0.05 deg/s/sqrt(s) (BMG160 in the BNO055: zero-rate offset drift over
#                     temperature +-0.015 deg/s/K)
HONEST = dict(IDEAL, stance_error_deg=2.5, stm_gain=0.05, accel_scale=0.01, skew_s=0.005,
              fused_heading_walk_deg_sqrt_s=0.3, fused_offset_deg=2.0, fused_lag_s=0.01,
              gyro_bias_walk_dps_sqrt_s=0.05)
# the thighs' fitted sagittal soft tissue (thigh_sag_* above): worn by the lower-body subject of
# benchmarks/realimu.py, not by HONEST's default wearer (on the full-body demo it moves the
# shoulder's branch recovery: 5 filter restarts instead of 1 on the bundled clip)
THIGH_SAG = {"thigh_sag_gain": 0.10, "thigh_sag_lead_s": 0.025}
NOISE = HONEST         # the default of the simulated subject; noise={"profile": "ideal"}: IDEAL
PROFILES = {"ideal": IDEAL, "honest": HONEST}
FIELD_UT = 45.0


class Subject:
    def __init__(self, skeleton, motion, sensors, seed=0, calib_s=1.0, blend_s=0.5, noise=None,
                 outages=(), chip_errors=None):
        self.sk = skeleton
        self.motion = motion
        self.calib_s = float(calib_s)
        self.blend_s = float(blend_s)
        noise = dict(noise or {})
        prof = noise.pop("profile", None)
        if prof is not None and prof not in PROFILES:
            raise ValueError("subject noise 'profile' must be one of %s, not %r" % (", ".join(PROFILES), prof))
        self.noise = dict(PROFILES[prof] if prof else NOISE)
        self.noise.update(noise)
        self.rng = np.random.default_rng(seed)
        self.outages = [dict(o) for o in outages]
        self.chip_errors = dict(chip_errors or {})   # sensor name -> its spec's "sim" object
        self.t_s = 0.0
        self._last_t = None
        self._fifo_next = None
        g = skeleton.gravity
        self.g = g
        up = -g / np.linalg.norm(g)
        # a magnetic field with a horizontal component and a dip towards the ground
        horiz = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        horiz = horiz - up * (horiz @ up)
        horiz /= np.linalg.norm(horiz)
        self.field_ut = FIELD_UT * (0.45 * horiz - 0.89 * up)
        self.sensors = []
        self.index = {}
        self.buses = []                 # the SimI2C buses the chips are attached to
        self._bus_off = {}              # id(bus) -> its clock at the subject's t = 0
        n = self.noise
        for s in sensors:
            link = skeleton.link_index(s["link"]) if isinstance(s["link"], str) else int(s["link"])
            mis = exp_so3(self.rng.normal(size=3) * np.radians(n["mount_error_deg"]) / np.sqrt(3))
            nominal = _rpy(s.get("mount_rpy_deg", (0, 0, 0)))
            rec = {"name": s["name"], "chip": s.get("chip", "bno055"), "link": link,
                   "pos": np.asarray(s.get("position", (0.0, 0.0, 0.0)), float),
                   "R_mount": nominal @ mis, "R_nominal": nominal,
                   "gyro_bias": self.rng.normal(size=3) * np.radians(n["gyro_bias_dps"]),
                   "accel_bias": self.rng.normal(size=3) * n["accel_bias_m_s2"],
                   "state": None, "chip_obj": None, "where": None}
            if self._honest():
                # honest terms (drawn only then, so the ideal sensors' random stream is unchanged)
                rec["accel_scale"] = 1.0 + self.rng.normal(size=3) * n["accel_scale"]
                rec["skew_s"] = float(self.rng.uniform(0.0, n["skew_s"]))
                rec["fused_off"] = exp_so3(self.rng.normal(size=3) * np.radians(n["fused_offset_deg"]))
                rec["heading_rad"] = 0.0
                # soft tissue: the dofs of this link and of its children (the joints at both ends)
                kids = [i for i, ln in enumerate(skeleton.links) if ln.parent == link]
                # (not a floating root's dofs: turning round is no joint motion under the skin)
                dofs = [j for j, d in enumerate(skeleton.dofs) if d.kind == "rotation"
                        and (d.link == link or d.link in kids) and skeleton.links[d.link].parent >= 0]
                rec["stm_dofs"] = np.array(dofs, int)
                rec["stm_C"] = self.rng.normal(size=(3, len(dofs))) * n["stm_gain"]
                # a thigh's sagittal soft tissue: its own flexion dof, about that dof's axis
                flex = [j for j, d in enumerate(skeleton.dofs) if d.link == link and d.kind == "rotation"
                        and d.name.endswith("_flex")] if skeleton.links[link].name.endswith("thigh") else []
                rec["sag_dof"] = flex[0] if flex else -1
                rec["sag_axis"] = rec["R_mount"].T @ skeleton.dofs[flex[0]].axis if flex else np.zeros(3)
            self.index[s["name"]] = len(self.sensors)
            self.sensors.append(rec)
        self._links = np.array([r["link"] for r in self.sensors], int)
        self._pos = np.array([r["pos"] for r in self.sensors]).reshape(-1, 3)
        self._mount = np.array([r["R_mount"] for r in self.sensors]).reshape(-1, 3, 3)
        if hasattr(motion, "values"):
            from device.capture.bvhclip import canonical_euler
            v = canonical_euler(skeleton, motion.values)
            rot = np.array([d.kind == "rotation" for d in skeleton.dofs])
            v[:, rot] = np.degrees(np.unwrap(np.radians(v[:, rot]), axis=0))
            self._clip_values = v
            self.duration_s = self.calib_s + self.blend_s + motion.duration_s
        else:
            self._clip_values = None
            # a finite motion function (device.capture.retarget.RetargetedMotion) has a duration
            self.duration_s = self.calib_s + self.blend_s + float(getattr(motion, "duration_s", float("inf")))
        self._home = skeleton.home.copy()
        if self._honest() and n["stance_error_deg"] > 0:
            # the calibration stance is not exactly the home pose (within the joint ranges)
            rot = np.array([d.kind == "rotation" for d in skeleton.dofs])
            off = self.rng.normal(size=skeleton.ndof) * n["stance_error_deg"]
            self._home[rot] = np.clip(self._home[rot] + off[rot], skeleton.lo[rot], skeleton.hi[rot])
        if self._clip_values is not None:
            # the calibration pose stands where the clip starts (root position), facing +0
            for j, d in enumerate(skeleton.dofs):
                if d.kind == "translation" and skeleton.links[d.link].parent < 0:
                    self._home[j] = self._clip_values[0, j]

    # -- the motion -----------------------------------------------------------------------
    def _motion_q(self, t):
        if self._clip_values is None:
            return np.asarray(self.motion(t), float)
        v = self._clip_values
        x = t / self.motion.frame_time_s
        i = int(np.clip(np.floor(x), 0, len(v) - 1))
        j = min(i + 1, len(v) - 1)
        f = float(np.clip(x - i, 0.0, 1.0))
        return v[i] * (1 - f) + v[j] * f

    def q_true(self, t_s):
        """True joint values at t_s (dof units; rotations wrapped to [-180, 180))."""
        if t_s < self.calib_s:
            q = self._home.copy()
        else:
            # blend from the calibration pose into the moving clip, twice differentiable: with
            # u(s) = smootherstep (u', u'' zero at both ends) and the clip's clock tau running at
            # speed u (so it has advanced blend_s / 2 at the end of the blend),
            # q = home + (m(tau) - home) u: q, qd and qdd are continuous. (A blend into the first
            # frame at rest, then the clip at full speed, jumped the velocity: a 180 m/s^2 spike
            # in every accelerometer that threw the model estimators off.)
            s = (t_s - self.calib_s) / self.blend_s if self.blend_s > 0 else 1.0
            if s >= 1.0:
                q = self._motion_q(t_s - self.calib_s - 0.5 * self.blend_s)
            else:
                u = s * s * s * (10 - 15 * s + 6 * s * s)
                tau = self.blend_s * (2.5 * s ** 4 - 3 * s ** 5 + s ** 6)     # blend_s * integral of u
                q = self._home + (self._motion_q(tau) - self._home) * u
        for j, d in enumerate(self.sk.dofs):
            if d.kind == "rotation" and d.unit == "deg":
                q[j] = (q[j] + 180.0) % 360.0 - 180.0
        return q

    def _honest(self):
        n = self.noise
        return any(n[k] for k in ("stance_error_deg", "stm_gain", "accel_scale", "skew_s",
                                  "fused_heading_walk_deg_sqrt_s", "fused_offset_deg", "fused_lag_s",
                                  "thigh_sag_gain", "thigh_sag_lead_s"))

    def _stm(self, rec, q, t_s, qdot=None):
        """Soft-tissue rotation vector (rad) of a sensor on its segment: C (q - q_stance), plus on
        a thigh a_axis (-gain (q_flex - q_stance) + lead_s qdot_flex), rad (qdot deg/s)."""
        d = rec["stm_dofs"]
        v = rec["stm_C"] @ np.radians(q[d] - self._home[d])
        j = rec.get("sag_dof", -1)
        if j >= 0 and qdot is not None:
            n = self.noise
            v = v + rec["sag_axis"] * np.radians(-n["thigh_sag_gain"] * (q[j] - self._home[j])
                                                 + n["thigh_sag_lead_s"] * qdot[j])
        return v

    def _honest_outputs(self, t_s, R1, w, f, mag, h, dt):
        """Apply soft tissue, timing skew, accelerometer scale; the fused quaternion with its
        offset, heading walk and lag (the first-order rotation R exp(w tau) for a shift tau)."""
        n = self.noise
        up = -self.g / np.linalg.norm(self.g)
        quats = []
        if n["thigh_sag_gain"] or n["thigh_sag_lead_s"]:
            qs = [self.q_true(t_s + i * h) for i in (-2, -1, 0, 1, 2)]
            # the dof rates at t - h, t, t + h (deg/s, central differences), for the thighs' lead
            qd = [(qs[i + 1] - qs[i - 1]) / (2 * h) for i in (1, 2, 3)]
            qs = qs[1:4]
        else:
            qs = [self.q_true(t_s - h), self.q_true(t_s), self.q_true(t_s + h)]
            qd = [None] * 3
        for k, s in enumerate(self.sensors):
            d0, d1, d2 = (self._stm(s, q, t_s, v) for q, v in zip(qs, qd))
            E = exp_so3(d1)
            # sensor on the skin: R_s = R exp(w skew) E; omega_s = E^T (w + d_dot) (small angles)
            Rk = R1[k] @ exp_so3(w[k] * s["skew_s"]) @ E
            w[k] = E.T @ (w[k] + (d2 - d0) / (2 * h))
            f[k] = s["accel_scale"] * (E.T @ f[k])
            mag[k] = E.T @ mag[k]
            s["heading_rad"] += float(self.rng.normal()) * np.radians(n["fused_heading_walk_deg_sqrt_s"]) * np.sqrt(dt)
            # fused: Rot(up, psi) R_s(t - lag) C_off
            Rq = exp_so3(up * s["heading_rad"]) @ Rk @ exp_so3(-w[k] * n["fused_lag_s"]) @ s["fused_off"]
            quats.append(Rq)
            R1[k] = Rk
        return np.array(quats)

    # -- the sensors ----------------------------------------------------------------------
    def _kinematics(self, t_s, h=1.0 / 240):
        """World R (K, 3, 3), p (K, 3) of every sensor at t-h, t, t+h."""
        qs = np.stack([self.q_true(t_s - h), self.q_true(t_s), self.q_true(t_s + h)])
        # keep the three frames on one branch of each angle (no 360 jumps in differences)
        rot = np.array([d.kind == "rotation" for d in self.sk.dofs])
        for k in (0, 2):
            dq = qs[k, rot] - qs[1, rot]
            qs[k, rot] = qs[1, rot] + (dq + 180.0) % 360.0 - 180.0
        pose = forward_kinematics(self.sk, qs)
        Rl = pose.link_rot[:, self._links]                          # (3, K, 3, 3)
        pl = pose.link_pos_m[:, self._links]                        # (3, K, 3)
        R = Rl @ self._mount[None]
        p = pl + np.einsum("fkij,kj->fki", Rl, self._pos)
        return R, p, h

    def advance(self, t_s):
        """Compute every sensor's output at t_s (with per-sensor sample-time jitter)."""
        n = self.noise
        dt = 0.0 if self._last_t is None else max(t_s - self._last_t, 0.0)
        self._last_t = t_s
        self.t_s = t_s
        for b in self.buses:
            # the world's time on the bus: from where the bus clock stood at the subject's first
            # time step (after the drivers' start-up waits), never backwards
            off = self._bus_off.get(id(b))
            if off is None:
                off = self._bus_off[id(b)] = b.now_s() - t_s
            b.advance_to(t_s + off)
        jit = float(self.rng.normal() * n["jitter_s"])
        R, p, h = self._kinematics(t_s + jit)
        K = len(self.sensors)
        # angular velocity in the sensor frame: log(R(t-h)^T R(t+h)) / 2h
        w = log_so3(np.swapaxes(R[0], 1, 2) @ R[2]) / (2 * h)
        # specific force: R^T (a - g), a by central differences
        a = (p[2] - 2 * p[1] + p[0]) / (h * h)
        f = np.einsum("kji,kj->ki", R[1], a - self.g[None])
        mag = np.einsum("kji,j->ki", R[1], self.field_ut)
        Rq = R[1]
        if self._honest():
            R1 = R[1].copy()
            Rq = self._honest_outputs(t_s + jit, R1, w, f, mag, h, dt)
        qn = exp_so3(self.rng.normal(size=(K, 3)) * np.radians(n["quat_noise_deg"]))
        quat = mat_to_quat(Rq @ qn)
        gn = self.rng.normal(size=(K, 3)) * np.radians(n["gyro_noise_dps"])
        an = self.rng.normal(size=(K, 3)) * n["accel_noise_m_s2"]
        mn = self.rng.normal(size=(K, 3)) * n["mag_noise_ut"]
        walk = self.rng.normal(size=(K, 3)) * np.radians(n["gyro_bias_walk_dps_sqrt_s"]) * np.sqrt(dt)
        for k, s in enumerate(self.sensors):
            s["gyro_bias"] = s["gyro_bias"] + walk[k]
            s["state"] = {"gyro_rad_s": tuple(w[k] + s["gyro_bias"] + gn[k]),
                          "accel_m_s2": tuple(f[k] + s["accel_bias"] + an[k]),
                          "mag_ut": tuple(mag[k] + mn[k]), "quat_wxyz": tuple(quat[k]),
                          "temp_c": 25.0}
        self._fifo(t_s)
        self._outages(t_s)

    def _fifo(self, t_s):
        """Samples at each FIFO chip's rate since the last frame (gyro, specific force, noise)."""
        chips = [(k, s) for k, s in enumerate(self.sensors)
                 if getattr(s["chip_obj"], "fifo_enabled", False)]
        if not chips:
            self._fifo_next = None
            return
        rate = chips[0][1]["chip_obj"].sample_rate_hz()
        if self._fifo_next is None:
            self._fifo_next = t_s
        times = np.arange(self._fifo_next, t_s + 1e-9, 1.0 / rate)
        if len(times) == 0:
            return
        self._fifo_next = times[-1] + 1.0 / rate
        n = self.noise
        h = 0.25 / rate
        w_all, f_all = [], []
        for t in times:
            R, p, _ = self._kinematics(t, h)
            w_all.append(log_so3(np.swapaxes(R[0], 1, 2) @ R[2]) / (2 * h))
            a = (p[2] - 2 * p[1] + p[0]) / (h * h)
            f_all.append(np.einsum("kji,kj->ki", R[1], a - self.g[None]))
        K = len(self.sensors)
        gn = self.rng.normal(size=(len(times), K, 3)) * np.radians(n["gyro_noise_dps"])
        an = self.rng.normal(size=(len(times), K, 3)) * n["accel_noise_m_s2"]
        for k, s in chips:
            s["chip_obj"].push_samples([(tuple(w_all[i][k] + s["gyro_bias"] + gn[i, k]),
                                         tuple(f_all[i][k] + s["accel_bias"] + an[i, k]))
                                        for i in range(len(times))])

    def _outages(self, t_s):
        for o in self.outages:
            s = self.sensors[self.index[o["sensor"]]]
            out = o["start_s"] <= t_s < o["end_s"]
            if out and s["where"] is not None and not o.get("_off"):
                tbl, addr = s["where"]
                tbl.pop(addr, None)
                o["_off"] = True
            elif not out and o.get("_off"):
                tbl, addr = s["where"]
                tbl[addr] = s["chip_obj"] = chip = self._make_chip(s)
                chip.power_on(s["bus"].now_s())      # it boots from now, on its bus's clock
                o["_off"] = False

    # -- the hardware ---------------------------------------------------------------------
    def _make_chip(self, s):
        """A fresh simulated chip for sensor record s, with its spec's errors (also when an
        outage brings it back)."""
        return with_errors(self._new_chip(s), self.chip_errors.get(s["name"]))

    @staticmethod
    def _new_chip(s):
        if s["chip"] == "bno055":
            return SimBNO055(truth=lambda s=s: s["state"])
        st = s

        def truth():
            d = st["state"]
            return d["gyro_rad_s"], d["accel_m_s2"], d["temp_c"]
        if s["chip"] == "mpu9250":
            from device.sensors.ak8963_sim import SimMPU9250
            return SimMPU9250(truth=truth, mag_truth=lambda: st["state"]["mag_ut"])
        return SimMPU6050(truth=truth)

    def attach(self, spec, bus):
        """Put sensor spec's simulated chip on a SimI2C bus (behind its multiplexer if any)."""
        s = self.sensors[self.index[spec["name"]]]
        if s["state"] is None:
            self.advance(self.t_s)
        chip = self._make_chip(s)
        mux = spec.get("mux")
        if mux:
            m = bus.devices.get(mux["addr"])
            if m is None:
                m = bus.attach(mux["addr"], SimTCA9548A())
            m.attach(mux["channel"], spec["addr"], chip)
            s["where"] = (m.channels[mux["channel"]], spec["addr"])
        else:
            bus.attach(spec["addr"], chip)
            s["where"] = (bus.devices, spec["addr"])
        s["chip_obj"] = chip
        s["bus"] = bus
        if bus not in self.buses:
            self.buses.append(bus)
        p = self.noise["dropout"]
        if p > 0 and getattr(bus, "fault_hook", None) is None:
            rng = np.random.default_rng(self.rng.integers(1 << 31))
            bus.fault_hook = lambda addr: rng.random() < p
        return chip

    def marker_positions(self, t_s=None):
        """{marker feature name: world position (3,)} at t_s (default: the current time), for
        the sim camera, which sees the body when each of its rows was exposed, not now."""
        if not hasattr(self, "_marker_idx"):
            self._marker_idx = [k for k, f in enumerate(self.sk.features) if f.kind == "marker"]
        pose = forward_kinematics(self.sk, self.q_true(self.t_s if t_s is None else t_s))
        P = pose.feature_pos_m
        return {self.sk.features[k].name: P[k] for k in self._marker_idx}

    def true_mount(self, name):
        return self.sensors[self.index[name]]["R_mount"]


def _rpy(rpy_deg):
    r, p, y = np.radians(rpy_deg)
    return exp_so3(np.array([0, 0, y])) @ exp_so3(np.array([0, p, 0])) @ exp_so3(np.array([r, 0, 0]))


def with_errors(chip, e):
    """chip with the errors of a sensor spec's "sim" object e (None: unchanged): gyro_bias_dps,
    accel_bias_m_s2, accel_scale (MPU), mag_hard_iron_ut, mag_soft_iron (AK8963), calib_stat
    (BNO055)."""
    if not e:
        return chip
    d2r = np.pi / 180.0
    errs = {}
    if "gyro_bias_dps" in e:
        errs["gyro_bias_rad_s"] = tuple(float(x) * d2r for x in e["gyro_bias_dps"])
    for key in ("accel_bias_m_s2", "accel_scale"):
        if key in e:
            errs[key] = tuple(float(x) for x in e[key])
    if errs and hasattr(chip, "errors"):
        chip.errors = errs
    ak = getattr(chip, "ak", None)
    if ak is not None:
        if "mag_hard_iron_ut" in e:
            ak.hard_iron_ut = tuple(float(x) for x in e["mag_hard_iron_ut"])
        if "mag_soft_iron" in e:
            ak.soft_iron = tuple(tuple(float(x) for x in r) for r in e["mag_soft_iron"])
    if "calib_stat" in e and hasattr(chip, "calib_stat"):
        chip.calib_stat = int(e["calib_stat"])      # the best levels it reaches (from 0 at power-up)
    return chip
