"""host/skeletoncode.py's "bvhs": a BVH hierarchy as one string in the staff header.

The string decodes to the same skeleton as the JSON list "bvh" files written before hold (and
such files still read the same); a joint name with a space keeps the list; a bad string is one
FormatError; the header is smaller.
"""

import pathlib
import re

import numpy as np
import pytest

import host.skeletoncode as sc
from host.bvh import read_bvh
from host.stafffile import decode_png, encode_png, header_text
from protocol.errors import FormatError

CLIP = pathlib.Path(__file__).resolve().parent.parent / "host" / "data" / "131_03_short.bvh"


def test_bvhs_is_the_same_skeleton_as_the_list_and_old_files_read(monkeypatch):
    st = read_bvh(CLIP).refit("budget", max_error_mm=0.5, bits=16, bound="measured")
    monkeypatch.setattr(sc, "encode_names", lambda names: None)       # plain names: "bvhs"
    new = sc.encode_skeleton(st.skeleton)
    assert "bvhs" in new and "bvh" not in new and sc.is_bvh(new)
    data_new = encode_png(st, effort=1)
    hdr_new = len(header_text(st))
    monkeypatch.setattr(sc, "_bvh_text", lambda items: None)          # what files written before hold
    old = sc.encode_skeleton(st.skeleton)
    assert "bvh" in old and "bvhs" not in old and sc.is_bvh(old)
    data_old = encode_png(st, effort=1)
    assert hdr_new < len(header_text(st))
    v = st.quantised().values
    a, b = sc.decode_skeleton(new, v), sc.decode_skeleton(old, v)
    assert a.to_dict() == b.to_dict()
    ra, rb = decode_png(data_new), decode_png(data_old)
    assert np.array_equal(ra.values, rb.values) and ra.skeleton.to_dict() == rb.skeleton.to_dict()
    assert sc._bvh_items(new["bvhs"], "x") == old["bvh"]


def test_a_name_with_a_space_keeps_the_list():
    items = [["Hips", -1, [0, 0, 0], "XYZzyx"], ["left arm", 0, [1.5, 0, 0], "zyx", [0, -2.25, 0]]]
    assert sc._bvh_text(items) is None
    items[1][0] = "left;arm"
    assert sc._bvh_text(items) is None
    items[1][0] = "leftarm"
    assert sc._bvh_items(sc._bvh_text(items), "x") == items
    items[1][3] = ""                                                 # a joint without channels
    assert sc._bvh_text(items) == "Hips 0 XYZzyx 0 0 0;leftarm 1 . 1.5 0 0 0 -2.25 0"
    assert sc._bvh_items(sc._bvh_text(items), "x") == items


@pytest.mark.parametrize("text,message", [
    ("", "non-empty string"),
    ("Hips x XYZ 0 0 0", "bvhs joint 0 is not"),
    ("Hips 0 XYZ 0 0", "bvhs joint 0 is not"),
    ("Hips 0 XYZ 0 0 0 1", "bvhs joint 0 is not"),
    ("Hips 1 XYZ 0 0 0", "bvhs joint 0 is not"),
    ("Hips 0 XYZ 0 0 0;Chest 0 zyx 0 1 0", "bvhs joint 1 is not"),
    ("Hips 0 XYZ 0 0 0;Chest 5 zyx 0 1 0", "bvh[1] is not"),
    ("Hips 0 XYZ nan 0 0", "bvh[0] is not"),
    ("Hips 0 XYq 0 0 0", "channel 'q'"),
])
def test_bad_bvhs_is_one_format_error(text, message):
    with pytest.raises(FormatError, match=re.escape(message)):
        sc.decode_skeleton({"bvhs": text, "units": "cm"}, None, where="f.png: header: skeleton")


def test_a_known_rig_names_its_joints_from_the_table_and_plain_names_still_read(monkeypatch):
    """CMU's 131 rig is in host/jointnames.py: "bvhn" holds "# # #33 # ..." instead of the names,
    the same skeleton decodes, the header is smaller; "bvhs" (files written before) reads as it did."""
    st = read_bvh(CLIP).refit("budget", max_error_mm=0.5, bits=16, bound="measured")
    table = sc.encode_skeleton(st.skeleton)
    assert set(table) == {"bvhn", "units", "name"}
    names = [part.split(" ")[0] for part in table["bvhn"].split(";")]
    assert names[:3] == ["#", "#", "#33"] and names[3:] == ["#"] * (len(names) - 3)
    data_table, hdr_table = encode_png(st, effort=1), len(header_text(st))
    monkeypatch.setattr(sc, "encode_names", lambda names: None)
    plain = sc.encode_skeleton(st.skeleton)
    data_plain = encode_png(st, effort=1)
    assert "bvhs" in plain and hdr_table < len(header_text(st)) - 100
    v = st.quantised().values
    assert sc.decode_skeleton(table, v).to_dict() == sc.decode_skeleton(plain, v).to_dict()
    a, b = decode_png(data_table), decode_png(data_plain)
    assert np.array_equal(a.values, b.values) and a.skeleton.to_dict() == b.skeleton.to_dict()


def test_joint_name_tokens():
    from host.jointnames import JOINT_NAMES, decode_names, encode_names

    names = ["Hips", "LHipJoint", "LeftHip", "Knee", "RightKnee", "RightAnkle", "hip"]
    tokens = encode_names(names)
    # Hips: entry 0 (the one after none), followed by LHipJoint; LeftHip after LHipJoint only at 33 (the 131 rig)
    assert tokens == ["#", "#", "#33", "Knee", "#39", "#", "#62"]
    assert decode_names(tokens) == names
    assert JOINT_NAMES[33] == "LeftHip" and JOINT_NAMES[62] == "hip"
    assert encode_names(["#1", "Hips"]) is None                     # a rig's own "#" name: plain names
    for bad in ("#%d" % len(JOINT_NAMES), "#x", "#-1", "#\u0661"):
        with pytest.raises(FormatError, match="not in the table"):
            decode_names(["Hips", bad], where="f.png: header: skeleton")
    with pytest.raises(FormatError, match="not in the table"):
        decode_names(["#%d" % (len(JOINT_NAMES) - 1), "#"])         # "#" past the table's end
