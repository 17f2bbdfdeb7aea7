"""Functional calibration (device/capture/functional.py) on the simulated subject: a still stance
then a few gait-like strides on the lower-body model; the mounts it finds against the subject's
true (randomly misaligned, some backwards) mounts, from the unit's readings only."""

import numpy as np
import pytest

from device.capture.functional import functional_calibration, hinge_axis, walk_onset
from device.capture.lowerbody import legs_skeleton, lower_body_config
from device.capture.rot import exp_so3, log_so3
from device.capture.subject import Subject


def gait(sk):
    """1 Hz strides: hip, knee, ankle flexion in the usual phases, some abduction and pelvis yaw."""
    ix = sk.dof_index
    home = sk.home.copy()

    def q(t):
        out = home.copy()
        for side, ph in (("l", 0.0), ("r", np.pi)):
            w = 2 * np.pi * t + ph
            out[ix(side + "_hip_flex")] = 10 + 22 * np.sin(w)
            out[ix(side + "_knee_flex")] = 30 - 28 * np.cos(w + 0.6)
            out[ix(side + "_ankle_flex")] = 8 * np.sin(w - 0.8)
            out[ix(side + "_hip_abd")] = 3 * np.sin(w + 1.0)
        out[ix("root_yaw")] = 4 * np.sin(2 * np.pi * t)
        out[ix("root_tx")] = 1.2 * t
        return out
    q.duration_s = 10.0
    return q


def readings(seed=3, backwards=("r_shank_imu", "l_foot_imu"), noise=None):
    sk = legs_skeleton()
    specs = lower_body_config()["sensors"]
    for s in specs:
        if s["name"] in backwards:
            s["mount_rpy_deg"] = [0.0, 0.0, 180.0]      # strapped on facing backwards
    sub = Subject(sk, gait(sk), specs, seed=seed, calib_s=1.0, blend_s=0.5,
                  noise=dict({"dropout": 0.0}, **(noise or {})))
    frames = []
    for k in range(400):
        sub.advance(k / 100.0)
        frames.append({s["name"]: {"gyro": s["state"]["gyro_rad_s"], "accel": s["state"]["accel_m_s2"],
                                   "quat": s["state"]["quat_wxyz"]} for s in sub.sensors})
    sens = [{"name": s["name"], "link": sk.link_index(s["link"])} for s in specs]
    return sk, sub, sens, frames


def angle_deg(R):
    return float(np.degrees(np.linalg.norm(log_so3(np.asarray(R)[None])[0])))


def test_mounts_from_stance_and_strides_ideal_sensors():
    # the ideal sensors, pinned (the subject's default is honest): the functional step's own
    # error, without the stance and soft tissue the honest tests below add
    sk, sub, sens, frames = readings(noise={"profile": "ideal"})
    on = walk_onset(frames, start=50)
    assert on == 106          # the blend into the strides starts at 1.0 s: 0.5 rad/s at 1.06 s
    res = functional_calibration(sk, sens, frames[:100], frames[on:on + 250])
    err = {n: angle_deg(sub.true_mount(n).T @ res["mounts"][n]) for n in res["mounts"]}
    # the stance is exactly home and the sensors ideal: what is left is the hinge axis of a
    # segment that also abducts (thighs 3 deg, carried to the shank and foot) and the pelvis
    # (which takes the thighs' axis through its own fused heading)
    assert max(err.values()) < 2.5, err
    assert err["r_shank_imu"] < 1.5 and err["l_foot_imu"] < 1.5      # backwards sensors found
    for n, W in res["world_by"].items():                # the subject faced +x in the stance
        assert angle_deg(W) < 2.5, (n, angle_deg(W))


def test_mounts_with_honest_sensors_are_off_by_the_stance_tilt():
    from device.body.kinematics import forward_kinematics
    # soft tissue off: the stance is off home by N(0, 2.5 deg) per dof, the calibration takes
    # each segment's stance as upright, so its mount is off by that segment's tilt in the
    # stance (the hinge keeps the heading); the pelvis takes its axis from the thighs' through
    # the fused world, so their fused offsets add
    sk, sub, sens, frames = readings(noise={"profile": "honest", "stm_gain": 0.0})
    res = functional_calibration(sk, sens, frames[:100], frames[106:356])
    R = forward_kinematics(sk, sub.q_true(0.5)).link_rot
    for s in sens:
        n = s["name"]
        tilt = np.degrees(np.arccos(np.clip(R[s["link"]][:, 2] @ [0.0, 0.0, 1.0], -1, 1)))
        err = angle_deg(sub.true_mount(n).T @ res["mounts"][n])
        assert abs(err - tilt) < (2.0 if n != "pelvis_imu" else 3.0), (n, err, tilt)
    # with soft tissue the gyros are no longer pure hinges: the axes move (up to 14 deg here,
    # on the segments whose joints swing most), never flip
    sk, sub, sens, frames = readings(noise={"profile": "honest"})
    res = functional_calibration(sk, sens, frames[:100], frames[106:356])
    err = [angle_deg(sub.true_mount(s["name"]).T @ res["mounts"][s["name"]]) for s in sens]
    assert max(err) < 15.0 and float(np.median(err)) < 5.0, err


def test_hinge_axis_of_a_pure_rotation():
    rng = np.random.default_rng(0)
    up = np.array([0.0, 0.0, 1.0])
    axis = np.array([0.3, 0.95, 0.0]) / np.linalg.norm([0.3, 0.95, 0.0])
    w = np.outer(np.sin(np.linspace(0, 20, 500)), axis) * 3 + rng.normal(size=(500, 3)) * 0.05
    y, share = hinge_axis(w, up)
    assert abs(abs(y @ axis) - 1) < 1e-3 and share > 0.99


def test_no_walk_or_no_still_readings_is_one_line():
    sk, sub, sens, frames = readings()
    with pytest.raises(ValueError, match="sensor pelvis_imu has no still readings"):
        functional_calibration(sk, sens, [{}], frames[106:356])
    with pytest.raises(ValueError, match="has no walking readings"):
        functional_calibration(sk, sens, frames[:100], [])
    assert walk_onset(frames[:100]) is None
    assert angle_deg(exp_so3(np.array([0.0, 0.0, 0.1]))) == pytest.approx(np.degrees(0.1))


def test_seel_distal_mounts_ideal_sensors_and_level_axes():
    # the lower-body unit's mode: each thigh keeps its own swing axis, shank and foot are fitted
    # level to the proximal axis; on ideal sensors it finds the mounts as well as the free fit
    from device.capture.functional import hinge_pair_level
    from device.capture.lowerbody import HINGE
    assert HINGE == "seel-distal"
    sk, sub, sens, frames = readings(noise={"profile": "ideal"})
    res = functional_calibration(sk, sens, frames[:100], frames[106:356], hinge=HINGE)
    err = {n: angle_deg(sub.true_mount(n).T @ res["mounts"][n]) for n in res["mounts"]}
    # the price: a thigh's own swing axis leans with the hip's abduction in phase with its
    # flexion (here 5.8-6.1 deg); the shank and foot, fitted level to it, stay within 0.6
    assert 5.0 < err["l_thigh_imu"] < 7.0 and 5.0 < err["r_thigh_imu"] < 7.0, err
    assert max(v for n, v in err.items() if "thigh" not in n) < 1.0, err
    assert res["method"]["l_shank_imu"].startswith("still+knee hinge (level")
    assert res["method"]["r_foot_imu"].startswith("still+ankle hinge (level")
    # a pure hinge seen by two sensors: the level fit returns the true axes, orthogonal to up
    rng = np.random.default_rng(1)
    z1, z2 = np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.6, 0.8])
    j1 = np.array([0.0, 1.0, 0.0])
    j2 = np.array([1.0, 0.0, 0.0])                      # level in sensor 2 (orthogonal to z2)
    t = np.linspace(0, 8, 800)
    flex = 2.0 * np.sin(2 * np.pi * t)
    other = np.c_[np.sin(3.1 * t), np.cos(1.7 * t), np.sin(0.9 * t)]     # the proximal's own motion
    w1 = other + np.outer(0.3 * np.cos(t), j1)
    # the distal sensor: the proximal rotation re-expressed (R21 maps j1 onto j2) plus the flexion
    from device.capture.rot import exp_so3 as ex
    R21 = np.array([j2, np.cross(z2, j2), z2]).T @ np.array([j1, np.cross(z1, j1), z1])
    w2 = w1 @ R21.T + np.outer(flex, j2) + rng.normal(size=(800, 3)) * 0.01
    start1 = ex(0.15 * z1) @ j1
    start2 = ex(-0.2 * z2) @ j2
    a, b = hinge_pair_level(w1, w2, start1, start2, z1, z2)
    assert abs(a @ z1) < 1e-9 and abs(b @ z2) < 1e-9
    assert abs(abs(a @ j1) - 1) < 1e-3 and abs(abs(b @ j2) - 1) < 1e-3, (a, b)
    a, b = hinge_pair_level(w1, w2, j1, start2, z1, z2, fit_proximal=False)
    assert np.allclose(a, j1) and abs(abs(b @ j2) - 1) < 1e-3
    with pytest.raises(ValueError, match="hinge .seal. is not one of"):
        functional_calibration(sk, sens, frames[:100], frames[106:356], hinge="seal")
