"""The camera twin keeps a Pi camera's timing (free-running frames, exposure, rolling shutter,
hand-over after readout), the Pi backend stamps frames with SensorTimestamp, and the unit and
the estimators take each marker as seen when it was (device/sensors/frameclock.py)."""

import sys
import types

import numpy as np
import pytest

from device.body.human import human_model
from device.body.kinematics import forward_kinematics
from device.estimate.measurement import MeasurementModel
from device.estimate.observation import Camera, Observation
from device.estimate.process import ConstantAcceleration
from device.sensors.camera import CameraModel
from device.sensors.camera_sim import SimCamera
from device.sensors.frameclock import FrameClock


def test_frame_clock_times_are_exact():
    fc = FrameClock(fps=30.0, exposure_s=0.010, readout_s=0.024, height_px=480, phase_s=0.004)
    assert fc.sensor_timestamp_s(2) == pytest.approx(0.004 + 2 / 30 + 0.010)
    assert fc.first_row_mid_s(2) == pytest.approx(0.004 + 2 / 30 + 0.005)
    assert fc.line_s == pytest.approx(0.024 / 480)
    # handed over a readout and one frame period (the ISP) after SensorTimestamp
    d0 = 0.004 + 0.010 + 0.024 + 1 / 30
    assert fc.delivered_s(0) == pytest.approx(d0)
    assert fc.newest(d0 - 1e-6) is None
    assert fc.newest(d0) == 0
    assert fc.newest(d0 + 1 / 30 - 1e-6) == 0 and fc.newest(d0 + 1 / 30) == 1
    with pytest.raises(ValueError, match="exposure"):
        FrameClock(fps=30.0, exposure_s=0.05)


class _Now:
    t = 0.0

    def __call__(self):
        return self.t


def _moving_scene(speed_m_s):
    """One marker 3 m in front of the camera moving along world +y (image +u) at speed."""
    return lambda t=0.0: {"m": np.array([0.0, speed_m_s * t, 1.0])}


def test_sim_camera_hands_over_each_frame_once_late_and_row_by_row():
    model = CameraModel.looking_at((3, 0, 1), (0, 0, 1))
    now = _Now()
    fc = FrameClock(fps=30.0, exposure_s=0.010, readout_s=0.024, height_px=model.height, phase_s=0.0)
    cam = SimCamera(model, scene=_moving_scene(2.0), seed=1, occlusion=0.0, clock=now, timing=fc)
    now.t = fc.delivered_s(0) - 1e-6
    assert cam.capture() == (None, None)
    now.t = fc.delivered_s(0)
    img, t = cam.capture()
    assert img is not None and t == pytest.approx(fc.first_row_mid_s(0))
    assert cam.capture() == (None, None)              # the same frame is not handed over twice
    now.t = fc.delivered_s(3) + 0.001
    img, t = cam.capture()
    assert t == pytest.approx(fc.first_row_mid_s(3)) and cam.dropped == 2
    # the marker sits mid-image (row ~240): drawn where it was when that row was exposed
    u, v = cam.truth_uv["m"]
    seen_s = t + v * fc.line_s
    uv_then = model.project([[0.0, 2.0 * seen_s, 1.0]])[0][0]
    assert abs(u - uv_then[0]) < 0.05                 # px: linear blend of first and last row
    uv_first = model.project([[0.0, 2.0 * t, 1.0]])[0][0]
    assert abs(u - uv_first[0]) > 3.0                 # 12 ms of 2 m/s at 3 m: ~4 px further


def test_a_timed_camera_needs_a_clock():
    with pytest.raises(ValueError, match="clock"):
        SimCamera(timing=FrameClock())


def test_unit_ages_each_marker_by_its_frame_and_row():
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    unit = build_unit(default_config(body="human", camera=True))
    loop = CaptureLoop(unit)
    loop.run(frames=12)
    cam = unit.camera
    assert cam.timing is not None and cam.line_s == pytest.approx(0.024 / cam.model.height)
    k = cam._last_k
    t_s = loop.frame_index * loop.period_s - loop.period_s
    ages = unit.markers2d_lag_s
    assert ages and set(ages) <= set(unit.markers2d)
    for name, age in ages.items():
        v = unit.markers2d[name][1]
        assert age == pytest.approx(t_s - cam.timing.first_row_mid_s(k) - v * cam.line_s, abs=1e-9)
        # at least a readout's half of a 10 ms exposure plus a frame of ISP, at most that plus
        # a frame's wait for the loop's tick and the readout
        assert 0.005 + 1 / 30 - 1e-9 <= age <= 0.005 + 0.024 + 2 / 30 + 1e-9


@pytest.fixture(scope="module")
def ca_setup():
    from tests.test_ekf_jacobians import floating_human_pose
    return floating_human_pose(seed=11, spread=0.3)


def test_aged_markers_are_predicted_where_the_body_was(ca_setup):
    """Equal ages a: h = project(p(q - a qd + a^2/2 qdd)) exactly; H_q and H_qd = -a H_q match
    finite differences (the qdd columns, a^2/2 H_q, are left out of H: second order in a)."""
    sk, model, rng, q = ca_setup
    proc = ConstantAcceleration(model, 1 / 60)
    cam = Camera.look_at((4.0, 1.0, 1.2), (0.0, 0.0, 1.0), 900.0, 1280, 720)
    mm = MeasurementModel(model)
    names = [f.name for f in sk.features if f.kind == "marker"][:12]
    a = 0.07
    obs = Observation(0.0, camera=cam, markers2d={n: np.zeros(2) for n in names},
                      markers2d_lag_s={n: a for n in names})
    n = model.n
    x = np.concatenate([q, rng.normal(0, 1.0, n), rng.normal(0, 5.0, n)])
    z, h, H, r = mm.linearise(proc.linearise(x), obs, proc.nx)
    q_then = x[:n] - a * x[n:2 * n] + 0.5 * a * a * x[2 * n:]
    sk_q = model.from_si(q_then)
    P = forward_kinematics(sk, sk_q).feature_pos_m[[mm.index[m] for m in names]]
    assert np.abs(h - cam.project(P).ravel()).max() < 1e-6

    def hx(xx):
        return mm.linearise(proc.linearise(xx), obs, proc.nx)[1]
    eps = 1e-6
    for j in list(range(0, n, 5)) + list(range(n, 2 * n, 5)):
        e = np.zeros_like(x)
        e[j] = eps
        num = (hx(x + e) - hx(x - e)) / (2 * eps)
        assert np.abs(H[:, j] - num).max() <= 1e-4 * max(1.0, np.abs(num).max()), j
    assert np.allclose(H[:, n:2 * n], -a * H[:, :n])
    # without ages: the marker as it is now
    h0 = mm.linearise(proc.linearise(x), Observation(0.0, camera=cam, markers2d={m: np.zeros(2) for m in names}),
                      proc.nx)[1]
    P0 = forward_kinematics(sk, model.from_si(x[:n])).feature_pos_m[[mm.index[m] for m in names]]
    assert np.abs(h0 - cam.project(P0).ravel()).max() < 1e-6


class _Request:
    def __init__(self, arr, md):
        self.arr, self.md = arr, md

    def get_metadata(self):
        return self.md

    def make_array(self, name):
        assert name == "main"
        return self.arr


class _FakePicamera2:
    def __init__(self, index):
        self.post_callback = None
        self.sensor_modes = [{"size": (640, 480), "fps": 206.65}, {"size": (1640, 1232), "fps": 41.85}]

    def create_video_configuration(self, main):
        return {"main": main}

    def configure(self, cfg):
        self.cfg = cfg

    def camera_configuration(self):
        return {"sensor": {"output_size": (1640, 1232)}}

    def start(self):
        pass

    def stop(self):
        pass

    def close(self):
        pass


def test_picam_backend_stamps_frames_with_sensor_timestamp(monkeypatch):
    """picamera2's post_callback: the newest frame, once, at SensorTimestamp - ExposureTime/2."""
    monkeypatch.setitem(sys.modules, "picamera2", types.SimpleNamespace(Picamera2=_FakePicamera2))
    from device.sensors.camera_picam import PicamCamera
    cam = PicamCamera(0)
    assert cam.line_s == pytest.approx(1 / 41.85 / 480)   # the 1640x1232 mode's shortest frame
    assert cam.capture() == (None, None)
    yuv = np.arange(720 * 640, dtype=np.uint8).reshape(720, 640)
    for k in range(2):
        cam.cam.post_callback(_Request(yuv + k, {"SensorTimestamp": 5_000_000_000 + k * 33_333_333,
                                                 "ExposureTime": 10000}))
    img, t = cam.capture()
    assert img.shape == (480, 640) and img[0, 1] == yuv[0, 1] + 1
    assert t == pytest.approx(5.0 + 0.033333333 - 0.005, abs=1e-9)
    assert cam.capture() == (None, None) and cam.frames == 2


def test_orient_root_is_carried_over_frames_without_a_camera_frame():
    """A camera free-running beside the loop leaves some frames without markers: the root is
    carried along its velocity, never NaN (the former twin hid this: a frame every tick)."""
    from device.capture.config import default_config
    from tests.capture_run import root_errors
    cfg = default_config(body="human-floating", camera=True, estimator="orient")
    cfg["camera"]["fps"] = 20.0                       # a slower camera: a third of the ticks have none
    d, _ = root_errors(cfg, 3.0, start=45)
    assert not np.isnan(d).any()
    assert np.sqrt(np.mean(d ** 2)) < 0.04


def test_frame_clock_refuses_a_readout_longer_than_a_frame():
    with pytest.raises(ValueError, match="readout"):
        FrameClock(fps=60.0, exposure_s=0.005, readout_s=0.024)


def test_simulated_pixels_are_where_the_body_was_at_each_markers_age():
    """device/estimate/simulate.py with camera_timing: each 2D marker is the body at t - age."""
    from device.body.dynamics import model_of
    from device.estimate.simulate import SensorNoise, simulate, spline_of
    sk = human_model()
    t = np.arange(60) / 60.0
    q = sk.home + 20.0 * np.sin(2 * np.pi * 1.0 * t[:, None]) * np.array([d.kind == "rotation" for d in sk.dofs])
    q = np.clip(q, sk.lo, sk.hi)
    cam = Camera.look_at((4.0, 1.0, 1.2), (0.0, 0.0, 1.0), 900.0, 1280, 720)
    fc = FrameClock(fps=60.0, exposure_s=0.005, readout_s=1 / 120.0, height_px=720, phase_s=0.004)
    obs, _ = simulate(sk, q, 60.0, noise=SensorNoise.ideal(), imu=False, markers3d=False, camera=cam,
                      camera_timing=fc)
    model = model_of(sk)
    tt, spline = spline_of(model.to_si(q), 60.0)
    names = [f.name for f in sk.features]
    checked = 0
    for f in (20, 40):
        o = obs[f]
        for name, uv in o.markers2d.items():
            if uv is None:
                continue
            age = o.markers2d_lag_s[name]
            assert 0.0025 + 1 / 60.0 - 1e-9 <= age <= 0.0025 + 1 / 120.0 + 2 / 60.0 + 1e-9
            P = forward_kinematics(sk, model.from_si(spline(tt[f] - age))).feature_pos_m[names.index(name)]
            assert np.abs(np.asarray(uv) - cam.project(P[None])[0]).max() < 0.05     # px
            checked += 1
    assert checked > 20


def test_picam_frame_without_timestamp_or_broken_is_counted_not_raised(monkeypatch):
    monkeypatch.setitem(sys.modules, "picamera2", types.SimpleNamespace(Picamera2=_FakePicamera2))
    from device.sensors.camera_picam import PicamCamera
    cam = PicamCamera(0)
    yuv = np.zeros((720, 640), np.uint8)
    cam.cam.post_callback(_Request(yuv, {}))                 # no SensorTimestamp
    img, t = cam.capture()
    assert img is not None and cam.unstamped == 1 and np.isfinite(t)

    class Broken(_Request):
        def make_array(self, name):
            raise RuntimeError("buffer gone")
    cam.cam.post_callback(Broken(yuv, {"SensorTimestamp": 1}))
    assert cam.bad_frames == 1 and "buffer gone" in cam.last_error and cam.capture() == (None, None)
