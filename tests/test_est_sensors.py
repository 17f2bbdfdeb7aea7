"""Camera, simulator, per-segment orientation baselines (Fusion, quaternion EKF on real data)."""

import numpy as np
import pytest

from device.body.human import human_model
from device.estimate import make_estimator
from device.estimate.observation import Camera
from device.estimate.simulate import SensorNoise, add_sensors, reduce_skeleton, simulate


def test_camera_projection_and_jacobian():
    cam = Camera.look_at((3.0, 1.0, 1.5), (0.0, 0.0, 1.0), 800.0, 1280, 720)
    p = np.array([[0.1, -0.2, 1.1], [0.0, 0.0, 1.0]])
    uv = cam.project(p)
    np.testing.assert_allclose(uv[1], [640.0, 360.0], atol=1e-9)     # the target is centred
    J = cam.project_jacobian(p)
    eps = 1e-6
    for i in range(3):
        e = np.zeros(3)
        e[i] = eps
        np.testing.assert_allclose(J[:, :, i], (cam.project(p + e) - cam.project(p - e)) / (2 * eps),
                                   rtol=1e-6, atol=1e-6)
    assert np.all(np.isnan(cam.project(np.array([[6.0, 2.0, 1.5]]))))  # behind the camera


def test_simulated_imu_at_rest_reads_gravity():
    sk = human_model()
    q = np.repeat(sk.home[None], 20, axis=0)
    obs, truth = simulate(sk, q, 60.0, noise=SensorNoise.ideal(), seed=0)
    g, a = obs[10].imu["pelvis_imu"]
    np.testing.assert_allclose(g, 0.0, atol=1e-9)
    np.testing.assert_allclose(a, [0.0, 0.0, 9.81], atol=1e-9)     # specific force: up
    assert all(v is not None for v in obs[10].markers3d.values())


def test_simulated_noise_is_seeded_and_occludes():
    sk = human_model()
    q = np.repeat(sk.home[None], 200, axis=0)
    a, _ = simulate(sk, q, 60.0, seed=3)
    b, _ = simulate(sk, q, 60.0, seed=3)
    assert np.array_equal(a[50].imu["pelvis_imu"][1], b[50].imu["pelvis_imu"][1])
    missing = np.mean([v is None for o in a for v in o.markers3d.values()])
    assert 0.02 < missing < 0.2


def test_reduce_and_add_sensors():
    sk = human_model(floating=True)
    q = np.repeat(sk.home[None], 5, axis=0)
    q[:, sk.dof_index("l_knee_flex")] = np.linspace(0, 30, 5)
    q[:, sk.dof_index("root_tz")] = 1.0
    sk2, q2, keep = reduce_skeleton(sk, q)
    assert sk2.dof_names == ["l_knee_flex"]
    assert abs(sk2.links[0].offset[2] - 1.0) < 1e-12                  # constant root height folded
    sk3 = add_sensors(sk2)
    kinds = [f.kind for f in sk3.features]
    assert kinds.count("imu") > 10


def test_fusion_baseline_tracks():
    pytest.importorskip("imufusion", reason="imufusion (test extra) not installed")
    sk = human_model()
    t = np.arange(60) / 60.0
    q = np.clip(sk.home + 8.0 * np.sin(2 * np.pi * 0.7 * t[:, None] + np.arange(sk.ndof)), sk.lo, sk.hi)
    obs, _ = simulate(sk, q, 60.0, seed=2)
    est = make_estimator("fusion", sk, 1 / 60.0)
    est.initialise(q[0], t_s=0.0)
    qe = np.array([est.step(o) for o in obs])
    m = np.array([d.kind == "rotation" and "finger" not in d.name and "thumb" not in d.name for d in sk.dofs])
    assert np.sqrt(np.mean((qe - q)[10:, m] ** 2)) < 5.0


def test_orientation_ekf_on_broad_against_optical_reference(shared_data):
    """BROAD trial 02 (real IMU), its first 30 s of movement (which starts at 40 s):
    inclination error vs OptiTrack under 2 degrees (the benchmark runs the whole trial)."""
    sio = pytest.importorskip("scipy.io")
    from device.estimate.fusion import quat_to_matrix
    from device.estimate.orientation import OrientationEKF

    path = shared_data / "imu" / "02_undisturbed_slow_rotation_B.mat"
    if not path.exists():
        pytest.skip("%s absent" % path)
    d = sio.loadmat(str(path))
    fs = float(d["sampling_rate"].ravel()[0])
    n = int(70 * fs)
    f = OrientationEKF(1.0 / fs)
    q = np.array([f.step(g, a) for g, a in zip(d["imu_gyr"][:n], d["imu_acc"][:n])])
    ref = d["opt_quat"][:n]
    ok = np.all(np.isfinite(ref), axis=1) & d["movement"].ravel()[:n].astype(bool)

    assert ok.sum() > 1000
    e = [np.degrees(np.arccos(np.clip(quat_to_matrix(a)[2] @ quat_to_matrix(b)[2], -1, 1)))
         for a, b in zip(q[ok], ref[ok])]
    assert np.sqrt(np.mean(np.square(e))) < 2.0
