"""The BNO055 twin's CALIB_STAT starts at 0 and rises with the motion the chip needs (datasheet
BST-BNO055-DS000 3.10, 4.3.54; Bosch's calibration application note): gyro held still a few
seconds, accel a few (six) static poses, mag a figure 8 (the field turning through all
directions); system follows the magnetometer in NDOF. A restored profile (3.11.4) is used, but its
levels start at 0 too and rise after a short re-validation. Time is the bus clock; the motion is a
function of it. Nothing sleeps."""

import pytest  # noqa: F401

from device.hal.i2c_sim import SimI2C
from device.sensors.bno055 import BNO055
from device.sensors.bno055_sim import DEFAULT_OFFSETS, SimBNO055
from tests.bno_motion import FACES, Motion, calibrate_by_motion, poll as _run


def _unit(calib_stat=0xFF):
    bus = SimI2C()
    chip = bus.attach(0x28, SimBNO055(calib_stat=calib_stat))
    m = Motion(bus)
    chip.truth = m
    return bus, chip, BNO055(bus).init(), m


def test_calib_stat_is_zero_at_power_up():
    bus, chip, imu, m = _unit()
    assert imu.calibration() == (0, 0, 0, 0)
    assert chip.profile() == bytes(22)                  # nothing found yet


def test_levels_rise_with_the_motion_asked_for():
    bus, chip, imu, m = _unit()
    m.kind = "tumble"
    assert _run(bus, imu, 0.5)[1] == 0                  # moving: the gyro is not calibrating
    m.kind = "still"
    s = _run(bus, imu, 0.7)
    assert s[1] < 3                                     # still, but not yet for long enough
    s = _run(bus, imu, 1.5)
    assert s[1] == 3 and s[2] <= 1 and s[3] == 0 and s[0] == 0
    for up in FACES[:3]:
        m.up = up
        s = _run(bus, imu, 1.2)
    assert s[2] == 1                                    # three poses: part way
    for up in FACES[3:]:
        m.up = up
        s = _run(bus, imu, 1.2)
    assert s[2] == 3 and s[3] == 0 and s[0] == 0        # six poses; no motion for the mag yet
    m.kind = "tumble"
    s = _run(bus, imu, 8.0)
    assert s == (3, 3, 3, 3)
    assert imu.read_offsets() == DEFAULT_OFFSETS        # what its calibration found


def test_holding_still_never_calibrates_the_magnetometer():
    bus, chip, imu, m = _unit()
    s = _run(bus, imu, 20.0)
    assert s[1] == 3 and s[3] == 0 and s[0] == 0


def test_a_reset_forgets_the_levels():
    bus, chip, imu, m = _unit()
    _run(bus, imu, 3.0)
    assert imu.calibration()[1] == 3
    imu.init()
    assert imu.calibration() == (0, 0, 0, 0)


def test_a_restored_profile_starts_low_and_revalidates_quickly():
    bus, chip, imu, m = _unit()
    imu.profile = DEFAULT_OFFSETS
    imu.init()                                          # reset, profile written in CONFIG mode
    assert imu.calibration() == (0, 0, 0, 0) and chip.profile() == DEFAULT_OFFSETS
    s = _run(bus, imu, 0.6)                             # a short still moment: gyro and accel
    assert s[1] == 3 and s[2] == 3 and s[3] == 0 and s[0] == 0
    m.kind = "tumble"
    s = _run(bus, imu, 1.5)                             # a little motion: the magnetometer
    assert s == (3, 3, 3, 3)


def test_a_ceiling_caps_the_levels():
    """calib_stat is the best a chip reaches where it is (0xFD: a magnetometer near steel, 1)."""
    bus, chip, imu, m = _unit(calib_stat=0xFD)
    assert calibrate_by_motion(bus, imu, m) == (1, 3, 3, 1)
    assert imu.read_offsets() == bytes(22)


def test_calibrate_waits_for_and_guides_the_motion(tmp_path):
    """`motionstaff calibrate`'s BNO055 step on the twin: it asks for stillness, six positions and
    a figure 8, and the chip's levels rise only as the (simulated) person does them."""
    from device.capture.calibration import Calibrator
    from device.capture.config import load_config
    from device.capture.unit import build_unit
    from tests.unit_config import write_unit_config
    spec = {"name": "p_imu", "chip": "bno055", "bus": "main", "addr": 0x28, "link": "pelvis"}
    unit = build_unit(load_config(str(write_unit_config(tmp_path, [spec]))))
    try:
        said = []
        cal = Calibrator(unit, prompt=said.append, say=said.append, rotate_s=10.0)
        e = cal.run("p_imu")
        assert e["calib_stat"] == {"system": 3, "gyro": 3, "accel": 3, "mag": 3}
        assert e["profile"] == DEFAULT_OFFSETS.hex()
        # the bench's time: the reset, 1.5 s still, five more poses of 1 s at least, the figure 8
        assert 0.67 + 1.5 + 5 * 1.0 < cal.bench.t < 0.67 + 2.0 + 6 * 2.0 + 10.0, cal.bench.t
        asked = " | ".join(said)
        assert "still for 2 s" in asked and "with -Z up" in asked and "figure 8" in asked
        assert "gyro 3/3, accel 0/3, mag 0/3, system 0/3" in asked       # after the still step
        # a figure 8 cut short: the magnetometer (and system) stay low, no profile is kept
        e = Calibrator(unit, rotate_s=0.05).run("p_imu")
        assert e["calib_stat"]["gyro"] == e["calib_stat"]["accel"] == 3
        assert e["calib_stat"]["mag"] < 3 and e["calib_stat"]["system"] < 3 and "profile" not in e
        # held still too briefly: the gyro is not there after the still step (the positions'
        # stillness completes it, as on the chip)
        said = []
        e = Calibrator(unit, say=said.append, still_s=0.5, rotate_s=0.05).run("p_imu")
        assert [x for x in said if "CALIB_STAT gyro" in x][0] == \
            "p_imu: CALIB_STAT gyro 1/3, accel 0/3, mag 0/3, system 0/3"
        assert e["calib_stat"]["gyro"] == 3
    finally:
        unit.close()
