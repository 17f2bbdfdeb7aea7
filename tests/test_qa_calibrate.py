"""QA regressions for `motionstaff calibrate`, the calibration file applied by `capture`, the BNO055
profile kept across checks, the magnetometer option and raw logs with a magnetometer.

Every bad input is one line on stderr naming the thing and the problem, exit status 2, nothing
written; a file's content never reaches the readings unchecked. Seeded simulated units, no sleeps.
"""

import json
import os

import numpy as np
import pytest

from device.sensors.bno055_sim import DEFAULT_OFFSETS
from host.cli import main
from tests.unit_config import write_unit_config

FORMAT = "motionstaff-imu-calibration"
SENSORS = [
    {"name": "a_imu", "chip": "mpu6050", "bus": "main", "addr": 0x68, "link": "l_thigh",
     "mux": {"addr": 0x70, "channel": 0}},
    {"name": "b_imu", "chip": "mpu9250", "bus": "main", "addr": 0x68, "link": "r_thigh",
     "mux": {"addr": 0x70, "channel": 1}},
    {"name": "c_imu", "chip": "bno055", "bus": "main", "addr": 0x28, "link": "pelvis",
     "mux": {"addr": 0x70, "channel": 2}},
]
GOOD = {
    "a_imu": {"chip": "mpu6050", "gyro_bias_rad_s": [0.01, -0.005, 0.002],
              "accel_bias_m_s2": [0.1, -0.1, 0.2], "accel_scale": [1.01, 0.99, 1.0]},
    "b_imu": {"chip": "mpu9250", "gyro_bias_rad_s": [0.0, 0.0, 0.0],
              "accel_bias_m_s2": [0.0, 0.0, 0.0], "accel_scale": [1.0, 1.0, 1.0],
              "mag_hard_iron_ut": [12.0, -30.0, 5.0],
              "mag_soft_iron": [[0.9, 0.0, 0.0], [0.0, 1.1, 0.0], [0.0, 0.0, 1.0]]},
    "c_imu": {"chip": "bno055", "calib_stat": {"system": 3, "gyro": 3, "accel": 3, "mag": 3},
              "profile": DEFAULT_OFFSETS.hex()},
}


def _sensors(**sim):
    out = [dict(s) for s in SENSORS]
    for s in out:
        if s["name"] in sim:
            s["sim"] = sim[s["name"]]
    return out


def _one_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


def _cal(tmp_path, entries, name="cal.json", **top):
    doc = {"format": FORMAT, "version": 1, "created": "2026-01-01T00:00:00Z", "sensors": entries}
    doc.update(top)
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def _cfg(tmp_path, cal=None, sensors=None, name="unit.json", **extra):
    p = write_unit_config(tmp_path, _sensors() if sensors is None else sensors,
                          subject={"seed": 4}, cal=cal, name=name)
    if extra:
        cfg = json.loads(p.read_text())
        cfg.update(extra)
        p.write_text(json.dumps(cfg))
    return str(p)


# -- calibrate: options --------------------------------------------------------------------
@pytest.mark.parametrize("opt,value,says", [
    ("--still-s", "inf", "--still-s"), ("--rate", "inf", "--rate"), ("--face-s", "1e15", "--face-s"),
    ("--rotate-s", "nan", "--rotate-s"), ("--rate", "2000", "--rate"), ("--rate", "1e-9", "--rate"),
    ("--still-s", "-1", "--still-s"), ("--rate", "0", "--rate")])
def test_durations_and_rate_out_of_range(tmp_path, capsys, opt, value, says):
    """inf overflowed int() (traceback), 1e15 s looped for ever, 1e-9 samples/s slept 1e9 s."""
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--config", _cfg(tmp_path), "--out", str(out), "--yes", opt, value]) == 2
    assert says in _one_line(capsys)
    assert not out.exists()


def test_rotate_too_short_for_the_magnetometer_is_refused_before_the_poses(tmp_path, capsys):
    """It was refused only after the gyro and six faces, blaming the AK8963's wiring."""
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--config", _cfg(tmp_path), "--out", str(out), "--yes",
                 "--rotate-s", "0.05"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "--rotate-s" in err[0] and "AK8963" not in err[0]
    assert "place" not in captured.out and not out.exists()
    # an MPU-6050 alone has no magnetometer: any --rotate-s is fine
    assert main(["calibrate", "--config", _cfg(tmp_path), "--sensor", "a_imu", "--out", str(out),
                 "--yes", "--rotate-s", "0.05", "--still-s", "0.2", "--face-s", "0.2"]) == 0


def test_chip_with_a_config_is_refused(tmp_path, capsys):
    """--chip was silently ignored with --config."""
    assert main(["calibrate", "--config", _cfg(tmp_path), "--chip", "mpu6050",
                 "--out", str(tmp_path / "c.json"), "--yes"]) == 2
    assert "--chip" in _one_line(capsys)


def test_config_with_no_sensors(tmp_path, capsys):
    """"sensors": [] calibrated 22 default BNO055s of the human model instead."""
    cfg = _cfg(tmp_path, sensors=[])
    out = tmp_path / "c.json"
    assert main(["calibrate", "--config", cfg, "--out", str(out), "--yes"]) == 2
    line = _one_line(capsys)
    assert "unit.json" in line and "sensors" in line and not out.exists()


def test_out_that_is_not_a_regular_file_is_never_replaced(tmp_path, capsys):
    """The atomic rename replaced /dev/null (or a FIFO) with a regular file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["calibrate", "--config", _cfg(tmp_path), "--sensor", "a_imu", "--out", str(fifo), "--yes"]) == 2
    assert "not a regular file" in _one_line(capsys)
    assert not os.path.isfile(fifo) and os.path.exists(fifo)
    assert main(["calibrate", "--config", _cfg(tmp_path), "--sensor", "a_imu", "--out", "", "--yes"]) == 2
    assert "--out" in _one_line(capsys)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_unwritable_out_is_found_before_the_poses(tmp_path, capsys):
    """os.access() says yes to root for /proc: the write failed only after every pose."""
    assert main(["calibrate", "--config", _cfg(tmp_path), "--sensor", "a_imu", "--out",
                 "/proc/qa-calibration.json", "--yes"]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.strip().splitlines()) == 1 and "place" not in captured.out


def test_symlinked_out_writes_the_target(tmp_path):
    target = tmp_path / "real.json"
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    cfg = _cfg(tmp_path)
    assert main(["calibrate", "--config", cfg, "--sensor", "a_imu", "--out", str(link), "--yes",
                 "--still-s", "0.2", "--face-s", "0.2"]) == 0
    assert link.is_symlink() and "a_imu" in json.loads(target.read_text())["sensors"]


def test_kept_entries_must_fit_the_unit(tmp_path, capsys):
    """An --out holding an entry capture would refuse is refused before the poses."""
    out = _cal(tmp_path, {"zz_imu": GOOD["a_imu"]})
    before = open(out).read()
    assert main(["calibrate", "--config", _cfg(tmp_path), "--sensor", "a_imu", "--out", out, "--yes"]) == 2
    assert "zz_imu" in _one_line(capsys) and open(out).read() == before
    # an entry about to be replaced may be anything valid
    out2 = _cal(tmp_path, {"a_imu": dict(GOOD["c_imu"])}, name="c2.json")
    assert main(["calibrate", "--config", _cfg(tmp_path), "--sensor", "a_imu", "--out", out2, "--yes",
                 "--still-s", "0.2", "--face-s", "0.2"]) == 0
    assert json.loads(open(out2).read())["sensors"]["a_imu"]["chip"] == "mpu6050"


def test_bno055_that_never_calibrates_keeps_the_older_profile(tmp_path, capsys):
    """A check that did not reach 3/3/3/3 dropped the profile saved before."""
    out = _cal(tmp_path, {"c_imu": dict(GOOD["c_imu"], date="2026-01-02T03:04:05Z")})
    cfg = _cfg(tmp_path, sensors=_sensors(c_imu={"calib_stat": 0x3F}))       # system 0
    assert main(["calibrate", "--config", cfg, "--sensor", "c_imu", "--out", out, "--yes",
                 "--rotate-s", "0.5"]) == 0
    e = json.loads(open(out).read())["sensors"]["c_imu"]
    assert e["calibrated"]["system"] is False
    assert e["profile"] == DEFAULT_OFFSETS.hex() and e["profile_date"] == "2026-01-02T03:04:05Z"
    assert "kept the calibration profile" in capsys.readouterr().out
    # without an older profile nothing is invented
    out2 = tmp_path / "fresh.json"
    assert main(["calibrate", "--config", cfg, "--sensor", "c_imu", "--out", str(out2), "--yes",
                 "--rotate-s", "0.5"]) == 0
    assert "profile" not in json.loads(out2.read_text())["sensors"]["c_imu"]


@pytest.mark.parametrize("stat", ["0xFF", 300, -1, [3, 3, 3, 3], None, True])
def test_simulated_calib_stat_must_be_a_byte(tmp_path, capsys, stat):
    cfg = _cfg(tmp_path, sensors=_sensors(c_imu={"calib_stat": stat}))
    assert main(["calibrate", "--config", cfg, "--sensor", "c_imu", "--out", str(tmp_path / "c.json"),
                 "--yes", "--rotate-s", "0.5"]) == 2
    line = _one_line(capsys)
    assert "c_imu" in line and "calib_stat" in line


# -- the file, applied by capture ------------------------------------------------------------
def _bad(entries):
    out = json.loads(json.dumps(GOOD))
    for name, patch in entries.items():
        if patch is None:
            out.pop(name)
        elif isinstance(patch, str):
            out[name] = json.loads(json.dumps(GOOD[patch]))
        else:
            out[name].update(patch)
    return out


@pytest.mark.parametrize("entries,sensor,says", [
    ({"zz_imu": "a_imu"}, "zz_imu", "not in the unit's configuration"),
    ({"a_imu": {"gyro_bias_rad_s": [1e300, 0, 0]}}, "a_imu", "gyro_bias_rad_s"),
    ({"a_imu": {"accel_bias_m_s2": [1e6, 0, 0]}}, "a_imu", "accel_bias_m_s2"),
    ({"a_imu": {"gyro_bias_rad_s": [True, False, 0]}}, "a_imu", "gyro_bias_rad_s"),
    ({"b_imu": {"mag_hard_iron_ut": [1e308, 0, 0]}}, "b_imu", "mag_hard_iron_ut"),
    ({"b_imu": {"mag_soft_iron": [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}}, "b_imu", "mag_soft_iron"),
    ({"b_imu": {"mag_soft_iron": [[1e300, 0, 0], [0, 1, 0], [0, 0, 1]]}}, "b_imu", "mag_soft_iron"),
    ({"b_imu": {"mag_soft_iron": [[-1, 0, 0], [0, 1, 0], [0, 0, 1]]}}, "b_imu", "mag_soft_iron"),
    ({"c_imu": "a_imu"}, "c_imu", "chip mpu6050, but the sensor's chip is bno055"),
    ({"a_imu": "c_imu"}, "a_imu", "chip bno055, but the sensor's chip is mpu6050"),
    ({"a_imu": "b_imu"}, "a_imu", "chip mpu9250, but the sensor's chip is mpu6050"),
    ({"c_imu": {"gyro_bias_rad_s": [0.01, 0, 0]}}, "c_imu", "no corrections"),
    ({"a_imu": {"chip": None, "profile": DEFAULT_OFFSETS.hex()}}, "a_imu", "BNO055 calibration profile"),
    ({"a_imu": {"chip": None, "mag_hard_iron_ut": [1.0, 2.0, 3.0]}}, "a_imu", "no magnetometer"),
    ({"a_imu": {"chip": "foo"}}, "a_imu", "'chip'"),
    ({"a_imu": {"chip": 5}}, "a_imu", "'chip'"),
])
def test_capture_refuses_a_calibration_that_does_not_fit(tmp_path, capsys, entries, sensor, says):
    """All of these ran: huge values reached the readings (overflow warnings, a zero or mirrored
    field), a calibration for the wrong chip corrected a BNO055's own readings or was dropped,
    an entry for a renamed sensor was silently unused."""
    cal = _cal(tmp_path, _bad(entries))
    assert main(["capture", "--config", _cfg(tmp_path, cal=cal), "--duration", "0.5"]) == 2
    line = _one_line(capsys)
    assert "cal.json" in line and "sensor %s" % sensor in line and says in line, line


def test_capture_refuses_a_calibration_version_it_does_not_know(tmp_path, capsys):
    cal = _cal(tmp_path, GOOD, version=2)
    assert main(["capture", "--config", _cfg(tmp_path, cal=cal), "--duration", "0.5"]) == 2
    assert "version" in _one_line(capsys)


def test_a_good_calibration_still_applies(tmp_path, capsys):
    cal = _cal(tmp_path, GOOD)
    from device.capture.config import load_config
    from device.capture.unit import build_unit
    unit = build_unit(load_config(_cfg(tmp_path, cal=cal)))
    assert set(unit.sensor_cal) == {"a_imu", "b_imu", "c_imu"}
    assert unit.slots[2].driver.profile == DEFAULT_OFFSETS
    unit.close()


# -- the magnetometer option ---------------------------------------------------------------
def test_magnetometer_option_must_be_a_boolean(tmp_path, capsys):
    """"no" read as true: the magnetometer stayed on."""
    cfg = _cfg(tmp_path, estimator_options={"magnetometer": "no"})
    assert main(["capture", "--config", cfg, "--duration", "0.5"]) == 2
    assert "magnetometer" in _one_line(capsys)


def test_magnetometer_option_with_a_model_estimator(tmp_path, capsys):
    """The EKF got magnetometer=False as a keyword: TypeError traceback after the still pose."""
    cfg = _cfg(tmp_path, sensors=_sensors()[:2], estimator="ekf", estimator_options={"magnetometer": False})
    assert main(["capture", "--config", cfg, "--duration", "1.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["frames"] == 45


@pytest.mark.parametrize("opts", [{"nonsense": 1}, {"armature": "heavy"}])
def test_estimator_options_a_model_estimator_does_not_take(tmp_path, capsys, opts):
    """An unknown or bad estimator option was a traceback after the still pose (nothing
    recorded but calibration frames); it is one line before capture starts."""
    cfg = _cfg(tmp_path, sensors=_sensors()[:2], estimator="ekf", estimator_options=opts)
    rec = tmp_path / "rec.msr"
    assert main(["capture", "--config", cfg, "--duration", "1.5", "--record", str(rec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "estimator_options" in err and "Traceback" not in err
    assert not rec.exists()


# -- raw logs with a magnetometer ------------------------------------------------------------
@pytest.fixture(scope="module")
def raw_log(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raw")
    cfg = _cfg(tmp, sensors=_sensors()[1:2])
    path = tmp / "raw.jsonl"
    assert main(["capture", "--config", cfg, "--duration", "2", "--raw-log", str(path)]) == 0
    lines = path.read_text().splitlines()
    assert any('"m"' in x for x in lines[1:])
    return lines


@pytest.mark.parametrize("m,ok", [([1.0, 2.0], False), ("abc", False), (5, False),
                                  ([float("nan"), 1.0, 1.0], False), ([float("inf"), 0.0, 0.0], False),
                                  ([True, 0, 0], False), (None, True)])
def test_raw_log_with_a_bad_magnetometer_reading(raw_log, tmp_path, capsys, m, ok):
    """A malformed "m" crashed the replay (TypeError traceback) or went into the filter (NaN)."""
    out = [raw_log[0]]
    for i, x in enumerate(raw_log[1:]):
        d = json.loads(x)
        if i == 40:
            d["m"] = {"b_imu": m}
        out.append(json.dumps(d))
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(out) + "\n")
    rc = main(["capture", "--replay", str(p), "--json"])
    if ok:
        assert rc == 0
        capsys.readouterr()
    else:
        assert rc == 2
        line = _one_line(capsys)
        assert "bad.jsonl: line 42" in line and "b_imu" in line


def test_raw_log_whose_m_is_not_an_object(raw_log, tmp_path, capsys):
    out = [raw_log[0]] + [json.dumps(dict(json.loads(x), m=[1, 2, 3])) for x in raw_log[1:]]
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(out) + "\n")
    assert main(["capture", "--replay", str(p)]) == 2
    assert "bad.jsonl: line 2" in _one_line(capsys)


def test_raw_log_replays_with_and_without_the_magnetometer(raw_log, tmp_path):
    """The log replays the same with its "m", and 6-axis without it (an older log)."""
    from device.capture.rawlog import JsonlReplay
    from device.capture.unit import build_unit
    p = tmp_path / "raw.jsonl"
    p.write_text("\n".join(raw_log) + "\n")
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([raw_log[0]] + [json.dumps({k: v for k, v in json.loads(x).items() if k != "m"})
                                             for x in raw_log[1:]]) + "\n")
    used = []
    for path in (p, old):
        unit = build_unit(None, replay=JsonlReplay(str(path)))
        for k in range(len(raw_log) - 1):
            unit.estimate(k / unit.rate_hz, unit.replay.read())
        used.append(unit.estimator.mag_used.get("b_imu", 0))
        assert np.all(np.isfinite(unit.last_good_q[~np.isnan(unit.last_good_q)]))
    assert used[0] > 10 and used[1] == 0
