"""The simulated subject's honest sensor model (device/capture/subject.py HONEST): each term's
statistics (seeded) and geometry, and the ideal sensors unchanged when chosen."""

import numpy as np
import pytest

from device.capture.lowerbody import legs_skeleton
from device.capture.rot import exp_so3, log_so3, quat_to_mat
from device.capture.subject import HONEST, IDEAL, NOISE, Subject
from device.body.kinematics import forward_kinematics


def many(n=60, link="l_shank"):
    return [{"name": "s%d" % i, "chip": "bno055", "link": link} for i in range(n)]


def still(sk):
    q = sk.home.copy()
    return lambda t: q


def test_ideal_profile_is_the_old_subject_bit_for_bit():
    sk = legs_skeleton()
    a = Subject(sk, still(sk), many(3), seed=4, noise=dict({k: 0.0 for k in HONEST if HONEST[k] != IDEAL[k]},
                                                          gyro_bias_walk_dps_sqrt_s=0.02))
    b = Subject(sk, still(sk), many(3), seed=4, noise={"profile": "ideal"})
    for t in (0.0, 0.01, 0.02):
        a.advance(t)
        b.advance(t)
        for ra, rb in zip(a.sensors, b.sensors):
            assert ra["state"] == rb["state"]
    assert NOISE is HONEST and set(k for k in HONEST if HONEST[k] != IDEAL[k]) == {
        "stance_error_deg", "stm_gain", "accel_scale", "skew_s", "fused_heading_walk_deg_sqrt_s",
        "fused_offset_deg", "fused_lag_s", "gyro_bias_walk_dps_sqrt_s"}
    with pytest.raises(ValueError, match="'profile' must be one of ideal, honest"):
        Subject(sk, still(sk), many(1), noise={"profile": "kind"})


def test_draws_have_the_stated_spread():
    sk = legs_skeleton()
    sub = Subject(sk, still(sk), many(60), seed=1, noise={"profile": "honest"})
    scale = np.array([s["accel_scale"] for s in sub.sensors]) - 1.0          # 180 draws
    assert 0.008 < scale.std() < 0.012 and abs(scale.mean()) < 0.002
    skew = np.array([s["skew_s"] for s in sub.sensors])
    assert skew.min() >= 0.0 and skew.max() <= 0.005 and abs(skew.mean() - 0.0025) < 0.0004
    off = np.degrees(log_so3(np.array([s["fused_off"] for s in sub.sensors])))
    assert 1.7 < off.std() < 2.3
    # the calibration stance: every rotation dof off home by N(0, 2.5 deg) (14 leg + 3 root dofs)
    rot = np.array([d.kind == "rotation" for d in sk.dofs])
    d = (sub.q_true(0.0) - sk.home)[rot]
    assert 1.5 < d.std() < 3.5 and np.all(sub.q_true(0.0)[rot] >= sk.lo[rot])


def test_fused_heading_walks_as_a_random_walk():
    sk = legs_skeleton()
    sub = Subject(sk, still(sk), many(60), seed=2, noise={"profile": "honest", "stance_error_deg": 0.0})
    for k in range(201):
        sub.advance(k * 0.05)                # 10 s
    psi = np.degrees([s["heading_rad"] for s in sub.sensors])
    # sd after T s: 0.3 deg/sqrt(s) * sqrt(10 s) = 0.95 deg (60 sensors: +-20 %)
    assert 0.75 < psi.std() < 1.15
    # ... and the fused quaternion carries it: world-side Rot(up, psi)
    s = sub.sensors[0]
    R_true = forward_kinematics(sk, sub.q_true(sub.t_s)).link_rot[s["link"]] @ s["R_mount"]
    Rq = quat_to_mat(np.array(s["state"]["quat_wxyz"]))
    E = Rq @ (R_true @ s["fused_off"]).T
    assert abs(np.degrees(log_so3(E[None])[0][2]) - psi[0]) < 0.5       # + 0.15 deg quat noise


def test_fusion_lag_and_soft_tissue_geometry():
    sk = legs_skeleton()
    ix = sk.dof_index("l_knee_flex")
    w_dps = 90.0

    def knee(t):
        q = sk.home.copy()
        q[ix] = min(60.0, w_dps * max(t, 0.0))       # the motion clock starts after calib_s
        return q
    only = {"profile": "honest", "stance_error_deg": 0.0, "accel_scale": 0.0, "skew_s": 0.0,
            "fused_heading_walk_deg_sqrt_s": 0.0, "fused_offset_deg": 0.0, "quat_noise_deg": 0.0,
            "jitter_s": 0.0}
    sub = Subject(sk, knee, many(2), seed=3, blend_s=0.0, noise=only)
    s = sub.sensors[0]
    # bending at 90 deg/s: the fused orientation is one fusion lag (10 ms) behind, 0.9 deg
    sub.advance(1.3)
    Rl = forward_kinematics(sk, sub.q_true(1.3)).link_rot[s["link"]] @ s["R_mount"]
    E = exp_so3(s["stm_C"] @ np.radians(sub.q_true(1.3)[s["stm_dofs"]] - sk.home[s["stm_dofs"]]))
    Rq = quat_to_mat(np.array(s["state"]["quat_wxyz"]))
    lag = np.degrees(np.linalg.norm(log_so3(((Rl @ E).T @ Rq)[None])[0]))
    assert lag == pytest.approx(w_dps * 0.01, abs=0.05)
    # held at 60 deg: no lag left, the sensor turned on the shank by C (q - q_stance) exactly
    sub.advance(2.0)
    sub.advance(2.01)
    Rl = forward_kinematics(sk, sub.q_true(2.01)).link_rot[s["link"]] @ s["R_mount"]
    dq = np.radians(sub.q_true(2.01)[s["stm_dofs"]] - sk.home[s["stm_dofs"]])
    Rq = quat_to_mat(np.array(s["state"]["quat_wxyz"]))
    np.testing.assert_allclose(Rq, Rl @ exp_so3(s["stm_C"] @ dq), atol=1e-6)
    stm_deg = np.degrees(np.linalg.norm(s["stm_C"] @ dq))
    assert 1.5 < stm_deg < 10.0               # 0.05 rad/rad (3 axes) of 60 deg: about 5 deg


def test_thigh_sagittal_soft_tissue_is_gain_and_lead():
    # a hip flexing 25 sin(2 pi t) deg: the thigh sensor turns about the hip's flexion axis by
    # -0.10 (q - q_stance) + 0.025 s qdot (the real trial's thighs), a shank's sensor not at all
    sk = legs_skeleton()
    ix = sk.dof_index("l_hip_flex")

    def hip(t):
        q = sk.home.copy()
        q[ix] = 25.0 * np.sin(2 * np.pi * max(t, 0.0))
        return q
    from device.capture.subject import THIGH_SAG
    assert THIGH_SAG == {"thigh_sag_gain": 0.10, "thigh_sag_lead_s": 0.025}
    only = {k: 0.0 for k in HONEST if HONEST[k] != IDEAL[k]}
    only.update(THIGH_SAG, quat_noise_deg=0.0, jitter_s=0.0)
    sens = many(1, "l_thigh") + [{"name": "sh", "chip": "bno055", "link": "l_shank"}]
    sub = Subject(sk, hip, sens, seed=5, blend_s=0.0, noise=only)
    th, sh = sub.sensors
    assert th["sag_dof"] == ix and sh["sag_dof"] == -1
    for t in (1.1, 1.2, 1.37):
        sub.advance(t)
        pose = forward_kinematics(sk, sub.q_true(t))
        tm = t - sub.calib_s
        want = np.radians(-0.10 * 25.0 * np.sin(2 * np.pi * tm) + 0.025 * 25.0 * 2 * np.pi * np.cos(2 * np.pi * tm))
        R = pose.link_rot[th["link"]] @ th["R_mount"] @ exp_so3(th["sag_axis"] * want)
        # the finite differences of the rate (h = 1/240 s): 1e-3 rad
        np.testing.assert_allclose(quat_to_mat(np.array(th["state"]["quat_wxyz"])), R, atol=2e-3)
        Rs = pose.link_rot[sh["link"]] @ sh["R_mount"]
        np.testing.assert_allclose(quat_to_mat(np.array(sh["state"]["quat_wxyz"])), Rs, atol=1e-6)
    assert abs(np.linalg.norm(th["sag_axis"]) - 1) < 1e-12
