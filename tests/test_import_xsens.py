"""Xsens MT Manager exports into the raw log: the real Neura-Sparse files against the authors'
own cut (an independent oracle), lost packets as null frames, and bad input (one line, exit 2,
nothing written)."""

import glob
import json
import os

import numpy as np
import pytest

from benchmarks.realimu import DATA, MAP
from device.capture.rawlog import JsonlReplay
from host.cli import main
from host.imu_import import load_mapping, read_xsens, write_rawlog
from protocol.errors import FormatError

HEAD = ("// Start Time: Unknown\n// Update Rate: %sHz\n// Filter Profile: human (46.1)\n"
        "// Option Flags: AHS Disabled ICC Disabled \n// Firmware Version: 4.3.4\n"
        "PacketCounter,SampleTimeFine,Acc_X,Acc_Y,Acc_Z,Gyr_X,Gyr_Y,Gyr_Z,Mag_X,Mag_Y,Mag_Z,"
        "Quat_q0,Quat_q1,Quat_q2,Quat_q3\n")


def write_mt(path, counters, rate="100.0", seed=0):
    """A synthetic MT Manager export: still, gravity on +x, a fixed quaternion."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        f.write(HEAD % rate)
        for c in counters:
            g = rng.normal(size=3) * 0.01
            f.write("%d,,9.81,0.01,0.02,%.6f,%.6f,%.6f,0.9,0.4,0.47,0.7071068,0,-0.7071068,0\n" % ((c,) + tuple(g)))
    return path


def mapping(tmp_path, ids=("00B40B91", "00B40C45")):
    segs = ("pelvis", "l_thigh", "r_thigh", "l_shank")
    m = {"format": "motionstaff-imu-map", "version": 1, "sensors": dict(zip(ids, segs))}
    p = tmp_path / "map.json"
    p.write_text(json.dumps(m))
    return str(p)


def real_files():
    files = sorted(glob.glob(os.path.join(DATA, "rawimu", "*.txt")))
    if not files:
        pytest.skip("the Neura-Sparse trial is absent (%s)" % DATA)
    ids = load_mapping(MAP)["sensors"]
    return [p for p in files if os.path.splitext(p)[0].rsplit("_", 1)[-1] in ids]


def test_real_export_matches_the_authors_cut(tmp_path):
    files = real_files()
    out = tmp_path / "walk.jsonl"
    assert main(["import-imu", "--map", MAP, "--out", str(out)] + files) == 0
    src = JsonlReplay(str(out))
    assert src.frames == 2503 and src.rate_hz == 100.0
    assert len(src.head["sensors"]) == 9 and src.head["config"]["body"] == "human-legs"
    # imu/S02-Trial-Walk-1-<SEG>.csv is rows 1120..2074 (1-based) of the same exports: our frame
    # 1119 is its first row, to the 7 digits of the log
    for seg, name in (("Pelvis", "pelvis_imu"), ("L_LowLeg", "l_shank_low_imu"), ("R_Foot", "r_foot_imu")):
        cut = np.genfromtxt(os.path.join(DATA, "imu", "S02-Trial-Walk-1-%s.csv" % seg), delimiter=",",
                            skip_header=5, max_rows=3)
        for i in range(3):
            r = src.peek(1119 + i, 1120 + i)[0][name]
            np.testing.assert_allclose(r["accel"], cut[i, 4:7], atol=5e-7)
            np.testing.assert_allclose(r["gyro"], cut[i, 7:10], atol=5e-7)
            np.testing.assert_allclose(r["quat"], cut[i, 0:4], atol=5e-7)


def test_lost_packets_are_null_frames_not_interpolated(tmp_path, capsys):
    a = write_mt(tmp_path / "t-000_00B40B91.txt", range(65530, 65530 + 20))       # wraps at 2^16
    kept = [c % 65536 for c in range(65530, 65530 + 20) if c % 65536 not in (65534, 65535, 3)]
    b = write_mt(tmp_path / "t-000_00B40C45.txt", kept, seed=1)
    out = tmp_path / "o.jsonl"
    assert main(["import-imu", "--map", mapping(tmp_path), "--out", str(out), str(a), str(b)]) == 0
    err = capsys.readouterr().err
    assert "t-000_00B40C45.txt: 3 packets lost (first after PacketCounter 65533)" in err
    src = JsonlReplay(str(out))
    frames = src.peek(0, src.frames)
    assert len(frames) == 20
    nulls = [k for k, f in enumerate(frames) if f["l_thigh_imu"] is None]
    assert nulls == [4, 5, 9]
    assert all(f["pelvis_imu"] is not None for f in frames)


@pytest.mark.parametrize("case", ["gap", "unmapped", "rate", "format", "repeat", "ragged"])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, case):
    a = write_mt(tmp_path / "t-000_00B40B91.txt", range(100))
    b = tmp_path / "t-000_00B40C45.txt"
    m = mapping(tmp_path)
    if case == "gap":
        write_mt(b, list(range(40)) + list(range(100, 160)))     # 60 lost: 0.6 s > 0.5 s
        want = "t-000_00B40C45.txt: 60 packets lost after PacketCounter 39"
    elif case == "unmapped":
        b = write_mt(tmp_path / "t-000_00B40C99.txt", range(100))
        want = "t-000_00B40C99.txt: sensor 00B40C99 is not in the mapping"
    elif case == "rate":
        write_mt(b, range(100), rate="60.0")
        want = "update rate 60 Hz, but"
    elif case == "format":
        b.write_text("time_s,sensor,gyro_x_rad_s\n0,a,0\n")
        want = "t-000_00B40C45.txt: not an Xsens MT Manager export"
    elif case == "repeat":
        write_mt(b, [0, 1, 2, 2, 3])
        want = "t-000_00B40C45.txt: PacketCounter 2 repeats"
    else:
        write_mt(b, range(10))
        with open(b, "a") as f:
            f.write("10,,1,2\n")
        want = "t-000_00B40C45.txt: line 17 has 4 columns"
    out = tmp_path / "o.jsonl"
    assert main(["import-imu", "--map", m, "--out", str(out), str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("motionstaff: ") and want in err and "\n" not in err
    assert not out.exists() and not (tmp_path / "o.jsonl.part").exists()


def test_mapping_errors(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"format": "motionstaff-imu-map", "sensors": {"X1": "l_elbow"}}))
    with pytest.raises(FormatError, match="segment 'l_elbow' is not a link"):
        load_mapping(str(p))
    p.write_text(json.dumps({"format": "motionstaff-imu-map", "sensors": {"X1": "l_foot", "X2": "l_foot"}}))
    with pytest.raises(FormatError, match="two sensors map to the same name"):
        load_mapping(str(p))
    p.write_text("{")
    with pytest.raises(FormatError, match="not valid JSON"):
        load_mapping(str(p))


def test_write_refuses_a_sensor_the_config_lacks(tmp_path):
    a = write_mt(tmp_path / "t-000_00B40B91.txt", range(10))
    rec = read_xsens([str(a)], load_mapping(mapping(tmp_path)))
    from device.capture.lowerbody import lower_body_config
    cfg = lower_body_config()
    cfg["sensors"] = [s for s in cfg["sensors"] if s["name"] != "pelvis_imu"]
    with pytest.raises(FormatError, match="sensor pelvis_imu is not in the unit config"):
        write_rawlog(str(tmp_path / "o.jsonl"), rec, cfg)
    assert not (tmp_path / "o.jsonl").exists()
