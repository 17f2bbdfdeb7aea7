"""The capture loop: absolute deadlines, skipping when late, recording, outputs, raw logs, replay."""

import json

import numpy as np
import pytest

from device.capture.clock import RealClock, VirtualClock, deadline
from device.capture.config import default_config, check, load_config
from device.capture.loop import CaptureLoop
from device.capture.rawlog import JsonlReplay, RawLogWriter, open_replay, single_imu_config
from device.capture.rot import quat_to_mat
from device.capture.unit import build_unit
from protocol import container
from protocol.errors import FormatError


def test_deadlines_do_not_drift_over_an_hour():
    period = 1.0 / 30
    assert abs(deadline(0.0, 108000, period) - 3600.0) < 1e-9
    clk = VirtualClock()
    for k in range(0, 108001, 997):
        clk.sleep_until(deadline(0.0, k, period))
    assert clk.now() == deadline(0.0, 108000 // 997 * 997, period)


class FakeTime:
    """A monotonic clock that the unit's work advances (a scripted slow read), and sleep()."""

    def __init__(self):
        self.t = 100.0
        self.sleeps = []

    def mono(self):
        return self.t

    def sleep(self, s):
        self.sleeps.append(s)
        self.t += s


def test_realtime_skips_missed_frames_and_keeps_the_timeline(tmp_path):
    ft = FakeTime()
    unit = build_unit(default_config(body="human", rate_hz=10.0))
    read = unit.read
    slow = {12: 0.35, 20: 0.15}                      # frames whose read takes that long

    def scripted_read(t_s):
        k = int(round(t_s * 10))
        ft.t += slow.get(k, 0.01)
        return read(t_s)
    unit.read = scripted_read
    loop = CaptureLoop(unit, record=str(tmp_path / "r.msr"), clock=RealClock(ft.mono, ft.sleep))
    loop.run(frames=40)
    loop.close()
    st = loop.stats.summary()
    # frame 12 ends 0.36 s after its deadline: 13 and 14 are skipped, 15 is captured late;
    # frame 20 ends 0.16 s after: 21 is captured late, nothing skipped
    assert st["skipped"] == 2
    assert loop.frame_index == 40
    rec = container.read(str(tmp_path / "r.msr"))
    assert [f[0] for f in rec.frames] == list(range(40))
    missing = [f[0] for f in rec.frames if all(c is None for c in f[2])]
    assert missing == [13, 14]
    assert st["late_max_ms"] > 50
    assert all(s >= 0 for s in ft.sleeps)


def test_record_equals_output_and_reads_back_as_staff(tmp_path):
    from host.formats import read_motion
    unit = build_unit(default_config(estimator="orient"))      # the clip's own skeleton
    p = str(tmp_path / "rec.msr")
    loop = CaptureLoop(unit, record=p, frames_per_block=4)
    got = []
    loop.outputs.append(lambda k, t, v, c: got.append(c))
    loop.outputs.append(lambda *a: 1 / 0)          # a broken output never stops the unit
    loop.run(frames=50)
    loop.close()
    assert loop.output_errors == 50
    rec = container.read(p)
    assert [f[2] for f in rec.frames] == got
    assert rec.header["fps"] == 30.0 and len(rec.header["rows"]) == unit.skeleton.ndof
    staff = read_motion(p)
    assert staff.frames == 50 and staff.nrows == unit.skeleton.ndof
    assert np.isnan(staff.values[0]).all()           # Hips.Xposition: not estimated -> missing


def test_status_reports_sensors_rate_health():
    unit = build_unit(default_config(body="human"))
    loop = CaptureLoop(unit)
    seen = []
    loop.status_callback = seen.append
    loop.run(duration_s=3.0, status_every_s=0.5)
    assert len(seen) == 6
    assert seen[0]["calibrating"] and not seen[-1]["calibrating"]
    assert seen[-1]["sensors_alive"] == seen[-1]["sensors"] == 22
    assert seen[-1]["health"] == 1.0 and abs(seen[-1]["rate_hz"] - 30.0) < 1e-9
    assert "busy" in loop.stats.table()


@pytest.mark.parametrize("chip", ["bno055", "mpu6050"])
def test_raw_log_replays_to_the_same_estimate(tmp_path, chip):
    unit = build_unit(default_config(body="human", chip=chip))
    raw = RawLogWriter(str(tmp_path / "raw.jsonl"), unit)
    loop = CaptureLoop(unit, raw_log=raw)
    a = []
    loop.outputs.append(lambda k, t, v, c: a.append(v))
    loop.run(frames=75)
    loop.close()
    src = open_replay("replay:" + str(tmp_path / "raw.jsonl"))
    assert isinstance(src, JsonlReplay) and src.frames == 75
    unit2 = build_unit(None, replay=src)
    loop2 = CaptureLoop(unit2)
    b = []
    loop2.outputs.append(lambda k, t, v, c: b.append(v))
    loop2.run(frames=75)
    x = np.array([[np.nan if v is None else v for v in r] for r in a], float)
    y = np.array([[np.nan if v is None else v for v in r] for r in b], float)
    assert np.allclose(x, y, atol=1e-3, equal_nan=True)
    with pytest.raises(EOFError):
        loop2.step()


def test_real_broad_recording_replayed_through_the_estimator(shared_data):
    """BROAD trial 02 (real IMU, optical reference): inclination error of the replayed estimate."""
    pytest.importorskip("scipy")
    src = open_replay("replay:" + str(shared_data / "imu" / "02_undisturbed_slow_rotation_B.mat"),
                      rate_hz=100.0)
    unit = build_unit(single_imu_config(src.rate_hz), replay=src)
    loop = CaptureLoop(unit)
    R = []
    loop.outputs.append(lambda *a: R.append(unit.estimator._ahrs["imu"] if unit.estimator else np.eye(3)))
    loop.run(duration_s=40.0)
    ref = src.reference_quat[np.minimum((np.arange(1, len(R) + 1) / 100.0 * src.sample_rate_hz).astype(int),
                                        len(src.reference_quat) - 1)]
    ok = ~np.isnan(ref).any(1)
    ok[:100] = False
    Rr = quat_to_mat(np.where(ok[:, None], ref, [1.0, 0, 0, 0]))
    z = np.array([0.0, 0.0, 1.0])
    ue = np.einsum("kji,j->ki", np.array(R), z)
    ur = np.einsum("kji,j->ki", Rr, z)
    inc = np.degrees(np.arccos(np.clip((ue * ur).sum(1), -1, 1)))[ok]
    assert np.mean(inc) < 2.0 and np.percentile(inc, 95) < 4.0, (np.mean(inc), np.percentile(inc, 95))
    assert loop.stats.frames == 4000


def test_real_xio_csv_replays(shared_data):
    src = open_replay("replay:" + str(shared_data / "imu" / "sensor_data.csv"))
    unit = build_unit(single_imu_config(src.rate_hz), replay=src)
    loop = CaptureLoop(unit)
    q = []
    loop.outputs.append(lambda k, t, v, c: q.append(v))
    loop.run(duration_s=20.0)
    q = np.array(q, float)
    assert q.shape == (2000, 3) and np.isfinite(q).all()
    assert np.abs(q[60:]).max() > 10               # the recording really moves


def test_config_errors_name_the_field(tmp_path):
    cfg = default_config()
    cfg["sensors"] = [{"name": "a", "chip": "lsm6", "bus": "main", "addr": 0x28, "link": "Hips"}]
    with pytest.raises(FormatError, match=r"sensors\[0\]: chip 'lsm6'"):
        check(cfg)
    cfg["sensors"][0].update(chip="bno055", bus="other")
    with pytest.raises(FormatError, match="bus 'other'"):
        check(cfg)
    p = tmp_path / "u.json"
    p.write_text("{not json")
    with pytest.raises(FormatError, match="not valid JSON"):
        load_config(str(p))
    p.write_text(json.dumps(dict(default_config(), rate_hz=0)))
    with pytest.raises(FormatError, match="rate_hz"):
        load_config(str(p))
