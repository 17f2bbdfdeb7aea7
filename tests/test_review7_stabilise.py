"""Review 7: the live balance's IMU feedback (host/retarget/stabilise.py) on bad samples, on a
fallen robot, and on a robot without the feedback (the SO-101 arm)."""

import numpy as np
import pytest

from device.body.human import human_model
from device.servo.robot import load_robot
from host.retarget.live import LiveRetargeter
from host.retarget.robotmodel import robot_body
from host.retarget.stabilise import MAX_DEG, AnkleStabiliser

BOTH = {"l": True, "r": True}


@pytest.fixture(scope="module")
def op3():
    body = robot_body("op3-dynamixel")
    return body, AnkleStabiliser(body), body.qpos_home()


@pytest.mark.parametrize("g, w", [((np.nan, 0, 1), (0, 0, 0)), ((0, 0, 1), (np.inf, 0, 0)),
                                  ((0, 0, 0), (0, 0, 0)), ((np.inf, 0, 0), (0, 0, 0)),
                                  (None, None), ((0, 0), (0, 0, 0)), ("x", (0, 0, 0))])
def test_a_sample_that_is_not_one_gives_no_correction(op3, g, w):
    # was: NaN/inf gave NaN ankle angles (the player then holds the ankles where they were,
    # the balance gone for as long as the IMU reads NaN); None or a short vector raised
    body, st, q = op3
    n = st.invalid
    dq = st.correct(q, g, w, BOTH)
    assert dq.shape == (len(body.servo_names),) and not dq.any() and st.invalid == n + 1


def test_the_sample_is_a_direction_whatever_its_scale(op3):
    # was: an accelerometer's m/s^2 (9.81 for upright) multiplied the gain by 9.81
    body, st, q = op3
    g = np.array([0.05, -0.03, 1.0])
    w = np.array([0.2, -0.1, 0.05])
    unit = st.correct(q, g / np.linalg.norm(g), w, BOTH)
    assert unit.any()
    np.testing.assert_allclose(st.correct(q, 9.81 * g / np.linalg.norm(g), w, BOTH), unit, atol=1e-12)
    np.testing.assert_allclose(st.correct(q, 1e300 * g, w, BOTH), unit, atol=1e-12)


def test_a_fallen_robot_saturates_steadily_within_the_clamp(op3):
    body, st, q = op3
    rng = np.random.default_rng(3)
    out = []
    for k in range(40):        # lying on its front, the IMU noisy: 0.2 deg, 0.01 rad/s
        g = np.array([1.0, 0.0, 0.0]) + rng.normal(0, np.radians(0.2), 3)
        out.append(np.degrees(st.correct(q, g, rng.normal(0, 0.01, 3), BOTH)))
    out = np.array(out)
    assert np.abs(out).max() <= MAX_DEG + 1e-9
    # no thrash: the pitch joints sit at the clamp, one sign, every sample (the roll joints
    # follow the IMU's noise, a fraction of a degree)
    sat = np.abs(out[0]) > MAX_DEG - 1e-9
    assert sat.sum() == 2
    np.testing.assert_allclose(out[:, sat], np.broadcast_to(out[0, sat], out[:, sat].shape))
    assert np.abs(out[:, ~sat]).max() < 1.0
    for k in range(40):        # and every stance state, every tilt: within the clamp
        g = rng.normal(0, 1, 3)
        st_ = {"l": bool(k & 1), "r": bool(k & 2)}
        dq = np.degrees(st.correct(q, g, rng.normal(0, 20, 3), st_))
        assert np.isfinite(dq).all() and np.abs(dq).max() <= MAX_DEG + 1e-9
        for s in "lr":
            if not st_[s]:
                assert not dq[st.ankle[s]].any()


def _rows():
    sk = human_model()
    return [d.name for d in sk.dofs], [float(np.degrees(h)) for h in sk.home]


def test_live_with_a_bad_or_missing_imu_stays_finite_and_ticks_after_a_clock_step_back():
    names, home = _rows()
    reads = iter([(np.full(3, np.nan), np.zeros(3)), None, OSError("i2c"), ((0, 0, 1.0), (0, 0, 0))] * 50)

    def imu():
        r = next(reads)
        if isinstance(r, Exception):
            raise r
        return r
    lr = LiveRetargeter("op3-dynamixel", names, fps=30.0, iterations=2, imu=imu)
    servos = load_robot("op3-dynamixel").servos
    rows = [lr.step(home, k / 30.0) for k in range(4)]
    rows.append(lr.tick(0.2))
    assert lr.tick(0.201) is None                  # within TICK_S
    rows.append(lr.tick(0.1))                      # the clock stepped back: the loop goes on
    rows.append(lr.tick(0.102))
    rows = [r for r in rows if r is not None]
    assert len(rows) == 6
    for r in rows:
        assert np.isfinite(r).all()
        assert all(s.lo_deg - 1e-9 <= x <= s.hi_deg + 1e-9 for s, x in zip(servos, r))


def test_an_arm_has_no_feedback_and_no_tick():
    names, home = _rows()
    lr = LiveRetargeter("so101-feetech", names, fps=30.0, iterations=2, imu=lambda: 1 / 0)
    assert lr.stabiliser is None and lr.imu is None
    lr.step(home, 0.0)
    assert lr.tick(1.0) is None
