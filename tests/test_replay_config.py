"""`motionstaff capture --replay LOG --config CONFIG` runs the config's unit on the log's readings
(estimator, calibration, sensors), refuses a config the log cannot feed, and on the real
Neura-Sparse walk gives knee flexion near Vicon's through the unit's own path."""

import json
import os

import numpy as np
import pytest

from benchmarks.realimu import DATA, MAP, joint_angles, segments_from_q, vicon, FIRST
from device.capture.lowerbody import lower_body_config
from host.cli import main
from tests.test_import_xsens import real_files

COLS = "time_s,sensor,gyro_x_rad_s,gyro_y_rad_s,gyro_z_rad_s,accel_x_m_s2,accel_y_m_s2,accel_z_m_s2"


@pytest.fixture
def still_log(tmp_path):
    """A 6 s still recording of the pelvis and left thigh sensors, imported (longer than the
    lower-body unit's 5 s still window)."""
    rows = []
    for k in range(600):
        for s in ("hip", "thigh"):
            rows.append("%.2f,%s,0.001,-0.002,0.0005,0.02,-0.01,9.81" % (k / 100.0, s))
    (tmp_path / "s.csv").write_text(COLS + "\n" + "\n".join(rows) + "\n")
    (tmp_path / "m.json").write_text(json.dumps({"format": "motionstaff-imu-map",
                                                 "sensors": {"hip": "pelvis", "thigh": "l_thigh"}}))
    out = tmp_path / "s.jsonl"
    assert main(["import-imu", "--map", str(tmp_path / "m.json"), "--out", str(out), str(tmp_path / "s.csv")]) == 0
    return out


def config(tmp_path, **kw):
    cfg = lower_body_config(estimator="orient", chip="mpu6050")
    cfg["sensors"] = [s for s in cfg["sensors"] if s["name"] in ("pelvis_imu", "l_thigh_imu")]
    cfg["calibration"] = {"still_s": 0.5}
    cfg.update(kw)
    p = tmp_path / "unit.json"
    p.write_text(json.dumps(cfg))
    return str(p)


def test_replay_takes_the_configs_estimator(tmp_path, still_log):
    from host.formats import read_motion
    out = tmp_path / "o.png"
    assert main(["capture", "--replay", str(still_log), "--config", config(tmp_path), "--record", str(out)]) == 0
    st = read_motion(str(out))
    assert st.values.shape == (20, 600)               # the lower-body unit's 20 dofs, every frame
    # still: the orientation filter holds the stance (home) on the rotation rows after calibration
    rot = [i for i, r in enumerate(st.rows) if r.unit == "deg"]
    assert np.nanmax(np.abs(st.values[rot, 60:])) < 0.5


@pytest.mark.parametrize("case", ["estimator", "rate", "sensor", "nowalk", "hinge"])
def test_replay_refuses_what_the_log_cannot_feed(tmp_path, still_log, capsys, case):
    out = tmp_path / "o.png"
    args = ["capture", "--replay", str(still_log), "--record", str(out)]
    if case == "estimator":
        args += ["--config", config(tmp_path), "--estimator", "kalman9"]
        want = "estimator kind must be one of"
    elif case == "rate":
        args += ["--config", config(tmp_path, rate_hz=30.0)]
        want = "s.jsonl: the raw log runs at 100 Hz, the config at 30 Hz (mismatched rates)"
    elif case == "hinge":
        args += ["--config", config(tmp_path, calibration={"still_s": 0.5, "functional_s": 4.0, "hinge": "seal"})]
        want = "calibration 'hinge' must be one of seel, seel-level, seel-distal, pca, not 'seal'"
    elif case == "nowalk":
        # no --config: the log's own unit (the lower-body one, functional calibration), with
        # --estimator applied; a still recording has no strides to calibrate from
        args += ["--estimator", "orient"]
        want = "s.jsonl: no walk after the still window (functional calibration)"
    else:
        cfg = json.load(open(config(tmp_path)))
        # (on a bus of its own: pelvis and thigh take 0x68 and 0x69 of i2c-1)
        cfg["sensors"].append(dict(cfg["sensors"][0], name="r_foot_imu", link="r_foot", bus="i2c-3"))
        (tmp_path / "unit.json").write_text(json.dumps(cfg))
        args += ["--config", str(tmp_path / "unit.json")]
        want = "s.jsonl: the raw log has no sensor r_foot_imu of the config"
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("motionstaff: ") and want in err and "\n" not in err
    assert not out.exists()


def test_real_walk_through_the_unit_path(tmp_path):
    """The unit's orientation estimator (fused orientations + IK) with the functional calibration
    on the real trial, replayed by the CLI: knee flexion RMS against Vicon (benchmarks/realimu.py
    measures every estimator: 5.93 / 3.52 deg with the seel-distal calibration, 5.77 / 6.16 with
    the former free Seel fit; through the 16-bit staff here 5.91 / 3.60; bound +0.3)."""
    from host.formats import read_motion
    files = real_files()
    log = tmp_path / "walk.jsonl"
    assert main(["import-imu", "--map", MAP, "--out", str(log)] + files) == 0
    cfg = lower_body_config(estimator="orient")
    (tmp_path / "legs.json").write_text(json.dumps(cfg))
    out = tmp_path / "walk.png"
    assert main(["capture", "--replay", str(log), "--config", str(tmp_path / "legs.json"),
                 "--record", str(out)]) == 0
    st = read_motion(str(out))
    from device.capture.lowerbody import legs_skeleton
    sk = legs_skeleton()
    ref = joint_angles(vicon())
    lo = FIRST + 2                              # the benchmark's lag (gyro vs Vicon): +2 samples
    est = joint_angles(segments_from_q(sk, st.values.T[lo:lo + len(ref["knee_flex_l"])]))
    rms = {k: float(np.sqrt(np.mean((est[k] - ref[k]) ** 2))) for k in ("knee_flex_l", "knee_flex_r")}
    assert rms["knee_flex_l"] < 6.2 and rms["knee_flex_r"] < 3.9, rms
    assert os.path.isdir(DATA)


def test_lower_body_unit_fits_its_buses():
    # two BNO055 a bus at 400 kHz (a third does not fit 10 ms at 100 Hz): 7 sensors on four of
    # the Pi's buses, 9 on all five; the MPU-6050s on their own addresses
    from device.capture.busbudget import bus_budget, check_bus_budget
    from device.capture.config import sim_buses
    for low, nbus in ((False, 4), (True, 5)):
        for chip, addrs in (("bno055", {0x28, 0x29}), ("mpu6050", {0x68, 0x69})):
            cfg = lower_body_config(low_shank=low, chip=chip)
            assert len(cfg["buses"]) == nbus and all(u.endswith("?hz=400000") for u in cfg["buses"].values())
            assert {s["addr"] for s in cfg["sensors"]} == addrs
            cfg["buses"] = sim_buses(list(cfg["buses"]))
            check_bus_budget(cfg, cfg["sensors"])
            assert max(b["s"] for b in bus_budget(cfg, cfg["sensors"])) < 0.010
    cfg = lower_body_config()
    cfg["buses"] = sim_buses(["i2c-1"])
    for s in cfg["sensors"]:
        s["bus"] = "i2c-1"
        s["mux"] = {"addr": 0x70, "channel": cfg["sensors"].index(s) // 2}
    with pytest.raises(ValueError, match="bus i2c-1: 7 BNO055"):
        check_bus_budget(cfg, cfg["sensors"])
