"""A simulated capture unit's configuration file for tests: sensors on one sim-i2c bus.

    from tests.unit_config import write_unit_config
    path = write_unit_config(tmp_path, sensors, subject={"seed": 3}, cal="cal.json")
"""

import json

from device.capture.config import FORMAT


def write_unit_config(tmp_path, sensors, subject=None, cal=None, name="unit.json"):
    """Write a 30 Hz, 8-bit, orient-estimator unit config with these sensor specs on bus "main"
    (sim-i2c://0), the built-in clip as subject (subject: extra keys), and "sensor_calibration"
    when cal is given; returns its path."""
    sub = {"clip": "builtin", "seed": 3, "calib_s": 1.0, "blend_s": 0.5}
    sub.update(subject or {})
    cfg = {"format": FORMAT, "version": 1, "rate_hz": 30.0, "bits": 8, "body": "human",
           "estimator": "orient", "subject": sub, "calibration": {"still_s": 1.0},
           "buses": {"main": "sim-i2c://0"}, "sensors": list(sensors), "outputs": []}
    if cal is not None:
        cfg["sensor_calibration"] = cal
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p
