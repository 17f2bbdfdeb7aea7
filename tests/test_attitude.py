"""The host's tilt estimate from the bus IMU's gyro and accelerometer (host/retarget/attitude.py)."""

import math

import numpy as np

from host.retarget.attitude import LEAD_S, MAX_GAP_S, TAU_S, TiltEstimator

DT = 0.005


def _deg(a, b):
    return math.degrees(math.acos(max(-1.0, min(1.0, float(np.dot(a, b))))))


def _up(roll_rad):
    # the world's up in the torso frame of a torso rolled by roll about its x axis
    return np.array([0.0, math.sin(roll_rad), math.cos(roll_rad)])


def test_level_and_still_reads_level():
    est = TiltEstimator()
    for k in range(100):
        up = est.update(k * DT, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    assert up == (0.0, 0.0, 1.0)
    assert est.stats == {"updates": 100, "resets": 1, "bad": 0, "gyro_only": 0}


def test_a_roll_is_followed_by_the_gyro_and_a_sideways_push_barely_moves_it():
    est, rng = TiltEstimator(), np.random.default_rng(3)
    w = 0.5                                   # rad/s about x for 0.4 s, then still
    roll, worst = 0.0, [0.0, 0.0]
    for k in range(400):
        t = k * DT
        rate = w if t < 0.4 else 0.0
        # up = R^T z = (0, sin roll, cos roll) for R = Rx(roll): roll grows with the rate
        roll += rate * DT
        g = _up(roll)
        acc = g.copy()
        if 0.8 <= t < 1.1:
            acc = acc + np.array([0.0, 0.2, 0.0])  # 0.2 g of the body's own acceleration
        up = est.update(t, g, (rate + rng.normal(0, 0.01), 0.0, 0.0), acc)
        lead = _up(roll + LEAD_S * rate)
        i = int(t >= 0.8)
        worst[i] = max(worst[i], _deg(up, lead))
    # the roll followed within 0.05 deg (plus the lead); the accelerometer is 10.7 deg off during
    # the push, and the estimate moves 0.3 s / TAU_S of that (1.50 deg), then back
    push = _up(roll) + np.array([0, 0.2, 0])
    assert _deg(_up(roll), push / np.linalg.norm(push)) > 10.6
    assert worst[0] < 0.05 and 1.4 < worst[1] < 1.6, worst


def test_bad_reads_keep_the_state_and_a_gap_or_a_step_back_starts_again():
    est = TiltEstimator()
    assert est.update(0.0, None, (0, 0, 0), None) is None              # nothing to start from
    assert est.update(0.0, (0, 0, 1.0), (0, 0, 0), (0, 0, 1.0)) == (0.0, 0.0, 1.0)
    assert est.update(DT, (0, 0, 1.0), (float("nan"), 0, 0), (0, 0, 1.0)) is None  # NaN rate
    assert est.update(DT, (0, 0, 1.0), None, (0, 0, 1.0)) is None      # a missed read
    assert est.update(float("nan"), (0, 0, 1.0), (0, 0, 0), (0, 0, 1.0)) is None
    # a bad accelerometer: the gyro alone (0.1 rad/s about x for 10 ms: up turns by 1 mrad)
    up = est.update(2 * DT, (0, 0, 1.0), (0.1, 0, 0), (0, 0, 0))
    assert est.stats["gyro_only"] == 1
    assert abs(up[1] - (0.001 + LEAD_S * 0.1)) < 1e-5 and up[0] == 0.0
    # a gap longer than MAX_GAP_S: again, from the accelerometer reading 1 g (not the board's
    # Madgwick, level after its power-up)
    r = 0.1
    up = est.update(2 * DT + MAX_GAP_S + 0.01, (0, 0, 1.0), (0, 0, 0), (0, math.sin(r), math.cos(r)))
    assert abs(up[1] - math.sin(r)) < 1e-12 and est.stats["resets"] == 2
    # ... and from the board's up when the accelerometer is off 1 g (a body accelerating)
    up = est.update(3 * DT + 2 * MAX_GAP_S + 0.02, (0, math.sin(r), math.cos(r)), (0, 0, 0), (0, 0, 1.2))
    assert abs(up[1] - math.sin(r)) < 1e-12 and est.stats["resets"] == 3
    # the clock stepped back: from the board's up again; a bad board up: from the accelerometer
    up = est.update(0.0, (float("inf"), 0, 0), (0, 0, 0), (0, 0, 2.0))
    assert up == (0.0, 0.0, 1.0) and est.stats["resets"] == 4
    assert est.stats["bad"] == 4
    assert TAU_S == 2.0


def test_a_rate_beyond_the_gyros_range_is_not_a_reading():
    # one read of 1e6 rad/s (no gyro reads past 2000 deg/s): before, the estimate turned 90 deg
    # and its lead pointed it upside down (-z); now that read is None and the state is kept
    est = TiltEstimator()
    z = (0.0, 0.0, 1.0)
    assert est.update(0.0, z, (0, 0, 0), z) == z
    assert est.update(DT, z, (1e6, 0, 0), z) is None
    assert est.update(2 * DT, z, (0, 0, 0), z) == z
    # the board's largest reading (int16 at 16.4 LSB per deg/s) still is one
    assert est.update(3 * DT, z, (math.radians(32767 / 16.4), 0, 0), z) is not None
    assert est.stats["bad"] == 1


def test_a_huge_integer_is_bad_input_not_an_overflow():
    # float(10 ** 400) raises OverflowError: before, update raised it (a tick without feedback
    # through LinkBridge, a frame that raised through LiveRetargeter.step); now it is bad input
    est = TiltEstimator()
    z = (0.0, 0.0, 1.0)
    assert est.update(10 ** 400, z, (0, 0, 0), z) is None
    assert est.update(0.0, z, (10 ** 400, 0, 0), z) is None
    assert est.update(0.0, (10 ** 400, 0, 1), (0, 0, 0), (10 ** 400, 0, 1)) is None
    assert est.update(DT / 2, z, (0, 0, 0), z) == z                   # a start
    assert est.update(DT, z, (0, 0, 0), (10 ** 400, 0, 1)) == z       # the gyro alone
    assert est.stats["bad"] == 3 and est.stats["gyro_only"] == 1


def test_a_finite_vector_of_any_scale_is_its_direction():
    # |v|^2 of (0, 1e200, 1e200) overflows to inf: before, the board's up and the accelerometer
    # were both "bad" (no estimate at all); now they are the 45 deg tilt they point along
    est = TiltEstimator()
    big = (0.0, 1e200, 1e200)
    up = est.update(0.0, big, (0, 0, 0), big)
    assert up is not None and abs(up[1] - math.sqrt(0.5)) < 1e-12 and abs(up[2] - math.sqrt(0.5)) < 1e-12
    up = est.update(DT, (0, 0, 1.0), (0, 0, 0), big)
    assert est.stats["gyro_only"] == 0 and abs(up[1] - math.sqrt(0.5)) < 1e-12
    # and a vector shorter than 1e-9 is still a zero one (the gyro alone)
    est.update(2 * DT, (0, 0, 1.0), (0, 0, 0), (0.0, 1e-300, 1e-300))
    assert est.stats["gyro_only"] == 1 and est.stats["bad"] == 0


def test_a_zero_time_constant_is_the_accelerometer_alone():
    from host.retarget.attitude import TiltEstimator
    est = TiltEstimator(tau_s=0.0, lead_s=0.0)
    est.update(0.0, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    up = est.update(0.01, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 1.0, 1.0))
    assert abs(up[1] - up[2]) < 1e-12 and up[0] == 0.0
