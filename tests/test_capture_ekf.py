"""The capture unit estimating with the torque-state EKF (its default estimator).

What went wrong before (docs/capture.md, "Estimation"): the EKF integrated a 30 Hz frame in one
RK4 step (it diverged: the benchmark only ever ran it at 60 Hz), the calibrated gyro bias was
not removed, the subject's blend-in jumped the velocity (a 180 m/s^2 accelerometer spike), the
clip's own BVH skeleton has no dynamics worth the name, the BNO055s' fused orientations never
reached the EKF, an Euler shoulder through gimbal lock left the filter on a wrong branch, and a
threaded BLAS made a frame cost 100+ ms. Seeded; no wall-clock assertions.
"""

import numpy as np
import pytest

from device.capture.config import default_config
from device.capture.loop import CaptureLoop
from device.capture.unit import build_unit
from tests.capture_run import run_and_score


def _run(cfg, clip=None, seconds=4.0):
    return run_and_score(cfg, clip, seconds)


def test_the_torque_state_ekf_is_the_default_estimator():
    assert default_config()["estimator"] == "ekf"


def test_real_clip_on_the_human_model_within_2_deg(shared_data):
    """A real CMU clip (held out: not the bundled one), default unit: the human model performs
    it (retargeted), 22 BNO055 twins, the EKF at 30 Hz; 5 s, 3.4 s of them scored."""
    cfg = default_config(seed=3)
    cfg["subject"]["max_s"] = 4.0                      # retarget only what is captured
    rms, unit, loop = _run(cfg, str(shared_data / "bvh" / "131_03.bvh"), seconds=5.0)
    from device.estimate.ekf import JointEKF
    from device.estimate.process import TorqueProcess
    assert isinstance(unit.estimator, JointEKF) and isinstance(unit.estimator.process, TorqueProcess)
    assert unit.retargeted and unit.skeleton.name == "human48" and unit.skeleton.ndof == 48
    assert unit.estimator.failures == 0
    assert loop.stats.frames == 150 and loop.stats.skipped == 0
    assert rms <= 2.0, rms


def test_human_model_synthetic_motion_with_camera_within_2_deg():
    """human48 + camera: gyro, specific force and 2D markers all reach the EKF."""
    rms, unit, _ = _run(default_config(body="human", camera=True), seconds=3.0)
    assert unit.estimator.nz > 22 * 6                   # IMU rows and marker rows
    assert rms <= 2.0, rms


def test_the_ekf_needs_sub_steps_at_30_hz():
    """The root cause, in the estimator: one RK4 step per 33 ms frame diverges on IMU-only
    observations of the human model; sub-steps of <= 1/60 s (the default) track it."""
    from device.body.human import human_model
    from device.capture.unit import _synthetic_motion
    from device.estimate import make_estimator
    from device.estimate.simulate import SensorNoise, simulate

    from device.body.skeleton import Feature
    from device.capture.config import place_sensors

    sk = human_model()
    have = {f.name for f in sk.features}
    for s in place_sensors(sk):                        # the unit's 22 IMUs (fingers, toes too)
        if s["name"] not in have:
            sk.features.append(Feature(s["name"], sk.link_index(s["link"]), "imu", s["position"]))
    fps = 30.0
    fn = _synthetic_motion(sk, 1)
    q = np.array([fn(t) for t in np.arange(int(3 * fps)) / fps])
    obs, _ = simulate(sk, q, fps, noise=SensorNoise(), seed=11, imu=True, markers3d=False)
    rot = np.array([d.kind == "rotation" for d in sk.dofs])
    res = {}
    for ms in (None, 1.0 / 60):
        est = make_estimator("ekf", sk, 1.0 / fps, max_step_s=ms)
        est.initialise(q[0], t_s=0.0)
        out = np.array([est.step(o) for o in obs])
        d = (out[15:, rot] - q[15:, rot] + 180.0) % 360.0 - 180.0
        res[ms] = float(np.sqrt(np.mean(d ** 2)))
    assert est.process.substeps == 2
    assert res[1.0 / 60] <= 1.5, res
    assert res[None] > 5.0, res


def test_the_subject_blends_in_without_a_velocity_jump():
    unit = build_unit(default_config(body="human"))
    s = unit.subject
    t1, h = s.calib_s + s.blend_s, 1e-4
    v_before = (s.q_true(t1) - s.q_true(t1 - h)) / h
    v_after = (s.q_true(t1 + h) - s.q_true(t1)) / h
    assert np.abs(v_after - v_before).max() < 0.5          # deg/s (was a jump of tens)
    assert np.allclose(s.q_true(s.calib_s), s.q_true(0.0))


def test_gyro_bias_from_calibration_reaches_the_ekf_removed():
    unit = build_unit(default_config(body="human"))
    loop = CaptureLoop(unit)
    seen = []
    step = None

    def spy(obs):
        seen.append(obs)
        return step(obs)
    loop.run(frames=30)                                   # calibration (1 s)
    assert unit.estimator is not None
    step = unit.estimator.step
    unit.estimator.step = spy
    loop.run(frames=31)
    bias = unit.calibrated["gyro_bias"]
    name = "l_thigh_imu"
    true_bias = unit.subject.sensors[unit.subject.index[name]]["gyro_bias"]
    assert np.linalg.norm(bias[name] - true_bias) < np.radians(0.1)
    # the subject stands still here: what the EKF gets is the noise, not the 0.5 deg/s bias
    assert np.linalg.norm(seen[-1].imu[name][0]) < np.linalg.norm(true_bias) + np.radians(0.3)


def test_blas_is_single_threaded_for_the_ekf():
    from device.estimate.blas import blas_threads
    build_unit(default_config(body="humanoid18"))
    threads = blas_threads()
    if not threads:
        pytest.skip("no OpenBLAS loaded in this process")
    assert set(threads.values()) == {1}, threads


def test_fused_orientation_rows_match_finite_differences():
    """obs.orient (a BNO055's world orientation): y = log(R_meas R_s'), H_q = world axes."""
    from device.body.dynamics import model_of
    from device.body.human import human_model
    from device.estimate.measurement import MeasurementModel
    from device.estimate.observation import Observation
    from device.estimate.process import ConstantVelocity

    sk = human_model()
    model = model_of(sk)
    mm = MeasurementModel(model)
    proc = ConstantVelocity(model, 1 / 30.0)
    rng = np.random.default_rng(4)
    q0 = model.to_si(np.clip(sk.home + rng.normal(0, 20, sk.ndof), sk.lo, sk.hi))
    dq = rng.normal(0, 1e-4, sk.ndof)
    names = ["l_forearm_imu", "r_shank_imu", "head_imu"]
    idx = np.array([mm.index[n] for n in names])
    _, R1, _ = mm.features(model.kinematics(q0 + dq), idx)
    obs = Observation(0.0, orient=dict(zip(names, R1)))
    z, h, H, r = mm.linearise(proc.linearise(np.r_[q0, np.zeros(sk.ndof)]), obs, 2 * sk.ndof)
    assert z.shape == (9,) and np.allclose(r, 0.02 ** 2)
    assert np.allclose(z - h, H[:, :sk.ndof] @ dq, atol=1e-7)
    assert np.abs(H[:, sk.ndof:]).max() == 0.0


def test_the_unit_passes_fused_orientations_in_the_skeleton_world():
    # ideal sensors: the fused orientation is the truth to 0.15 deg (honest BNO055s add offsets,
    # heading walk, lag and soft tissue: tests/test_honest_sensors.py)
    cfg = default_config(body="human")
    cfg["subject"]["noise"] = {"profile": "ideal"}
    unit = build_unit(cfg)
    loop = CaptureLoop(unit)
    loop.run(frames=30)
    seen = []
    step = unit.estimator.step
    unit.estimator.step = lambda obs: (seen.append(obs), step(obs))[1]
    loop.run(frames=32)
    from device.body.kinematics import forward_kinematics
    obs = seen[-1]
    assert len(obs.orient) == 22
    pose = forward_kinematics(unit.skeleton, unit.subject.q_true(obs.t_s))
    k = [f.name for f in unit.skeleton.features].index("l_thigh_imu")
    R = pose.feature_rot[k]                   # with the calibrated mounting as the feature's
    c = (np.trace(R.T @ obs.orient["l_thigh_imu"]) - 1) / 2
    assert np.degrees(np.arccos(np.clip(c, -1, 1))) < 2.0


def test_branch_recovery_on_a_fast_kick(shared_data):
    """Bandai kick: the arms pass the Euler shoulders' gimbal lock and the model's limits; the
    unit restarts the filter from IK on the fused orientations when they disagree
    (Unit._branch_check). Without it: 22 deg RMS and 15 filter restarts over 12 s."""
    cfg = default_config()
    cfg["subject"]["max_s"] = 4.0
    rms, unit, _ = _run(cfg, str(shared_data / "bvh" / "dataset-1_kick_normal_001.bvh"), seconds=5.0)
    assert unit.branch_resets >= 1 and unit.estimator.failures == 0
    assert rms <= 2.5, rms
    assert unit.branch.most_in_a_frame == 6


def test_branch_recovery_with_honest_sensors():
    """Honest sensors (device/capture/subject.py HONEST): soft tissue and the calibration
    stance leave the arms' fused orientations 15-35 deg from the TRUE pose, so the branch check
    compares each sensor's residual with its own baseline (Unit._branch_check). On the bundled
    clip the right shoulder passes abduction 90 deg at 3 s and slides onto a wrong branch
    (rotation at its 90 deg limit); the check restarts the filter once. Measured: 7.85 deg RMS,
    1 reset (with the former absolute 6 / 12 deg thresholds, which the honest residuals never
    get under, and fused orientations weighted at 0.02 rad: 16.0 deg RMS, 0 resets, the
    shoulder left at its limit). Those figures were the former camera twin's (every frame seen
    at the frame's time); the timed one's are below."""
    cfg = default_config(camera=True)
    cfg["subject"]["max_s"] = 4.5
    cfg["subject"]["noise"] = {"profile": "honest"}
    rms, unit, _ = _run(cfg, seconds=5.5)
    # with the camera twin timed as a Pi camera (frames 63-79 ms old, stamped): 8.81 deg, 3
    # resets; no camera 7.91, 3; a camera seen at the frame's time (the former twin) 7.85, 1
    assert 1 <= unit.branch_resets <= 3 and unit.estimator.failures == 0
    assert 7.5 <= rms <= 9.0, rms
    # the recovery's work is spread over the frames before it fires: 3 seeds x 2 steps a frame
    # (one batched step ~0.4 ms here), not 3 solves to convergence in one frame (~75 ms before)
    assert unit.branch.most_in_a_frame == 6 and unit.branch.iterations % 6 == 0
