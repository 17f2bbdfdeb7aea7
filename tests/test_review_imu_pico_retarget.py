"""Fresh-eyes review of import-imu, emulate/deploy pico and retargeting: each break found is a
test here (bad input: one line naming the file and the problem, exit 2, nothing written)."""

import json

import numpy as np
import pytest

from host.cli import main
from tests.test_import_xsens import mapping, write_mt
from tests.test_replay_config import still_log  # noqa: F401 (a fixture)

COLS = "time_s,sensor,gyro_x_rad_s,gyro_y_rad_s,gyro_z_rad_s,accel_x_m_s2,accel_y_m_s2,accel_z_m_s2"


def refused(capsys, argv, out, *words):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("motionstaff: ") and "\n" not in err and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    assert not out.exists() or out.is_dir()
    assert not (out.parent / (out.name + ".part")).exists()
    return err


def csv_map(tmp_path):
    p = tmp_path / "cmap.json"
    p.write_text(json.dumps({"format": "motionstaff-imu-map", "version": 1,
                             "sensors": {"hip": "pelvis", "knee_up": "l_thigh"}}))
    return str(p)


def csv_rows(times):
    out = []
    for t in times:
        for s in ("hip", "knee_up"):
            out.append("%s,%s,0.1,0.2,0.3,9.81,0,0" % (t, s))
    return "\n".join(out) + "\n"


def test_mapping_naming_a_sensor_twice_is_refused(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    m = tmp_path / "dup.json"
    m.write_text('{"format": "motionstaff-imu-map", "version": 1, "sensors": '
                 '{"00B40B91": "pelvis", "00B40B91": "l_thigh"}}')
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", str(m), "--out", str(out), a], out, "dup.json")
    assert "00B40B91" in err and not out.exists()


def test_mapping_segment_not_a_string_is_one_line(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    m = tmp_path / "bad.json"
    m.write_text(json.dumps({"format": "motionstaff-imu-map", "sensors": {"00B40B91": {"link": ["pelvis"]}}}))
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", str(m), "--out", str(out), a], out)
    assert "bad.json" in err and not out.exists()
    m.write_text(json.dumps({"format": "motionstaff-imu-map",
                             "sensors": {"00B40B91": {"link": "pelvis", "name": [1]}}}))
    err = refused(capsys, ["import-imu", "--map", str(m), "--out", str(out), a], out)
    assert "bad.json" in err and not out.exists()


def test_existing_output_is_never_replaced(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    out = tmp_path / "o.jsonl"
    out.write_text("an earlier recording\n")
    assert main(["import-imu", "--map", mapping(tmp_path), "--out", str(out), a]) == 2
    err = capsys.readouterr().err
    assert "o.jsonl" in err and err.count("\n") == 1
    assert out.read_text() == "an earlier recording\n"


def test_output_is_a_directory(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    out = tmp_path / "adir"
    out.mkdir()
    err = refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), a], out)
    assert "adir" in err and out.is_dir() and not list(out.iterdir())


def test_zero_update_rate_is_refused(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10), rate="0")
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), a], out)
    assert "t_00B40B91.txt" in err and "Update Rate" in err and not out.exists()


def test_truncated_last_line_and_header_only(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    with open(a) as f:
        text = f.read()
    with open(a, "w") as f:
        f.write(text[:-30])
    out = tmp_path / "o.jsonl"
    refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), a], out, "t_00B40B91.txt")
    b = write_mt(str(tmp_path / "t_00B40C45.txt"), [])
    refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), b], out,
            "t_00B40C45.txt", "no samples")


def test_literal_inf_or_nan_value_is_refused(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    with open(a) as f:
        lines = f.read().splitlines()
    lines[8] = lines[8].replace("9.81", "inf", 1)
    with open(a, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = tmp_path / "o.jsonl"
    refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), a], out,
            "t_00B40B91.txt", "line 9")


def test_counter_wrap_aligns_sensors_across_files(tmp_path):
    # one station: sensor A's packets 65534..65535,0..7, sensor B lost the two before the wrap
    from host.imu_import import load_mapping, read_xsens
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), [65534, 65535] + list(range(8)))
    b = write_mt(str(tmp_path / "t_00B40C45.txt"), list(range(8)))
    rec = read_xsens([a, b], load_mapping(mapping(tmp_path)))
    assert rec["frames"] == 10
    assert rec["valid"]["pelvis_imu"].all()
    assert list(rec["valid"]["l_thigh_imu"]) == [False, False] + [True] * 8


def test_counter_duplicate_is_refused(tmp_path, capsys):
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), [65534, 65535, 65535, 0, 1])
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), a], out)
    assert "t_00B40B91.txt" in err and "65535" in err and not out.exists()


def test_csv_long_time_gap_is_refused_before_allocating(tmp_path, capsys):
    # a CSV whose clock jumps a day: refused by --max-gap like an Xsens gap, not 8.6 M null frames
    p = tmp_path / "w.csv"
    p.write_text(COLS + "\n" + csv_rows(["%.2f" % (k / 100) for k in range(20)] + ["86400.0"]))
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", csv_map(tmp_path), "--out", str(out), str(p)], out, "w.csv")
    assert "no sample from time_s 0.19 to 86400" in err and "max_gap_s 0.50" in err, err


def test_csv_infinite_time_is_one_line(tmp_path, capsys):
    p = tmp_path / "w.csv"
    p.write_text(COLS + "\n" + csv_rows(["%.2f" % (k / 100) for k in range(20)] + ["inf"]))
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", csv_map(tmp_path), "--out", str(out), str(p)], out, "w.csv")
    assert "line 42: a value is inf or nan" in err, err


def test_csv_sensor_out_of_time_order_is_refused(tmp_path, capsys):
    p = tmp_path / "w.csv"
    t = ["%.2f" % (k / 100) for k in range(20)]
    t[5], t[6] = t[6], t[5]
    p.write_text(COLS + "\n" + csv_rows(t))
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", csv_map(tmp_path), "--out", str(out), str(p)], out, "w.csv")
    assert "sensor hip: time_s must increase" in err, err


# -- (c) live retargeting ------------------------------------------------------------------------

def _live_person(n):
    from device.body.human import human_model
    from device.capture.bvhclip import load_bvh
    from device.capture.retarget import retarget_clip
    from host.demo.pipeline import BUNDLED_CLIP
    sk = human_model()
    mot = retarget_clip(load_bvh(BUNDLED_CLIP), sk, max_s=n / 30.0 + 0.1, fps=30.0)
    return [d.name for d in sk.dofs], mot.q_frames[:n]


def test_live_first_frame_occluded_does_not_poison_the_session():
    # the first frame all lost (markers occluded at start): the later frames must be retargeted
    # as if it had never come, not held at home for ever by a NaN leg length / standing height
    from device.servo.robot import load_robot
    from host.retarget.live import LiveRetargeter
    names, q = _live_person(12)
    clean = LiveRetargeter("op3-dynamixel", names, fps=30.0, iterations=2)
    lost = LiveRetargeter("op3-dynamixel", names, fps=30.0, iterations=2)
    lost.step([None] * len(names), 0.0)
    a = [clean.step(list(v), (k + 1) / 30.0) for k, v in enumerate(q)]
    b = [lost.step(list(v), (k + 1) / 30.0) for k, v in enumerate(q)]
    servos = load_robot("op3-dynamixel").servos
    assert np.isfinite(b).all()
    assert lost._stand_z is not None and np.isfinite(lost._stand_z) and np.isfinite(lost._leg)
    assert np.isfinite(lost._height.v)
    for row in b:
        assert all(s.lo_deg - 1e-9 <= x <= s.hi_deg + 1e-9 for s, x in zip(servos, row))
    # after a second of the same frames the two agree (the lost frame is forgotten)
    assert np.abs(np.array(a[-1]) - np.array(b[-1])).max() < 5.0


# -- (b) receiver configs -------------------------------------------------------------------------

@pytest.mark.parametrize("change, msg", [
    (lambda c: c["servos"][0].update(pin=2.5), "'pin'"),            # was GP2 silently
    (lambda c: c["servos"][0].update(pin=25), "GP25 is not a pin"),
    (lambda c: c["servos"][0].update(pin=29), "GP29 is not a pin"),
    (lambda c: c["servos"][1].update(pin=2), "pin 2 already"),
    (lambda c: c["servos"][0].update(min_us=2300), "'min_us' must be below"),
    (lambda c: c["servos"][0].update(min_us=-800), "'min_us'"),
    (lambda c: c["servos"][0].update(max_us=1e9), "'max_us'"),
    (lambda c: c.update(uart={"id": 0, "tx": 0.5, "rx": 1}), "'tx'"),   # was GP0 silently
    (lambda c: c.update(uart={"id": 0, "tx": 0, "rx": 1, "baud": 0}), "'baud'"),
])
def test_receiver_configs_refused_in_one_line(tmp_path, capsys, change, msg):
    from tests.test_pico_deploy import CFG
    cfg = json.loads(json.dumps(CFG))
    change(cfg)
    path = tmp_path / "receiver.json"
    path.write_text(json.dumps(cfg))
    assert main(["deploy", "--port", "x", "--config", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "receiver.json" in err and len(err.splitlines()) == 1, err


# -- (a) capture --replay of a raw log ------------------------------------------------------------

@pytest.fixture
def replay_log(tmp_path, still_log):
    from tests.test_replay_config import config
    return still_log, config(tmp_path)


def _variant(log, name, row_at=None, row=None, cut_last=False):
    lines = log.read_text().splitlines(True)
    if row_at is not None:
        d = json.loads(lines[row_at])
        d["r"]["pelvis_imu"] = row
        lines[row_at] = json.dumps(d) + "\n"
    if cut_last:
        lines[-1] = lines[-1][:25]
    p = log.parent / (name + ".jsonl")
    p.write_text("".join(lines))
    return p


def _replay(p, cfg):
    from host.formats import read_motion
    out = p.parent / (p.stem + ".png")
    rc = main(["capture", "--replay", str(p), "--config", cfg, "--record", str(out)])
    return rc, (read_motion(str(out)).values if rc == 0 else None), out


@pytest.mark.parametrize("row", [[float("nan")] * 6, [1e308, 1e308, 1e308, 0.0, 0.0, 9.8],
                                 [0.0, 0.0, 0.0, 0.0, 0.0, 9.8, 0.0, 0.0, 0.0, 0.0]])
def test_replay_impossible_reading_is_a_lost_reading_not_the_rest_of_the_run(replay_log, row):
    # one NaN / 1e308 / zero-quaternion reading made every later frame of the sensor's joints NaN:
    # it is a reading no chip gives, replayed as the null of a lost one
    log, cfg = replay_log
    rc0, ref, _ = _replay(_variant(log, "null", 80, None), cfg)
    rc1, got, _ = _replay(_variant(log, "bad", 80, row), cfg)
    assert rc0 == rc1 == 0
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[~np.isnan(got)], ref[~np.isnan(ref)])


@pytest.mark.parametrize("row", [[1, 2], ["a", "b", "c", 0, 0, 9.8], 5])
def test_replay_malformed_reading_refused_before_the_run(replay_log, capsys, row):
    log, cfg = replay_log
    p = _variant(log, "bad", 80, row)
    rc, _, out = _replay(p, cfg)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists()
    assert err.startswith("motionstaff: ") and "bad.jsonl" in err and "line 81" in err
    assert len(err.splitlines()) == 1 and "captured" not in capsys.readouterr().out


def test_replay_power_cut_last_line_keeps_every_whole_frame(replay_log):
    log, cfg = replay_log
    _, ref, _ = _replay(log, cfg)
    rc, got, _ = _replay(_variant(log, "cut", cut_last=True), cfg)
    assert rc == 0 and got.shape[1] == ref.shape[1] - 1
    np.testing.assert_array_equal(np.nan_to_num(got, nan=-9), np.nan_to_num(ref[:, :-1], nan=-9))


def test_xsens_files_of_different_trials_are_refused(tmp_path, capsys):
    # sensor B's counters start 5 min after A's: another trial, not 30000 null frames each
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(100))
    b = write_mt(str(tmp_path / "t_00B40C45.txt"), range(30000, 30100))
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), a, b], out,
                  "max_gap", "another trial")
    assert "t_00B40B91.txt" in err or "t_00B40C45.txt" in err


@pytest.mark.parametrize("pins", ["2,x", "2,,3", "2.5,3"])
def test_deploy_pins_not_numbers_name_the_option(tmp_path, capsys, pins):
    from tests.test_firmware_deploy import ROBOT
    p = tmp_path / "tinyarm.json"
    p.write_text(json.dumps(ROBOT))
    n = len(ROBOT["servos"])
    arg = ",".join([pins] + [str(10 + i) for i in range(n - 2)])
    assert main(["deploy", "--port", "x", "--robot", str(p), "--pins", arg, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--pins" in err and len(err.splitlines()) == 1, err


def test_import_disk_full_midway_leaves_nothing(tmp_path, monkeypatch, capsys):
    import host.imu_import as ii
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    real = json.dumps
    calls = [0]

    def full(*x, **kw):
        calls[0] += 1
        if calls[0] == 5:
            raise OSError(28, "No space left on device")
        return real(*x, **kw)
    monkeypatch.setattr(ii.json, "dumps", full)
    out = tmp_path / "o.jsonl"
    refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), a], out, "No space")


def test_functional_calibration_thigh_and_shank_never_valid_together():
    # thigh lost on the odd walking frames, shank on the even ones (two sensors of one bus read
    # in turn): the knee-sign integral had no sample and np.percentile raised IndexError
    from tests.test_functional_calibration import readings
    from device.capture.functional import functional_calibration
    sk, sub, sens, frames = readings()
    walk = [dict(f) for f in frames[106:356]]
    for k, f in enumerate(walk):
        f["l_thigh_imu" if k % 2 else "l_shank_imu"] = None
    res = functional_calibration(sk, sens, frames[:100], walk)
    assert all(np.isfinite(res["mounts"][n]).all() for n in res["mounts"])


def _nan_cols(v):
    v[:, 5:9] = np.nan          # occluded markers: whole frames lost
    v[3, :] = np.nan            # and one row never seen
    return v


@pytest.mark.parametrize("case", ["nan", "one_frame", "1fps", "240fps"])
def test_retarget_by_pose_odd_staffs_stay_within_every_limit(case):
    # measured: these held (no traceback, limits and velocity kept); guarded here
    from host.retarget.pose import retarget_to_robot
    from host.retarget.robotmodel import robot_body
    from tests.test_retarget_pose import human_staff, squat_staff
    v = squat_staff(1.0).values.copy()
    st = {"nan": lambda: human_staff(_nan_cols(v)), "one_frame": lambda: human_staff(v[:, :1].copy()),
          "1fps": lambda: human_staff(v[:, :4].copy(), fps=1.0),
          "240fps": lambda: human_staff(v, fps=240.0)}[case]()
    r = retarget_to_robot(st, "op3-dynamixel", iterations=2, collisions=False, lead_in_s=0.2)
    body = robot_body("op3-dynamixel")
    d = r.staff.values.T
    assert np.isfinite(d).all()
    assert (d >= np.array(body.lo_deg) - 1e-9).all() and (d <= np.array(body.hi_deg) + 1e-9).all()
    assert (np.abs(np.diff(d, axis=0)) <= np.array(body.vmax_dps) / r.staff.fps + 1e-6).all()


@pytest.mark.parametrize("gap", ["nan", "-1", "inf"])
def test_import_max_gap_must_be_a_duration(tmp_path, capsys, gap):
    # --max-gap nan turned every gap check off (a CSV clock jump became millions of null frames)
    a = write_mt(str(tmp_path / "t_00B40B91.txt"), range(10))
    out = tmp_path / "o.jsonl"
    err = refused(capsys, ["import-imu", "--map", mapping(tmp_path), "--out", str(out), "--max-gap", gap, a],
                  out, "--max-gap")
    assert err.endswith(": seconds in [0, 60]") and not out.exists(), err
