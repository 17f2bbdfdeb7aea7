"""A lean sensor simulator: from joint values q(t) on a skeleton, ideal and noisy observations.

    from device.body.human import human_model
    from device.estimate.simulate import SensorNoise, simulate, add_sensors
    sk = human_model()
    obs, truth = simulate(sk, q_dof, fps=60.0, noise=SensorNoise(), seed=1,
                          markers3d=True, imu=True, camera=None, camera_timing=None)
    obs[0]                         # Observation(t=0.000 s, 14 imu, 46 3D, 0 2D)
    truth["qd_si"], truth["imu"]   # derivatives and ideal sensor readings

Derivatives come from a cubic spline through q(t) (qd, qdd exact for the spline); IMU readings
by the same kinematics the estimators use (device/estimate/measurement.py, imu_predict), so
ideal observations are consistent with the models. Noise per SensorNoise: white noise plus a
constant bias per IMU axis, marker occlusion bursts (two-state Markov chain), random IMU
packet loss. Everything is seeded (numpy default_rng).

With camera_timing (a device/sensors/frameclock.py FrameClock) the camera's 2D markers come as
a Pi camera's do: its own frames, each row seen at its own time (the body from the spline at
the first and the last row's time, each marker blended by its row), handed to the frame at or
after its delivery, with each marker's age in Observation.markers2d_lag_s; frames with no new
camera frame have no 2D markers. Without it every frame sees the body at its own time.
"""

import numpy as np
from scipy.interpolate import CubicSpline

from device.body.dynamics import model_of
from device.body.skeleton import Dof, Feature, Link, Skeleton
from device.estimate.measurement import MeasurementModel
from device.estimate.observation import Observation


class SensorNoise:
    """Noise levels (SI). Defaults: a MEMS IMU (MPU-6050 / BMI160 class) and optical markers."""

    def __init__(self, gyro_sigma_rad_s=0.01, gyro_bias_rad_s=0.005, accel_sigma_m_s2=0.08,
                 accel_bias_m_s2=0.05, marker_sigma_m=0.003, pixel_sigma_px=1.0,
                 occlusion_rate=0.01, occlusion_recover=0.15, imu_loss=0.01):
        self.gyro_sigma_rad_s = gyro_sigma_rad_s
        self.gyro_bias_rad_s = gyro_bias_rad_s
        self.accel_sigma_m_s2 = accel_sigma_m_s2
        self.accel_bias_m_s2 = accel_bias_m_s2
        self.marker_sigma_m = marker_sigma_m
        self.pixel_sigma_px = pixel_sigma_px
        self.occlusion_rate = occlusion_rate          # per frame: visible -> occluded
        self.occlusion_recover = occlusion_recover    # per frame: occluded -> visible
        self.imu_loss = imu_loss                      # per frame and IMU

    @classmethod
    def ideal(cls):
        return cls(0, 0, 0, 0, 0, 0, 0, 1, 0)


def spline_of(q_si, fps):
    """(t (F,), the cubic spline (natural ends) through q (F, n) sampled at fps)."""
    t = np.arange(len(q_si)) / float(fps)
    return t, CubicSpline(t, q_si, axis=0, bc_type="natural")


def derivatives(q_si, fps):
    """(qd, qdd) (F, n) of q (F, n) sampled at fps, from a cubic spline (natural ends)."""
    t, cs = spline_of(q_si, fps)
    return cs(t, 1), cs(t, 2)


def _occlusions(rng, F, K, rate, recover):
    vis = np.ones((F, K), bool)
    state = np.ones(K, bool)
    for f in range(F):
        u = rng.random(K)
        state = np.where(state, u >= rate, u < recover)
        vis[f] = state
    return vis


def simulate(skeleton, q_dof, fps, noise=None, seed=0, imu=True, markers3d=True, camera=None,
             camera_timing=None):
    """Observations (list of Observation, one per frame) and the truth (dict) for q (F, ndof)."""
    noise = SensorNoise() if noise is None else noise
    rng = np.random.default_rng(seed)
    model = model_of(skeleton)
    mm = MeasurementModel(model)
    q_dof = np.asarray(q_dof, float)
    F = len(q_dof)
    q = model.to_si(q_dof)
    t_f, spline = spline_of(q, fps)
    qd, qdd = spline(t_f, 1), spline(t_f, 2)
    feats = skeleton.features
    imu_idx = np.array([k for k, f in enumerate(feats) if f.kind == "imu"], int) if imu else np.zeros(0, int)
    mk_idx = np.array([k for k, f in enumerate(feats) if f.kind == "marker"], int)
    gyro = np.zeros((F, len(imu_idx), 3))
    acc = np.zeros((F, len(imu_idx), 3))
    mpos = np.zeros((F, len(mk_idx), 3))
    for f in range(F):
        kin = model.kinematics(q[f])
        if len(imu_idx):
            gyro[f], acc[f] = mm.imu_predict(kin, qd[f], qdd[f], imu_idx)
        if len(mk_idx):
            mpos[f] = mm.features(kin, mk_idx)[0]
    Ki = len(imu_idx)
    gb = rng.normal(0, noise.gyro_bias_rad_s, (Ki, 3))
    ab = rng.normal(0, noise.accel_bias_m_s2, (Ki, 3))
    gyro_n = gyro + gb + rng.normal(0, noise.gyro_sigma_rad_s, gyro.shape)
    acc_n = acc + ab + rng.normal(0, noise.accel_sigma_m_s2, acc.shape)
    imu_ok = rng.random((F, Ki)) >= noise.imu_loss
    vis = _occlusions(rng, F, len(mk_idx), noise.occlusion_rate, noise.occlusion_recover)
    m3 = mpos + rng.normal(0, noise.marker_sigma_m, mpos.shape)
    uv = None
    ages = None
    if camera is not None and camera_timing is not None:
        uv, ages = _timed_pixels(model, mm, mk_idx, spline, t_f, camera, camera_timing)
        uv = uv + rng.normal(0, noise.pixel_sigma_px, uv.shape)
        vis2 = vis & camera.in_image(np.nan_to_num(uv, nan=-1.0)) & np.isfinite(ages)
    elif camera is not None:
        uv = camera.project(mpos) + rng.normal(0, noise.pixel_sigma_px, mpos.shape[:2] + (2,))
        vis2 = vis & camera.in_image(np.nan_to_num(uv, nan=-1.0))
    obs = []
    for f in range(F):
        o = Observation(f / float(fps), camera=camera)
        for i, k in enumerate(imu_idx):
            o.imu[feats[k].name] = (gyro_n[f, i], acc_n[f, i]) if imu_ok[f, i] else None
        for i, k in enumerate(mk_idx):
            if markers3d:
                o.markers3d[feats[k].name] = m3[f, i] if vis[f, i] else None
            if uv is not None:
                o.markers2d[feats[k].name] = uv[f, i] if vis2[f, i] else None
                if ages is not None and vis2[f, i]:
                    o.markers2d_lag_s[feats[k].name] = float(ages[f, i])
        obs.append(o)
    truth = {"q_si": q, "qd_si": qd, "qdd_si": qdd, "gyro_rad_s": gyro, "accel_m_s2": acc,
             "markers_m": mpos, "imu_names": [feats[k].name for k in imu_idx],
             "marker_names": [feats[k].name for k in mk_idx]}
    return obs, truth


def _timed_pixels(model, mm, mk_idx, spline, t_f, camera, timing):
    """(uv (F, K, 2), age (F, K) s, nan where frame f got no new camera frame): the newest
    camera frame delivered by each frame's time, each marker where its row saw it."""
    F, K = len(t_f), len(mk_idx)
    uv = np.full((F, K, 2), np.nan)
    age = np.full((F, K), np.nan)
    last = None
    H = float(camera.height_px)
    for f in range(F):
        k = timing.newest(t_f[f])
        if k is None or k == last:
            continue
        last = k
        t0 = timing.first_row_mid_s(k)
        t1 = t0 + timing.readout_s
        # before the clip starts the body is where it starts (the spline is not extrapolated)
        p0 = mm.features(model.kinematics(spline(max(t0, 0.0))), mk_idx)[0]
        p1 = mm.features(model.kinematics(spline(max(t1, 0.0))), mk_idx)[0]
        v = camera.project(p0)[:, 1]
        # row v seen at t0 + v line_s: the marker blended between the first and the last row
        a = np.clip(np.nan_to_num(v / H), 0.0, 1.0)
        uv[f] = camera.project(p0 + a[:, None] * (p1 - p0))
        age[f] = t_f[f] - (t0 + uv[f][:, 1] * timing.line_s)
    return uv, age


def add_sensors(skeleton, skin_m=0.05, min_mass_kg=0.05):
    """A copy of the skeleton with one IMU and two markers on every link with mass and a dof
    frame (BVH-derived skeletons come without feature points).

    IMU: half-way along the link's centre of mass, pushed skin_m out sideways; markers: at
    the centre of mass and at half of it, pushed out in two different directions, so a twist
    about the bone moves them.
    """
    d = skeleton.to_dict()
    model = model_of(skeleton)
    have = {f["name"] for f in d["features"]}
    for i, ln in enumerate(skeleton.links):
        if ln.mass < min_mass_kg or model.link_body[i] < 0:
            continue
        c = ln.com if np.linalg.norm(ln.com) > 1e-6 else np.array([0.0, 0.0, -0.05])
        u = c / np.linalg.norm(c)
        # two directions perpendicular to the bone
        e = np.eye(3)[int(np.argmin(np.abs(u)))]
        s1 = np.cross(u, e)
        s1 /= np.linalg.norm(s1)
        s2 = np.cross(u, s1)
        for name, kind, pos in ((ln.name + "_imu", "imu", 0.5 * c + skin_m * s1),
                                (ln.name + "_m1", "marker", c + skin_m * s2),
                                (ln.name + "_m2", "marker", 0.5 * c - skin_m * s1 + 0.5 * skin_m * s2)):
            if name not in have:
                d["features"].append({"name": name, "link": ln.name, "kind": kind,
                                      "position": [float(v) for v in pos], "orientation": [1, 0, 0, 0]})
    return Skeleton.from_dict(d, where=skeleton.name)


def reduce_skeleton(skeleton, q_dof, tol=1e-6):
    """Drop dofs that never move: constant translations at the start of a link are folded into
    its offset, rotations constant at 0 are removed. Returns (skeleton, q_dof (F, n'), kept)."""
    q_dof = np.asarray(q_dof, float)
    lo, hi = q_dof.min(axis=0), q_dof.max(axis=0)
    const = (hi - lo) <= tol
    links = [Link(ln.name, ln.parent, ln.offset.copy(), ln.mass, ln.com, ln.inertia) for ln in skeleton.links]
    keep = []
    for i, ln in enumerate(skeleton.links):
        rotated = False
        for j in ln.dofs:
            dof = skeleton.dofs[j]
            if dof.kind == "translation" and const[j] and not rotated:
                links[i].offset = links[i].offset + dof.axis * q_dof[0, j] * dof.scale
                continue
            if dof.kind == "rotation":
                if const[j] and abs(q_dof[0, j]) <= tol:
                    continue
                rotated = True
            keep.append(j)
    keep = sorted(keep)
    dofs = []
    for j in keep:
        d = skeleton.dofs[j]
        dofs.append(Dof(d.name, d.link, d.kind, d.axis, min(d.lo, lo[j]), max(d.hi, hi[j]),
                        min(max(d.home, min(d.lo, lo[j])), max(d.hi, hi[j])), d.unit))
    feats = [Feature(f.name, f.link, f.kind, f.position, f.orientation) for f in skeleton.features]
    sk = Skeleton(links, dofs, feats, name=skeleton.name, gravity=skeleton.gravity, meta=skeleton.meta)
    return sk, q_dof[:, keep], np.array(keep, int)
