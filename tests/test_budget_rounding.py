"""The measured budget's codes chosen jointly per frame (host/budget_rounding.py).

On a real clip: no frame's largest error grows (exact forward kinematics), the 99th percentile
of the point errors drops (measured on this 30 fps clip: 0.68 of rounding's at 0.1 mm, 0.85
at 0.5 mm, where the coarser steps leave smaller second differences and fewer codes move),
every code is within one of the rounded code and moves only where the residual hides it, the file stays
within 1% of the rounded one's size, and the staff convert writes reads back exactly with
every point within E of the clip.
"""

import pathlib

import numpy as np
import pytest

from host.budget_rounding import MIN_RESIDUAL_CODES, _movable, joint_codes
from host.bvh import read_bvh
from host.fkerror import point_errors_mm
from host.staff import Staff, decode, encode
from host.stafffile import decode_png, encode_png

CLIP = pathlib.Path(__file__).resolve().parent.parent / "host" / "data" / "131_03_short.bvh"


@pytest.fixture(scope="module")
def clip():
    return read_bvh(CLIP)


@pytest.mark.parametrize("e_mm, ratio", [(0.1, 0.75), (0.5, 0.9)])
def test_joint_codes_lower_the_errors_and_keep_every_frame_within_rounding(clip, e_mm, ratio):
    b = clip.refit("budget", max_error_mm=e_mm, bits=16, bound="measured")
    lo, hi = b.lo, b.hi
    rounded, _ = encode(clip.values, lo, hi, 16)
    codes = joint_codes(clip.skeleton, clip.values, lo, hi, 16)
    assert codes is not None and codes.dtype == np.uint16
    r = rounded.astype(np.int64)
    c = codes.astype(np.int64)
    assert np.abs(c - r).max() == 1
    # moved only where every second difference the code enters is large
    assert not ((c != r) & ~_movable(r)).any()
    e_round = point_errors_mm(clip.skeleton, clip.values, decode(rounded, lo, hi, 16))
    e_joint = point_errors_mm(clip.skeleton, clip.values, decode(codes, lo, hi, 16))
    assert (e_joint.max(axis=1) <= e_round.max(axis=1)).all()
    assert np.percentile(e_joint, 99) <= ratio * np.percentile(e_round, 99)


def test_a_frame_over_the_budget_keeps_its_rounded_codes(clip):
    b = clip.refit("budget", max_error_mm=0.5, bits=16, bound="measured")
    rounded, _ = encode(clip.values, b.lo, b.hi, 16)
    # a budget below what rounding makes everywhere: every frame over it, none moved
    e = point_errors_mm(clip.skeleton, clip.values, decode(rounded, b.lo, b.hi, 16)).max(axis=1)
    got = joint_codes(clip.skeleton, clip.values, b.lo, b.hi, 16, max_error_mm=float(e.min()) * 0.5)
    assert got is not None and np.array_equal(got, rounded)


def test_still_codes_stay(clip):
    # a row whose second differences are all below MIN_RESIDUAL_CODES never moves
    c = np.tile(np.arange(50) * 3, (2, 1))
    c[1] = (np.arange(50) ** 2) * MIN_RESIDUAL_CODES
    m = _movable(c)
    # row 1: second differences 0 (its code at frame 0), then MIN_RESIDUAL_CODES, then twice it
    assert not m[0].any() and m[1, 1:].all() and not m[1, 0]


def test_the_first_and_last_frames_move_where_the_residual_hides_it():
    # the row transform's residual at the first frames holds the code itself and a first
    # difference (large here), and the last frames' codes enter fewer second differences:
    # every frame may move
    c = np.tile(1000 + (np.arange(50) ** 2) * MIN_RESIDUAL_CODES, (1, 1))
    assert _movable(c).all()
    # a row standing still at first: its first difference is 0, frames 0 and 1 stay
    s = np.concatenate([[1000, 1000], 1000 + (np.arange(48) ** 2 + 5) * MIN_RESIDUAL_CODES])[None, :]
    m = _movable(s)
    assert not m[0, :2].any() and m[0, 2:].all()
    # a code of 0 at the start is a residual of 0 there: frame 0 stays
    c[0] -= 1000
    m = _movable(c)
    assert not m[0, 0] and m[0, 1:].all()


def test_measured_refit_holds_the_decoded_values_and_the_file_stays_as_small(clip):
    b = clip.refit("budget", max_error_mm=0.1, bits=16, bound="measured")
    png = encode_png(b, effort=0)
    back = decode_png(png)
    assert np.array_equal(back.values, b.values)
    assert point_errors_mm(clip.skeleton, clip.values, back.values).max() <= 0.1
    rounded = Staff(clip.values, b.rows, b.fps, 16, b.skeleton, dict(b.meta)).quantised()
    assert not np.array_equal(rounded.values, b.values)
    assert len(png) <= 1.01 * len(encode_png(rounded, effort=0))


def test_codes_aimed_at_a_threshold_put_fewer_points_over_it_and_keep_the_bound(clip):
    # ACL reports the 99th percentile against 0.01 cm: codes aimed at a threshold below the
    # budget put fewer points over it than codes lowering sum |E|^8, each frame still within
    # its rounding error and every point within the budget (exact forward kinematics)
    e_mm, aim_mm = 0.2, 0.1
    b = clip.refit("budget", max_error_mm=e_mm, bits=16, bound="measured")
    lo, hi = b.lo, b.hi
    rounded, _ = encode(clip.values, lo, hi, 16)
    plain = joint_codes(clip.skeleton, clip.values, lo, hi, 16, max_error_mm=e_mm)
    aimed = joint_codes(clip.skeleton, clip.values, lo, hi, 16, max_error_mm=e_mm, aim_mm=aim_mm)
    assert aimed is not None
    assert np.abs(aimed.astype(np.int64) - rounded.astype(np.int64)).max() == 1
    assert not ((aimed != rounded) & ~_movable(rounded.astype(np.int64))).any()
    e_round = point_errors_mm(clip.skeleton, clip.values, decode(rounded, lo, hi, 16))
    e_plain = point_errors_mm(clip.skeleton, clip.values, decode(plain, lo, hi, 16))
    e_aimed = point_errors_mm(clip.skeleton, clip.values, decode(aimed, lo, hi, 16))
    assert (e_aimed.max(axis=1) <= e_round.max(axis=1) + 1e-9).all()
    assert e_aimed.max() <= e_mm
    assert (e_aimed > aim_mm).sum() < (e_plain > aim_mm).sum()


def test_refit_passes_the_aim_and_the_file_reads_back_exactly(clip):
    b = clip.refit("budget", max_error_mm=0.2, bits=16, bound="measured", aim_mm=0.1)
    back = decode_png(encode_png(b, effort=0))
    assert np.array_equal(back.values, b.values)
    assert point_errors_mm(clip.skeleton, clip.values, back.values).max() <= 0.2
    assert back.meta["max_error_mm"] == 0.2
