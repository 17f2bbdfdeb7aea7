"""Gesture recognition: SPRING core, library file, recogniser on real clips, commands."""

import json
import os
import sys

import numpy as np
import pytest

from device.gestures.library import Gesture, library_from_dict, load_library, save_library
from device.gestures.recognizer import Recognizer
from device.gestures.spring import Spring
from protocol.errors import FormatError

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bvh")
need_data = pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")
KICK = os.path.join(DATA, "dataset-1_kick_normal_001.bvh")


def test_spring_finds_a_time_warped_template_and_rejects_noise():
    rng = np.random.default_rng(3)
    tpl = np.stack([np.sin(np.linspace(0, np.pi, 20)), np.linspace(0, 1, 20)], axis=1)
    slow = np.stack([np.sin(np.linspace(0, np.pi, 31)), np.linspace(0, 1, 31)], axis=1)   # 1.5x slower
    stream = np.concatenate([rng.normal(0, 0.05, (40, 2)), slow, rng.normal(0, 0.05, (40, 2))])
    sp = Spring(tpl, 0.5, threshold=0.3, hold_frames=2)
    hits = [h for h in (sp.step(x) for x in stream) if h is not None]
    assert len(hits) == 1
    dist, start, end, now = hits[0]
    assert 38 <= start <= 43 and 68 <= end <= 71 and now - end <= 2
    sp = Spring(tpl, 0.5, threshold=0.3)      # default: reported when it stops improving
    (h1,) = [h for h in (sp.step(x) for x in stream) if h is not None]
    assert h1[1:3] == (start, end) and h1[3] - h1[2] <= 1
    assert dist < 0.15
    sp.reset()
    assert all(sp.step(x) is None for x in rng.normal(0, 0.3, (200, 2)))
    with pytest.raises(ValueError):
        Spring(tpl[:1], 0.5, 0.3)
    with pytest.raises(ValueError):
        Spring(tpl, 0.0, 0.3)


def _gesture(**kw):
    d = dict(name="g", rows=["a", "b"], scales=[1.0, 1.0], templates=[np.zeros((3, 2))], threshold=0.5)
    d.update(kw)
    return Gesture(**d)


def test_library_round_trip_and_bad_documents(tmp_path):
    g = _gesture(command="osc:/x 1", space="rows", templates=[np.arange(6.0).reshape(3, 2)])
    p = str(tmp_path / "lib.json")
    save_library(p, [g])
    (h,) = load_library(p)
    assert (h.name, h.rows, h.command, h.space, h.threshold) == ("g", ["a", "b"], "osc:/x 1", "rows", 0.5)
    np.testing.assert_array_equal(h.templates[0], g.templates[0])
    assert load_library(str(tmp_path / "none.json"), missing_ok=True) == []
    doc = json.load(open(p))
    bad = [({"format": "x"}, "not a gesture library"), (dict(doc, version=9), "version"),
           (dict(doc, gestures=[{"name": "g"}]), "missing field"),
           (dict(doc, gestures=doc["gestures"] * 2), "repeat")]
    for d, msg in bad:
        with pytest.raises(FormatError, match=msg):
            library_from_dict(d)
    for kw, msg in [(dict(threshold=0), "threshold"), (dict(scales=[1.0]), "scales"),
                    (dict(templates=[np.full((3, 2), np.nan)]), "finite"), (dict(space="x"), "space"),
                    (dict(templates=[np.zeros((1, 2))]), "at least 2 frames")]:
        with pytest.raises(FormatError, match=msg):
            _gesture(**kw)
    (tmp_path / "junk.json").write_bytes(b"\xff\x00")
    with pytest.raises(FormatError, match="not JSON"):
        load_library(str(tmp_path / "junk.json"))


def test_rows_space_gesture_on_a_staff_without_skeleton():
    rng = np.random.default_rng(5)
    from host.gestures.learn import learn_gesture
    bump = np.stack([30 * np.sin(np.linspace(0, np.pi, 15)), np.zeros(15)], axis=1)
    ex = [bump + rng.normal(0, 1, bump.shape) for _ in range(3)]
    g = learn_gesture("bump", ex, rows=["knee"], names=["knee", "hip"], scales=[30.0, 30.0], space="rows")
    assert g.rows == ["knee"] and len(g.templates) == 3 * 5          # x1/2 .. x2 copies of each
    assert sorted(set(g.amplitudes)) == pytest.approx([0.5, 2 ** -0.5, 1.0, 2 ** 0.5, 2.0])
    rec = Recognizer([g], row_names=["hip", "knee"], fps=30.0)
    flat = rng.normal(0, 1, (60, 2))
    stream = np.concatenate([flat, bump[:, ::-1], flat])
    ms = rec.run(stream)
    assert [m.name for m in ms] == ["bump"]
    assert 58 <= ms[0].frame_start <= 62 and 72 <= ms[0].frame_end <= 75
    assert ms[0].frame_decided - 74 <= 3 and 0.5 <= ms[0].confidence <= 1.0
    with pytest.raises(FormatError, match="no rows"):
        Recognizer([g], row_names=["hip"], fps=30.0)
    with pytest.raises(FormatError, match="skeleton"):
        Recognizer([_gesture(rows=["l_knee_deg", "r_knee_deg"])], fps=30.0)


@need_data
def test_kick_leave_one_out_on_the_real_clip_live_path():
    """Templates from kicks 2 and 3; the live path (FK + features per frame) finds kick 1."""
    from host.bvh import read_bvh
    from host.gestures.evaluate import LABELS
    from host.gestures.learn import motion_features, learn_gesture
    st = read_bvh(KICK)
    f = motion_features(st)
    (_, a1, b1), k2, k3 = LABELS["kick"]
    neg = [(motion_features(read_bvh(os.path.join(DATA, "dataset-1_walk_normal_001.bvh"))), None)]
    g = learn_gesture("kick", [f[k2[1]:k2[2] + 1], f[k3[1]:k3[2] + 1]], neg)
    rec = Recognizer([g], skeleton=st.skeleton, row_names=st.names, fps=st.fps)
    ms = []
    for i in range(st.frames):                     # one column at a time, like the capture loop
        ms += rec(i, i / st.fps, st.values[:, i], None)
    spans = [(x, y) for _, x, y in LABELS["kick"]]
    assert len(ms) == 3
    for m, (x, y) in zip(ms, spans):
        assert m.frame_start <= y and x <= m.frame_end
        assert m.frame_decided - y <= 3             # within 100 ms of the kick's end at 30 fps
        assert m.frame_decided - m.frame_end <= 1   # as soon as the match stops improving
    held_out = ms[0]
    assert 0.5 <= held_out.confidence < 1.0 and held_out.distance > 0
    for name in ("dataset-1_run_normal_001.bvh", "dataset-2_run_normal_001.bvh", "131_01.bvh", "05_20-mb.bvh"):
        other = read_bvh(os.path.join(DATA, name))
        r = Recognizer([g], skeleton=other.skeleton, row_names=other.names, fps=other.fps)
        assert r.run(other.values.T) == [], name


@need_data
def test_benchmark_protocol_numbers():
    """The benchmark's main table (templates never include the tested instance). The two
    hop folds tested on the 05_20 jete (one take in two skeletons) must agree: both found,
    by the hop's x2 copy, which may no longer match anything twice as fast as well (a run's
    stride was its nearest negative: spring.tempo_bounds)."""
    from host.gestures.evaluate import LABELS, evaluate, load_clips
    clips = load_clips(DATA)
    rows, s = evaluate(clips)
    assert (s["kick"]["tp"], s["kick"]["fn"], s["kick"]["fp"]) == (3, 0, 0)
    assert (s["walk_start"]["tp"], s["walk_start"]["fn"], s["walk_start"]["fp"]) == (2, 0, 0)
    assert (s["hop"]["tp"], s["hop"]["fn"], s["hop"]["fp"]) == (4, 0, 0)
    assert s["all"]["precision"] == 1.0
    assert s["all"]["recall"] == 1.0
    for r in rows:
        assert r["test"] not in r["train"] and r["test"] in LABELS[r["gesture"]]
        assert not any(t[0][:5] == r["test"][0][:5] == "05_20" for t in r["train"])
    jete = [r["tp"] for r in rows if r["test"][0].startswith("05_20")]
    assert jete == [jete[0]] * 2
    # latency in frames at 30 fps: every decision at most 3 frames (100 ms) after the labelled
    # end, and at most 1 frame after the matched stretch's end
    for r in rows:
        if r["tp"]:
            assert round(r["latency_ms"] * 30 / 1000) <= 3, r
            assert round(r["after_match_ms"] * 30 / 1000) <= 1, r
    _, s1 = evaluate(clips, amplitudes=(1.0,))   # without amplitude-scaled templates
    assert (s1["hop"]["tp"], s1["all"]["fp"]) == (2, 0)


@need_data
def test_labels_follow_their_measured_definitions():
    """walk_start ends where the first stride lands; every hop label holds a flight of the
    lower ankle above 0.3 leg and no other stretch of the clips does; standing still before
    each walk start."""
    from host.gestures.evaluate import LABELS, definition_evidence, stride_landing
    ev = definition_evidence(DATA)
    for c, a, b in LABELS["walk_start"]:
        assert stride_landing(ev[c], a)[0] == b, c
        assert ev[c]["speed"][max(0, a - 9):a].max() < 0.3, c
    flights = [(c, f) for c, d in ev.items() for f in d["flights"] if f[2] > 0.3]
    assert len(flights) == len(LABELS["hop"])
    for c, (i, j, _) in flights:
        assert any(cc == c and a <= i and j <= b for cc, a, b in LABELS["hop"]), (c, i, j)


@need_data
def test_leave_one_take_out_numbers():
    """Every clip scored whole by gestures learned without its take: no false positives."""
    from host.gestures.evaluate import evaluate_takes, load_clips
    rows, s = evaluate_takes(load_clips(DATA))
    assert [(s[g]["tp"], s[g]["fn"]) for g in ("kick", "walk_start", "hop")] == [(3, 0), (2, 0), (3, 0)]
    assert s["all"]["latency_max_ms"] <= 100.0 + 1e-6
    assert s["all"]["fp"] == 0
    assert {r["take"] for r in rows} >= {"05_20", "131_01.bvh", "dataset-1_dance-short_normal_001.bvh"}
    # the two files of the 05_20 take never train a fold that tests the other
    for r in rows:
        if r["take"] == "05_20":
            assert not any(t[0].startswith("05_20") for t in r["train"])


def test_amplitude_copies_have_own_thresholds_and_round_trip(tmp_path):
    """A bump twice as high as the examples is found thanks to the x2 copy (own threshold),
    not without it; thresholds and amplitudes survive the library file."""
    from host.gestures.learn import learn_gesture
    rng = np.random.default_rng(11)
    bump = np.stack([30 * np.sin(np.linspace(0, np.pi, 15)), np.zeros(15)], axis=1)
    ex = [bump + rng.normal(0, 1, bump.shape) for _ in range(2)]
    wobble = np.stack([8 * np.sin(np.linspace(0, 12 * np.pi, 300)), np.zeros(300)], axis=1)
    neg = [(wobble + rng.normal(0, 1, wobble.shape), None)]
    kw = dict(rows=["knee"], names=["knee", "hip"], scales=[30.0, 30.0], space="rows")
    g = learn_gesture("bump", ex, neg, **kw)
    g1 = learn_gesture("bump", ex, neg, amplitudes=(1.0,), **kw)
    assert len(set(g.thresholds)) > 1 and len(g1.templates) == 2
    flat = rng.normal(0, 1, (60, 2))
    big = np.concatenate([flat, 2 * bump + rng.normal(0, 1, bump.shape), flat])
    ms = Recognizer([g], row_names=["knee", "hip"], fps=30.0).run(big)
    assert [m.name for m in ms] == ["bump"] and 58 <= ms[0].frame_start <= 64
    assert ms[0].threshold in g.thresholds and ms[0].distance <= ms[0].threshold
    assert Recognizer([g1], row_names=["knee", "hip"], fps=30.0).run(big) == []
    assert Recognizer([g], row_names=["knee", "hip"], fps=30.0).run(neg[0][0]) == []
    p = str(tmp_path / "lib.json")
    save_library(p, [g])
    (h,) = load_library(p)
    assert h.thresholds == pytest.approx(g.thresholds, abs=1e-6)
    assert h.amplitudes == pytest.approx(g.amplitudes, abs=1e-4)
    with pytest.raises(FormatError, match="threshold"):
        _gesture(thresholds=[0.0])


def test_size_and_tempo_together_change_velocities_by_at_most_two():
    """tempo_bounds: an x2 copy accepts the same tempo or slower, an x1/2 copy the same or
    faster, an unscaled one 1/2..2; and the recogniser applies it: a bump twice as high at the
    examples' tempo is found, twice as high and twice as fast (velocities x4) is not."""
    from device.gestures.spring import tempo_bounds
    from host.gestures.learn import learn_gesture
    assert tempo_bounds(1.0) == (0.5, 2.0)
    assert tempo_bounds(2.0) == (1.0, 2.0) and tempo_bounds(0.5) == (0.5, 1.0)
    assert tempo_bounds(2 ** 0.5) == pytest.approx((2 ** -0.5, 2.0))
    rng = np.random.default_rng(12)
    t = np.linspace(0, np.pi, 24)
    ex = [np.stack([30 * np.sin(t) + rng.normal(0, 1, 24), np.zeros(24)], axis=1) for _ in range(2)]
    wobble = np.stack([8 * np.sin(np.linspace(0, 12 * np.pi, 300)), np.zeros(300)], axis=1)
    g = learn_gesture("bump", ex, [(wobble + rng.normal(0, 1, wobble.shape), None)], rows=["knee"],
                      names=["knee", "hip"], scales=[30.0, 30.0], space="rows")

    def run(n):              # humps of n frames, 60 high, back to back (no idle frames to absorb)
        x = 60 * np.abs(np.sin(np.linspace(0, 6 * np.pi, 6 * n, endpoint=False)))
        x = np.stack([x + rng.normal(0, 1, len(x)), np.zeros(len(x))], axis=1)
        return Recognizer([g], row_names=["knee", "hip"], fps=30.0).run(x)

    assert len(run(24)) >= 4                                 # twice as high, same tempo
    assert run(12) == []                                     # twice as high, twice as fast


def test_actions_osc_serial_exec(tmp_path, osc_receiver):
    from device.gestures.recognizer import Match
    from host.gestures.actions import Actions, parse_command
    rx = osc_receiver
    act = Actions(osc_target=("127.0.0.1", rx.port))
    out = tmp_path / "ran.txt"
    code = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"
    m = Match("kick", "osc:/tv/power 1 2.5 on", 0.8, 0.1, 0.5, 0, 10, 12, 0.0, 0.33, 0.4)
    act.perform(m)
    assert rx.wait_for(lambda: rx.messages, timeout=10)
    assert rx.messages == [("/tv/power", (1, 2.5, "on"))]
    act.perform(m._replace(command="serial:loop:// POWER {name}"))
    assert act.serial_port("loop://").read(16) == b"POWER kick\n"
    act.perform(m._replace(command="exec:%s -c \"%s\" %s {name}:{confidence}" % (sys.executable, code, out)))
    act.close()
    assert out.read_text() == "kick:0.800"
    assert parse_command("osc://10.1.2.3:7000/a/b x") == ("osc", (("10.1.2.3", 7000), "/a/b", ["x"]))
    for bad in ("osc:noslash", "osc://h:x/a", "serial:", "exec:", "shell:", "sh:rm"):
        with pytest.raises(FormatError):
            parse_command(bad)


@need_data
def test_cli_learn_list_run(tmp_path, capsys):
    from host.cli import main
    lib = str(tmp_path / "g.json")
    assert main(["gestures", "learn", "kick", KICK + "@6.0:6.87", KICK + "@10.43:11.3",
                 "--command", "osc:/tv/power 1", "--library", lib]) == 0
    assert main(["gestures", "list", "--library", lib]) == 0
    capsys.readouterr()
    assert main(["gestures", "run", os.path.join(DATA, "dataset-1_walk_normal_001.bvh"), "--library", lib,
                 "--json", "--dry-run"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["gestures", "run", KICK + "", "--library", lib, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.count("kick ") == 3 and "3 match(es)" in out
    assert main(["gestures", "run", "--library", lib]) == 2
    assert main(["gestures", "learn", "x", str(tmp_path / "none.bvh"), "--library", lib]) == 2
    assert main(["gestures", "learn", "x", KICK + "@3:2", "--library", lib]) == 2
    assert "after its start" in capsys.readouterr().err
    assert main(["gestures", "learn", "kick", KICK + "@6.0:6.87", "--amplitudes", "1,x", "--library", lib]) == 2
    assert "--amplitudes" in capsys.readouterr().err
    assert main(["gestures", "learn", "kick1", KICK + "@6.0:6.87", KICK + "@10.43:11.3", "--amplitudes", "1",
                 "--library", lib]) == 0
    assert "as 2 templates" in capsys.readouterr().out


@need_data
def test_cli_run_from_capture_on_the_simulated_unit(tmp_path, capsys):
    """The simulated capture unit replays CMU 131_01 (seeded); its live estimate (IMU
    orientations -> joint angles, root position missing) goes through the recogniser."""
    from host.cli import main
    lib = str(tmp_path / "w.json")
    rows = "l_hip_flex_deg,r_hip_flex_deg,l_knee_deg,r_knee_deg,l_foot_h_leg,r_foot_h_leg"
    assert main(["gestures", "learn", "walk_start", os.path.join(DATA, "131_01.bvh") + "@0.6:1.87",
                 "--rows", rows, "--library", lib]) == 0
    capsys.readouterr()
    assert main(["gestures", "run", "--from-capture", "--seconds", "5", "--library", lib, "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [m["name"] for m in lines] == ["walk_start"]
    m = lines[0]
    # calibration (1 s standing) and the blend into the clip (0.5 s) come first
    assert 1.5 < m["t_start_s"] < m["t_end_s"] < m["t_decided_s"] <= m["t_end_s"] + 2 / 30 + 1e-9
    assert m["confidence"] > 0.5


@need_data
def test_two_gestures_in_one_library_keep_apart():
    from host.bvh import read_bvh
    from host.gestures.evaluate import LABELS, LEGS
    from host.gestures.learn import motion_features, learn_gesture
    kick_f = motion_features(read_bvh(KICK))
    walk_f = motion_features(read_bvh(os.path.join(DATA, "131_01.bvh")))
    _, k2, k3 = LABELS["kick"]
    w1 = LABELS["walk_start"][0]
    lib = [learn_gesture("kick", [kick_f[k2[1]:k2[2] + 1], kick_f[k3[1]:k3[2] + 1]]),
           learn_gesture("walk_start", [walk_f[w1[1]:w1[2] + 1]], rows=LEGS)]
    for clip, expect in ((KICK, ["kick"] * 3), (os.path.join(DATA, "131_03.bvh"), ["walk_start"] * 2)):
        st = read_bvh(clip)
        ms = Recognizer(lib, skeleton=st.skeleton, fps=st.fps).run(st.values.T)
        assert [m.name for m in ms] == expect, clip
    st = read_bvh(os.path.join(DATA, "131_03.bvh"))
    ms = Recognizer(lib, skeleton=st.skeleton, fps=st.fps).run(st.values.T)
    starts = [m.t_start_s for m in ms]
    assert starts[0] < 2.0 < 7.0 < starts[1]        # the start, and the walk-off after the hop


def test_capture_gaps_break_matches_and_keep_frame_numbers():
    from host.gestures.learn import learn_gesture
    bump = np.stack([30 * np.sin(np.linspace(0, np.pi, 15)), np.zeros(15)], axis=1)
    g = learn_gesture("bump", [bump], names=["knee", "hip"], scales=[30.0, 30.0], space="rows")
    stream = np.concatenate([np.zeros((30, 2)), bump, np.zeros((30, 2))])
    rec = Recognizer([g], row_names=["knee", "hip"], fps=30.0)
    ms = []
    for k in range(len(stream)):
        if 36 <= k <= 38:
            continue                          # the loop skipped these frames (missing)
        ms += rec(k, k / 30.0, list(stream[k]), None)
    assert ms == [] and rec.frame == len(stream) - 1
    rec.reset()
    ms = [m for k in range(len(stream)) for m in rec(k + 100, (k + 100) / 30.0, list(stream[k]), None)]
    assert len(ms) == 1 and 129 <= ms[0].frame_start and ms[0].frame_end <= 145


@need_data
def test_motion_that_matches_nothing_is_rejected_live():
    """A library of the three real gestures, run on the built-in body through the live path
    (FK + features per frame): standing with sensor-like jitter, and smooth random motion of
    every joint inside its limits, both seeded; nothing may match."""
    from device.body.human import human_model
    from host.bvh import read_bvh
    from host.gestures.evaluate import LABELS, ROWS
    from host.gestures.learn import learn_gesture, motion_features
    feats = {}
    lib = []
    for name, inst in LABELS.items():
        ex = []
        for c, a, b in inst[:2]:
            if c not in feats:
                feats[c] = motion_features(read_bvh(os.path.join(DATA, c)))
            ex.append(feats[c][a:b + 1])
        lib.append(learn_gesture(name, ex, rows=ROWS[name]))
    sk = human_model()
    rng = np.random.default_rng(2024)
    n = 300
    lo, hi = np.array([d.lo for d in sk.dofs]), np.array([d.hi for d in sk.dofs])
    still = sk.home[None] + rng.normal(0, 1.0, (n, len(sk.dofs))) * (hi - lo) / 200
    t = np.arange(n)[:, None] / 30.0
    freq = rng.uniform(0.1, 0.6, len(sk.dofs))
    phase = rng.uniform(0, 2 * np.pi, len(sk.dofs))
    mid, amp = sk.home, 0.15 * (hi - lo)
    wander = np.clip(mid + amp * np.sin(2 * np.pi * freq * t + phase), lo, hi)
    for q in (still, wander):
        rec = Recognizer(lib, skeleton=sk, fps=30.0)
        out = [m for i in range(n) for m in rec(i, i / 30.0, q[i], None)]
        assert out == []


def test_cli_learn_bad_examples_name_the_file_and_problem(tmp_path, capsys):
    """QA: a 1-frame example said 'example 0 must be at least 2 frames x 20 rows', a 2-frame one
    "'threshold' must be > 0", an unknown --rows named the BVH the PNG came from, --fps 0 ended
    in a RuntimeWarning and 'not finite', a cut past the end named no file, and `run` on a
    staff without skeleton named neither the file nor the gestures."""
    from host.cli import main
    if not os.path.exists(KICK):
        pytest.skip("../shared/data/bvh is absent")
    lib = str(tmp_path / "g.json")
    png = str(tmp_path / "kick.png")
    one = str(tmp_path / "one.png")
    assert main(["convert", KICK, png]) == 0
    assert main(["edit", png, one, "cut:1.6-1.62"]) == 0
    capsys.readouterr()

    def err_of(*argv):
        assert main(["gestures", "learn", *argv, "--library", lib]) == 2, argv
        e = capsys.readouterr().err
        assert e.startswith("motionstaff: ") and e.count("\n") == 1, e
        return e
    assert "one.png: too short: 1 frame" in err_of("g", one)
    assert "@1.6:1.64: too short (2 frames)" in err_of("g", KICK + "@1.6:1.64")
    e = err_of("g", png, "--rows", "nope,r_knee_deg")
    assert "kick.png: --rows: no row named 'nope'" in e and "r_hip_flex_deg" in e
    assert "--fps must be a number > 0" in err_of("g", png, "--fps", "0")
    e = err_of("g", KICK + "@100:200")
    assert "kick_normal_001.bvh: cut" in e and "lasts 11.933 s" in e
    assert main(["gestures", "learn", "kick", KICK + "@6.0:6.87", "--library", lib]) == 0
    csv = str(tmp_path / "k.csv")
    nosk = str(tmp_path / "nosk.png")
    assert main(["convert", png, csv]) == 0 and main(["convert", csv, nosk]) == 0
    capsys.readouterr()
    assert "nosk.png: has no skeleton" in err_of("g", nosk, "--space", "body")
    assert main(["gestures", "run", nosk, "--library", lib]) == 2
    e = capsys.readouterr().err
    assert "nosk.png: has no skeleton" in e and "(kick)" in e and e.count("\n") == 1


def test_osc_command_failure_names_the_gesture_and_target(monkeypatch):
    """QA: `gestures run --osc-target nonsense` ended in '[Errno -2] Name or service not known'."""
    from device.gestures.recognizer import Match
    from host.gestures import actions as A

    def unreachable(host, port):
        raise OSError(-2, "Name or service not known")
    monkeypatch.setattr(A, "_client", unreachable)
    act = A.Actions(osc_target=("nonsense", 9000))
    m = Match("kick", "osc:/tv/power 1", 0.9, 0.1, 0.3, 0, 10, 11, 0.0, 0.33, 0.37)
    with pytest.raises(OSError, match=r"gesture 'kick': OSC target nonsense:9000: Name or service not known"):
        act.perform(m)


def test_gesture_ending_on_the_last_frame_of_a_recording_is_reported(tmp_path, capsys):
    """QA: `gestures run kick2.png` on the very example it was taught with reported nothing: the
    decision comes one frame after the match's end (hold_frames 1), and the file had no such
    frame. Recognizer.finish() decides what is pending at the end; run() itself is unchanged
    (the benchmark streams clips as if live)."""
    from host.cli import main
    from host.gestures.learn import learn_gesture
    from host.staff import Row, Staff
    from host.stafffile import write_staff
    rng = np.random.default_rng(11)
    bump = np.stack([30 * np.sin(np.linspace(0, np.pi, 15)), np.zeros(15)], axis=1)
    ex = [bump + rng.normal(0, 1, bump.shape) for _ in range(3)]
    g = learn_gesture("bump", ex, rows=["knee"], names=["knee", "hip"], scales=[30.0, 30.0], space="rows")
    stream = np.concatenate([rng.normal(0, 1, (40, 2)), bump])        # ends on the bump's end
    rec = Recognizer([g], row_names=["knee", "hip"], fps=30.0)
    assert rec.run(stream) == []
    ms = rec.finish()
    assert [m.name for m in ms] == ["bump"] and ms[0].frame_decided == len(stream) - 1
    assert 52 <= ms[0].frame_end <= len(stream) - 1 and ms[0].confidence > 0.5
    assert rec.finish() == []                                          # reported once
    lib = str(tmp_path / "g.json")
    save_library(lib, [g])
    src = str(tmp_path / "s.png")
    write_staff(src, Staff(stream.T.copy(), [Row("knee", "deg", -90, 90, True), Row("hip", "deg", -90, 90, True)],
                           fps=30.0))
    capsys.readouterr()
    assert main(["gestures", "run", src, "--library", lib, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "bump" in out and "1 match(es)" in out


def test_shell_commands_run_in_the_shell_with_quoted_values(tmp_path):
    """shell: runs a command line in the system shell (here a redirection), with {name} shell-
    quoted: a gesture named with shell syntax stays one word and runs nothing."""
    from device.gestures.recognizer import Match
    from host.gestures.actions import Actions, parse_command
    out = tmp_path / "log.txt"
    assert parse_command("shell:echo {name} >> %s" % out) == ("shell", "echo {name} >> %s" % out)
    act = Actions()
    m = Match("kick; touch %s" % (tmp_path / "pwned"), "shell:printf '%%s|' {name} {confidence} >> %s" % out,
              0.8, 0.1, 0.5, 0, 10, 12, 0.0, 0.33, 0.4)
    kind, line = act.perform(m)
    act.close()                                          # waits for the command to finish
    assert kind == "shell"
    assert out.read_text() == "kick; touch %s|0.800|" % (tmp_path / "pwned")
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(OSError, match="gesture 'x'"):
        Actions().perform(m._replace(name="x", command="exec:/nonexistent/program"))


def test_a_decided_match_reports_the_closest_pending_alignment():
    """When one template of a gesture decides, another template's better candidate over an
    overlapping stretch (still waiting for its own decision) is what is reported; one that
    does not overlap, or is worse, is not."""
    from types import SimpleNamespace

    from device.gestures.recognizer import _best_pending
    decided = (0.8, (0.4, 10, 30, 31), 0.5)
    better = SimpleNamespace(cand=(0.1, 12, 31), threshold=0.5)
    worse = SimpleNamespace(cand=(0.45, 12, 31), threshold=0.5)
    apart = SimpleNamespace(cand=(0.01, 40, 50), threshold=0.5)
    idle = SimpleNamespace(cand=None, threshold=0.5)
    now = SimpleNamespace(cand=(0.01, 12, 31), threshold=0.5)     # ends on the deciding frame
    assert _best_pending(decided, [worse, apart, idle]) == decided
    assert _best_pending((0.8, (0.4, 10, 30, 31), 0.5), [now]) == decided
    decided = (0.8, (0.4, 10, 30, 32), 0.5)
    assert _best_pending(decided, [worse, better, apart]) == (0.2, (0.1, 12, 31, 32), 0.5)


@need_data
def test_walk_stop_labels_follow_their_definition():
    """The extra gesture (not used to develop the method): the last stride's lift-off to the
    stop, measured; the pelvis is under 0.3 leg/s for 0.3 s from the stop on, faster before."""
    from host.gestures.evaluate import definition_evidence
    from host.gestures.evaluate_extra import walk_stop_labels
    ev = definition_evidence(DATA)
    labels = walk_stop_labels(ev)
    assert labels == [("131_01.bvh", 175, 201), ("131_03.bvh", 234, 255)]
    for c, a, b in labels:
        sp = ev[c]["speed"]
        assert (sp[b:b + 9] < 0.3).all() and sp[b - 1] >= 0.3
        assert max(ev[c]["feet"][s][0][a:b].max() for s in "lr") > 0.3


def test_mirrored_features_swap_sides():
    from device.gestures.features import NAMES, mirrored
    f = np.arange(len(NAMES), dtype=float)[None, :]
    m = mirrored(f)[0]
    assert m[NAMES.index("l_knee_deg")] == NAMES.index("r_knee_deg")
    assert m[NAMES.index("trunk_lean_side_deg")] == -NAMES.index("trunk_lean_side_deg")
    assert m[NAMES.index("pelvis_vz_leg_s")] == NAMES.index("pelvis_vz_leg_s")
    np.testing.assert_array_equal(mirrored(mirrored(f)), f)


@need_data
def test_mirror_finds_the_gesture_done_with_the_other_side():
    """Two right kicks taught with mirror=True find the third kick of the clip done with the
    left leg (the clip's features mirrored); taught without it, they find none of the mirrored
    kicks; mirroring needs body features."""
    from device.gestures.features import mirrored
    from host.gestures.evaluate import KICK, LABELS, _mask, load_clips
    from host.gestures.learn import learn_gesture
    f = load_clips(DATA)[KICK]
    kicks = LABELS["kick"]
    ex = [f[a:b + 1] for _, a, b in kicks[:2]]
    neg = [(f, _mask(len(f), [(a, b) for _, a, b in kicks]))]
    both = learn_gesture("kick", ex, neg, mirror=True)
    right = learn_gesture("kick", ex, neg)
    assert len(both.templates) == 2 * len(right.templates)
    assert set(both.rows) >= {"l_hip_flex_deg", "r_hip_flex_deg"}
    _, a, b = kicks[2]
    left = mirrored(f)
    hits = Recognizer([both], fps=30.0, precomputed=True).run_features(left)
    assert any(m.frame_start <= b and a <= m.frame_end for m in hits)
    assert Recognizer([right], fps=30.0, precomputed=True).run_features(left) == []
    assert any(m.frame_start <= b and a <= m.frame_end
               for m in Recognizer([both], fps=30.0, precomputed=True).run_features(f))
    with pytest.raises(FormatError, match="mirror"):
        learn_gesture("k", [np.zeros((10, 2)) + np.arange(10)[:, None]], names=["a", "b"],
                      scales=[1.0, 1.0], space="rows", mirror=True)
