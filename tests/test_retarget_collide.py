"""Self-collision and the table in pose retargeting (host/retarget/pose.py): the OP3's elbows keep
their margin from the hips on a real run with balance, the SO-101 keeps off its table and itself
when the person's arm swings back, and the flat-foot pitch turns a foot about its own axis."""

import os

import numpy as np
import pytest

from device.body.human import human_model
from host.retarget.pose import _geoms, pitch_foot, retarget_to_robot
from host.retarget.robotmodel import robot_body
from host.staff import Row, Staff

BVH = "/work/shared/data/bvh"
SK = human_model(floating=True)
ROWS = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in SK.dofs]


def _min_dist_m(body, qpos, a, b):
    """Smallest distance (m) between the geoms of pair (a, b) over the frames' qpos."""
    import mujoco            # (here, not at import: host.physics picks the GL backend first)
    m = body.model
    d = mujoco.MjData(m)
    A, B = _geoms(m, a), _geoms(m, b)
    ft = np.zeros(6)
    out = np.inf
    for q in qpos:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        out = min(out, min(mujoco.mj_geomDistance(m, d, x, y, 0.1, ft) for x in A for y in B))
    return out


def test_pitch_foot_turns_about_the_foot_axis():
    e0 = np.radians(-40.0)
    fwd = [np.cos(e0), 0.0, np.sin(e0)]                       # the flat foot's toe line, forward
    turned = [0.6 * np.cos(e0), 0.8 * np.cos(e0), np.sin(e0)]  # the same, turned out
    back = [-np.cos(e0), 0.0, np.sin(e0)]                      # pitched past the vertical (a run's back swing)
    out = pitch_foot(np.array([fwd, turned, back]), e0)
    assert np.allclose(out[0], [1, 0, 0], atol=1e-12)
    assert np.allclose(out[1], [0.6, 0.8, 0], atol=1e-12)
    # toe-up by 40 deg about the foot's left axis carries a foot pointing back further down
    # (the elevation shift it replaces gave (-1, 0, 0): level, as if the foot were flat)
    assert np.allclose(out[2], [-np.cos(2 * e0), 0, np.sin(2 * e0)], atol=1e-12)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)


def _arm_back_staff(seconds=2.0, fps=30.0):
    """The right arm swings back, straight (shoulder extension to 40 deg): on the SO-101 (the arm
    hanging = pointing forward) that points the arm 40 deg down, into its table."""
    t = np.arange(int(seconds * fps)) / fps
    V = np.repeat(SK.home[:, None], t.size, axis=1).astype(float)
    s = 0.5 * (1 - np.cos(np.pi * np.clip(t / seconds * 1.5, 0, 1)))
    V[SK.dof_index("r_shoulder_flex")] = -40.0 * s
    return Staff(V, ROWS, fps, 16, SK, {"source": "test"})


def test_so101_arm_swung_back_keeps_off_table_and_itself():
    body = robot_body("so101-feetech")
    staff = _arm_back_staff()
    res = retarget_to_robot(staff, "so101-feetech", balance=False)
    # the plan without the avoidance drives the gripper into the table (the fault this guards)
    free = retarget_to_robot(staff, "so101-feetech", balance=False, collisions=False)
    assert _min_dist_m(body, free.qpos, "lower_arm", "floor") < -0.1            # measured -153 mm
    # the 20 mm margin less the limiter's overshoot (measured 11.2 mm)
    assert _min_dist_m(body, res.qpos, "lower_arm", "floor") > 0.008
    for a, b, margin, _ in body.spec["collide"][1:]:
        assert _min_dist_m(body, res.qpos, a, b) > 0.5 * margin
    # every command inside the mechanism's own stops (elbow 96.8 deg, wrist 95 deg in the MJCF)
    m = body.model
    q = res.qpos[:, body.qadr]
    assert (q >= m.jnt_range[[m.joint(n).id for n in body.servo_names], 0] - 1e-9).all()
    assert (q <= m.jnt_range[[m.joint(n).id for n in body.servo_names], 1] + 1e-9).all()
    assert np.degrees(m.jnt_range[m.joint("elbow_flex").id, 1]) < 97.0
    from host.physics.simulate import run_simulation
    rep = run_simulation(staff, "so101-feetech", retargeted=(res.staff, res)).report
    assert rep["self_collision_frames"] == 0
    assert rep["tracking_rms_deg"] < 3.0


@pytest.mark.skipif(not os.path.exists(BVH), reason="needs ../shared/data/bvh")
def test_op3_run_with_balance_elbows_clear_hips_and_upper_arms_follow():
    from host.formats import read_motion
    from host.physics.simulate import run_simulation
    s = read_motion(os.path.join(BVH, "dataset-2_run_normal_001.bvh"))
    s.values = s.values[:, :int(round(1.0 * s.fps)) + 1]       # its first second
    body = robot_body("op3-dynamixel")
    res = retarget_to_robot(s, "op3-dynamixel", balance=True)
    # the played plan (after the limiter and the sag feed-forward): the elbows keep clear of
    # the hips (with a 4 mm margin: 2.7 / 0.8 mm in this second, 10 mm into the hips later on)
    for side in "lr":
        assert _min_dist_m(body, res.qpos, side + "_el_link", side + "_hip_yaw_link") > 0.004
    seg = res.segment_error_deg
    assert seg["trunk"] < 3.0
    # the upper arms first (pose.FOREARM_WEIGHT): 19 / 26 deg here, 34 / 33 with the arms'
    # segments weighted alike; the forearms pay for it (the OP3's arm holds both in one plane)
    assert seg["l_upper_arm"] < 30.0 and seg["r_upper_arm"] < 30.0
    rep = run_simulation(s, "op3-dynamixel", retargeted=(res.staff, res)).report
    assert not rep["fell"] and rep["self_collision_frames"] == 0
