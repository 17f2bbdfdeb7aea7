"""host.physics.models: the OP3 loads from package data with the description's limits."""

import numpy as np
import pytest

import host.physics  # noqa: F401  (MUJOCO_GL before mujoco loads)

mujoco = pytest.importorskip("mujoco")

from host.physics.models import load_robot


def test_op3_limits_and_convention():
    rm = load_robot("op3-dynamixel")
    m = rm.model
    assert m.nu == 20 and len(rm.servo_names) == 20
    for s in rm.servos:
        j = m.joint(rm.joint_of[s.name]).id
        lo, hi = np.degrees(m.jnt_range[j])
        assert m.jnt_limited[j]
        assert sorted((lo, hi)) == pytest.approx(sorted((-s.lo_deg, -s.hi_deg)), abs=1e-6)
    # a positive knee in servo degrees is the bent knee: the ankle goes behind the hip
    # (ROBOTIS ini_pose: r_knee -142 URDF deg = crouch)
    hip = rm.fk({}, ["r_hip_pitch_link"])["r_hip_pitch_link"][0]
    ank = rm.fk({"r_knee": 60.0}, ["r_foot"])["r_foot"][0]
    assert ank[0] < hip[0] - 0.05
    # Dynamixel position 2048 + x is URDF +x
    assert rm.units_to_qpos_rad("r_knee", 2048 + 1024) == pytest.approx(np.pi / 2, abs=1e-3)
    assert rm.qpos_rad_to_units("r_knee", np.pi / 2) == 3072


def test_op3_standing_and_feet():
    rm = load_robot("op3-dynamixel")
    assert 0.25 < rm.standing_height_m < 0.32
    for side in "lr":
        assert len(rm.foot_geoms[side]) == 2
    feet = rm.fk({}, ["l_foot", "r_foot"])
    assert feet["l_foot"][0][1] > 0 > feet["r_foot"][0][1]


def test_no_model_is_one_line():
    with pytest.raises(ValueError, match="khr17-maestro has no physics model"):
        load_robot("khr17-maestro")
    with pytest.raises(ValueError, match="no servo"):
        load_robot("op3-dynamixel").fk({"nose": 1.0})
