"""Retargeting by pose (host/retarget/pose.py): limits, continuity, branch flips, balance, bad input."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck, strategies as st

from device.body.human import human_model
from device.servo.robot import load_robot
from host.retarget.pose import retarget_to_robot
from host.retarget.segments import match_points, side_and_base
from host.staff import Row, Staff
from protocol.errors import FormatError

BVH = "/work/shared/data/bvh"
SK = human_model(floating=True)
ROWS = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in SK.dofs]


def human_staff(values, fps=30.0):
    return Staff(values, ROWS, fps, 16, SK, {"source": "test"})


def _knees_staff(a_deg, fps):
    """Hip and knee pitch a_deg[k] at frame k: the shank stays upright, so the hips drop by
    thigh * (1 - cos a) and the feet stay down."""
    V = np.repeat(SK.home[:, None], a_deg.size, axis=1).astype(float)
    for side in "lr":
        V[SK.dof_index(side + "_hip_flex")] = a_deg
        V[SK.dof_index(side + "_knee_flex")] = a_deg
    thigh_m = abs(SK.links[SK.link_index("l_shank")].offset[2])
    V[SK.dof_index("root_tz")] -= thigh_m * (1 - np.cos(np.radians(a_deg)))
    return human_staff(V, fps)


def squat_staff(seconds=3.0, fps=30.0):
    """Hip and knee pitch +-20 deg at 1 Hz (around 20 deg): the issue's motion that tips the
    OP3 over when copied joint for joint."""
    t = np.arange(int(seconds * fps)) / fps
    return _knees_staff(20 * np.sin(2 * np.pi * t) + 20, fps)


def crouch_staff(a_deg=30.0, seconds=2.0, fps=30.0):
    """Hips and knees bent a_deg and held."""
    return _knees_staff(np.full(int(seconds * fps), float(a_deg)), fps)


def test_names_of_every_convention():
    assert side_and_base("LeftUpLeg") == ("l", "upleg")
    assert side_and_base("UpperArm_R") == ("r", "upperarm")
    assert side_and_base("lShin") == ("l", "shin")
    assert side_and_base("mixamorig:RightForeArm") == ("r", "forearm")
    assert side_and_base("r_thigh") == ("r", "thigh")
    assert side_and_base("Shoulder") == ("", "shoulder")
    idx = match_points(SK, ["l_hip", "r_knee", "l_wrist", "neck"])
    assert SK.link_names[idx["l_hip"]] == "l_thigh" and SK.link_names[idx["r_knee"]] == "r_shank"


def test_contract_fields_and_rows():
    r = retarget_to_robot(squat_staff(1.0), "op3-dynamixel", balance=True)
    robot = load_robot("op3-dynamixel")
    assert r.staff.names == [s.name for s in robot.servos]
    assert r.retimed >= 1.0 and isinstance(r.retimed, float)
    assert all(len(x) == 3 and x[0] <= x[1] for x in r.infeasible)
    assert 0.0 <= r.pose_error_deg < 15.0


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 31 - 1), st.floats(0.0, 1.0))
def test_commands_within_limits_and_continuous(seed, amp):
    """Arbitrary motions of the human body: every command within the servo's range, each
    frame's change within max_vel_dps / fps; a motion moving at most 2 deg per frame gives
    commands that move at most the velocity limit (never a branch flip of 180 deg)."""
    rng = np.random.default_rng(seed)
    F = 8
    lo, hi = SK.lo, SK.hi
    start = lo + (hi - lo) * rng.random(SK.ndof)
    step = rng.uniform(-2, 2, (SK.ndof, F)) * amp
    V = np.clip(start[:, None] + np.cumsum(step, axis=1), lo[:, None], hi[:, None])
    V[:6] = SK.home[:6, None]
    for balance in (False, True):
        r = retarget_to_robot(human_staff(V), "so101-feetech" if seed % 3 == 0 else "op3-dynamixel",
                              balance=balance, lead_in_s=0.0)
        robot = load_robot("so101-feetech" if seed % 3 == 0 else "op3-dynamixel")
        lo_d = np.array([s.lo_deg for s in robot.servos])[:, None]
        hi_d = np.array([s.hi_deg for s in robot.servos])[:, None]
        v = r.staff.values
        assert np.all(np.isfinite(v))
        assert np.all(v >= lo_d - 1e-9) and np.all(v <= hi_d + 1e-9)
        vmax = np.array([s.max_vel_dps for s in robot.servos])[:, None] / r.staff.fps
        assert np.all(np.abs(np.diff(v, axis=1)) <= vmax + 1e-9)


@pytest.mark.skipif(not os.path.exists(BVH), reason="needs ../shared/data/bvh")
def test_deep_crouch_keeps_the_knee_bent():
    """Bandai dance, frames 1200-1290: the knee bends 146-159 deg; its Euler rows put the bend
    in Y (X stays near 0) so the row copy of "knee X" leaves the knee straight. The pose
    retarget keeps the knee bent past 100 deg there (the OP3 knee stops at 140 deg) and never
    jumps."""
    from host.bvh import read_bvh
    s = read_bvh(os.path.join(BVH, "dataset-1_dance-short_normal_001.bvh"))
    s.values = s.values[:, 1200:1290]
    r = retarget_to_robot(s, "op3-dynamixel", balance=False, fps=30.0, lead_in_s=0.0)
    knee = r.staff.values[r.staff.row_index("r_knee")]
    x_row = s.values[s.row_index("LowerLeg_R.Xrotation")]
    deep = np.arange(40, 60)        # frames 1240-1260: the person's knee at 150-159 deg
    assert np.all(np.abs(x_row[deep]) < 10)
    # the same instants in the result (after its lead-in from home, slowed down)
    out = np.round((r.lead_in_s + deep / s.fps * r.retimed) * r.staff.fps).astype(int)
    assert np.all(knee[out] > 100), knee[out]
    assert np.max(np.abs(np.diff(knee))) <= 300 / r.staff.fps + 1e-9


def test_a_person_crouched_throughout_crouches_the_robot():
    """The hips' height is the person's against their own leg length (thigh + shank), not
    against the clip's own highest: a crouch held for the whole clip is a crouch (measured:
    knee 43 deg, thighs 10 deg off, pose error 3.5 deg; against the clip's 90th percentile of
    hip height the robot stood straight: knee 15 deg, thighs 25 deg off, pose error 6.6)."""
    r = retarget_to_robot(crouch_staff(30.0), "op3-dynamixel", balance=True)
    lead = int(round(r.lead_in_s * r.staff.fps))
    knee = r.staff.values[r.staff.row_index("r_knee"), lead:]
    assert np.median(knee) > 30.0
    assert r.segment_error_deg["l_thigh"] < 15.0 and r.segment_error_deg["r_thigh"] < 15.0
    assert r.pose_error_deg < 5.0


def test_balance_keeps_op3_standing_where_the_row_copy_falls():
    """In physics, through the product path (player, driver bytes, Dynamixel emulator, MuJoCo
    twin): the squat copied joint for joint ("human" row map) falls; retargeted by pose with
    balance it stands, feet still, no self-collision."""
    from host.physics.simulate import run_simulation
    s = squat_staff(2.0)
    row = run_simulation(s, "op3-dynamixel", pose=False, mapping="human").report
    assert row["fell"]
    r = retarget_to_robot(s, "op3-dynamixel", balance=True)
    assert r.infeasible == [] and r.staff.fps == 100.0
    rep = run_simulation(s, "op3-dynamixel", retargeted=(r.staff, r)).report
    assert not rep["fell"] and rep["self_collision_frames"] == 0 and rep["foot_slip_mm"] < 5.0
    assert rep["tracking_rms_deg"] < 3.0


def test_unmappable_skeleton_names_what_is_missing():
    from device.body.skeleton import Skeleton
    d = SK.to_dict()
    for ln in d["links"]:
        ln["name"] = {"l_shank": "blob1", "r_shank": "blob2"}.get(ln["name"], ln["name"])
        if ln["parent"] in ("l_shank", "r_shank"):
            ln["parent"] = {"l_shank": "blob1", "r_shank": "blob2"}[ln["parent"]]
    for dof in d["dofs"]:
        dof["link"] = {"l_shank": "blob1", "r_shank": "blob2"}.get(dof["link"], dof["link"])
    for f in d["features"]:
        f["link"] = {"l_shank": "blob1", "r_shank": "blob2"}.get(f["link"], f["link"])
    sk = Skeleton.from_dict(d)
    s = Staff(np.repeat(sk.home[:, None], 3, axis=1), ROWS, 30.0, 16, sk, {"source": "odd"})
    with pytest.raises(FormatError, match="l_knee, r_knee") as e:
        retarget_to_robot(s, "op3-dynamixel")
    assert "\n" not in str(e.value)


def test_staff_without_skeleton_is_one_line():
    s = Staff(np.zeros((2, 3)), [Row("a", "deg", -1, 1, True), Row("b", "deg", -1, 1, True)], 30.0, 8,
              None, {"source": "bare.png"})
    with pytest.raises(FormatError, match="no skeleton"):
        retarget_to_robot(s, "op3-dynamixel")
    with pytest.raises(FormatError, match="no physics model"):
        retarget_to_robot(squat_staff(0.2), "khr17-maestro")


def test_cli_retarget_by_pose_and_bad_input(tmp_path, capsys):
    from host.cli import main
    from host.formats import read_motion, write_motion
    src = tmp_path / "squat.bvh"
    write_motion(str(src), squat_staff(0.5))
    dst = tmp_path / "op3.csv"
    assert main(["retarget", str(src), str(dst), "--robot", "op3-dynamixel"]) == 0
    out = capsys.readouterr().out
    assert "median pose error" in out and "wrote" in out
    back = read_motion(str(dst))
    assert back.names == [s.name for s in load_robot("op3-dynamixel").servos]
    for argv, what in (([str(src), str(dst), "--robot", "khr17-maestro"], "no physics model"),
                       ([str(src), str(dst), "x.png", "--robot", "op3-dynamixel"], "SRC and DST only"),
                       ([str(tmp_path / "none.bvh"), str(dst), "--robot", "op3-dynamixel"], "none.bvh")):
        assert main(["retarget"] + argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("motionstaff: ") and what in err and err.count("\n") == 1, err


def test_play_retargets_by_pose_by_default(tmp_path, capsys):
    """play on a built-in robot with a model: the person's motion is retargeted by pose (the
    description says "retarget": "pose"); --mapping cmu keeps the row copy."""
    import json
    from host.cli import main
    from host.formats import write_motion
    src = tmp_path / "squat.bvh"
    write_motion(str(src), squat_staff(0.3))
    assert main(["play", str(src), "--port", "loop://", "--robot", "op3-dynamixel", "--speed", "8",
                 "--no-progress", "--json"]) == 0
    cap = capsys.readouterr()
    assert "pose retargeting onto 20 servos" in cap.err
    assert json.loads(cap.out.strip().splitlines()[-1])["mapping"] == "servo"


def test_a_skeleton_with_legs_of_no_length_gets_no_crouch_not_a_nan_target(monkeypatch):
    """The crouch reference divides the hip's height over the ankles by the person's leg
    (thigh + shank): a skeleton whose left knee and ankle sit on its hip (a leg of length 0)
    gives no crouch (the robot stands straight), never a NaN torso target (it was: the IK's
    qpos NaN, a LinAlgError in the sag's solve)."""
    pytest.importorskip("mujoco")
    import host.retarget.pose as pose
    from host.bvh import read_bvh
    here = os.path.dirname(os.path.abspath(__file__))
    s = read_bvh(os.path.join(here, "..", "host", "data", "131_03_short.bvh"))
    s = Staff(s.values[:, :20], s.rows, fps=s.fps, bits=s.bits, skeleton=s.skeleton, meta=s.meta)
    frames = pose.person_frames

    def no_leg(staff, need):
        hp, wp = frames(staff, need)
        wp["l_knee"] = wp["l_hip"].copy()
        wp["l_ankle"] = wp["l_hip"].copy()
        return hp, wp
    monkeypatch.setattr(pose, "person_frames", no_leg)
    r = pose.retarget_to_robot(s, "op3-dynamixel", lead_in_s=0.2)
    assert np.isfinite(r.staff.values).all()
