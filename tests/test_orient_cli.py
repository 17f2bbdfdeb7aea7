"""`motionstaff orient`: one IMU's orientation from a recording, live filter or offline smoother."""

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from host.cli import main

G = 9.80665


def _xio_csv(path, seed=4, rate_hz=100.0):
    """A seeded x-io CSV: 15 s still, a 60 deg roll over 2 s, 5 s still. -> final roll (deg)."""
    rng = np.random.default_rng(seed)
    n0, n1, n2 = int(15 * rate_hz), int(2 * rate_hz), int(5 * rate_hz)
    w = np.zeros((n0 + n1 + n2, 3))
    w[n0:n0 + n1, 0] = np.radians(30.0)                       # 30 deg/s about x for 2 s
    angle = np.concatenate(([0.0], np.cumsum(w[1:, 0]) / rate_hz))
    acc = Rotation.from_euler("x", angle[:, None]).inv().apply([0.0, 0.0, G])   # specific force, sensor frame
    gyro = w + rng.normal(0, 0.002, w.shape) + [0.004, -0.003, 0.002]   # noise and a bias (rad/s)
    acc = acc + rng.normal(0, 0.03, acc.shape)
    t = np.arange(len(w)) / rate_hz
    data = np.column_stack([t, np.degrees(gyro), acc / G])
    head = ("Time (s),Gyroscope X (deg/s),Gyroscope Y (deg/s),Gyroscope Z (deg/s),"
            "Accelerometer X (g),Accelerometer Y (g),Accelerometer Z (g)")
    np.savetxt(path, data, delimiter=",", header=head, comments="", fmt="%.6f")
    return float(np.degrees(angle[-1]))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("offline", [False, True])
def test_orient_recovers_a_known_roll(tmp_path, capsys, offline):
    src, out = tmp_path / "imu.csv", tmp_path / "q.csv"
    roll_deg = _xio_csv(src)
    code, text, err = run(capsys, "orient", src, "-o", out, "--json", *(["--offline"] if offline else []))
    assert code == 0, err
    info = json.loads(text)
    assert info["samples"] == 2200 and info["noise_from_still_s"] > 10
    rows = np.genfromtxt(out, delimiter=",", names=True)
    assert len(rows) == 2200
    assert rows["roll_deg"][-1] == pytest.approx(roll_deg, abs=1.0)
    assert abs(rows["pitch_deg"][-1]) < 1.0
    q = np.column_stack([rows[k] for k in ("qw", "qx", "qy", "qz")])
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)


def test_orient_on_the_broad_trial_meets_its_reference(shared_data, capsys):
    p = shared_data / "imu" / "02_undisturbed_slow_rotation_B.mat"
    if not p.exists():
        pytest.skip("%s is absent" % p)
    code, text, err = run(capsys, "orient", p, "--offline", "--json")
    assert code == 0, err
    info = json.loads(text)
    # every sample with a reference (benchmarks/estimation.py scores the movement samples only)
    assert info["reference_samples"] > 50000
    assert info["inclination_rms_deg"] < 0.35


def test_orient_bad_input_is_one_line_exit_2(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    mat = tmp_path / "bad.mat"
    mat.write_bytes(b"junk")
    bvh = tmp_path / "x.bvh"
    bvh.write_text("HIERARCHY\n")
    stuck = tmp_path / "stuck.csv"
    _xio_csv(stuck)
    lines = stuck.read_text().splitlines()
    lines[3] = lines[2]                                         # a repeated time stamp
    stuck.write_text("\n".join(lines) + "\n")
    for argv, what in (([tmp_path / "none.csv"], "no such file"), ([empty], "columns"),
                       ([mat], "not a MATLAB file"), ([bvh], "x-io .csv"),
                       ([stuck], "--rate"), ([stuck, "--rate", "0"], "--rate must be > 0")):
        code, out, err = run(capsys, "orient", *argv)
        assert code == 2 and what in err and len(err.strip().splitlines()) == 1, (argv, err)
    code, out, err = run(capsys, "orient", stuck, "--rate", "100", "--json")
    assert code == 0 and json.loads(out)["rate_hz"] == 100.0
