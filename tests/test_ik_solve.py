"""Inverse kinematics (device/body/ik.py): exact recovery, joint limits, orientations, pixels."""

import numpy as np
import pytest

from device.body.human import human_model
from device.body.ik import ik_frames, solve_ik
from device.body.kinematics import forward_kinematics
from device.estimate.observation import Camera


@pytest.fixture(scope="module")
def pose():
    sk = human_model(floating=True)
    rng = np.random.default_rng(0)
    q = np.clip(sk.home + rng.uniform(-0.12, 0.12, sk.ndof) * (sk.hi - sk.lo), sk.lo, sk.hi)
    q[sk.dof_index("root_tz")] = 1.0
    return sk, q, forward_kinematics(sk, q)


def markers(sk, p):
    return {f.name: p.feature_pos_m[k] for k, f in enumerate(sk.features) if f.kind == "marker"}


def rot_mask(sk):
    return np.array([d.kind == "rotation" for d in sk.dofs])


def test_recovers_a_pose_from_exact_markers(pose):
    sk, q, p = pose
    start = q + np.random.default_rng(1).normal(0, 4.0, sk.ndof) * rot_mask(sk)
    qe, info = solve_ik(sk, positions=markers(sk, p), q0=start)
    assert info["rms_residual"] < 1e-6
    np.testing.assert_allclose(qe[rot_mask(sk)], q[rot_mask(sk)], atol=1e-3)


def test_respects_joint_limits(pose):
    sk, q, p = pose
    far = {"l_hand_m1": p.feature_pos_m[sk.feature_names.index("l_hand_m1")] + [0, 3.0, 0]}
    qe, _ = solve_ik(sk, positions=far, q0=q)
    assert np.all(qe >= sk.lo - 1e-9) and np.all(qe <= sk.hi + 1e-9)
    qu, _ = solve_ik(sk, positions=far, q0=q, clamp=False)
    assert np.any((qu < sk.lo - 1e-6) | (qu > sk.hi + 1e-6))


def test_segment_orientations_give_the_joint_angles(pose):
    sk, q, p = pose
    imu = {f.name: p.feature_rot[k] for k, f in enumerate(sk.features) if f.kind == "imu"}
    qe, _ = solve_ik(sk, orientations=imu, positions={"pelvis": p.link_pos_m[0]},
                     q0=q + 3.0 * rot_mask(sk))
    # dofs between two IMU-carrying segments are determined by the orientations
    for name in ("lumbar_flex", "l_elbow_flex", "r_knee_flex", "l_hip_abd", "r_shoulder_rot", "root_yaw"):
        j = sk.dof_index(name)
        assert abs(qe[j] - q[j]) < 1e-3, name


def test_pixels_in_one_camera(pose):
    sk, q, p = pose
    cam = Camera.look_at(p.link_pos_m[0] + [4.0, 1.0, 0.3], p.link_pos_m[0], 1000.0, 1920, 1080)
    px = {n: cam.project(v) for n, v in markers(sk, p).items()}
    start = q + np.random.default_rng(2).normal(0, 2.0, sk.ndof) * rot_mask(sk)
    qe, info = solve_ik(sk, pixels=px, camera=cam, q0=start)
    assert info["rms_residual"] < 1e-6          # reprojection fits (depth may stay ambiguous)
    fit = cam.project(forward_kinematics(sk, qe).feature_pos_m)
    ref = cam.project(p.feature_pos_m)
    mk = [k for k, f in enumerate(sk.features) if f.kind == "marker"]
    assert np.abs(fit[mk] - ref[mk]).max() < 1e-2


def test_frames_with_missing_markers():
    sk = human_model()
    t = np.arange(10) / 30.0
    q = np.clip(sk.home + 10.0 * np.sin(2 * np.pi * t[:, None] + np.arange(sk.ndof)), sk.lo, sk.hi)
    p = forward_kinematics(sk, q).feature_pos_m
    mk = [k for k, f in enumerate(sk.features) if f.kind == "marker"]
    T = p[:, mk].copy()
    T[3, :5] = np.nan                            # occluded markers drop out
    Q = ik_frames(sk, [sk.features[k].name for k in mk], T, q0=q[0])
    assert Q.shape == q.shape and np.all(np.isfinite(Q))
    m = rot_mask(sk) & np.array(["finger" not in d.name and "thumb" not in d.name for d in sk.dofs])
    assert np.sqrt(np.mean((Q - q)[:, m] ** 2)) < 1.0


def test_posture_prior_and_bad_names(pose):
    sk, q, p = pose
    # no targets at all: the prior decides
    qe, _ = solve_ik(sk, positions={"pelvis": p.link_pos_m[0]}, q0=q, q_prior=sk.home, prior_weight=1.0)
    assert abs(qe[sk.dof_index("l_elbow_flex")] - sk.home[sk.dof_index("l_elbow_flex")]) < 1.0
    with pytest.raises(ValueError, match="neither a feature nor a link"):
        solve_ik(sk, positions={"tail": [0, 0, 0]})
