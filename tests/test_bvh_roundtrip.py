"""host/bvh.py: BVH import/export of real clips (round trip within the codec bound, end-effector
error through forward kinematics), any channel layout, line endings, and malformed files."""

import numpy as np

from device.body.skeleton import LENGTH_UNITS
import pytest
from scipy.spatial.transform import Rotation

from device.body.kinematics import forward_kinematics
from host.bvh import bvh_to_staff, parse_bvh, read_bvh, staff_to_bvh, write_bvh
from host.bvhskeleton import segment_of
from protocol.errors import FormatError


def clips(shared_data):
    found = sorted((shared_data / "bvh").glob("*.bvh"))
    if not found:
        pytest.skip("no BVH clips in %s" % (shared_data / "bvh"))
    return found


def end_effector_error_mm(staff, other):
    sk = staff.skeleton
    ends = [i for i, ln in enumerate(sk.links) if ln.name.endswith("_End")]
    a = forward_kinematics(sk, staff.values.T).link_pos_m[:, ends]
    b = forward_kinematics(sk, other.values.T).link_pos_m[:, ends]
    e = np.linalg.norm(a - b, axis=-1) * 1000.0
    return float(np.sqrt(np.mean(e * e))), float(e.max())


@pytest.mark.parametrize("bits", [8, 16])
def test_every_clip_round_trips_within_the_bound(shared_data, bits, tmp_path):
    report = []
    for path in clips(shared_data):
        st = read_bvh(path, bits=bits)
        joints, frame_time, raw = parse_bvh(path.read_text(), str(path))
        assert st.frames == raw.shape[0] and st.nrows == raw.shape[1]
        assert st.rows[0].name == "%s.%s" % (joints[0].name, joints[0].channels[0])
        q = st.quantised()
        # every channel within its exact bound (few ulps for the float arithmetic)
        err = np.abs(q.values - st.values).max(axis=1)
        assert (err <= st.max_error() * (1 + 1e-9) + 1e-9).all(), path.name
        # unwrapping changes angles by whole turns only
        turns = (st.values - raw.T) / 360.0
        assert np.allclose(turns, np.round(turns), atol=1e-9)
        # export the quantised staff and read it back: same hierarchy, same values
        out = tmp_path / path.name
        write_bvh(out, q)
        j2, ft2, raw2 = parse_bvh(out.read_text(), str(out))
        assert [(j.name, j.parent, j.channels, len(j.end_sites)) for j in j2] == \
               [(j.name, j.parent, j.channels, len(j.end_sites)) for j in joints]
        assert np.allclose([j.offset for j in j2], [j.offset for j in joints], atol=1e-6)
        assert ft2 == pytest.approx(frame_time, rel=1e-6)
        assert np.allclose(raw2.T, q.values, rtol=1e-9, atol=1e-7)
        rms, mx = end_effector_error_mm(st, q)
        report.append("%s %d-bit end effectors: rms %.3f mm, max %.3f mm" % (path.name, bits, rms, mx))
        assert mx < (300.0 if bits == 8 else 2.0)
    print("\n".join(report))


def test_derived_skeleton(shared_data):
    st = read_bvh(shared_data / "bvh" / "131_03.bvh")
    sk = st.skeleton
    assert sk.dof_names == st.names
    assert sk.nlinks == 31 + 7 and sk.link_names[0] == "Hips"
    assert "LeftToe_End" in sk.link_names
    assert list(sk.gravity) == [0.0, -9.81, 0.0]
    assert sk.total_mass == pytest.approx(75.0, rel=1e-4)
    assert st.rows[0].unit == "cmu" and st.rows[3].unit == "deg" and st.rows[3].wrap
    assert st.fps == 120.0


def _oracle_positions(joints, values, scale):
    """World joint positions by the textbook BVH recipe (as Blender and bvhio read it), with
    scipy's intrinsic Euler angles."""
    pos, rot, out, col = {}, {}, [], 0
    for i, j in enumerate(joints):
        t = j.offset.copy()        # a position channel replaces OFFSET along its axis
        order, angles = "", []
        for c in j.channels:
            if c.endswith("position"):
                t["XYZ".index(c[0])] = values[col]
            else:
                order += c[0]
                angles.append(values[col])
            col += 1
        r_local = Rotation.from_euler(order, angles, degrees=True).as_matrix() if order else np.eye(3)
        if j.parent < 0:
            pos[i], rot[i] = t * scale, r_local
        else:
            pos[i] = pos[j.parent] + rot[j.parent] @ (t * scale)
            rot[i] = rot[j.parent] @ r_local
        out.append(pos[i])
    return np.array(out)


@pytest.mark.parametrize("name", ["131_03.bvh", "05_20-daz.bvh", "dataset-1_kick_normal_001.bvh"])
def test_kinematics_of_the_derived_skeleton_match_a_textbook_bvh_oracle(shared_data, name):
    path = shared_data / "bvh" / name
    joints, _, raw = parse_bvh(path.read_text(), name)
    st = read_bvh(path)
    pose = forward_kinematics(st.skeleton, st.values.T[::97])
    for k, f in enumerate(range(0, raw.shape[0], 97)):
        want = _oracle_positions(joints, raw[f], LENGTH_UNITS[st.rows[0].unit])
        got = pose.link_pos_m[k, :len(joints)]
        assert np.allclose(got, want, atol=1e-9)


SMALL = (
    "HIERARCHY\r\nROOT root\n{\r\n\tOFFSET 0 0 0\n  CHANNELS 6 Xposition Yposition Zposition Xrotation Yrotation Zrotation\n"
    "\tJOINT a\r\n\t{\n\t\tOFFSET 0 0.5 0\r\n\t\tCHANNELS 3 Yrotation Xrotation Zrotation\n"
    "\t\tJOINT b\n\t\t{\n\t\t\tOFFSET 0 0.4 0\n\t\t\tCHANNELS 2 Zrotation Xposition\n"
    "\t\t\tEnd Site\n\t\t\t{\n\t\t\t\tOFFSET 0 0.1 0\n\t\t\t}\n\t\t}\n\t}\n"
    "\tJOINT c\n\t{\n\t\tOFFSET 0.2 0 0\n\t\tCHANNELS 0\n\t\tEnd Site\n\t\t{\n\t\t\tOFFSET 0.1 0 0\n\t\t}\n\t}\n"
    "}\r\nMOTION\nFrames:\t3\r\nFrame Time: 0.01\n"
    "0 1 0 10 20 170 1 2 3 4 0.01\r\n0.1 1 0 11 21 -175 1 2 3 5 0.02\n\t0.2 1 0 12 22 -170 1 2 3 6 0.03 \r\n"
)


def test_any_layout_line_endings_and_metres():
    st = bvh_to_staff(SMALL, "small.bvh")
    assert st.names == ["root.Xposition", "root.Yposition", "root.Zposition", "root.Xrotation",
                        "root.Yrotation", "root.Zrotation", "a.Yrotation", "a.Xrotation", "a.Zrotation",
                        "b.Zrotation", "b.Xposition"]
    assert st.rows[0].unit == "m"                        # the body is under 3 units tall
    assert st.fps == 100.0 and st.frames == 3
    assert st.values[5].tolist() == [170.0, 185.0, 190.0]  # unwrapped through 180
    assert st.skeleton.link_names == ["root", "a", "b", "c", "b_End", "c_End"]
    text = staff_to_bvh(st)
    again = bvh_to_staff(text, "again.bvh")
    assert again.names == st.names
    assert np.allclose(again.values, st.values, atol=1e-9)
    cm = bvh_to_staff(SMALL, "small.bvh", units="cm")
    assert cm.rows[0].unit == "cm" and cm.skeleton.links[1].offset[1] == pytest.approx(0.005)


def test_staff_of_another_skeleton_exports_as_bvh():
    from device.body.human import human_model
    from host.staff import Row, Staff

    sk = human_model()
    rot = np.array([d.kind == "rotation" for d in sk.dofs])
    v = np.tile(sk.home[:, None], (1, 4)) + np.linspace(0, 5, 4)[None, :] * rot[:, None]
    st = Staff(v, [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs], skeleton=sk)
    text = staff_to_bvh(st, units="m")
    back = bvh_to_staff(text, "human.bvh", units="m")
    # the same motion: link positions agree through each skeleton's own kinematics
    a = forward_kinematics(sk, st.values.T).link_pos_m
    b = forward_kinematics(back.skeleton, back.values.T).link_pos_m
    names = back.skeleton.link_names
    idx = [names.index(n) for n in sk.link_names]
    assert np.allclose(a, b[:, idx], atol=1e-6)


@pytest.mark.parametrize("text, message", [
    ("", "no MOTION"),
    ("HIERARCHY\nMOTION\nFrames: 1\nFrame Time: 0.1\n", "line 1"),
    (SMALL.replace("OFFSET 0 0.5 0", "OFFSET 0 zero 0"), "line 8: OFFSET: 'zero' is not a number"),
    (SMALL.replace("CHANNELS 3 Yrotation", "CHANNELS 3 Wrotation"), "line 9: unknown channel 'Wrotation'"),
    (SMALL.replace("CHANNELS 3 Yrotation", "CHANNELS 9 Yrotation"), "line 9: channel count"),
    (SMALL.replace("}\r\nMOTION", "MOTION"), "closing joint 'root'"),
    (SMALL.replace("Frames:\t3", "Frames:\t4"), "4 frames declared but only 3"),
    (SMALL.replace("Frames:\t3", "Frames:\t99999999"), "too short"),
    (SMALL.replace("Frame Time: 0.01", "Frame Time: 0"), "Frame Time"),
    (SMALL.replace("0.1 1 0 11 21", "0.1 1 0 11"), "line 34: 10 values, expected 11"),
    (SMALL.replace("0.1 1 0 11 21", "0.1 1 0 11 x"), "line 34: 'x' is not a number"),
    (SMALL.replace("0.1 1 0 11 21", "0.1 1 0 11 nan"), "line 34: value is not finite"),
    (SMALL.replace("JOINT c", "JOINT a"), "joint name 'a' repeats"),
    ("HIERARCHY\nROOT r\n{\nOFFSET 0 0 0\n" + "".join("JOINT j%d\n{\nOFFSET 0 0 0\n" % i for i in range(300))
     + "MOTION\nFrames: 0\nFrame Time: 0.1\n", "nested deeper than 200"),
    (SMALL.replace("Xrotation Yrotation Zrotation\n", "Xrotation Xrotation Zrotation\n"), "repeats on joint"),
])
def test_malformed_bvh_names_file_and_line(text, message):
    with pytest.raises(FormatError, match="bad.bvh: .*" + message.replace("(", r"\(")):
        bvh_to_staff(text, "bad.bvh")


def test_binary_and_truncated_files(tmp_path, shared_data):
    p = tmp_path / "bin.bvh"
    p.write_bytes(b"\x89PNG\r\n\0\0\0" * 10)
    with pytest.raises(FormatError, match="bin.bvh"):
        read_bvh(p)
    data = (shared_data / "bvh" / "131_03.bvh").read_bytes()
    for cut in (100, 5000, len(data) // 2, len(data) - 50):
        q = tmp_path / "cut.bvh"
        q.write_bytes(data[:cut])
        with pytest.raises(FormatError, match="cut.bvh"):
            read_bvh(q)


def test_segment_names():
    assert [segment_of(n) for n in ("LeftUpLeg", "LeftHip", "LHipJoint", "Hips", "rShin", "LeftForeArm",
                                    "LeftElbow", "RightArm", "Head", "LFingers", "joint_Root")] == \
        ["thigh", "thigh", "pelvis", "pelvis", "shank", "forearm", "forearm", "upper_arm", "head", None, None]


@pytest.mark.parametrize("name", ["131_03.bvh", "05_20-daz.bvh", "dataset-1_run_normal_001.bvh"])
def test_exported_bvh_reads_in_an_independent_parser(shared_data, tmp_path, name):
    """bvhio (PyPI) reads our export and places every joint where our kinematics does."""
    bvhio = pytest.importorskip("bvhio")
    st = read_bvh(shared_data / "bvh" / name)
    q = st.quantised()
    out = tmp_path / name
    write_bvh(out, q)
    h = bvhio.readAsHierarchy(str(out))
    names = st.skeleton.link_names
    for f in (0, q.frames // 2, q.frames - 1):
        h.loadPose(f)
        want = forward_kinematics(st.skeleton, q.values.T[f]).link_pos_m
        layout = h.layout()
        assert len(layout) == len([n for n in names if not n.endswith("_End")])
        for joint, _, _ in layout:
            got = np.array(joint.PositionWorld) * LENGTH_UNITS[st.rows[0].unit]
            assert np.allclose(got, want[names.index(joint.Name)], atol=2e-6)   # bvhio uses float32


def test_random_corruption_only_ever_raises_format_error(shared_data):
    text = (shared_data / "bvh" / "dataset-1_run_normal_001.bvh").read_text()
    rng = np.random.default_rng(5)
    for _ in range(150):
        t = list(text)
        for _ in range(3):
            t[int(rng.integers(0, len(t)))] = chr(int(rng.integers(32, 127)))
        try:
            bvh_to_staff("".join(t), "f.bvh")
        except FormatError as e:
            assert str(e).startswith("f.bvh: ") and "\n" not in str(e)
