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
