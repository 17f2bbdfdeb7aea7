"""The device's minimal BVH reader agrees with host/bvh.py (row names, rotations, hierarchy)."""

import numpy as np
import pytest

from device.capture.bvhclip import load_bvh, parse_bvh
from protocol.errors import FormatError


@pytest.mark.parametrize("name", ["131_01.bvh", "05_20-daz.bvh", "dataset-1_run_normal_001.bvh"])
def test_same_rows_and_rotations_as_host_reader(shared_data, name):
    from host.bvh import read_bvh
    path = str(shared_data / "bvh" / name)
    clip = load_bvh(path)
    staff = read_bvh(path, bits=16)
    assert clip.skeleton.dof_names == staff.names
    assert clip.frames == staff.frames
    rot = [j for j, d in enumerate(clip.skeleton.dofs) if d.kind == "rotation"]
    d = (clip.values[:, rot] - staff.values[rot].T + 180.0) % 360.0 - 180.0   # host unwraps
    assert np.abs(d).max() < 1e-6
    assert clip.skeleton.link_names[:len(staff.skeleton.link_names)] == staff.skeleton.link_names or \
        set(clip.skeleton.link_names) == set(staff.skeleton.link_names)
    # a standing adult of about 1.7 m whatever the file's unit
    from device.body.kinematics import forward_kinematics
    pose = forward_kinematics(clip.skeleton, np.where([d.kind == "rotation" for d in clip.skeleton.dofs],
                                                      0.0, clip.values[0]))
    h = np.ptp(pose.link_pos_m[:, 1])
    assert 1.5 < h < 1.9


def test_bad_bvh_is_a_format_error():
    for text, msg in [("", "not a BVH"), ("HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\n}\n", "end of file"),
                      ("HIERARCHY\nROOT a\n{\nOFFSET 0 0 x\n}\n", "OFFSET"),
                      ("HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n}\nMOTION\nFrames: 2\n"
                       "Frame Time: 0.1\n1\n", "motion values"),
                      ("HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Wrotation\n}\nMOTION\nFrames: 1\n"
                       "Frame Time: 0.1\n1\n", "unknown channel")]:
        with pytest.raises(FormatError, match=msg):
            parse_bvh(text, "t.bvh")


def test_canonical_euler_keeps_every_rotation(shared_data):
    from device.body.kinematics import forward_kinematics
    from device.capture.bvhclip import canonical_euler
    clip = load_bvh(str(shared_data / "bvh" / "131_03.bvh"))
    v = canonical_euler(clip.skeleton, clip.values[::10])
    rot = [j for j, d in enumerate(clip.skeleton.dofs) if d.kind == "rotation"]
    assert np.abs((v[:, rot] + 180) % 360 - 180).max() <= 180
    a = forward_kinematics(clip.skeleton, clip.values[::10]).link_rot
    b = forward_kinematics(clip.skeleton, v).link_rot
    assert np.abs(a - b).max() < 1e-9
    # the middle angle of every 3-rotation joint is now within +-90 deg
    for ln in clip.skeleton.links:
        js = [j for j in ln.dofs if clip.skeleton.dofs[j].kind == "rotation"]
        if len(js) == 3:
            assert np.abs((v[:, js[1]] + 180) % 360 - 180).max() <= 90 + 1e-9
    assert (v != clip.values[::10]).any()        # the clip does leave the canonical branch
