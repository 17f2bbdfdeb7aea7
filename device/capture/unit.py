"""The capture unit assembled from its configuration: skeleton, buses, sensor slots, subject, estimator.

    from device.capture.config import default_config
    from device.capture.unit import build_unit
    unit = build_unit(default_config())      # the simulated subject on sim-i2c buses
    readings = unit.read(t_s)                # {name: {"gyro", "accel", "quat"} | None}
    q = unit.estimate(t_s, readings)         # (ndof,) dof units, NaN = not estimated

Calibration runs first: for calibration still_s seconds the unit collects readings (the subject
stands in the home pose), then aligns sensors to segments and starts the estimator from that
pose. A `replay` source replaces the buses with a raw log (device.capture.rawlog).

The default estimator is the torque-state EKF ("ekf"): it gets device.estimate's Observation
(gyro minus the calibrated bias, specific force, 2D markers + camera). With a model estimator,
body "clip" is the human model performing the clip (device/capture/retarget.py; unit.retargeted),
and BLAS is limited to cfg["blas_threads"] (default 1) threads. See docs/capture.md.

`"sensor_calibration": "cal.json"` (written by `motionstaff calibrate`, device/capture/calibration.py)
corrects each named sensor's reading in read() (gyro bias, accel bias and scale, mag hard/soft
iron); sensors without an entry pass through; a BNO055 entry's "profile" is written back to the
chip after each init() (driver.profile). A sensor spec's "sim" object gives its simulated
chip errors (accel scale and bias, gyro bias, mag hard/soft iron, the BNO055's best calib_stat).
"""

import importlib
import time

import numpy as np

from device.body.human import human_model
from device.body.skeleton import Skeleton
from device.capture.bvhclip import load_bvh
from device.capture.branch import BranchCheck
from device.capture.calibrate import StillCalibration
from device.capture.config import BUILTIN_CLIP, place_sensors
from device.capture.orient import OrientEstimator
from device.capture.rot import mat_to_quat, quat_to_mat
from device.capture.subject import Subject, _rpy
from device.hal import open_i2c
from device.hal.tca9548a import TCA9548A
from device.sensors.health import SensorSlot, start_all


def _driver(spec, bus, muxes):
    """The driver of a sensor spec on its bus. It waits the data sheets' reset and mode-switch
    times on the bus (device/hal/busclock.py): a real bus sleeps, the twin charges its clock, whose
    chips keep those times (one code path)."""
    mux = spec.get("mux")
    if mux:
        key = (spec["bus"], mux["addr"])
        if key not in muxes:
            muxes[key] = TCA9548A(bus, mux["addr"])
        bus = muxes[key].channel(mux["channel"])
    chip = spec["chip"]
    if chip == "bno055":
        from device.sensors.bno055 import BNO055
        return BNO055(bus, spec["addr"], mode=spec.get("mode", "NDOF"))
    from device.sensors.mpu6050 import MPU6050
    if chip == "mpu9250":
        from device.sensors.ak8963 import MPU9250 as MPU6050      # + the AK8963 magnetometer
    return MPU6050(bus, spec["addr"], accel_range_g=spec.get("accel_range_g", 8),
                   gyro_range_dps=spec.get("gyro_range_dps", 1000),
                   fifo_rate_hz=spec.get("fifo_rate_hz", 250))


def normalise(chip, reading):
    """A driver's read() as {"gyro", "accel", "quat"} (quat None for gyro/accel-only chips)."""
    if reading is None:
        return None
    if chip == "bno055":
        return {"gyro": reading[0], "accel": reading[1], "quat": reading[2]}
    out = {"gyro": reading[0], "accel": reading[1], "quat": None}
    if chip == "mpu9250":
        out["mag"] = reading[-1]             # uT in the MPU's axes (None until the first sample)
        reading = reading[:-1]
    if len(reading) > 3:
        out["samples"] = reading[3]          # the FIFO's (gyro, accel) samples since last frame
    return out


class Obs:
    """What the estimator sees each frame (the device.estimate Observation fields + orient).
    For OrientEstimator imu[name] is (gyro_rad_s, accel_m_s2) or, with a magnetometer reading
    (MPU-9250), (gyro_rad_s, accel_m_s2, mag_ut); the FIFO samples stay (gyro, accel): the
    AK8963 is read once a frame."""

    __slots__ = ("t_s", "imu", "orient", "samples", "markers3d", "markers2d", "markers2d_lag_s", "camera")

    def __init__(self, t_s, imu, orient):
        self.t_s, self.imu, self.orient = t_s, imu, orient
        self.samples = {}                    # name -> FIFO [(gyro_rad_s, accel_m_s2)] since last frame
        self.markers3d, self.markers2d, self.camera = {}, {}, None
        self.markers2d_lag_s = {}            # name -> age (s) of its 2D marker at t_s


class Unit:
    def __init__(self, cfg, clip_path=None, replay=None, skeleton=None, motion=None):
        self.cfg = cfg
        self.rate_hz = float(cfg["rate_hz"])
        self.dt_s = 1.0 / self.rate_hz
        sub = cfg.get("subject")
        self.clip = None
        body = cfg["body"]
        est_name = cfg.get("estimator", "ekf")
        self.retargeted = False
        if skeleton is None and replay is None and body == "clip" and est_name != "orient":
            # a model estimator (the torque-state EKF) needs a body with masses and joints away
            # from gimbal lock: the human model performs the clip (device/capture/retarget.py)
            body = "human"
            self.retargeted = True
        elif (skeleton is None and replay is None and sub is not None and body in ("human", "human-floating", "humanoid18", "human-legs")
              and (clip_path or sub.get("clip", "builtin") not in (None, "builtin"))):
            self.retargeted = True          # an explicit clip on a built-in body: retargeted
        self.body = body
        threads = cfg.get("blas_threads", 1)
        if threads and est_name != "orient":
            # the EKF's 144 x 144 algebra on a threaded BLAS: 127 ms a frame instead of 5 on a
            # loaded 2-core unit (device/estimate/blas.py); "blas_threads": 0 leaves BLAS alone
            import scipy.linalg  # noqa: F401  (load scipy's OpenBLAS too, then limit both)
            from device.estimate.blas import set_blas_threads
            set_blas_threads(int(threads))
        if skeleton is not None:
            self.skeleton = skeleton
        elif body == "single-imu":
            from device.capture.rawlog import single_imu_skeleton
            self.skeleton = single_imu_skeleton()
        elif body == "clip":
            self.clip = load_bvh(clip_path or _clip_path(sub))
            self.skeleton = self.clip.skeleton
        elif body in ("human", "human-floating"):
            self.skeleton = human_model(floating=body == "human-floating")
        elif body == "humanoid18":
            self.skeleton = humanoid18()
        elif body == "human-legs":
            from device.capture.lowerbody import legs_skeleton
            self.skeleton = legs_skeleton()
        else:
            self.skeleton = Skeleton.load(body)
        sk = self.skeleton
        specs = cfg.get("sensors") or place_sensors(sk, cfg.get("chip", "bno055"), buses=list(cfg["buses"]))
        self.specs = specs
        _check_mag_and_sim(cfg, specs)
        self.bus_budget = []
        if replay is None:
            # every bus's reads fit the frame period (measured on twins of the buses), or one line
            from device.capture.busbudget import check_bus_budget
            self.bus_budget = check_bus_budget(cfg, specs)
        check_estimator_options(cfg, sk, self.dt_s)
        self.subject = None
        if sub is not None and replay is None:
            if motion is not None:
                pass                            # a given motion function t -> q (dof units)
            elif self.retargeted:
                from device.capture.retarget import retarget_clip
                motion = retarget_clip(load_bvh(clip_path or _clip_path(sub)), sk, max_s=sub.get("max_s"),
                                       fps=max(30.0, self.rate_hz))
            elif self.clip is not None:
                motion = self.clip
            else:
                motion = _synthetic_motion(sk, sub.get("seed", 1))
            self.subject = Subject(sk, motion, specs, seed=sub.get("seed", 1),
                                   chip_errors={s["name"]: s["sim"] for s in specs if s.get("sim")},
                                   calib_s=sub.get("calib_s", 1.0), blend_s=sub.get("blend_s", 0.5),
                                   noise=sub.get("noise"), outages=sub.get("outages", ()))
        self.replay = replay
        self.sensor_cal = {}
        if replay is None and cfg.get("sensor_calibration"):
            from device.capture.calibration import check_for_unit, load_calibration
            src = cfg["sensor_calibration"]
            self.sensor_cal = check_for_unit(load_calibration(src), specs,
                                             src if isinstance(src, str) else "calibration")
        self.buses = {}
        self.slots = []
        self._chip = {}
        muxes = {}
        if replay is None:
            for name, url in cfg["buses"].items():
                self.buses[name] = open_i2c(url)
            for s in specs:
                bus = self.buses[s["bus"]]
                if self.subject is not None:
                    self.subject.attach(s, bus)
                drv = _driver(s, bus, muxes)
                prof = (self.sensor_cal.get(s["name"]) or {}).get("profile")
                if prof is not None and s["chip"] == "bno055":
                    drv.profile = prof        # BNO055 calibration profile: init() writes it back
                self.slots.append(SensorSlot(s["name"], drv))
                self._chip[s["name"]] = s["chip"]
            # every chip's reset and mode switch under way at once (device/sensors/health.py)
            start_all(self.slots)
            # real buses are read in parallel, one thread a bus (the kernel's I2C transfer
            # releases the GIL, so the frame waits for the slowest bus, not their sum); the
            # twins' bus clocks model the same (the loop waits max over buses)
            self._bus_groups = {}
            for spec, slot in zip(specs, self.slots):
                self._bus_groups.setdefault(spec["bus"], []).append(slot)
            real = [n for n in self._bus_groups if not str(cfg["buses"][n]).startswith("sim-")]
            self._pool = None
            if len(real) > 1:
                from concurrent.futures import ThreadPoolExecutor
                self._pool = ThreadPoolExecutor(max_workers=len(self._bus_groups),
                                                thread_name_prefix="i2c")
        else:
            for s in specs:
                self._chip[s["name"]] = s["chip"]
        self.camera = None
        self.markers2d = {}
        self.markers2d_lag_s = {}  # each marker's age (s) at the frame's time: its row's exposure
        self.clock_t0_s = 0.0      # the camera clock's time at the loop's t_s = 0 (a real clock's t0)
        self.sim_s = 0.0          # time the last read() spent simulating (subject, chips' truth, camera)
        self.sim_cpu_s = 0.0      # ... in thread CPU time
        self.bus_s = {}           # bus name -> simulated bus time of the last read() (sim buses)
        cam = cfg.get("camera")
        if cam:
            self._open_camera(cam)
        cal_sensors = [{"name": s["name"], "link": sk.link_index(s["link"]),
                        "R_nominal": _rpy(s.get("mount_rpy_deg", (0, 0, 0)))} for s in specs]
        self.cal_sensors = cal_sensors
        still_s = (cfg.get("calibration") or {}).get("still_s", 1.0)
        hinge = (cfg.get("calibration") or {}).get("hinge", "seel")
        from device.capture.functional import HINGES
        if hinge not in HINGES:      # refused before anything is captured, not after the stance
            raise ValueError("unit config: calibration 'hinge' must be one of %s, not %r" % (", ".join(HINGES), hinge))
        self.calibration = StillCalibration(sk, cal_sensors, frames=max(1, int(round(still_s * self.rate_hz))))
        self.calibrated = None
        self._cal_mag = {}                      # name -> mag readings (uT) during calibration
        self.estimator = None
        self.branch = None                       # BranchCheck, made at the first use
        self.last_q = sk.home.copy()
        self.last_good_q = sk.home.copy()       # NaN-free: missing rows keep their last value
        # the compiled kernels load now, before the first frame (device/capture/warmup.py)
        from device.capture.warmup import warm_up
        warm_up(sk, [s["name"] for s in cal_sensors], cfg.get("estimator", "ekf"),
                camera=self.camera is not None, dt_s=self.dt_s)

    def _open_camera(self, cam):
        from device.sensors.camera import CameraModel
        calib = cam.get("calibration")
        if isinstance(calib, str):
            model = CameraModel.load(calib)
        elif isinstance(calib, dict):
            model = CameraModel.from_dict(calib)
        else:
            # default: 3 m in front of the subject, looking back at its middle
            up = -self.skeleton.gravity / np.linalg.norm(self.skeleton.gravity)
            centre = up * 0.9
            if self.subject is not None:
                from device.body.kinematics import forward_kinematics
                root = [i for i, ln in enumerate(self.skeleton.links) if ln.parent < 0][0]
                centre = forward_kinematics(self.skeleton, self.subject.q_true(0.0)).link_pos_m[root]
            fwd = np.array([1.0, 0, 0]) if abs(up[0]) < 0.9 else np.array([0, 0, 1.0])
            model = CameraModel.looking_at(centre + 3.0 * fwd, centre, up=up)
        url = cam.get("url", "sim-cam://")
        if url.startswith("sim-cam://") and self.subject is not None:
            from device.sensors.camera_sim import SimCamera
            from device.sensors.frameclock import FrameClock
            sub = self.cfg.get("subject") or {}
            seed = sub.get("seed", 1) + 7
            fps = float(cam.get("fps", 30.0))
            # the twin's camera free-runs at its own phase, sees each row at its own time and
            # hands a frame over a readout and an ISP pass late, as a Pi camera does
            timing = FrameClock(fps=fps, exposure_s=float(cam.get("exposure_s", 0.010)),
                                readout_s=float(cam.get("readout_s", 0.024)), height_px=model.height,
                                phase_s=np.random.default_rng(seed).uniform(0.0, 1.0 / fps),
                                delivery_s=cam.get("delivery_s"))
            subject = self.subject
            # the camera's clock is the loop's (t_s = 0 at the loop's clock_t0_s), as a Pi
            # camera's SensorTimestamp is time.monotonic()'s; the scene is asked in t_s
            self.camera = SimCamera(model, scene=lambda t=None: subject.marker_positions(
                                        None if t is None else t - self.clock_t0_s),
                                    seed=seed, occlusion=cam.get("occlusion", 0.02),
                                    clock=lambda: subject.t_s + self.clock_t0_s, timing=timing)
        else:
            from device.hal import open_camera
            self.camera = open_camera(url, calibration=model)
        self._marker_names = [f.name for f in self.skeleton.features if f.kind == "marker"]

    def predicted_markers2d(self, ahead_s=None):
        """Search windows {name: (u, v, r_px)}: the estimator's (its markers ahead_s after its
        last estimate, default one frame), else the last estimate projected."""
        est = getattr(self.estimator, "predicted_markers2d", None)
        pred = (est() if ahead_s is None else est(ahead_s=ahead_s)) if est is not None else {}
        if pred:
            return pred
        from device.body.kinematics import forward_kinematics
        q = np.where(np.isnan(self.last_q), self.last_good_q, self.last_q)
        if self.subject is not None and self.calibrated is None:
            q = self.subject.q_true(self.subject.t_s)   # the calibration pose is known
            self.last_good_q = q.copy()
        pose = forward_kinematics(self.skeleton, q)
        names = [f.name for f in self.skeleton.features]
        idx = [names.index(n) for n in self._marker_names]
        uv, z = self.camera.model.project(pose.feature_pos_m[idx])
        return {n: (uv[k, 0], uv[k, 1], 25.0) for k, n in enumerate(self._marker_names) if z[k] > 0}

    # -- a frame ------------------------------------------------------------------------
    def read(self, t_s):
        """Every sensor's normalised reading at t_s (None when stale); markers in self.markers2d."""
        if self.replay is not None:
            return self._replayed(self.replay.read(t_s))
        t0, c0 = time.perf_counter(), time.thread_time()
        if self.subject is not None:
            self.subject.advance(t_s)
        self.sim_s = time.perf_counter() - t0
        self.sim_cpu_s = time.thread_time() - c0
        out = {}
        cal = self.sensor_cal
        before = {n: (getattr(b, "master_s", 0.0), getattr(b, "sim_s", 0.0), getattr(b, "sim_cpu_s", 0.0))
                  for n, b in self.buses.items()}
        pool = getattr(self, "_pool", None)
        if pool is not None:
            done = dict(zip(self._bus_groups, pool.map(
                lambda slots: [slot.sample() for slot in slots], self._bus_groups.values())))
            samples = {}
            for n, slots in self._bus_groups.items():
                samples.update((slot.name, r) for slot, r in zip(slots, done[n]))
        for slot in self.slots:
            raw = samples[slot.name] if pool is not None else slot.sample()
            out[slot.name] = normalise(self._chip[slot.name], raw)
            if slot.name in cal:
                from device.capture.calibration import apply_reading
                out[slot.name] = apply_reading(cal[slot.name], out[slot.name])
        for n, b in self.buses.items():
            # the simulated bus's time: its transfers and the drivers' waits on it (buses run in
            # parallel: the frame waits for the slowest); the simulated chips' CPU time is the
            # simulator's. A real bus's time is the loop's own clock.
            self.bus_s[n] = getattr(b, "master_s", 0.0) - before[n][0]
            self.sim_s += getattr(b, "sim_s", 0.0) - before[n][1]
            self.sim_cpu_s += getattr(b, "sim_cpu_s", 0.0) - before[n][2]
        if self.camera is not None:
            t0, c0 = time.perf_counter(), time.thread_time()
            image, t_cam_s = self.camera.capture()
            if self.subject is not None:
                self.sim_s += time.perf_counter() - t0     # rendering is the simulator's work
                self.sim_cpu_s += time.thread_time() - c0
            self.markers2d, self.markers2d_lag_s = {}, {}
            if image is not None:
                self.markers2d, self.markers2d_lag_s = self._find_markers(image, t_s, t_cam_s)
        return out

    def _find_markers(self, image, t_s, t_cam_s):
        """({name: (u, v) or None}, {name: age s}) of a camera frame whose first row was seen at
        t_cam_s (the camera's clock): a marker on row v was seen line_s * v later, so at the
        frame's time t_s it is age = t_s - (t_cam_s - clock_t0_s) - line_s * v old. The search
        windows are the estimate's markers at the frame's middle row's time."""
        from device.sensors.markers import find_markers
        line_s = float(getattr(self.camera, "line_s", 0.0) or 0.0)
        age0_s = max(0.0, t_s - (t_cam_s - self.clock_t0_s))
        mid_s = max(0.0, age0_s - 0.5 * line_s * image.shape[0])
        found = find_markers(image, self.predicted_markers2d(ahead_s=self.dt_s - mid_s))
        ages = {n: max(0.0, age0_s - line_s * uv[1]) for n, uv in found.items() if uv is not None}
        return found, ages

    def _replayed(self, readings):
        """A replayed frame as this config's sensors see it: other sensors dropped; a gyro/accel
        chip has no fused quaternion even where the log has one."""
        if self.replay is None or not hasattr(self.replay, "head"):
            return readings
        out = {}
        for n, r in readings.items():
            chip = self._chip.get(n)
            if chip is None:
                continue
            if r is not None and chip != "bno055" and r.get("quat") is not None:
                r = dict(r, quat=None)
            out[n] = r
        return out

    def estimate(self, t_s, readings):
        """Joint values for this frame; during calibration the calibration pose."""
        if self.calibrated is None:
            self.calibration.add(readings)
            for name, r in readings.items():      # the magnetic reference (orient's MARG filter)
                if r is not None and r.get("mag") is not None:
                    self._cal_mag.setdefault(name, []).append(r["mag"])
            if self.calibration.done:
                self._finish_calibration()
            q = self.skeleton.home.copy()           # the calibration pose; positions unobserved
            for j, d in enumerate(self.skeleton.dofs):
                if d.kind != "rotation":
                    q[j] = np.nan
            return q
        imu = {}
        orient = {}
        samples = {}
        for name, r in readings.items():
            if r is None:
                imu[name] = None
                continue
            imu[name] = (np.asarray(r["gyro"]), np.asarray(r["accel"]))
            if r.get("quat") is not None:
                orient[name] = r["quat"]
            if r.get("samples"):
                samples[name] = r["samples"]
        if isinstance(self.estimator, OrientEstimator):
            for name, r in readings.items():      # (gyro, accel, mag_ut) for magnetometer chips
                if r is not None and r.get("mag") is not None:
                    imu[name] = imu[name] + (np.asarray(r["mag"], float),)
            obs = Obs(t_s, imu, orient)
            obs.samples = samples
            if self.camera is not None:
                obs.markers2d, obs.camera = self.markers2d, self.camera.model
                obs.markers2d_lag_s = self.markers2d_lag_s
        else:
            # device.estimate's contract: gyro and specific force in each sensor's frame; the
            # gyro bias found at rest is removed here (the model filters have no bias state:
            # uncorrected, 0.5 deg/s integrates into the unobserved rotations about gravity)
            from device.estimate.observation import Observation
            bias = self.calibrated["gyro_bias"]
            for name, v in imu.items():
                if v is not None and name in bias:
                    imu[name] = (v[0] - bias[name], v[1])
            # fused-orientation chips (BNO055): their world orientation, turned into the
            # skeleton's world by the calibration's heading W (W R_sensor = R_link R_mount at
            # rest), is observed too: without it, IMU-only, the EKF lost the weakly observed
            # rotations (hip and shoulder twist) on fast clips within seconds
            ori = {}
            if orient and self.cfg.get("fused_orientation", True):
                W = self.calibrated["world"]
                W_by = self.calibrated.get("world_by", {})     # per sensor (functional calibration)
                names = list(orient)
                qs = np.array([orient[n] for n in names], float)
                ok = np.einsum("ij,ij->i", qs, qs) > 0.25           # |q| > 0.5 (raw modes read 0)
                if ok.any():
                    # all sensors at once: W R(q / |q|) (quat_to_mat normalises)
                    kept = [n for n, o in zip(names, ok) if o]
                    Rs = quat_to_mat(qs[ok])
                    if W_by:
                        Ws = np.array([W_by.get(n, W) for n in kept], float)
                        Rs = np.matmul(Ws, Rs)
                    else:
                        Rs = np.matmul(W, Rs)
                    ori = dict(zip(kept, Rs))
            if self.camera is not None and any(v is not None for v in self.markers2d.values()):
                if not hasattr(self, "_est_camera"):
                    self._est_camera = self.camera.model.to_estimate_camera()
                obs = Observation(t_s, imu=imu, markers2d=self.markers2d, camera=self._est_camera, orient=ori,
                                  markers2d_lag_s=self.markers2d_lag_s)
            else:
                obs = Observation(t_s, imu=imu, orient=ori)
        q = self.estimator.step(obs)
        if getattr(obs, "orient", None) and hasattr(self.estimator, "meas"):
            q = self._branch_check(obs, q)
        self.last_q = q
        self.last_good_q = np.where(np.isnan(q), self.last_good_q, q)
        return q

    def _branch_check(self, obs, q):
        """Branch recovery (device/capture/branch.py), a bounded number of IK steps a frame."""
        if self.branch is None:
            self.branch = BranchCheck(self.skeleton, self.rate_hz)
        return self.branch(self.estimator, obs, q)

    @property
    def branch_resets(self):
        return 0 if self.branch is None else self.branch.resets

    def _functional(self, still_res):
        """Functional calibration (device/capture/functional.py): the still window's readings
        and the first functional_s seconds of walking after it. A replay reads those strides
        ahead; a live unit would record them first (stand, then walk a few steps)."""
        from device.capture.functional import functional_calibration, walk_onset
        if not hasattr(self.replay, "peek"):
            raise ValueError("calibration 'functional_s' needs a raw-log replay (the first strides are read ahead)")
        n_still = self.calibration.frames
        ahead = [self._replayed(r) for r in self.replay.peek(self.replay.k, self.replay.k + int(60 * self.rate_hz))]
        on = walk_onset(ahead)
        if on is None:
            raise ValueError("%s: no walk after the still window (functional calibration)" % self.replay.path)
        n_fun = int(round(self.cfg["calibration"]["functional_s"] * self.rate_hz))
        still = [self._replayed(r) for r in self.replay.peek(self.replay.k - n_still, self.replay.k)]
        res = functional_calibration(self.skeleton, self.cal_sensors, still, ahead[on:on + n_fun],
                                     hinge=self.cfg["calibration"].get("hinge", "seel"))
        return res

    def _finish_calibration(self):
        res = self.calibration.result()
        if (self.cfg.get("calibration") or {}).get("functional_s"):
            res = self._functional(res)
        self.calibrated = res
        sk = self.skeleton
        imu_links = {s["name"]: s["link"] for s in self.cal_sensors}
        # the calibrated mounting goes into the skeleton's IMU features (used by model estimators);
        # a sensor the skeleton has no feature for gets one
        from device.body.skeleton import Feature
        have = {f.name: f for f in sk.features}
        for s in self.specs:
            R = res["mounts"].get(s["name"])
            f = have.get(s["name"])
            if f is None:
                f = Feature(s["name"], sk.link_index(s["link"]), "imu", s.get("position", (0, 0, 0)))
                sk.features.append(f)
            if R is not None:
                f.orientation = mat_to_quat(R)
        name = self.cfg.get("estimator", "ekf")
        if name == "orient":
            fifo = [s.get("fifo_rate_hz", 250) for s in self.specs if s["chip"] != "bno055"]
            # estimator_options {"magnetometer": false}: MPU-9250s run the 6-axis filter
            use_mag = bool((self.cfg.get("estimator_options") or {}).get("magnetometer", True))
            est = OrientEstimator(sk, self.dt_s, imu_links, res["mounts"],
                                  sample_dt_s=(1.0 / _fifo_rate(fifo[0])) if fifo and fifo[0] else None,
                                  use_mag=use_mag)
            est.world = res["world"]
            est.world_by = res.get("world_by", {})
            est.gyro_bias = res["gyro_bias"]
            for n, R in res["ahrs"].items():
                m = self._cal_mag.get(n)
                est.start_ahrs(n, R, mag_ut=np.mean(np.asarray(m, float), 0) if m else None)
        else:
            mod = importlib.import_module("device.estimate")
            opts = dict(self.cfg.get("estimator_options") or {})
            opts.pop("magnetometer", None)      # the orient estimator's; the model filters get no mag
            # a body-worn fused orientation against the model's: soft tissue (5-30 deg on the
            # arms as the joints move), the calibration stance, the fusion's offset and heading
            # walk, not the chip's 1 deg: FUSED_ORIENT_SIGMA_RAD unless the config says
            opts.setdefault("orient_sigma_rad", FUSED_ORIENT_SIGMA_RAD)
            est = _make_model_estimator(mod, name, sk, self.dt_s, opts)
        est.initialise(sk.home.copy())
        self.estimator = est

    @property
    def health(self):
        if self.estimator is None:
            return 0.0
        return float(getattr(self.estimator, "health", 1.0))

    def sensor_status(self):
        return [s.status() for s in self.slots]

    def close(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown()
        for b in self.buses.values():
            b.close()
        if self.camera is not None:
            self.camera.close()


# The fused orientations' measurement noise for the unit's model estimators (rad, per axis).
# 0.1 rad (5.7 deg): the honest subject's arm sensors sit 15-35 deg from the true pose at the
# worst (tests/test_capture_ekf.py), the real trial's Xsens segments 5 deg RMS from Vicon after
# their offsets (docs/estimation.md); at 0.02 (the chip's noise plus margin) the filter bends
# the joints to fit them: at the shoulder's gimbal lock it slid onto a wrong branch that fits
# them as well as the truth (default demo, 131_03: 13.4 deg RMS; 6.6 at 0.1).
FUSED_ORIENT_SIGMA_RAD = 0.1


def _make_model_estimator(mod, name, sk, dt_s, opts, where="unit config"):
    """device.estimate's estimator; an option it does not take or a bad value is one line."""
    from protocol.errors import FormatError
    try:
        return mod.make_estimator(name, sk, dt_s, **opts)
    except (TypeError, ValueError) as e:     # an option it does not take, a bad value
        raise FormatError("%s: estimator_options for %r: %s" % (where, name, str(e).split("\n")[0])) from None


def check_estimator_options(cfg, sk, dt_s, where="unit config"):
    """Before anything runs: a model estimator takes every estimator_options key (it is built
    once on the skeleton as it is, and thrown away)."""
    name = cfg.get("estimator", "ekf")
    opts = dict(cfg.get("estimator_options") or {})
    opts.pop("magnetometer", None)
    if name in ("orient", "none") or not opts:
        return
    import copy
    _make_model_estimator(importlib.import_module("device.estimate"), name, copy.deepcopy(sk), dt_s,
                          opts, where)


def _check_mag_and_sim(cfg, specs, where="unit config"):
    """Before anything runs: estimator_options' "magnetometer" is true or false (a string such as
    "no" would read as true), and a simulated BNO055's "sim" calib_stat is a CALIB_STAT byte."""
    from protocol.errors import FormatError
    opts = cfg.get("estimator_options")
    if opts is not None and not isinstance(opts, dict):
        raise FormatError("%s: 'estimator_options' must be an object" % where)
    if opts and "magnetometer" in opts and not isinstance(opts["magnetometer"], bool):
        raise FormatError("%s: estimator_options 'magnetometer' must be true or false, got %r"
                          % (where, opts["magnetometer"]))
    for s in specs:
        sim = s.get("sim") or {}
        if "calib_stat" in sim:
            c = sim["calib_stat"]
            if not isinstance(c, int) or isinstance(c, bool) or not 0 <= c <= 255:
                raise FormatError("%s: sensor %s: 'sim' 'calib_stat' must be the CALIB_STAT byte 0..255 "
                                  "(the best levels it reaches; 0xFF: all 3), got %r" % (where, s.get("name"), c))


def _fifo_rate(hz):
    """The rate the MPU-6050 really runs at for a requested FIFO rate (1 kHz / (1 + div))."""
    return 1000.0 / (1 + max(0, min(255, int(1000.0 / hz + 0.5) - 1)))


def _clip_path(sub):
    clip = (sub or {}).get("clip", "builtin")
    return BUILTIN_CLIP if clip in (None, "builtin") else clip


def _synthetic_motion(sk, seed):
    """A smooth seeded motion inside every rotation dof's range (for models without a clip)."""
    rng = np.random.default_rng(seed)
    n = sk.ndof
    f = rng.uniform(0.2, 1.0, (n, 3))
    ph = rng.uniform(0, 2 * np.pi, (n, 3))
    lo, hi = sk.lo.copy(), sk.hi.copy()
    mid = np.clip(0.0, lo, hi)
    amp = np.minimum(hi - mid, mid - lo)
    amp = np.where(amp > 0, amp, (hi - lo) / 2) * 0.35
    amp = np.minimum(amp, 40.0)
    rot = np.array([d.kind == "rotation" for d in sk.dofs])
    centre = np.where(amp > 0, mid + np.where(hi - mid > mid - lo, amp, -amp) * 0.0, mid)
    home = sk.home

    def q(t):
        s = np.sin(2 * np.pi * f * t + ph).sum(1) / 3.0
        out = home.copy()
        out[rot] = (centre + amp * s)[rot]
        lo_in = out < lo
        out[lo_in] = lo[lo_in]
        out[out > hi] = hi[out > hi]
        return out
    return q


HUMANOID18 = ("l_shoulder_flex", "l_shoulder_abd", "l_elbow_flex", "r_shoulder_flex", "r_shoulder_abd",
              "r_elbow_flex", "l_hip_flex", "l_hip_abd", "l_hip_rot", "l_knee_flex", "l_ankle_flex",
              "l_ankle_inv", "r_hip_flex", "r_hip_abd", "r_hip_rot", "r_knee_flex", "r_ankle_flex",
              "r_ankle_inv")


def humanoid18():
    """The human model with the 18 dofs of a hobby humanoid (Bioloid-style): arms 3+3, legs 6+6."""
    h = human_model()
    dofs = [d for d in h.dofs if d.name in HUMANOID18]
    for d in dofs:
        if d.mirror not in HUMANOID18:
            d.mirror = None
    return Skeleton(h.links, dofs, h.features, name="humanoid18", gravity=h.gravity, meta=h.meta)


def build_unit(cfg, clip_path=None, replay=None, skeleton=None, log_config=True, motion=None):
    """The unit for a config; replay (a device.capture.rawlog source) replaces the buses; a raw
    log brings its own config and skeleton (log_config=False: cfg's, whose sensors the log must have)."""
    if replay is not None and hasattr(replay, "head") and not log_config:
        from protocol.errors import FormatError
        have = {s["name"] for s in replay.head.get("sensors") or []}
        want = [s["name"] for s in cfg.get("sensors") or []]
        miss = [n for n in want if n not in have]
        if not want or miss:
            raise FormatError("%s: the raw log has no sensor %s of the config" % (
                replay.path, miss[0] if miss else "(the config lists none)"))
        if abs(float(cfg["rate_hz"]) - float(replay.rate_hz)) > 1e-6:
            raise FormatError("%s: the raw log runs at %g Hz, the config at %g Hz (mismatched rates)"
                              % (replay.path, replay.rate_hz, cfg["rate_hz"]))
        cfg = dict(cfg, subject=None)
    elif replay is not None and hasattr(replay, "head"):
        from device.body.skeleton import Skeleton
        cfg = dict(replay.head["config"], sensors=replay.head["sensors"], subject=None)
        skeleton = skeleton or Skeleton.from_dict(replay.head["skeleton"])
    return Unit(cfg, clip_path=clip_path, replay=replay, skeleton=skeleton, motion=motion)
