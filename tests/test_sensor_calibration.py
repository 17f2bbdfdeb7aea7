"""Magnetometer (hard/soft iron) and accelerometer (six-pose) calibration; a real magnetometer."""

import numpy as np
import pytest

from device.capture.rot import exp_so3
from device.capture.sensorcal import apply, fit_accelerometer, fit_magnetometer


def test_magnetometer_hard_and_soft_iron_recovered():
    rng = np.random.default_rng(4)
    field = 45.0 * np.array([0.45, 0.0, -0.89])
    R = exp_so3(rng.normal(size=(400, 3)) * 1.5)
    true = np.einsum("kji,j->ki", R, field)
    S = np.array([[1.1, 0.05, 0.0], [0.05, 0.9, 0.02], [0.0, 0.02, 1.05]])
    o = np.array([12.0, -30.0, 5.0])
    raw = true @ S.T + o + rng.normal(0, 0.2, true.shape)
    off, W = fit_magnetometer(raw)
    assert np.abs(off - o).max() < 0.3
    n = np.linalg.norm(apply(raw, off, W), axis=1)
    assert np.std(n) / np.mean(n) < 0.01 and abs(np.mean(n) - 45.0) < 3.0   # scale: the data's
    with pytest.raises(ValueError):
        fit_magnetometer(raw[:5])


def test_accelerometer_six_pose():
    g = 9.80665
    b, s = np.array([0.2, -0.1, 0.3]), np.array([1.02, 0.97, 1.01])
    poses = np.array([[g, 0, 0], [-g, 0, 0], [0, g, 0], [0, -g, 0], [0, 0, g], [0, 0, -g],
                      [g / np.sqrt(2), g / np.sqrt(2), 0]])
    meas = poses / s + b
    bb, ss = fit_accelerometer(meas)
    assert np.allclose(bb, b, atol=1e-6) and np.allclose(ss, s, atol=1e-6)


def test_real_magnetometer_recording(shared_data):
    """x-io's Fusion example (real chip, 135 s of motion): the fitted field magnitude is steady."""
    d = np.genfromtxt(shared_data / "imu" / "sensor_data.csv", delimiter=",", skip_header=1)
    mag = d[:, 7:10]
    off, W = fit_magnetometer(mag[::5])
    raw_n = np.linalg.norm(mag, axis=1)
    cal_n = np.linalg.norm(apply(mag, off, W), axis=1)
    assert np.std(cal_n) / np.mean(cal_n) <= np.std(raw_n) / np.mean(raw_n) + 1e-9
    assert 20 < np.median(cal_n) < 70                # an Earth-sized field in uT
