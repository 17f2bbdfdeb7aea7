"""Live pose retargeting (host/retarget/live.py): the bundled CMU clip (131_03, 8 s of dance), frame
by frame through LiveRetargeter, then the player -> Dynamixel driver -> emulator -> OP3 twin."""

import numpy as np
import pytest

from device.body.human import human_model
from device.capture.bvhclip import load_bvh
from device.capture.retarget import retarget_clip
from device.servo.robot import load_robot
from host.demo.pipeline import BUNDLED_CLIP
from host.physics.simulate import run_simulation
from host.retarget.live import LiveRetargeter
from host.staff import Row, Staff

FPS = 30.0
ROBOT = "op3-dynamixel"


@pytest.fixture(scope="module")
def person():
    sk = human_model()
    mot = retarget_clip(load_bvh(BUNDLED_CLIP), sk, max_s=10.0, fps=FPS)
    return sk, [d.name for d in sk.dofs], mot.q_frames


def _servo_staff(frames_deg):
    rows = [Row(s.name, "deg", s.lo_deg, s.hi_deg, True) for s in load_robot(ROBOT).servos]
    return Staff(np.array(frames_deg).T.copy(), rows, FPS, 16, None, {"source": "live"})


def test_live_retarget_keeps_op3_up_within_limits(person):
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
    rep = run_simulation(_servo_staff(out), ROBOT, retargeted=(_servo_staff(out), None)).report
    assert not rep["fell"] and rep["fall_time_s"] is None
    assert rep["foot_slip_mm"] < 15.0
    assert rep["tracking_rms_deg"] < 4.0


def test_row_copy_of_the_same_frames_falls(person):
    sk, names, q = person
    rows = [Row(d.name, "deg", d.lo, d.hi, True) for d in sk.dofs]
    st = Staff(q[:120].T.copy(), rows, FPS, 16, None, {"source": "row copy"})
    rep = run_simulation(st, ROBOT, pose=False, mapping="human").report
    assert rep["fell"] and rep["mapping"] == "human"


def test_a_held_leg_lift_swings_after_the_weight_moved_and_stays_up():
    """The person stands on the left foot and lifts the right knee (1.0-4.0 s): the robot moves
    its weight first (0.5 s ramp + 0.1 s settle after the lift is seen), then swings the right
    foot until the person lands, and stays up in the twin."""
    sk = human_model()
    names = [d.name for d in sk.dofs]
    home = np.array([d.home for d in sk.dofs], float)
    lr = LiveRetargeter(ROBOT, names, fps=FPS)
    out, swing, weight = [], [], []
    for k in range(150):
        t = k / FPS
        v = home.copy()
        a = np.clip((t - 1.0) / 0.5, 0, 1) * np.clip((4.0 - t) / 0.5, 0, 1)
        v[names.index("r_hip_flex")] = 50 * a
        v[names.index("r_knee_flex")] = 70 * a
        out.append(lr.step(v, t))
        swing.append(lr._swing["r"].v)
        weight.append(lr._u.v)
    sw = np.flatnonzero(swing)
    assert sw.size > 30 and not lr._swung["l"]
    # the swing starts only once the weight is fully on the left foot, and ends after the landing
    assert weight[sw[0]] == pytest.approx(1.0) and sw[0] / FPS > 1.0 + 0.5 + 0.1
    assert sw[-1] / FPS > 3.5 and not swing[-1]
    assert lr.infeasible == [] and lr.pose_error_deg() < 10
    rep = run_simulation(_servo_staff(out), ROBOT, retargeted=(_servo_staff(out), None)).report
    assert not rep["fell"] and rep["self_collision_frames"] == 0
