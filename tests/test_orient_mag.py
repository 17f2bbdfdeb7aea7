"""The orient estimator's magnetometer (MPU-9250): 9-axis Mahony, disturbance rejection, 6-axis unchanged.

A single simulated MPU-9250 (body "single-imu": yaw +-40, pitch +-31, roll +-40 deg of seeded
smooth motion, read through its FIFO at 250 Hz and its AK8963 once a frame, 30 Hz) runs the
unit's own path: calibration, then the estimator's per-sensor filter. After calibration a gyro
bias is injected about the sensor's z (vertical in the calibration pose); the still-pose
calibration cannot see it. The subject's bias random walk is off so the bound is the physics'.

Heading error: the rotation about the world's vertical of R_est R_true^T, relative to its value
at the first estimated frame (heading is relative to the calibration heading).

The bound. Field of the subject: 45 uT, dip delta = atan(0.89 / 0.45) = 63.2 deg. For a
sensor at rest with an uncorrected vertical gyro bias b, the steady state of the filter (kp the
accelerometer's gain, kp_m the magnetometer's, both 1 rad/s; linearised, normalised vectors):
the magnetometer term's vertical part is kp_m cos^2(delta) psi' = b, psi' the heading error
seen in the estimated world; its horizontal part kp_m sin cos psi' tilts the estimate about
magnetic north by phi = (kp_m / kp) sin cos psi' (the accelerometer holds it), and that tilt
moves the field's apparent heading by tan(delta) phi. So the true heading error is
    psi = b (1 + (kp_m / kp) sin^2 delta) / (kp_m cos^2 delta) = 4.42 deg for b = 0.5 deg/s.
Field noise (0.3 uT on 20.3 uT horizontal: 0.85 deg a reading, 30 readings/s, low-passed at
~0.1 rad/s) adds ~0.04 deg, the reference's own noise (the mean over the 30 still frames)
~0.16 deg; the 1 deg margin covers the motion (the bias leaves the vertical when the sensor
tilts; the frame's one mag reading carried back through the FIFO samples). Without the
magnetometer the heading integrates the bias: ~b t (27 deg after 60 s).
"""

import numpy as np
import pytest

from device.capture.config import default_config
from device.capture.loop import CaptureLoop
from device.capture.orient import OrientEstimator
from device.capture.rawlog import JsonlReplay, RawLogWriter, single_imu_skeleton
from device.capture.rot import exp_so3, log_so3
from device.capture.unit import build_unit

BIAS_DPS = 0.5
DIP_RAD = np.arctan2(0.89, 0.45)
PSI_SS_DEG = BIAS_DPS * (1 + np.sin(DIP_RAD) ** 2) / np.cos(DIP_RAD) ** 2      # kp = kp_m = 1 rad/s


def _run(use_mag=True, seconds=60.0, bias_dps=BIAS_DPS, disturb=None, reject=True, seed=1,
         new_field=None, adopt=True):
    """Heading / total error (deg) per estimated frame: rows (t_s, heading_deg, total_deg)."""
    cfg = default_config(body="single-imu", chip="mpu9250", estimator="orient", seed=seed)
    cfg["estimator_options"] = {"magnetometer": use_mag}
    # the ideal sensors: these bounds are the MARG filter against exactly known magnetic
    # disturbances and gyro biases; the honest subject's fused offsets, stance and timing skew
    # would add errors of their own to the heading measured here
    cfg["subject"]["noise"] = {"profile": "ideal", "gyro_bias_walk_dps_sqrt_s": 0.0}
    unit = build_unit(cfg)
    subj = unit.subject
    sensor = subj.sensors[0]
    name = sensor["name"]
    up = -unit.skeleton.gravity / np.linalg.norm(unit.skeleton.gravity)
    chip = sensor["chip_obj"]
    field = chip.mag_truth
    loop = CaptureLoop(unit)
    D0 = None
    injected = False
    rows = []
    while loop.frame_index < int(seconds * unit.rate_hz):
        t_s = loop.frame_index / unit.rate_hz
        if unit.estimator is not None and not injected:
            injected = True
            est = unit.estimator
            if not reject:
                est.mag_norm_th, est.mag_dip_th_rad, est.mag_min_undisturbed_s = np.inf, np.inf, 0.0
            if not adopt:
                est.mag_new_time_s = np.inf
            # the injected bias, about the sensor's z (vertical in the calibration pose)
            R_true = subj._kinematics(t_s)[0][1][0]
            sensor["gyro_bias"] = sensor["gyro_bias"] + R_true.T @ up * np.radians(bias_dps)
        if new_field is not None and t_s >= new_field[0]:
            subj.field_ut = np.asarray(new_field[1], float)       # another magnetic world
        if disturb is not None:
            # a magnet near the sensor: a constant field (uT, sensor axes) for a while
            t0, t1, offset_ut = disturb
            if t0 <= t_s < t1:
                chip.mag_truth = lambda: tuple(np.asarray(field(), float) + offset_ut)
            else:
                chip.mag_truth = field
        loop.run(frames=loop.frame_index + 1)
        if unit.estimator is None:
            continue
        R_true = subj._kinematics(subj.t_s)[0][1][0]
        D = unit.estimator._ahrs[name] @ R_true.T
        if D0 is None:
            D0 = D
        e = log_so3(D @ D0.T)
        rows.append((subj.t_s, np.degrees(e @ up), np.degrees(np.linalg.norm(e))))
    return np.array(rows), unit


@pytest.fixture(scope="module")
def bias_runs():
    return {m: _run(use_mag=m) for m in (True, False)}


def test_magnetometer_bounds_the_heading_under_a_vertical_gyro_bias(bias_runs):
    e_mag, unit = bias_runs[True]
    est = unit.estimator
    assert est.mag_used["body_imu"] >= 1700 and not est.mag_rejected.get("body_imu")
    bound = PSI_SS_DEG + 1.0
    assert np.abs(e_mag[:, 1]).max() <= bound, (np.abs(e_mag[:, 1]).max(), bound)
    late = e_mag[e_mag[:, 0] >= 50.0, 1]
    # settled (slow time constant 1 / (kp (1 - sin delta)) = 9.35 s): near the steady state
    assert abs(np.abs(late).mean() - PSI_SS_DEG) < 1.0, (np.abs(late).mean(), PSI_SS_DEG)
    assert e_mag[:, 2].max() <= bound + 1.0


def test_without_the_magnetometer_the_heading_drifts(bias_runs):
    e6, unit = bias_runs[False]
    assert not unit.estimator.mag_used
    h = np.abs(e6[:, 1])
    at = lambda t: h[np.argmin(np.abs(e6[:, 0] - t))]          # noqa: E731
    # ~ b t (the bias leaves the vertical as the sensor tilts): grows, well past the mag bound
    assert at(60.0) > 0.7 * BIAS_DPS * 58.0, at(60.0)
    assert at(60.0) > at(30.0) + 8.0 > at(10.0) + 12.0
    e_mag, _ = bias_runs[True]
    assert np.abs(e_mag[-30:, 1]).max() < at(60.0) / 4


def test_a_magnet_near_the_sensor_is_rejected():
    # 25 uT along the sensor's y from 15 to 25 s: |m| 45 -> ~51 uT, dip 63 -> ~51 deg
    disturb = (15.0, 25.0, np.array([0.0, 25.0, 0.0]))
    e, unit = _run(seconds=40.0, bias_dps=0.0, disturb=disturb)
    during = (e[:, 0] >= 15.0) & (e[:, 0] < 25.0)
    assert unit.estimator.mag_rejected["body_imu"] >= 300          # all 10 s, + 0.5 s after
    assert np.abs(e[during, 1]).max() < 2.0, np.abs(e[during, 1]).max()
    assert np.abs(e[e[:, 0] >= 25.0, 1]).max() < 2.0
    # the same magnet without the guard pulls the heading tens of degrees off
    e_open, _ = _run(seconds=40.0, bias_dps=0.0, disturb=disturb, reject=False)
    assert np.abs(e_open[(e_open[:, 0] >= 15.0) & (e_open[:, 0] < 25.0), 1]).max() > 20.0


def test_a_new_magnetic_environment_is_adopted_a_carried_magnet_never():
    """From 10 s the world's field is another (|m| 45 -> 55 uT, dip 63 -> 48 deg, north turned
    40 deg: a room with steel in it). Every reading fails the two tests against the old
    reference; once the new field has stayed consistent for 20 s of turning (VQF's
    magNewTime), it becomes the reference and holds the heading again: over the last 15 s the
    heading moves by less than 2 deg, where without adoption the bias drifts it by ~b t
    (0.5 deg/s). A magnet carried with the sensor (test above) is not consistent as the
    sensor turns and is never adopted."""
    turn = exp_so3(np.radians(40.0) * np.array([0.0, 0.0, 1.0]))
    field = turn @ (55.0 * np.array([np.cos(np.radians(48.0)), 0.0, -np.sin(np.radians(48.0))]))
    e, unit = _run(seconds=70.0, new_field=(10.0, field))
    est = unit.estimator
    assert est.mag_adopted.get("body_imu") == 1
    late = e[e[:, 0] >= 55.0, 1]
    assert np.ptp(late) < 2.0, np.ptp(late)
    e_no, unit_no = _run(seconds=70.0, new_field=(10.0, field), adopt=False)
    assert not unit_no.estimator.mag_adopted
    late_no = e_no[e_no[:, 0] >= 55.0, 1]
    assert np.ptp(late_no) > 0.7 * BIAS_DPS * 15.0, np.ptp(late_no)
    _, magnet = _run(seconds=40.0, bias_dps=0.0, disturb=(5.0, 40.0, np.array([0.0, 25.0, 0.0])))
    assert not magnet.estimator.mag_adopted


def _old_mahony(R, seq, dt, bias, kp, up):
    """The 6-axis filter exactly as it was before the magnetometer (the reference)."""
    for g, a in seq:
        w = np.asarray(g, float) - bias
        a = np.asarray(a, float)
        n = np.linalg.norm(a)
        if n > 1e-6:
            w = w + kp * np.cross(a / n, R.T @ up)
        R = R @ exp_so3(w * dt)
    return R


def test_six_axis_sensors_are_bit_identical():
    rng = np.random.default_rng(5)
    sk = single_imu_skeleton()
    R0 = exp_so3(np.array([0.1, -0.2, 0.3]))
    bias = np.array([0.01, -0.02, 0.005])
    ests = [OrientEstimator(sk, 1 / 30, {"imu": 0}, sample_dt_s=1 / 250) for _ in range(3)]
    ests[2].use_mag = False
    for est in ests:
        est.start_ahrs("imu", R0)
        est.gyro_bias = {"imu": bias}
    R_ref = R0
    for _ in range(40):
        seq = [(tuple(rng.normal(size=3)), tuple(rng.normal(size=3) + (0, 0, 9.8))) for _ in range(8)]
        R_ref = _old_mahony(R_ref, seq, 1 / 250, bias, 1.0, sk_up(sk))
        g, a = seq[-1]
        outs = [ests[0]._sensor_world("imu", (g, a), {}, seq),
                ests[1]._sensor_world("imu", (g, a, None), {}, seq),           # no mag sample yet
                ests[2]._sensor_world("imu", (g, a, (20.0, 0.0, -40.0)), {}, seq)]   # mag off
        for R in outs:
            assert np.array_equal(R, R_ref)


def sk_up(sk):
    return -sk.gravity / np.linalg.norm(sk.gravity)


def test_mpu6050_unit_matches_the_six_axis_filter():
    """An MPU-6050 unit's estimator output equals one recomputed with the old filter."""
    unit = build_unit(default_config(body="single-imu", chip="mpu6050", estimator="orient"))
    loop = CaptureLoop(unit)
    loop.run(duration_s=1.0)
    est = unit.estimator
    R = est._ahrs["body_imu"].copy()
    for _ in range(30):
        r = unit.read(loop.frame_index / unit.rate_hz)["body_imu"]
        loop.frame_index += 1
        if r is None:
            continue
        assert "mag" not in r
        seq = r.get("samples") or [(r["gyro"], r["accel"])]
        dt = est.sample_dt_s if r.get("samples") else est.dt_s
        R = _old_mahony(R, seq, dt, est.gyro_bias["body_imu"], est.kp, est.up)
        unit.estimate(0.0, {"body_imu": r})
        assert np.array_equal(est._ahrs["body_imu"], R)


def test_a_static_heading_error_is_pulled_back():
    """Sign and rate: a sensor at rest started 10 deg off in heading converges to the reference."""
    sk = single_imu_skeleton()
    up = sk_up(sk)
    field_ut = 45.0 * np.array([0.45, 0.0, -0.89])
    est = OrientEstimator(sk, 1 / 30, {"imu": 0}, sample_dt_s=1 / 250)
    est.start_ahrs("imu", np.eye(3), mag_ut=field_ut)          # the reference: north along x
    est._ahrs["imu"] = exp_so3(np.radians(10.0) * up)         # then knocked 10 deg off
    accel = (0.0, 0.0, 9.81)
    seq = [((0.0, 0.0, 0.0), accel)] * 8
    heading = []
    for _ in range(30 * 30):
        R = est._sensor_world("imu", ((0, 0, 0), accel, tuple(field_ut)), {}, seq)
        heading.append(np.degrees(log_so3(R) @ up))
    heading = np.array(heading)
    # linearised (tilt phi about north, apparent heading psi'), kp = kp_m = k:
    #   d/dt (phi, psi') = -k [[1, sin cos], [tan, 1]] (phi, psi'): eigenvalues -k (1 -+ sin delta),
    # the slow one's time constant 1 / (k (1 - sin delta)) = 9.35 s
    tau_s = 1.0 / (1.0 - np.sin(DIP_RAD))
    assert np.all(np.diff(np.abs(heading)) <= 1e-9)
    assert abs(heading[-1]) < 10.0 * np.exp(-30.0 / tau_s) * 1.5
    k = int(tau_s * 30)
    assert 0.3 < abs(heading[k]) / 10.0 < 0.45, heading[k]


def test_raw_log_carries_the_magnetometer_and_old_logs_replay(tmp_path):
    cfg = default_config(body="single-imu", chip="mpu9250", estimator="orient")
    unit = build_unit(cfg)
    path = tmp_path / "raw.jsonl"
    log = RawLogWriter(str(path), unit)
    for k in range(45):
        t = k / unit.rate_hz
        r = unit.read(t)
        log.write(k, t, r)
        unit.estimate(t, r)
    log.close()
    src = JsonlReplay(str(path))
    frames = [src.read() for _ in range(45)]
    mags = [f["body_imu"]["mag"] for f in frames if f["body_imu"] is not None]
    assert len(mags) >= 40 and all(len(m) == 3 for m in mags)
    again = build_unit(cfg, replay=JsonlReplay(str(path)))
    for k in range(45):
        again.estimate(k / again.rate_hz, again.replay.read())
    assert again.estimator.mag_used["body_imu"] >= 10
    # an old log (no "m"): replays as a 6-axis sensor
    lines = path.read_text().splitlines()
    import json
    old = [lines[0]] + [json.dumps({k: v for k, v in json.loads(x).items() if k != "m"}) for x in lines[1:]]
    (tmp_path / "old.jsonl").write_text("\n".join(old) + "\n")
    prior = build_unit(cfg, replay=JsonlReplay(str(tmp_path / "old.jsonl")))
    for k in range(45):
        r = prior.replay.read()
        assert r["body_imu"] is None or "mag" not in r["body_imu"]
        prior.estimate(k / prior.rate_hz, r)
    assert not prior.estimator.mag_used
