"""Live pose retargeting (host/retarget/live.py): the bundled CMU clip (131_03, 8 s of dance), frame
by frame through LiveRetargeter; in physics through the demo's live robot end (tools/replay_live.py:
LinkStreamer -> TwinEnd: LinkBridge -> LiveRetargeter with the OP3's IMU -> player -> Dynamixel
driver -> emulator -> OP3 twin)."""

import os

import numpy as np
import pytest

from device.body.human import human_model
from device.capture.bvhclip import load_bvh
from device.capture.retarget import retarget_clip
from device.servo.robot import load_robot
from host.demo.pipeline import BUNDLED_CLIP
from host.formats import read_motion
from host.physics.simulate import run_simulation
from host.retarget import live
from host.retarget.live import LiveRetargeter
from host.staff import Row, Staff
from tools.replay_live import replay

FPS = 30.0
ROBOT = "op3-dynamixel"
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "live")


@pytest.fixture(scope="module")
def person():
    sk = human_model()
    mot = retarget_clip(load_bvh(BUNDLED_CLIP), sk, max_s=10.0, fps=FPS)
    return sk, [d.name for d in sk.dofs], mot.q_frames


def _person_staff(sk, q, bits=16):
    rows = [Row(d.name, "deg", d.lo, d.hi, True) for d in sk.dofs]
    return Staff(np.asarray(q, float).T.copy(), rows, FPS, bits, None, {"source": "test"})


def _held_lift():
    """(skeleton, row names, 150 frames at FPS): standing, the right knee lifted 1.0-4.0 s."""
    sk = human_model()
    names = [d.name for d in sk.dofs]
    home = np.array([d.home for d in sk.dofs], float)
    frames = []
    for k in range(150):
        t = k / FPS
        v = home.copy()
        a = np.clip((t - 1.0) / 0.5, 0, 1) * np.clip((4.0 - t) / 0.5, 0, 1)
        v[names.index("r_hip_flex")] = 50 * a
        v[names.index("r_knee_flex")] = 70 * a
        frames.append(v)
    return sk, names, frames


def test_live_retarget_within_limits_and_op3_stands_on_the_live_link(person):
    sk, names, q = person
    lr = LiveRetargeter(ROBOT, names, fps=FPS)
    out = []
    for k, v in enumerate(q):
        v = list(v)
        if k == 40:
            v[names.index("l_knee_flex")] = None          # a lost value keeps the last one
        out.append(lr.step(v, k / FPS))
    deg = np.array(out)
    servos = load_robot(ROBOT).servos
    lo = np.array([s.lo_deg for s in servos])
    hi = np.array([s.hi_deg for s in servos])
    vmax = np.array([s.max_vel_dps for s in servos])
    assert np.isfinite(deg).all() and deg.shape == (len(q), len(servos))
    assert (deg >= lo - 1e-9).all() and (deg <= hi + 1e-9).all()
    # the velocity limit, frame to frame (so the commands are continuous)
    assert (np.abs(np.diff(deg, axis=0)) <= vmax / FPS + 1e-6).all()
    assert deg[:, [lr.servo_names.index("l_knee"), lr.servo_names.index("l_sho_pitch")]].std(axis=0).min() > 1.0
    err = lr.pose_error_deg()
    assert err is not None and 0 < err < 30
    # in physics, closed loop (the OP3's IMU feeds the balance), as the demo's robot end runs it
    rep = replay(_person_staff(sk, q))
    assert not rep["fell"] and rep["fall_time_s"] is None
    # (measured: 8.23 mm, 1 frame of an elbow touching its hip; 5.65 mm and 2 frames with the
    # board's own tilt and the roll at both ankles with both feet down, before 2026-12-03)
    assert rep["foot_slip_mm"] < 15.0 and rep["self_collision_frames"] <= 2
    assert 0 < rep["pose_error_deg"] < 30


def test_the_demos_estimate_that_tipped_the_old_live_balance_stands():
    """The demo's own 131_03 staff as the unit estimated it (8-bit, the first 8 s), on the demo's
    paced line: the live balance before the IMU feedback and the lift commit fell at 6.4 s in the
    demo; now it stands, and with +-1 code on a fifth of the samples too. Its stance feet slide
    5.2 mm: the IMU it reads is the OpenCR board's on the bus as the firmware fills it (Madgwick,
    200 Hz, the chip's filters), the tilt the host's own estimate from its gyro and accelerometer
    (host/retarget/attitude.py; 8.1 mm with the board's Madgwick tilt and the roll at both
    ankles with both feet down, 5.35 mm with the twin's own tilt sampled at the read)."""
    from tools.replay_live import noisy
    est = read_motion(os.path.join(DATA, "131_03_estimate.png"))
    rep = replay(est, max_s=8.0)
    # (measured 5.72 mm since the robot's computer takes its CPU time on the twin's clock,
    # host/physics/live.py PLAN_CPU_S...; 4.79 mm without it; seeds 1-4 of +-1 code: 5.41 / 3.11
    # / 4.92 / 5.48 against 6.30 / 4.01 / 6.44 / 4.97; 6.84 with the port's pyserial reads too;
    # 8.06 with the USB's 1 ms frames, seeds 1-4 8.63 / 4.85 / 6.72 / 7.41)
    assert not rep["fell"] and rep["foot_slip_mm"] < 10.0
    slip = rep["foot_slip_mm"]
    rep = replay(noisy(est, 1, seed=3), max_s=8.0)
    assert not rep["fell"] and rep["foot_slip_mm"] < 8.0           # (measured 7.55 mm with the board's chip errors and the standing reference; 6.28 without them; 5.26 before the elbows kept 25 mm from the legs)
    old = (live.LIFT_COMMIT_S, live.TRUNK_TAU_S, live.SWING_REACH_M, live.STANCE_PITCH_DPS)
    try:
        live.LIFT_COMMIT_S, live.TRUNK_TAU_S, live.SWING_REACH_M, live.STANCE_PITCH_DPS = 0.0, 0.0, None, None
        rep0 = replay(est, max_s=8.0, imu=False)
    finally:
        live.LIFT_COMMIT_S, live.TRUNK_TAU_S, live.SWING_REACH_M, live.STANCE_PITCH_DPS = old
    # (6.4 s in the demo then; 5.57 s since the sag feed-forward moves with the weight, which
    # without the lift commit shifts at every dance step; since the elbows keep 25 mm from the
    # legs and 15 mm from the torso, host/retarget/robotmodel.py, it stands in these 8 s but its
    # feet slide 13.7 mm, 23.6 in 10 s; 12.6 mm against the balance's 6.84 since the port
    # reads as pyserial and the robot's computer takes its time on the twin's clock; 11.98
    # against 8.06 with the USB's 1 ms frames: the anchor slides more, by less)
    assert rep0["fell"] or rep0["foot_slip_mm"] > 1.2 * slip


def test_row_copy_of_the_same_frames_falls(person):
    sk, names, q = person
    rows = [Row(d.name, "deg", d.lo, d.hi, True) for d in sk.dofs]
    st = Staff(q[:120].T.copy(), rows, FPS, 16, None, {"source": "row copy"})
    rep = run_simulation(st, ROBOT, pose=False, mapping="human").report
    assert rep["fell"] and rep["mapping"] == "human"


def test_a_held_leg_lift_swings_after_the_weight_moved_and_stays_up():
    """The person stands on the left foot and lifts the right knee (1.0-4.0 s): the robot moves
    its weight first (once the lift has lasted LIFT_COMMIT_S: 0.5 s ramp + 0.1 s settle), then
    swings the right foot until the person lands, and stays up in the twin."""
    sk, names, frames = _held_lift()
    ends = []
    rep = replay(_person_staff(sk, frames), end_out=ends)
    lr = ends[0].retargeter
    # (one frame: the right elbow touches its hip by 0.03 mm at 0.77 s, before the lift)
    assert not rep["fell"] and rep["self_collision_frames"] <= 1
    assert lr.infeasible == [] and lr.pose_error_deg() < 10 and lr._swung["r"] and not lr._swung["l"]
    # kinematics alone, frame by frame: when the swing starts and ends
    lr = LiveRetargeter(ROBOT, names, fps=FPS)
    swing, weight = [], []
    for k, v in enumerate(frames):
        lr.step(v, k / FPS)
        swing.append(lr._swing["r"].v)
        weight.append(lr._u.v)
    sw = np.flatnonzero(swing)
    assert sw.size > 30 and not lr._swung["l"]
    # the swing starts only once the weight is fully on the left foot, and ends after the landing
    assert weight[sw[0]] == pytest.approx(1.0) and sw[0] / FPS > 1.0 + live.LIFT_COMMIT_S + 0.5 + 0.1
    assert sw[-1] / FPS > 3.5 and not swing[-1]


def test_the_sag_feed_forward_moves_with_the_weight_not_at_the_lift_off():
    """The feed-forward for the servos' give (pose._sag) switched from the statics of two feet
    to one in the frame the right foot lifted, and back in the frame it landed: a 4.2 deg step
    in a leg servo's command (measured on this lift). Blended by the weight's ramp, no frame's
    feed-forward changes by more than 0.5 deg, and the swing's own frames get the one-foot
    statics exactly."""
    sk, names, frames = _held_lift()
    lr = LiveRetargeter(ROBOT, names, fps=FPS)
    sags, swing, one = [], [], []
    real = lr._sag_now

    def record(q):
        r = real(q)
        sags.append(lr.body.to_servo_deg(r)[0])
        stand = [np.array([not lr._swing[s].v]) for s in "lr"]
        one.append(lr.body.to_servo_deg(live.pose._sag(lr.body, q[None], stand[0], stand[1]))[0])
        return r
    lr._sag_now = record
    for k, v in enumerate(frames):
        lr.step(v, k / FPS)
        swing.append(lr._swing["r"].v)
    sags, one, swing = np.array(sags), np.array(one), np.array(swing)
    assert swing.sum() > 30
    assert np.abs(np.diff(sags, axis=0)).max() < 0.5
    np.testing.assert_allclose(sags[swing], one[swing], atol=1e-12)
    # at the start, the weight between the feet: the two-foot statics exactly
    np.testing.assert_allclose(sags[:10], one[:10], atol=1e-12)
