"""`motionstaff calibrate` on the simulated unit: injected chip errors recovered, the JSON round trip,
capture applying it, and one-line errors for the bad cases.

The simulated chips get known errors through their specs' "sim" objects; the subject's own random
biases are set to zero so the injected values are the whole truth, and its noise stays (seeded):
gyro 0.1 deg/s, accel 0.03 m/s^2, mag 0.3 uT (device/capture/subject.NOISE). Bounds, at the
command's defaults (100 samples/s, 2 s still, 1 s per face, --rotate-s 10):
  gyro bias   200 samples: 0.1 / sqrt(200) = 0.007 deg/s; LSB 0.03 deg/s dithered by the noise;
              bound 0.05 deg/s (7 sigma)
  accel       100 samples per face: 0.003 m/s^2 per mean (LSB 0.0024 at +-8 g), bias from two
              faces ~0.002: bound 0.015 m/s^2; scale ~0.003 / 2g / sqrt(2) = 2e-4: bound 1.5e-3
  mag         1000 samples with 0.3 uT noise (+ 0.15 uT LSB): hard iron bound 0.3 uT; soft iron
              (up to scale) bound 1 % (relative Frobenius); calibrated |field| spread < 0.5 uT
"""

import json

import numpy as np
import pytest

from device.capture import calibration
from device.capture.calibration import load_calibration, read_calibration, save_calibration
from device.capture.unit import build_unit
from host.cli import main
from tests.unit_config import write_unit_config

D2R = np.pi / 180.0
INJ = {
    "a_imu": {"gyro_bias_dps": [0.8, -0.5, 0.3], "accel_bias_m_s2": [0.15, -0.1, 0.2],
              "accel_scale": [1.03, 0.98, 1.01]},
    "b_imu": {"gyro_bias_dps": [-0.4, 0.6, 1.2], "accel_bias_m_s2": [-0.2, 0.12, -0.05],
              "accel_scale": [0.97, 1.02, 1.04], "mag_hard_iron_ut": [12.0, -30.0, 5.0],
              "mag_soft_iron": [[1.1, 0.05, 0.0], [0.05, 0.9, 0.02], [0.0, 0.02, 1.05]]},
    "c_imu": {"calib_stat": 0xFD},          # the best it reaches: gyro, accel 3; mag 1 (system with it)
}


def unit_config(tmp_path, cal=None, outages=(), name="unit.json"):
    sensors = [
        {"name": "a_imu", "chip": "mpu6050", "bus": "main", "addr": 0x68, "link": "l_thigh",
         "mux": {"addr": 0x70, "channel": 0}, "sim": INJ["a_imu"]},
        {"name": "b_imu", "chip": "mpu9250", "bus": "main", "addr": 0x68, "link": "r_thigh",
         "mux": {"addr": 0x70, "channel": 1}, "sim": INJ["b_imu"]},
        {"name": "c_imu", "chip": "bno055", "bus": "main", "addr": 0x28, "link": "pelvis",
         "mux": {"addr": 0x70, "channel": 2}, "sim": INJ["c_imu"]},
    ]
    subject = {"seed": 5, "noise": {"gyro_bias_dps": 0.0, "accel_bias_m_s2": 0.0,
                                    "gyro_bias_walk_dps_sqrt_s": 0.0},
               "outages": list(outages)}
    return write_unit_config(tmp_path, sensors, subject=subject, cal=cal, name=name)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cal")
    cfg = unit_config(tmp)
    out = tmp / "cal.json"
    assert main(["calibrate", "--config", str(cfg), "--out", str(out), "--yes", "--rotate-s", "10"]) == 0
    return tmp, cfg, out


def test_calibrate_recovers_injected_errors(calibrated, capsys):
    _tmp, _cfg, out = calibrated
    doc = json.loads(out.read_text())
    a, b, c = (doc["sensors"][n] for n in ("a_imu", "b_imu", "c_imu"))
    for e, name in ((a, "a_imu"), (b, "b_imu")):
        inj = INJ[name]
        gb = np.array(e["gyro_bias_rad_s"]) / D2R
        assert np.abs(gb - inj["gyro_bias_dps"]).max() < 0.05, (name, gb)
        assert np.abs(np.array(e["accel_bias_m_s2"]) - inj["accel_bias_m_s2"]).max() < 0.015
        # the chip reports scale * a + bias; the correction is s * (reading - bias), s = 1 / scale
        assert np.abs(np.array(e["accel_scale"]) - 1.0 / np.array(inj["accel_scale"])).max() < 1.5e-3
        assert e["accel_residual_before_m_s2"] > 0.1 and e["date"]
    assert "mag_hard_iron_ut" not in a
    assert np.abs(np.array(b["mag_hard_iron_ut"]) - INJ["b_imu"]["mag_hard_iron_ut"]).max() < 0.3
    W = np.array(b["mag_soft_iron"])
    Sinv = np.linalg.inv(INJ["b_imu"]["mag_soft_iron"])
    rel = np.linalg.norm(W / np.linalg.norm(W) - Sinv / np.linalg.norm(Sinv))
    assert rel < 0.01 and b["mag_fit"] == "ellipsoid"
    assert b["mag_residual_ut"] < 0.5 < b["mag_residual_before_ut"]
    # the BNO055: its own CALIB_STAT, no corrections
    assert c["calib_stat"] == {"system": 1, "gyro": 3, "accel": 3, "mag": 1}
    assert c["calibrated"]["mag"] is False and "gyro_bias_rad_s" not in c


def test_calibration_json_round_trips(calibrated, tmp_path):
    _tmp, cfg, out = calibrated
    doc = read_calibration(str(out))
    table = load_calibration(str(out))
    assert set(table) == {"a_imu", "b_imu", "c_imu"}
    assert np.array_equal(table["b_imu"]["mag_soft_iron"], np.array(doc["sensors"]["b_imu"]["mag_soft_iron"]))
    again = tmp_path / "again.json"
    save_calibration(str(again), doc["sensors"], created=doc["created"])
    assert json.loads(again.read_text()) == doc
    # one sensor again into an existing file: the others are kept
    assert main(["calibrate", "--config", str(cfg), "--sensor", "a_imu", "--out", str(again), "--yes"]) == 0
    doc2 = json.loads(again.read_text())
    assert doc2["sensors"]["b_imu"] == doc["sensors"]["b_imu"] and set(doc2["sensors"]) == set(doc["sensors"])


def _errors(unit, t_s):
    """|reading - truth| per sensor and kind, the truth being the subject's (noisy, bias-free)
    state before the chip's errors."""
    readings = unit.read(t_s)
    out = {}
    for name in ("a_imu", "b_imu"):
        st = unit.subject.sensors[unit.subject.index[name]]["state"]
        r = readings[name]
        out[name, "gyro"] = np.linalg.norm(np.subtract(r["gyro"], st["gyro_rad_s"])) / D2R
        out[name, "accel"] = np.linalg.norm(np.subtract(r["accel"], st["accel_m_s2"]))
        if name == "b_imu":
            out[name, "mag"] = np.linalg.norm(np.subtract(r["mag"], st["mag_ut"]))
    return out


def test_capture_applies_the_calibration(calibrated, tmp_path, capsys):
    _tmp, _cfg, out = calibrated
    from device.capture.config import load_config
    raw = build_unit(load_config(str(unit_config(tmp_path))))
    cal = build_unit(load_config(str(unit_config(tmp_path, cal=str(out), name="unit-cal.json"))))
    before = {k: [] for k in _errors(raw, 0.0)}
    after = {k: [] for k in before}
    for k in range(1, 20):
        for key, v in _errors(raw, k / 30.0).items():
            before[key].append(v)
        for key, v in _errors(cal, k / 30.0).items():
            after[key].append(v)
    for key in before:
        assert np.mean(after[key]) < 0.5 * np.mean(before[key]), (key, np.mean(after[key]), np.mean(before[key]))
    raw.close()
    cal.close()
    # and the command runs with it
    assert main(["capture", "--config", str(unit_config(tmp_path, cal=str(out), name="u2.json")),
                 "--duration", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["frames"] == 60


def _one_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_moved_during_the_still_phase(tmp_path, monkeypatch, capsys):
    cfg = unit_config(tmp_path)
    hold = calibration.SimBench.hold

    def shaky(self, name, R):
        hold(self, name, R)
        if name == "a_imu":      # someone bumps the table: a 3 deg wobble at 2 Hz
            from device.capture.rot import exp_so3
            R0 = np.asarray(R, float)
            self.turn(name, lambda t: R0 @ exp_so3(np.array([1.0, 0.0, 0.0]) * 0.05 * np.sin(4 * np.pi * t)))
    monkeypatch.setattr(calibration.SimBench, "hold", shaky)
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--config", str(cfg), "--sensor", "a_imu", "--out", str(out), "--yes"]) == 2
    line = _one_line(capsys)
    assert "a_imu" in line and "moved during the still phase" in line
    assert not out.exists()


def test_unplugged_sensor(tmp_path, capsys):
    cfg = unit_config(tmp_path, outages=[{"sensor": "b_imu", "start_s": 0.0, "end_s": 1e9}])
    assert main(["calibrate", "--config", str(cfg), "--out", str(tmp_path / "c.json"), "--yes"]) == 2
    line = _one_line(capsys)
    assert "sensor b_imu" in line and "no answer at 0x68" in line and "plugged" in line
    assert main(["calibrate", "--config", str(cfg), "--sensor", "nope", "--out", str(tmp_path / "c.json")]) == 2
    assert "nope" in _one_line(capsys)


def test_unwritable_out(tmp_path, capsys):
    cfg = unit_config(tmp_path)
    assert main(["calibrate", "--config", str(cfg), "--out", str(tmp_path / "no" / "c.json"), "--yes"]) == 2
    assert "c.json" in _one_line(capsys)
    assert main(["calibrate", "--config", str(cfg), "--out", str(tmp_path), "--yes"]) == 2
    assert "directory" in _one_line(capsys)
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    assert main(["calibrate", "--config", str(cfg), "--out", str(junk), "--yes"]) == 2
    assert "junk.json" in _one_line(capsys) and junk.read_text() == "{not json"


def test_corrupt_calibration_named_in_config(calibrated, tmp_path, capsys):
    _tmp, _cfg, out = calibrated
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "motionstaff-imu-calibration", "sensors": {"a_imu": ')
    cfg = unit_config(tmp_path, cal=str(bad))
    assert main(["capture", "--config", str(cfg), "--duration", "1"]) == 2
    line = _one_line(capsys)
    assert "bad.json" in line and "not valid JSON" in line
    doc = json.loads(out.read_text())
    doc["sensors"]["a_imu"]["accel_scale"] = [1.0, 1.0]
    bad.write_text(json.dumps(doc))
    assert main(["capture", "--config", str(cfg), "--duration", "1"]) == 2
    line = _one_line(capsys)
    assert "bad.json" in line and "sensor a_imu" in line and "accel_scale" in line
    missing = unit_config(tmp_path, cal=str(tmp_path / "gone.json"))
    assert main(["capture", "--config", str(missing), "--duration", "1"]) == 2
    assert "gone.json" in _one_line(capsys)


def test_default_simulated_unit_bno055(tmp_path, capsys):
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--sensor", "pelvis_imu", "--out", str(out), "--rotate-s", "1"]) == 0
    text = capsys.readouterr().out
    assert "pelvis_imu" in text and "mag 3/3 calibrated" in text
    assert json.loads(out.read_text())["sensors"]["pelvis_imu"]["calib_stat"]["system"] == 3


def test_real_unit_path_paces_and_refuses_a_wrong_face(tmp_path):
    """No subject (a real unit): samples are paced by the clock it is given (a fake one here,
    nothing sleeps), and a chip that stays flat when +X up is asked for is refused."""
    from device.capture.calibration import CalibrationError, Calibrator
    from device.capture.config import load_config
    from device.hal.tca9548a import SimTCA9548A
    from device.sensors.mpu6050_sim import SimMPU6050
    cfg = load_config(str(unit_config(tmp_path)))
    cfg["subject"] = None
    cfg["sensors"] = cfg["sensors"][:1]
    unit = build_unit(cfg)
    mux = unit.buses["main"].attach(0x70, SimTCA9548A())
    chip = mux.attach(0, 0x68, SimMPU6050(errors={"gyro_bias_rad_s": (0.01, 0.0, 0.0)}))
    chip.truth = lambda: ((0.0, 0.0, 0.0), (0.0, 0.0, 9.80665), 25.0)
    now = [0.0]
    slept = []

    def sleep(dt):
        slept.append(dt)
        now[0] += dt
    cal = Calibrator(unit, sleep=sleep, clock=lambda: now[0], still_s=0.5, rate_hz=50)
    with pytest.raises(CalibrationError, match=r"sensor a_imu: asked for \+X up, but gravity is along \+Z"):
        cal.run("a_imu")
    assert len(slept) >= 25 and all(abs(d - 0.02) < 1e-9 for d in slept)
    unit.close()
