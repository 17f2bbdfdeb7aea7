"""host/budget.py and the compact header: error budgets hold by forward kinematics, small headers, bad input."""

import json
import pathlib
import struct
import zlib

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from device.body.human import human_model
from device.body.kinematics import forward_kinematics
from host.budget import bound_mm, budget_ranges, min_budget_mm
from host.bvh import read_bvh
from host.staff import Row, Staff
from host.stafffile import decode_png, encode_png
from protocol import staffheader
from protocol.errors import FormatError

CLIP = pathlib.Path(__file__).resolve().parent.parent / "host" / "data" / "131_03_short.bvh"
GOLDEN_V1 = pathlib.Path(__file__).resolve().parent / "golden" / "staff_v1_131_03_short.png"


def _human_staff(seed=0, frames=60):
    sk = human_model()
    rng = np.random.default_rng(seed)
    span = (sk.hi - sk.lo)[:, None]
    v = sk.home[:, None] + 0.15 * span * np.sin(np.cumsum(rng.normal(0, 0.1, (sk.ndof, frames)), axis=1))
    v = np.clip(v, sk.lo[:, None], sk.hi[:, None])
    v[5] = 12.5                                            # a row that never moves
    v[7] = 3.0 + 1e-4 * rng.normal(size=frames)            # a row that barely moves
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs]
    return Staff(v, rows, fps=30.0, bits=8, skeleton=sk, meta={"source": "t"})


def _points(sk, q):
    """(frames, links, 4, 3): every link's joint and its 3 cm points along x, y, z."""
    pose = forward_kinematics(sk, q.T)
    p = pose.link_pos_m[:, :, None, :]
    v = pose.link_pos_m[:, :, None, :] + 0.03 * np.moveaxis(pose.link_rot, -1, -2)
    return np.concatenate([p, v], axis=2)


def _fk_error_mm(sk, a, b):
    return np.linalg.norm(_points(sk, a) - _points(sk, b), axis=-1).max(axis=(0, 2)) * 1000.0


@settings(max_examples=12, deadline=None)
@given(st.floats(0.5, 80.0), st.integers(0, 3))
def test_budget_holds_by_forward_kinematics(e_mm, seed):
    staff = _human_staff(seed)
    try:
        b = staff.refit("budget", max_error_mm=e_mm)
    except FormatError:
        assert min_budget_mm(staff, 16) > e_mm * (1 - 1e-6)
        return
    back = decode_png(encode_png(b, effort=0))
    # every value within its stated bound (half a step), exactly
    err = np.abs(back.values - staff.values).max(axis=1)
    assert (err <= back.max_error() * (1 + 1e-9) + 1e-12).all()
    # the chain bound of the stated steps meets the budget, and FK on the decoded file is within it
    bound = bound_mm(back)
    assert bound.max() <= e_mm
    fk = _fk_error_mm(staff.skeleton, staff.values, back.values)
    assert (fk <= bound * (1 + 1e-6) + 1e-9).all()
    assert back.meta["max_error_mm"] == pytest.approx(e_mm)


def test_rows_that_do_not_move_are_constants():
    staff = _human_staff()
    b = staff.refit("budget", max_error_mm=5.0)
    codes = b.codes()[0]
    assert (codes[5] == codes[5, 0]).all() and (codes[7] == codes[7, 0]).all()
    assert b.max_error()[5] <= 5e-4                     # a step far below its share (<= 0.001)
    assert (b.quantised().values[5] == 12.5).all()      # 12.5 is on the grid: the value itself
    assert b.max_error()[7] < 1e-3                      # a narrow code, not stretched to full contrast


def test_bvh_budget_and_16_bit_fallback():
    staff = read_bvh(CLIP)
    lo, hi, bits = budget_ranges(staff, min_budget_mm(staff, 8) * 1.2)
    assert bits == 8
    tight = min_budget_mm(staff, 8) / 2
    b = staff.refit("budget", max_error_mm=tight)
    assert b.bits == 16 and bound_mm(b).max() <= tight
    with pytest.raises(FormatError, match="cannot be met at 8 bits"):
        staff.refit("budget", max_error_mm=tight, bits=8)
    with pytest.raises(FormatError, match="cannot be met at 16 bits"):
        staff.refit("budget", max_error_mm=min_budget_mm(staff, 16) / 2)


def test_budget_needs_bone_lengths():
    rows = [Row("r0", "deg", 0.0, 1.0, True)]
    with pytest.raises(FormatError, match="no skeleton"):
        Staff(np.zeros((1, 5)), rows).refit("budget", max_error_mm=1.0)
    sk = human_model()
    for ln in sk.links:
        ln.offset[:] = 0.0
    st0 = _human_staff()
    v = st0.values.copy()
    v[[d.kind == "translation" for d in sk.dofs]] = 0.0
    flat = Staff(v, st0.rows, skeleton=sk)
    with pytest.raises(FormatError, match="no bone lengths"):
        flat.refit("budget", max_error_mm=1.0)


def _zTXt(png):
    i = png.index(b"zTXt")
    n = struct.unpack(">I", png[i - 4:i])[0]
    body = png[i + 4:i + 4 + n]
    return n + 12, json.loads(zlib.decompress(body[body.index(b"\0") + 2:]))


def test_builtin_body_header_is_small_and_exact():
    staff = _human_staff()
    png = encode_png(staff, effort=2)
    size, h = _zTXt(png)
    assert size <= 300
    assert h["sk"]["body"] == "human48" and h["rows"] == 48 and h["ranges"] == "sk"
    back = decode_png(png)
    assert back.names == staff.names and np.array_equal(back.lo, staff.lo) and np.array_equal(back.hi, staff.hi)
    assert back.skeleton.to_dict() == staff.skeleton.to_dict()
    assert np.array_equal(back.codes()[0], staff.codes()[0])


def test_unknown_body_hash_is_one_line():
    png = encode_png(_human_staff(), effort=0)
    _, h = _zTXt(png)
    h["sk"]["sha"] = "00000000"
    from tests.test_staff_file import _with_header

    with pytest.raises(FormatError, match="bad.png: header: skeleton: body 'human48' with hash 00000000 "
                                          "matches no known body"):
        decode_png(_with_header(png, json.dumps(h)), "bad.png")
    h["sk"]["body"] = "robot9000"
    with pytest.raises(FormatError, match="body 'robot9000'.*not one this reader knows"):
        decode_png(_with_header(png, json.dumps(h)), "bad.png")


def test_bvh_header_round_trip_is_exact():
    staff = read_bvh(CLIP)
    for s2 in (staff, staff.refit("budget", max_error_mm=min_budget_mm(staff, 8) * 1.5, bits=8)):
        png = encode_png(s2, effort=0)
        back = decode_png(png)
        assert back.names == s2.names and [r.unit for r in back.rows] == [r.unit for r in s2.rows]
        assert np.array_equal(back.lo, s2.lo) and np.array_equal(back.hi, s2.hi)
        assert np.array_equal(back.values, s2.quantised().values)
        assert back.skeleton.link_names == s2.skeleton.link_names
        off = np.array([ln.offset for ln in back.skeleton.links])
        assert np.allclose(off, [ln.offset for ln in s2.skeleton.links], atol=1e-6)


def test_old_version_1_file_still_reads():
    back = decode_png(GOLDEN_V1.read_bytes(), "old.png")
    staff = read_bvh(CLIP)
    assert back.names == staff.names and back.frames == staff.frames
    assert (np.abs(back.values - staff.values).max(axis=1) <= back.max_error() * (1 + 1e-9) + 1e-9).all()
    assert back.skeleton.link_names == staff.skeleton.link_names


def test_compact_header_bad_fields():
    h = staffheader.make([{"name": "a", "lo": 0.0, "hi": 1.0}, {"name": "b", "lo": 0.0, "hi": 2.0}], bits=8)
    c = staffheader.pack(h)
    assert staffheader.unpack(json.loads(staffheader.dumps_compact(c)))["rows"] == h["rows"]
    for change, msg in ((lambda c: c.update(lo=[0.0]), "'lo' has 1 values for 2 rows"),
                        (lambda c: c.update(rows=2), "named by the skeleton"),
                        (lambda c: c.update(rows=[1, 2]), "names"),
                        (lambda c: c.update(version=4), "unknown version 4"),
                        (lambda c: c.update(e=-1), "max_error_mm")):
            bad = dict(c)
            change(bad)
            with pytest.raises(FormatError, match=msg):
                staffheader.unpack(bad)


def test_scaled_body_with_own_markers_is_a_reference():
    from device.body.skeleton import Feature, Skeleton
    from host.skeletoncode import decode_skeleton, encode_skeleton

    sk = human_model(height_m=1.4231234567, floating=True)
    feats = sk.features[:10] + [Feature("LASI", sk.link_index("pelvis"), "marker", (0.1, 0.12, 0.01))]
    sk2 = Skeleton(sk.links, sk.dofs, feats, name=sk.name, gravity=sk.gravity, meta=sk.meta)
    code = encode_skeleton(sk2)
    assert code["body"] == "human54-floating" and code["height_m"] == 1.4231234567
    assert code["features"][:10] == [f.name for f in sk.features[:10]]
    back = decode_skeleton(json.loads(json.dumps(code)))
    assert back.to_dict()["links"] == sk2.to_dict()["links"]
    assert [f.name for f in back.features] == [f.name for f in feats]
    assert np.allclose([f.position for f in back.features], [f.position for f in feats], atol=1e-6)


def test_bvh_budget_holds_by_forward_kinematics():
    staff = read_bvh(CLIP)                       # root: 3 translations, then 3 rotations
    for e_mm in (min_budget_mm(staff, 16) * 3, min_budget_mm(staff, 8) * 1.5):
        back = decode_png(encode_png(staff.refit("budget", max_error_mm=e_mm), effort=0))
        bound = bound_mm(back)
        assert bound.max() <= e_mm
        fk = _fk_error_mm(staff.skeleton, staff.values, back.values)
        assert (fk <= bound * (1 + 1e-6) + 1e-9).all()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6), st.floats(0.05, 20.0), st.booleans())
@example(45503, 6.078125, False)            # review: the decoded-values bound was 6.082 mm here
def test_translation_after_a_rotation_is_a_lever(seed, e_mm, before):
    """A link that rotates then slides along its turned axis (or slides first): the bound holds."""
    from device.body.skeleton import Dof, Link, Skeleton

    links = [Link("base", -1, (0, 0, 0)), Link("arm", 0, (0.3, 0, 0)), Link("tip", 1, (0.2, 0.05, 0))]
    rot = [Dof("base.rz", 0, "rotation", (0, 0, 1), -180, 180), Dof("arm.ry", 1, "rotation", (0, 1, 0), -90, 90)]
    slide = Dof("base.tx", 0, "translation", (1, 0, 0), -2, 2)
    dofs = ([slide] + rot) if before else ([rot[0], slide, rot[1]])
    sk = Skeleton(links, dofs, name="slider")
    rng = np.random.default_rng(seed)
    frames = 40
    v = np.empty((3, frames))
    for k, d in enumerate(sk.dofs):
        walk = np.cumsum(rng.normal(0, 1, frames))
        v[k] = np.clip(walk * (0.05 if d.kind == "translation" else 8.0), d.lo, d.hi)
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs]
    staff = Staff(v, rows, fps=30.0, bits=8, skeleton=sk)
    try:
        b = staff.refit("budget", max_error_mm=e_mm)
    except FormatError:
        return
    q = b.quantised()
    # the bound over the data it was made from (the decoded slide may reach half a step further,
    # which that bound's lever already covers: recomputed on decoded values it can exceed E)
    bound = bound_mm(b)
    assert bound.max() <= e_mm
    fk = _fk_error_mm(sk, staff.values, q.values)
    assert (fk <= bound * (1 + 1e-6) + 1e-9).all() and fk.max() <= e_mm


@pytest.mark.parametrize("e_mm", [0.4, 3.0, 40.0])
def test_posed_arms_are_shorter_and_still_hold_by_forward_kinematics(e_mm):
    """The lever arms from the motion itself (distance from each axis over the frames) are at
    most the chain's, and the decoded BVH motion stays within the bound they give."""
    from host.budget import _tight_arms, lever_arms_mm

    full = read_bvh(CLIP)
    staff = Staff(full.values[:, :90], full.rows, full.fps, 8, full.skeleton, dict(full.meta))
    b = staff.refit("budget", max_error_mm=e_mm)
    back = decode_png(encode_png(b, effort=0))
    sk = back.skeleton
    a = lever_arms_mm(sk, back.names, back.values)
    t = _tight_arms(sk, back.names, back.values, a, back.max_error(), 30.0)
    assert (t <= a).all() and (t < 0.9 * a).any()
    bound = bound_mm(back)
    assert bound.max() <= e_mm and (bound <= a.T @ back.max_error() + 1e-12).all()
    fk = _fk_error_mm(sk, staff.values, back.values)
    assert (fk <= bound * (1 + 1e-6) + 1e-9).all()


def test_a_budget_only_the_posed_arms_meet_is_met():
    """Between the posed arms' 16-bit limit and the chain arms' one: met, within the bound."""
    full = read_bvh(CLIP)
    staff = Staff(full.values[:, ::5], full.rows, 24.0, 8, full.skeleton, dict(full.meta))
    posed, chain = min_budget_mm(staff, 16), min_budget_mm(staff, 16, posed=False)
    assert posed < chain
    e_mm = float("%.3g" % ((posed * 1.02 + chain) / 2.0)) if chain > posed * 1.05 else posed * 1.02
    b = staff.refit("budget", max_error_mm=e_mm)
    assert b.bits == 16 and bound_mm(b).max() <= e_mm
    with pytest.raises(FormatError, match="cannot be met at 16 bits"):
        staff.refit("budget", max_error_mm=posed * 0.9)
