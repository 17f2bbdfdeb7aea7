"""Cut, remove, splice, insert, concatenate with crossfades; retime; segment; mirror; clamp;
select/drop rows; the header stays right through the PNG file; `motionstaff edit` end to end."""

import numpy as np
import pytest

from device.body.human import human_model
from device.body.kinematics import forward_kinematics
from host.bvh import read_bvh
from host.cli import main
from host.edit import (apply_ops, clamp, concatenate, drop_rows, find_segments, insert, mirror,
                       remove, retime, select_rows, splice, split, trim)
from host.staff import Row, Staff
from host.stafffile import read_staff, write_staff
from protocol.errors import FormatError


@pytest.fixture(scope="module")
def walk(shared_data):
    return read_bvh(str(shared_data / "bvh" / "131_03.bvh"))          # 120 fps, 1102 frames


def human_staff(frames=240, fps=60.0, seed=3):
    sk = human_model()
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / fps
    mid = (sk.lo + sk.hi) / 2
    amp = (sk.hi - sk.lo) / 4
    v = mid[:, None] + amp[:, None] * np.sin(2 * np.pi * rng.uniform(0.2, 1.0, (sk.ndof, 1)) * t
                                           + rng.uniform(0, 6.28, (sk.ndof, 1)))
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs]
    return Staff(v, rows, fps=fps, skeleton=sk)


def max_step(v):
    return np.nanmax(np.abs(np.diff(v, axis=1)), axis=1)


def test_trim_exact_frames_and_times(walk):
    part = trim(walk, 1.0, 4.5)
    assert part.frames == 420 and part.fps == walk.fps
    np.testing.assert_array_equal(part.values, walk.values[:, 120:540])
    assert part.skeleton is walk.skeleton and part.rows == walk.rows
    with pytest.raises(FormatError, match="outside"):
        trim(walk, 1.0, 100.0)
    with pytest.raises(FormatError, match="after"):
        trim(walk, 3.0, 2.0)


def test_concatenate_crossfade_is_smooth(walk):
    a, b = trim(walk, 0.0, 3.0), trim(walk, 6.0, 9.0)
    hard = concatenate([a, b])
    assert hard.frames == a.frames + b.frames
    soft = concatenate([a, b], crossfade_s=0.25)
    n = 30
    assert soft.frames == a.frames + b.frames - n
    join = slice(a.frames - n - 2, a.frames + 2)
    rows = [i for i, r in enumerate(walk.rows) if r.unit == "deg"]
    jump_hard = max_step(hard.values[rows, a.frames - 2:a.frames + 2])
    jump_soft = max_step(soft.values[rows, join])
    inside = np.maximum(max_step(a.values[rows]), max_step(b.values[rows]))
    # the hard join jumps beyond anything in the clips on some row; the crossfade never does
    assert (jump_hard > inside * 1.01).any()
    # raised cosine: the blend adds at most (pi / 2) * gap / (n + 1) per frame to the clips' own steps
    gap = np.max(np.abs(a.values[rows, -n:] - b.values[rows, :n]), axis=1)
    assert (jump_soft <= inside + gap * np.pi / (2 * (n + 1)) + 1e-9).all()
    assert np.max(jump_soft / (inside + 1e-9)) < np.max(jump_hard / (inside + 1e-9))
    np.testing.assert_array_equal(soft.values[:, :a.frames - n], a.values[:, :-n])
    np.testing.assert_array_equal(soft.values[:, a.frames:], b.values[:, n:])


def test_remove_insert_splice_lengths(walk):
    n = walk.frames
    assert remove(walk, 1.0, 2.0).frames == n - 120
    assert remove(walk, 1.0, 2.0, crossfade_s=0.1).frames == n - 120 - 12
    piece = trim(walk, 5.0, 6.0)
    assert insert(walk, piece, 2.0).frames == n + 120
    assert insert(walk, piece, 2.0, crossfade_s=0.1).frames == n + 120 - 24
    sp = splice(walk, piece, 1.0, 3.0)
    assert sp.frames == n - 240 + 120
    np.testing.assert_array_equal(sp.values[:, 120:240], piece.values)
    other = select_rows(walk, ["Hips.*"])
    with pytest.raises(FormatError, match="no row"):
        insert(walk, other, 1.0)


def test_retime_speed_and_fps(walk):
    fast = retime(walk, speed=2.0)
    assert fast.fps == walk.fps and abs(fast.frames - walk.frames / 2) <= 1
    slow = retime(walk, speed=0.5)
    assert abs(slow.frames - 2 * walk.frames) <= 2
    s30 = retime(walk, fps=30.0)
    assert s30.fps == 30.0 and abs(s30.duration_s - walk.duration_s) <= 1 / 30.0
    s240 = retime(walk, fps=240.0)
    np.testing.assert_allclose(s240.values[:, ::2], walk.values[:, :s240.values[:, ::2].shape[1]], atol=1e-9)
    # a sine keeps its frequency in hertz when resampled
    t = np.arange(600) / 120.0
    st = Staff(np.sin(2 * np.pi * 2.0 * t)[None], [Row("a", "deg", -1, 1, True)], fps=120.0)
    r = retime(st, fps=50.0)
    t2 = np.arange(r.frames) / 50.0
    assert np.max(np.abs(r.values[0] - np.sin(2 * np.pi * 2.0 * t2))) < 0.05
    with pytest.raises(FormatError):
        retime(walk, speed=0)


def test_retime_keeps_missing_missing():
    v = np.arange(20, dtype=float)[None].copy()
    v[0, 10] = np.nan
    st = Staff(v, [Row("a", "deg", 0, 20, True)], fps=10.0)
    r = retime(st, fps=20.0)
    assert np.isnan(r.values[0, 19:22]).all() and np.isnan(r.values).sum() == 3


def test_segment_finds_still_periods(walk):
    a, b = trim(walk, 0.0, 3.0), trim(walk, 5.0, 8.0)
    hold = Staff(np.repeat(a.values[:, -1:], 240, axis=1), a.rows, a.fps, a.bits, a.skeleton)
    st = concatenate([a, hold, b])
    segs = find_segments(st)
    assert len(segs) == 2
    assert abs(segs[0][1] - a.frames) <= 24 and abs(segs[1][0] - (a.frames + 240)) <= 24
    parts = split(st, segs)
    assert [p.frames for p in parts] == [s[1] - s[0] for s in segs]
    assert find_segments(st, times_s=[1.0, 2.5]) == [(0, 120), (120, 300), (300, st.frames)]


def test_mirror_human_model_reflects_the_body():
    st = human_staff()
    m = mirror(st)
    np.testing.assert_allclose(mirror(m).values, st.values, atol=1e-12)
    sk = st.skeleton
    p0 = forward_kinematics(sk, st.values.T).link_pos_m
    p1 = forward_kinematics(sk, m.values.T).link_pos_m
    li, ri = sk.link_index("l_hand"), sk.link_index("r_hand")
    refl = p0[:, ri] * np.array([1.0, -1.0, 1.0])          # Y is the subject's left
    np.testing.assert_allclose(p1[:, li], refl, atol=1e-9)


def test_mirror_bvh_pairs_left_right(walk):
    m = mirror(walk)
    i, j = walk.row_index("LeftKnee.Xrotation"), walk.row_index("RightKnee.Xrotation")
    np.testing.assert_allclose(m.values[i], walk.values[j])
    k = walk.row_index("Hips.Xposition")
    np.testing.assert_allclose(m.values[k], -walk.values[k])
    assert (m.values >= m.lo[:, None] - 1e-9).all() and (m.values <= m.hi[:, None] + 1e-9).all()
    np.testing.assert_allclose(mirror(m).values, walk.values, atol=1e-12)


def test_clamp_reports_exact_counts():
    st = human_staff()
    v = st.values.copy()
    k = st.row_index("l_knee_flex")
    v[k, :7] = -20.0                       # below the knee's 0 limit
    over = Staff(v, st.rows, st.fps, st.bits, st.skeleton)
    out, report = clamp(over)
    assert report == {"l_knee_flex": 7}
    assert (out.values[k] >= 0.0).all()


def test_select_drop_keep_skeleton_in_step():
    st = human_staff()
    arms = select_rows(st, ["l_shoulder_*", "l_elbow_flex"])
    assert arms.names == ["l_shoulder_flex", "l_shoulder_abd", "l_shoulder_rot", "l_elbow_flex"]
    assert arms.skeleton.dof_names == arms.names
    rest = drop_rows(st, ["*_fingers_*", "*_thumb_*"])
    assert rest.nrows == st.nrows - 8 and rest.skeleton.dof_names == rest.names
    with pytest.raises(FormatError, match="no row matches"):
        select_rows(st, ["nope*"])


def test_header_right_through_png(tmp_path, walk):
    out, _ = apply_ops(walk, ["despike", "fill", "smooth:butter,cutoff=6", "cut:1.0-4.5", "retime:fps=60"])
    path = tmp_path / "e.png"
    write_staff(str(path), out)
    back = read_staff(str(path))
    assert back.frames == out.frames == 210 and back.fps == 60.0
    assert back.names == walk.names and [r.lo for r in back.rows] == [r.lo for r in walk.rows]
    assert back.skeleton is not None


def test_cli_edit_end_to_end(tmp_path, capsys, shared_data):
    src = str(shared_data / "bvh" / "131_03.bvh")
    dst = str(tmp_path / "out.png")
    rc = main(["edit", src, dst, "despike:hampel,window=7", "fill:cubic", "smooth:butter,cutoff=6",
               "cut:1.0-4.5", "mirror", "retime:fps=60", "clamp:range"])
    assert rc == 0 and read_staff(dst).frames == 210
    rc = main(["edit", src, str(tmp_path / "seg.png"), "segment:1,2"])
    assert rc == 0 and (tmp_path / "seg_03.png").exists()
    for bad, word in ((["bogus"], "unknown operation"), (["smooth:butter,cutoff=100"], "cutoff"),
                      (["cut:1-400"], "outside"), (["despike:window=x"], "number"),
                      (["segment", "mirror"], "last")):
        capsys.readouterr()
        assert main(["edit", src, dst] + bad) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and word in err and "Traceback" not in err
