"""URDF import (forward kinematics matches URDF's own transforms) and retargeting a human staff
onto a robot by a mapping file, with the target's limits respected and clamping reported."""

import json

import numpy as np
import pytest

from device.body.human import human_model
from device.body.kinematics import forward_kinematics
from host.cli import main
from host.retarget import load_body, load_mapping, mapping_from_dict, retarget
from host.staff import Row, Staff
from host.stafffile import read_staff, write_staff
from host.urdf import _rpy, urdf_to_skeleton
from protocol.errors import FormatError

ARM = """<?xml version="1.0"?>
<robot name="arm3">
  <link name="base"><inertial><mass value="1.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="shoulder"/><link name="upper"/><link name="fore"/><link name="tool"/><link name="slide"/>
  <joint name="pan" type="revolute"><parent link="base"/><child link="shoulder"/>
    <origin xyz="0 0 0.1" rpy="0 0 0.3"/><axis xyz="0 0 1"/><limit lower="-1.5" upper="1.5"/></joint>
  <joint name="lift" type="revolute"><parent link="shoulder"/><child link="upper"/>
    <origin xyz="0.02 0 0.05" rpy="1.5707963 0 0"/><axis xyz="0 0 1"/><limit lower="-1.0" upper="2.0"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.2 0.01 0" rpy="0.1 -0.2 0.4"/><axis xyz="0 1 0"/></joint>
  <joint name="tip" type="fixed"><parent link="fore"/><child link="tool"/><origin xyz="0.15 0 0"/></joint>
  <joint name="ext" type="prismatic"><parent link="fore"/><child link="slide"/>
    <origin xyz="0 0 0.03" rpy="0 0.5 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.05"/></joint>
</robot>"""


def urdf_fk(q_rad, ext_m):
    """World positions of the links by URDF's own chain of homogeneous transforms."""
    def T(xyz, rpy, R_joint=np.eye(3), t_joint=np.zeros(3)):
        M = np.eye(4)
        M[:3, :3] = _rpy(*rpy) @ R_joint
        M[:3, 3] = np.array(xyz) + _rpy(*rpy) @ t_joint
        return M

    def rot(axis, a):
        axis = np.asarray(axis, float)
        K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        return np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * K @ K

    base = np.eye(4)
    sh = base @ T([0, 0, 0.1], [0, 0, 0.3], rot([0, 0, 1], q_rad[0]))
    up = sh @ T([0.02, 0, 0.05], [1.5707963, 0, 0], rot([0, 0, 1], q_rad[1]))
    fo = up @ T([0.2, 0.01, 0], [0.1, -0.2, 0.4], rot([0, 1, 0], q_rad[2]))
    to = fo @ T([0.15, 0, 0], [0, 0, 0])
    sl = fo @ T([0, 0, 0.03], [0, 0.5, 0], np.eye(3), np.array([ext_m, 0, 0]))
    return {"base": base, "shoulder": sh, "upper": up, "fore": fo, "tool": to, "slide": sl}


def test_urdf_fk_matches_urdf_transforms():
    sk = urdf_to_skeleton(ARM, "arm3.urdf")
    assert sk.dof_names == ["pan", "lift", "elbow", "ext"]
    np.testing.assert_allclose([sk.dofs[0].lo, sk.dofs[0].hi], np.degrees([-1.5, 1.5]))
    assert (sk.dofs[2].lo, sk.dofs[2].hi) == (-180.0, 180.0) and sk.dofs[3].unit == "m"
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = rng.uniform([-80, -50, -170, 0], [80, 100, 170, 0.05])
        pose = forward_kinematics(sk, q)
        ref = urdf_fk(np.radians(q[:3]), q[3])
        for name, M in ref.items():
            np.testing.assert_allclose(pose.link_pos_m[sk.link_index(name)], M[:3, 3], atol=1e-9)


@pytest.mark.parametrize("bad, word", [
    ("<robot><link name='a'/><link name='b'/></robot>", "one root"),
    ("<robot><link name='a'/><link name='b'/><joint name='j' type='hinge'><parent link='a'/><child link='b'/></joint></robot>", "unknown type"),
    ("<robot><link name='a'/><joint name='j' type='fixed'><parent link='a'/><child link='zz'/></joint></robot>", "not defined"),
    ("<robt/>", "<robot>"), ("<robot", "not XML"),
    ("<robot><link name='a'/><link name='b'/><joint name='j' type='revolute'><parent link='a'/><child link='b'/><limit lower='1' upper='0'/></joint></robot>", "upper"),
])
def test_bad_urdf_named(bad, word):
    with pytest.raises(FormatError, match=word):
        urdf_to_skeleton(bad, "bad.urdf")


def human_staff(frames=120):
    sk = human_model()
    t = np.arange(frames) / 30.0
    v = np.repeat(sk.home[:, None], frames, axis=1)
    k = sk.dof_index("r_elbow_flex")
    v[k] = 75 + 80 * np.sin(2 * np.pi * 0.5 * t)          # 0..155 deg: beyond 150? no: -5..155
    s = sk.dof_index("r_shoulder_flex")
    v[s] = 40 * np.sin(2 * np.pi * 0.3 * t)
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs]
    return Staff(v, rows, fps=30.0, skeleton=sk, meta={"source": "test"})


MAP = {"format": "motionstaff-retarget", "version": 1, "target": "arm3.urdf",
       "joints": [{"target": "lift", "source": "r_shoulder_flex", "scale": 1.0, "offset": 10.0},
                  {"target": "elbow", "source": "-r_elbow_flex", "scale": 0.5},
                  {"target": "pan", "source": "r_elbow_flex", "scale": 1.0, "sign": 1}]}


def test_retarget_values_limits_and_report(tmp_path):
    (tmp_path / "arm3.urdf").write_text(ARM)
    (tmp_path / "map.json").write_text(json.dumps(MAP))
    m = load_mapping(str(tmp_path / "map.json"))
    robot = load_body(m.target)
    st = human_staff()
    out, rep = retarget(st, m, robot)
    assert out.names == robot.dof_names and out.fps == st.fps and out.frames == st.frames
    src_s, src_e = st.values[st.row_index("r_shoulder_flex")], st.values[st.row_index("r_elbow_flex")]
    np.testing.assert_allclose(out.values[1], src_s + 10.0)
    np.testing.assert_allclose(out.values[2], -0.5 * src_e)
    pan_hi = np.degrees(1.5)
    np.testing.assert_allclose(out.values[0], np.clip(src_e, -pan_hi, pan_hi))
    assert rep.clamped["pan"][0] == int((src_e > pan_hi).sum()) > 0
    assert abs(rep.clamped["pan"][1] - (src_e.max() - pan_hi)) < 1e-9
    assert "lift" not in rep.clamped and rep.unmapped == ["ext"]
    assert (out.values >= out.lo[:, None]).all() and (out.values <= out.hi[:, None]).all()
    # through the file: rows, ranges and the robot's skeleton survive
    write_staff(str(tmp_path / "arm.png"), out)
    back = read_staff(str(tmp_path / "arm.png"))
    assert back.names == robot.dof_names and back.skeleton.dof_names == robot.dof_names


def test_retarget_bvh_clip_onto_human(shared_data):
    from host.bvh import read_bvh
    st = read_bvh(str(shared_data / "bvh" / "131_03.bvh"))
    m = mapping_from_dict({"joints": [{"target": "l_knee_flex", "source": "LeftKnee.Xrotation"},
                                      {"target": "r_knee_flex", "source": "RightKnee.Xrotation"}]})
    out, rep = retarget(st, m, human_model())
    k = out.row_index("l_knee_flex")
    src = st.values[st.row_index("LeftKnee.Xrotation")]
    assert out.frames == st.frames
    np.testing.assert_allclose(out.values[k], np.clip(src, 0.0, 150.0))
    assert len(rep.unmapped) == 46


@pytest.mark.parametrize("doc, word", [
    ({"joints": []}, "non-empty"),
    ({"joints": [{"target": "a"}]}, "source"),
    ({"joints": [{"target": "a", "source": "b", "scale": "x"}]}, "scale"),
    ({"joints": [{"target": "a", "source": "b"}, {"target": "a", "source": "c"}]}, "twice"),
    ({"joints": [{"target": "a", "source": "b", "sign": 2}]}, "sign"),
    ({"format": "nope", "joints": [{"target": "a", "source": "b"}]}, "format"),
])
def test_bad_mapping_named(doc, word):
    with pytest.raises(FormatError, match=word):
        mapping_from_dict(doc, "m.json")


def test_unknown_joint_or_row_named():
    st = human_staff(10)
    with pytest.raises(FormatError, match="'nope' is not in"):
        retarget(st, mapping_from_dict({"joints": [{"target": "nope", "source": "r_elbow_flex"}]}), human_model())
    with pytest.raises(FormatError, match="source row 'zz'"):
        retarget(st, mapping_from_dict({"joints": [{"target": "r_elbow_flex", "source": "zz"}]}), human_model())


def test_cli_retarget(tmp_path, capsys):
    (tmp_path / "arm3.urdf").write_text(ARM)
    (tmp_path / "map.json").write_text(json.dumps(MAP))
    write_staff(str(tmp_path / "h.png"), human_staff())
    rc = main(["retarget", str(tmp_path / "h.png"), str(tmp_path / "map.json"), str(tmp_path / "r.png")])
    out = capsys.readouterr().out
    assert rc == 0 and "clamped pan" in out
    assert read_staff(str(tmp_path / "r.png")).names == ["pan", "lift", "elbow", "ext"]
    (tmp_path / "bad.json").write_text("{nope")
    assert main(["retarget", str(tmp_path / "h.png"), str(tmp_path / "bad.json"), str(tmp_path / "r.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.json" in err
