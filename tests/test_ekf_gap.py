"""Time: the EKF predicts over the real elapsed time of a gap (n missed frames -> n predicts),
the orient filter integrates a lone reading over it, and the capture loop counts overruns and
the frames it skipped (in real time), which reach the estimator as a gap."""

import numpy as np
import pytest

from device.capture.unit import humanoid18
from device.estimate import make_estimator
from device.estimate.observation import Observation

DT = 1 / 30.0


def _est():
    sk = humanoid18()
    est = make_estimator("ekf", sk, DT)
    q0 = sk.home.copy()
    est.initialise(q0, qd0_dof=np.where([d.kind == "rotation" for d in sk.dofs], 20.0, 0.0))
    return est


def _count(est):
    calls = []
    real = est.predict

    def predict():
        calls.append(1)
        real()
    est.predict = predict
    return calls


@pytest.mark.parametrize("missed", [0, 1, 3])
def test_gap_of_n_missed_frames_is_n_plus_one_predicts(missed):
    est = _est()
    calls = _count(est)
    est.step(Observation(0.0))
    est.step(Observation((1 + missed) * DT))
    assert len(calls) == 1 + (1 + missed)            # the first step predicts once too
    assert est.gap_steps == missed


def test_gap_prediction_equals_predicting_each_missed_frame():
    a, b = _est(), _est()
    a.step(Observation(0.0))
    b.step(Observation(0.0))
    a.step(Observation(4 * DT))
    for _ in range(4):
        b.predict()
    b.update(Observation(4 * DT), _own_P=True)
    assert np.allclose(a.x, b.x, atol=1e-12) and np.allclose(a.P, b.P, atol=1e-12)
    # and it is not the one-step prediction the filter made before
    c = _est()
    c.step(Observation(0.0))
    c.predict()
    assert not np.allclose(a.x, c.x, atol=1e-6)


def test_a_gap_longer_than_a_second_is_truncated_and_counted():
    est = _est()
    calls = _count(est)
    est.step(Observation(0.0))
    est.step(Observation(5.0))
    assert len(calls) == 1 + est.max_gap_steps == 31 and est.gaps_truncated == 1


def test_orient_filter_integrates_over_the_elapsed_time():
    from device.capture.orient import OrientEstimator
    from device.capture.rot import quat_to_mat  # noqa: F401
    sk = humanoid18()
    link = sk.links[sk.dofs[0].link].name
    est = OrientEstimator(sk, DT, {"s": sk.link_index(link)}, {"s": np.eye(3)})
    est.kp = 0.0
    est.start_ahrs("s", np.eye(3))
    w = np.array([0.0, 0.0, 1.5])                   # rad/s about z, no accelerometer reading

    class O:
        def __init__(self, t):
            self.t_s, self.imu, self.orient, self.samples = t, {"s": (w, np.zeros(3))}, {}, {}
    est.initialise(sk.home)
    est.step(O(0.0))
    est.step(O(4 * DT))                             # three frames missed
    R = est._ahrs["s"]
    ang = np.arctan2(R[1, 0], R[0, 0])
    assert ang == pytest.approx(1.5 * 5 * DT, rel=1e-9)    # first frame dt + the 4 dt gap


class _FakeTime:
    def __init__(self):
        self.t = 100.0

    def now(self):
        return self.t

    def sleep(self, d):
        self.t += max(0.0, d)


def test_loop_counts_overruns_and_skips_and_the_ekf_sees_the_gap():
    from device.capture.clock import RealClock
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    cfg = default_config(body="humanoid18", chip="mpu6050")
    cfg["calibration"]["still_s"] = 0.2
    unit = build_unit(cfg)
    ft = _FakeTime()
    loop = CaptureLoop(unit, clock=RealClock(monotonic=ft.now, sleep=ft.sleep), truth=True)
    read = unit.read

    def slow_read(t_s):
        if loop.frame_index == 20:
            ft.t += 2.5 * loop.period_s               # this frame's work overruns 2.5 periods
        return read(t_s)
    unit.read = slow_read
    codes = []
    loop.outputs.append(lambda k, t, v, c: codes.append(k))
    loop.run(frames=30)
    s = loop.stats.summary()
    # frame 20 ended 2.5 periods late (plus its bus time): frame 21's deadline had passed and
    # 22's too, so 21 is skipped (a missing column) and 22 captured at once, late: its FIFO
    # reads (the samples of the gap) end after 23's deadline, a second overrun
    assert s["overruns"] == 2 and s["skipped"] == 1
    assert 21 not in codes and 22 in codes and codes[-1] == 29
    assert unit.estimator.gap_steps == 1
    assert loop.frame_index == 30 and len(loop.truth_values()) == 30
    assert "overruns 2" in loop.stats.table() and "skipped 1" in loop.stats.table()
