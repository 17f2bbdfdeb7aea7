"""The live balance on the OP3 board's truthful IMU: the roll at the foot the body leans over with
both feet down (host/retarget/stabilise.py), the host's tilt from the bus IMU's gyro and
accelerometer (host/retarget/live.py with host/retarget/attitude.py), and the standing leg's
pitch joints rate-limited on one foot (live.STANCE_PITCH_DPS)."""

import numpy as np
import pytest

from device.body.human import human_model
from host.retarget import live
from host.retarget.live import LiveRetargeter
from host.retarget.robotmodel import robot_body
from host.retarget.stabilise import ROLL_SHARE_DEG, AnkleStabiliser

BOTH = {"l": True, "r": True}


@pytest.fixture(scope="module")
def op3():
    body = robot_body("op3-dynamixel")
    return body, body.qpos_home()


def _roll(body, st, q, g):
    dq = np.degrees(st.correct(q, g, (0.0, 0.0, 0.0), BOTH))
    return {s: dq[st.ankle[s][1]] for s in "lr"}


def test_with_both_feet_down_the_roll_goes_to_the_foot_the_body_leans_over(op3):
    body, q = op3
    st, both = AnkleStabiliser(body), AnkleStabiliser(body, roll_share_deg=0)
    # leaning 3 deg to the robot's left (+y), the plan upright: the left foot takes the roll
    assert 0 < ROLL_SHARE_DEG < 3.0
    a = np.radians(3.0)
    g = (0.0, -np.sin(a), np.cos(a))
    one, two = _roll(body, st, q, g), _roll(body, both, q, g)
    assert abs(one["l"]) > 0.5 and one["r"] == 0.0
    assert one["l"] == pytest.approx(two["l"], abs=1e-9) and two["r"] == pytest.approx(two["l"], abs=1e-9)
    # and to the right: the right foot
    one = _roll(body, st, q, (0.0, np.sin(a), np.cos(a)))
    assert abs(one["r"]) > 0.5 and one["l"] == 0.0
    # within ROLL_SHARE_DEG of upright the feet share it: 0.5 +- lean / (2 ROLL_SHARE_DEG)
    b = np.radians(0.5)
    f = 0.5 + 0.5 / (2.0 * ROLL_SHARE_DEG)
    one, two = _roll(body, st, q, (0.0, -np.sin(b), np.cos(b))), _roll(body, both, q, (0.0, -np.sin(b), np.cos(b)))
    assert one["l"] == pytest.approx(f * two["l"], rel=1e-2) and one["r"] == pytest.approx((1 - f) * two["r"], rel=1e-2)
    # the pitch rows are the same either way, and one foot down is as before
    g = (np.sin(a), 0.0, np.cos(a))
    np.testing.assert_allclose(st.correct(q, g, (0, 0, 0), BOTH), both.correct(q, g, (0, 0, 0), BOTH), atol=1e-12)
    stand = {"l": True, "r": False}
    g = (0.0, -np.sin(a), np.cos(a))
    np.testing.assert_allclose(st.correct(q, g, (0, 0, 0), stand), both.correct(q, g, (0, 0, 0), stand), atol=1e-12)


def _rows():
    sk = human_model()
    return [d.name for d in sk.dofs], [float(np.degrees(h)) for h in sk.home]


def test_a_bus_imu_sample_goes_through_the_hosts_tilt_and_a_missed_read_skips_a_tick():
    names, home = _rows()
    rng = np.random.default_rng(5)
    clock = [0.0]
    reads = []

    def imu():
        # (up, rate, acc, read time) as LinkBridge._imu gives it; every 4th read missed
        reads.append(clock[0])
        if len(reads) % 4 == 0:
            raise ValueError("the bus IMU did not answer")
        a = np.radians(2.0)
        up = (0.0, -np.sin(a), np.cos(a))
        acc = np.array(up) + rng.normal(0, 0.0025, 3)
        rate = (float("nan"), 0, 0) if len(reads) == 7 else tuple(rng.normal(0, 0.01, 3))
        return up, rate, tuple(acc), clock[0]
    lr = LiveRetargeter("op3-dynamixel", names, fps=30.0, iterations=2, imu=imu)
    rows = []
    for k in range(6):
        clock[0] = k / 30.0
        rows.append(lr.step(home, clock[0]))
        for j in (1, 2, 3):
            clock[0] = (k + j / 4.0) / 30.0
            rows.append(lr.tick(clock[0]))
    assert all(r is not None and np.isfinite(r).all() for r in rows)
    st = lr.attitude.stats
    # 24 reads: 6 missed (no update), 1 with a NaN rate (bad), the rest updated the estimate
    assert len(reads) == 24 and st["updates"] == 17 and st["bad"] == 1 and st["resets"] == 1
    # the estimate stays on the 2 deg lean (started from the accelerometer reading 1 g, within
    # its 2.5 mg of noise: 0.3 deg; the gyro is noise)
    up = np.array(lr.attitude.e)
    assert np.degrees(np.arctan2(-up[1], up[2])) == pytest.approx(2.0, abs=0.3)
    assert lr.stabiliser.invalid == 7


def test_on_one_foot_its_leg_pitch_joints_move_at_most_stance_pitch_dps():
    """A one-legged crouch (left knee and hip bent fast while the right foot is lifted and held):
    the standing leg's pitch servos never step more than STANCE_PITCH_DPS / fps in a frame."""
    sk = human_model()
    names = [d.name for d in sk.dofs]
    home = np.array([d.home for d in sk.dofs], float)
    lr = LiveRetargeter("op3-dynamixel", names, fps=30.0, iterations=2)
    idx = [lr.servo_names.index(n) for n in ("l_hip_pitch", "l_knee", "l_ank_pitch")]
    out, single = [], []
    for k in range(120):
        t = k / 30.0
        v = home.copy()
        a = np.clip((t - 0.5) / 0.3, 0, 1)
        v[names.index("r_hip_flex")] = 50 * a
        v[names.index("r_knee_flex")] = 70 * a
        c = np.clip((t - 2.2) / 0.3, 0, 1)      # then the standing leg crouches in 0.3 s
        v[names.index("l_hip_flex")] = 40 * c
        v[names.index("l_knee_flex")] = 70 * c
        out.append(lr.step(list(v), t))
        single.append(lr._swing["r"].v and not lr._swing["l"].v)
    out, single = np.array(out), np.array(single)
    step = np.abs(np.diff(out[:, idx], axis=0))[single[1:] & single[:-1]]
    assert single.sum() > 20 and step.size
    assert step.max() <= live.STANCE_PITCH_DPS / 30.0 + 1e-9
    # the knee does bend, at the limit's pace
    assert step[:, 1].max() == pytest.approx(live.STANCE_PITCH_DPS / 30.0, abs=1e-6)


def test_the_roll_share_takes_the_side_from_the_other_foot_not_the_torso(op3):
    """A torso rolled 10 deg on its hips (the legs hanging plumb) has both feet on its left:
    before, a lean one way turned both ankle rolls and the other way neither (no roll feedback
    at all); now the foot the body leans over takes it, as with the torso between the feet."""
    import mujoco
    body, home = op3
    st = AnkleStabiliser(body)
    names = list(body.servo_names)
    th, a = np.radians(10.0), np.radians(3.0)
    q = home.copy()
    q[3:7] = [np.cos(th / 2), np.sin(th / 2), 0.0, 0.0]
    for s in "lr":
        q[body.qadr[names.index(s + "_hip_roll")]] -= th
    st.data.qpos[:] = q
    mujoco.mj_kinematics(body.model, st.data)
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, q[3:7])
    R = R.reshape(3, 3)
    y = {s: (R.T @ (st.data.xpos[st.feet[s]] - st.data.xpos[st.torso]))[1] for s in "lr"}
    assert y["l"] > 0 and y["r"] > 0                       # both feet on the torso's left
    for sgn, side in ((1, "l"), (-1, "r")):
        # the plan's up, tilted a further 3 deg sideways (+y lean: sgn 1)
        g = R[2, :] + sgn * np.array([0.0, -np.sin(a), 0.0])
        roll = _roll(body, st, q, g / np.linalg.norm(g))
        other = "r" if side == "l" else "l"
        assert abs(roll[side]) > 0.5 and roll[other] == 0.0, (sgn, roll)
