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
