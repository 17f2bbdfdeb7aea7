"""The generic IMU CSV (docs/rawlog.md) into the raw log: values exact to the log's digits,
optional mag and quaternion columns, missing samples as null frames, and bad input."""

import json

import numpy as np
import pytest

from device.capture.rawlog import JsonlReplay
from host.cli import main

COLS = "time_s,sensor,gyro_x_rad_s,gyro_y_rad_s,gyro_z_rad_s,accel_x_m_s2,accel_y_m_s2,accel_z_m_s2"


def mapping(tmp_path):
    p = tmp_path / "map.json"
    p.write_text(json.dumps({"format": "motionstaff-imu-map", "version": 1,
                             "sensors": {"hip": "pelvis", "knee_up": "l_thigh"}}))
    return str(p)


def rows(n=50, rate=100.0, skip=(), extra=False, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        for s in ("hip", "knee_up"):
            if (s, k) in skip:
                continue
            v = rng.normal(size=6)
            r = "%.6f,%s," % (k / rate, s) + ",".join("%.6f" % x for x in v)
            if extra:
                r += ",1.5,-2.5,40.0,1,0,0,0"
            out.append(r)
    return out


def test_csv_round_trip_with_mag_quat_and_a_missing_sample(tmp_path):
    src_rows = rows(extra=True, skip={("knee_up", 7)})
    p = tmp_path / "walk.csv"
    p.write_text(COLS + ",mag_x_ut,mag_y_ut,mag_z_ut,quat_w,quat_x,quat_y,quat_z\n" + "\n".join(src_rows) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["import-imu", "--map", mapping(tmp_path), "--out", str(out), str(p)]) == 0
    log = JsonlReplay(str(out))
    assert log.frames == 50 and log.rate_hz == pytest.approx(100.0)
    frames = log.peek(0, 50)
    assert frames[7]["l_thigh_imu"] is None and frames[7]["pelvis_imu"] is not None
    first = [float(x) for x in src_rows[0].split(",")[2:]]
    r = frames[0]["pelvis_imu"]
    assert list(r["gyro"]) + list(r["accel"]) == first[:6]
    assert r["quat"] == (1.0, 0.0, 0.0, 0.0) and r["mag"] == (1.5, -2.5, 40.0)
    by = {s["name"]: s for s in log.head["sensors"]}
    assert by["pelvis_imu"]["chip"] == "bno055"          # a quaternion: a fused chip


def test_csv_without_quaternions_is_a_gyro_accel_unit(tmp_path):
    p = tmp_path / "walk.csv"
    p.write_text(COLS + "\n" + "\n".join(rows()) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["import-imu", "--map", mapping(tmp_path), "--out", str(out), str(p)]) == 0
    log = JsonlReplay(str(out))
    assert {s["chip"] for s in log.head["sensors"]} == {"mpu6050"}
    assert log.peek(3, 4)[0]["l_thigh_imu"]["quat"] is None


@pytest.mark.parametrize("case", ["column", "unmapped", "rates", "number", "time", "other"])
def test_csv_bad_input(tmp_path, capsys, case):
    p = tmp_path / "walk.csv"
    body = rows()
    head = COLS
    if case == "column":
        head = COLS.replace("gyro_z_rad_s", "gz")
        want = "walk.csv: not a motionstaff IMU CSV (no column gyro_z_rad_s)"
    elif case == "unmapped":
        body = body + ["0.5,ankle,0,0,0,0,0,9.8"]
        want = "walk.csv: sensor ankle is not in the mapping"
    elif case == "rates":
        body = [r for r in rows() if ",hip," in r] + [r for r in rows(n=30, rate=60.0) if ",knee_up," in r]
        want = "(mismatched rates)"
    elif case == "number":
        body = body + ["0.6,hip,0,zero,0,0,0,9.8"]
        want = "walk.csv: line %d: not a number" % (len(body) + 1)
    elif case == "time":
        body = body + ["0.0,hip,0,0,0,0,0,9.8"]
        want = "walk.csv: sensor hip: time_s must increase"
    else:
        head, body = "PacketCounter,Acc_X", ["1,2"]
        want = "walk.csv: not a motionstaff IMU CSV"
    p.write_text(head + "\n" + "\n".join(body) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["import-imu", "--map", mapping(tmp_path), "--out", str(out), str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("motionstaff: ") and want in err and "\n" not in err
    assert not out.exists()
