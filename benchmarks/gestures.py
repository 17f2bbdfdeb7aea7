"""Gesture recognition on the real BVH clips: precision, recall and decision latency.

    .venv/bin/python benchmarks/gestures.py [--data ../shared/data/bvh] [--hold-frames 1]

Protocol (host/gestures/evaluate.py): leave-one-out over the kicks of one clip, and
template-from-another-clip for the walk start and the hop; thresholds learned on the first
halves of all clips, false positives counted on the second halves; all clips resampled to
30 fps. Then the stricter leave-one-take-out protocol (evaluate_takes). Labels follow
written definitions (evaluate.py), and the measures those definitions
use are printed first, then how far the body features of one take in two skeleton conventions
(CMU 05_20, -mb and -daz) differ. Also prints the decision rule's trade (hold_frames 0, 1, 2:
precision, recall, latency), the same without amplitude-scaled templates, with rows chosen by
motion energy for every gesture, and the per-frame cost of the recogniser.
"""

import argparse
import os
import sys
import time


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from host.gestures.evaluate import FPS, evaluate, load_clips  # noqa: E402


def table(rows, summary, title):
    print("\n## %s\n" % title)
    print("| gesture | trained on | tested on | rows | threshold | found | distance | latency ms | false positives |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        lat = "%.0f" % r["latency_ms"] if r["latency_ms"] is not None else "-"
        dist = "%.3f" % r["distance"] if r["distance"] is not None else "-"
        print("| %s | %s | %s@%d-%d | %d | %.3f | %s | %s | %s | %s |" % (
            r["gesture"], ", ".join("%s@%d-%d" % t for t in r["train"]), *r["test"], len(r["rows"]),
            r["threshold"], "yes" if r["tp"] else "NO", dist, lat, ", ".join(r["fp_where"]) or "0"))
    summary_table(summary)


def summary_table(summary):
    print("\n| gesture | folds | TP | FN | FP | precision | recall | latency max ms | latency mean ms "
          "| report after match end, max ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for g, s in summary.items():
        lm = "%.0f" % s["latency_max_ms"] if s["latency_max_ms"] is not None else "-"
        la = "%.0f" % s["latency_mean_ms"] if s["latency_mean_ms"] is not None else "-"
        am = "%.0f" % s["after_match_max_ms"] if s["after_match_max_ms"] is not None else "-"
        print("| %s | %d | %d | %d | %d | %.2f | %.2f | %s | %s | %s |" % (
            g, s["folds"], s["tp"], s["fn"], s["fp"], s["precision"], s["recall"], lm, la, am))


def by_take(rows):
    """(found, tested) counting each physical test once: folds that differ only in which file
    of one take (05_20 -mb / -daz) they train or test on are one test (found if all found)."""
    from host.gestures.evaluate import TAKES
    tests = {}
    for r in rows:
        if r["test"] is None:
            continue
        key = (r["gesture"], tuple(sorted({TAKES.get(t[0], t[0]) for t in r["train"]})),
               TAKES.get(r["test"][0], r["test"][0]), r["test"][1], r["test"][2])
        tests[key] = tests.get(key, True) and bool(r["tp"])
    return sum(tests.values()), len(tests)


def goal_line(summary, rows):
    """The issue's goal against a summary: precision and recall >= 0.9, decisions <= 100 ms."""
    a = summary["all"]
    ok_pr = a["precision"] >= 0.9 and a["recall"] >= 0.9
    lat = a["latency_max_ms"]
    ok_lat = lat is not None and lat <= 100.0 + 1e-6
    print("\ngoal (precision and recall >= 0.9; every decision <= 100 ms after the labelled end): "
          "precision %.2f, recall %.2f: %s; latency max %s ms: %s" % (
              a["precision"], a["recall"], "met" if ok_pr else "NOT met",
              "-" if lat is None else "%.0f" % lat, "met" if ok_lat else "NOT met"))
    for g, s in summary.items():
        if g != "all" and s["recall"] < 0.9:
            print("  %s: recall %.2f (%d of %d)" % (g, s["recall"], s["tp"], s["tp"] + s["fn"]))
    found, tested = by_take(rows)
    print("  counting the one take in two skeletons once (05_20 -mb / -daz): %d of %d found, "
          "recall %.2f" % (found, tested, found / tested if tested else 1.0))


def skeleton_table(clips):
    """How far the features of one take in two skeleton conventions differ (05_20 -mb, -daz)."""
    import numpy as np
    from device.gestures.features import NAMES, SCALES
    a, b = clips.get("05_20-mb.bvh"), clips.get("05_20-daz.bvh")
    if a is None or b is None:
        return
    d = np.abs(a - b) / SCALES
    print("\n## one take, two skeletons: |05_20-mb - 05_20-daz| per feature, in typical sizes\n")
    print("| feature | typical size | max | 99th percentile | median |")
    print("|---|---|---|---|---|")
    for i, n in enumerate(NAMES):
        print("| %s | %g | %.2f | %.2f | %.2f |" % (n, SCALES[i], d[:, i].max(),
                                                 np.percentile(d[:, i], 99), np.median(d[:, i])))


def decision_table(clips, known, cache):
    """Precision, recall and latency of the decision rule at hold_frames 0, 1, 2; known:
    {(hold_frames, protocol): summary} already computed; cache: the learned gestures."""
    from host.gestures.evaluate import evaluate_takes
    print("\n## decision rule: report at most hold_frames after the match's end\n")
    print("| hold_frames | protocol | TP | FN | FP | precision | recall | latency max ms | "
          "report after match end, max ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for h in (0, 1, 2):
        for name, fn in (("as configured", evaluate), ("leave-one-take-out", evaluate_takes)):
            s = (known.get((h, name)) or fn(clips, h, cache=cache)[1])["all"]
            print("| %d | %s | %d | %d | %d | %.2f | %.2f | %s | %s |" % (
                h, name, s["tp"], s["fn"], s["fp"], s["precision"], s["recall"],
                "%.0f" % s["latency_max_ms"] if s["latency_max_ms"] is not None else "-",
                "%.0f" % s["after_match_max_ms"] if s["after_match_max_ms"] is not None else "-"))


def size_tempo_table(clips):
    """How much the results hang on the size-and-tempo bound (spring.VELOCITY_FACTOR): both
    protocols with the factor at 1.6, 1.8, 2 (the default), 2.5 and without the bound."""
    import device.gestures.spring as spring
    from host.gestures.evaluate import evaluate_takes
    print("\n## size and tempo together: how far velocities may change (spring.tempo_bounds)\n")
    print("| velocity factor | as configured: TP / FN / FP | leave-one-take-out: TP / FN / FP |")
    print("|---|---|---|")
    keep = spring.VELOCITY_FACTOR
    try:
        for v in (1.6, 1.8, 2.0, 2.5, float("inf")):
            spring.VELOCITY_FACTOR = v
            a = evaluate(clips)[1]["all"]
            b = evaluate_takes(clips)[1]["all"]
            print("| %s%s | %d / %d / %d | %d / %d / %d |" % (
                "none (before)" if v == float("inf") else "%g" % v, " (default)" if v == keep else "",
                a["tp"], a["fn"], a["fp"], b["tp"], b["fn"], b["fp"]))
    finally:
        spring.VELOCITY_FACTOR = keep


def extra_section(clips, bvh_folder, hold_frames):
    """walk_stop: a gesture the method was not developed on (host/gestures/evaluate_extra.py)."""
    from host.gestures.evaluate import definition_evidence
    from host.gestures.evaluate_extra import ROWS_STOP, evaluate_walk_stop, walk_stop_labels
    labels = walk_stop_labels(definition_evidence(bvh_folder, FPS))
    print("\n## a gesture the method was not developed on: walk_stop\n")
    print("Fixed before it was run (definition, rows = walk_start's, the headline protocol) and "
          "reported as it came out. Labels, measured: %s.\n" % ", ".join("%s@%d-%d" % l for l in labels))
    print("| trained on | tested on | rows | threshold | found | closest template / its threshold "
          "| false positives |")
    print("|---|---|---|---|---|---|---|")
    for r in evaluate_walk_stop(clips, labels, hold_frames):
        print("| %s@%d-%d | %s@%d-%d | %d | %.3f | %s | %.2f (%s) | %s |" % (
            *r["train"], *r["test"], len(ROWS_STOP), r["threshold"], "yes" if r["found"] else "NO",
            r["nearest"][0], r["nearest"][1], ", ".join(r["false_positives"]) or "0"))
    print("\nThe two stops differ in pace: 131_01 stops from its walk (pelvis 1.5-1.9 leg/s, last "
          "stride 0.6 leg high), 131_03 from a short walk-off after the hop (0.7-1.3 leg/s, last "
          "stride 0.4 leg). Taught with one, the other is not found and nothing else fires.")


def c3d_section(clips, cache, bvh_folder, c3d_folder, hold_frames):
    """Other capture technology (C3D marker captures through IK) and the three jump styles."""
    if not os.path.isdir(c3d_folder):
        print("\n(no C3D captures at %s: the C3D section is skipped)" % c3d_folder)
        return
    try:
        from host.gestures.evaluate_c3d import (JUMP_C3D, cross_style, gait_false_positives,
                                                jump_instances, jump_styles, load_c3d_clips,
                                                read_c3d_staffs)
        staffs = read_c3d_staffs(c3d_folder)
    except Exception as e:                   # e.g. ezc3d missing: say so, keep the rest
        print("\n(C3D section skipped: %s)" % e)
        return
    from host.gestures.evaluate import definition_evidence, staff_evidence
    c3d = load_c3d_clips(c3d_folder, FPS, staffs)
    print("\n## other capture technology: C3D marker captures (IK to the built-in human)\n")
    print("Every gesture learned in the folds above, streamed over the two C3D walking trials "
          "(other labs, marker sets and capture systems; negatives for all gestures):\n")
    print("| gesture | templates learned (folds) | matches on the C3D walking trials |")
    print("|---|---|---|")
    learned = {}
    for g in cache.values():
        learned.setdefault(g.name, []).append(g)
    total = 0
    for name, gs in learned.items():
        hits = []
        for g in gs:
            g.hold_frames = hold_frames
            hits += gait_false_positives([g], c3d)[g.name]
        total += len(hits)
        print("| %s | %d (%d) | %s |" % (name, sum(len(g.templates) for g in gs), len(gs),
                                        ", ".join(hits) or "0"))
    ev = definition_evidence(bvh_folder, FPS)
    for n, st in staffs.items():
        ev[n] = staff_evidence(st, FPS)
    jumps = jump_instances(c3d_folder, FPS)
    if len(jumps) < 3:
        return
    print("\n## three jumps, three motions\n")
    from host.gestures.evaluate_c3d import jump_span
    _, off, land, _ = jump_span(os.path.join(c3d_folder, JUMP_C3D), FPS)
    print("%s's own events put its take-off at frame %d and its landing at %d (30 fps); the "
          "flight measured from the IK'd ankles runs %d-%d.\n" % (JUMP_C3D, off, land,
                                                                *ev[JUMP_C3D]["flights"][0][:2]))
    print("| take | frames | flight (frames) | flight s | lower ankle height, leg | leaves from "
          "| lands on | ankle peaks l / r, leg | tuck, leg | pelvis up-speed peak, leg/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for c, d in jump_styles(ev, jumps).items():
        print("| %s | %d-%d | %s-%s | %.2f | %.2f | %s | %s | %.2f / %.2f | %.2f | %.2f |" % (
            d["style"], d["span"][0], d["span"][1], d["flight"][0], d["flight"][1], d["flight_s"],
            d["height_leg"], d["push_off"], d["lands_on"], d["ankle_peak_leg"][0],
            d["ankle_peak_leg"][1], d["knee_tuck"], d["vz_peak_leg_s"]))
    every = dict(clips)
    every.update(c3d)
    print("\nEach learned alone (hop rows, first halves of every clip, BVH and C3D, as "
          "negatives), then the other two streamed:\n")
    print("| learned from | tested on | threshold | found | closest template / its threshold |")
    print("|---|---|---|---|---|")
    for r in cross_style(every, jumps, hold_frames):
        print("| %s | %s | %.3f | %s | %.2f (%s) |" % (
            r["train"], r["test"], r["threshold"], "yes" if r["found"] else "no",
            r["nearest"][0], r["nearest"][1]))
    print("\nThe hop and the jete are one kind of motion (a leap from the right foot onto the "
          "left with a leg swung up: tuck 0.5-0.7 leg), the jete about twice as big (flight 2x, "
          "pelvis speed 1.7x, ankle peaks 1.7x), at the edge of the x2 size tolerance: each "
          "finds the other (the hop through its x2 copy, the jete through its x0.707 copy). The "
          "C3D jump is another motion (both feet, straight legs in the air: tuck 0.1) that "
          "neither finds nor is found by. A gesture is recognised in the style it was taught; "
          "a two-footed jump needs examples of its own.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data", "bvh"))
    ap.add_argument("--c3d", default=os.path.join(here, "..", "..", "shared", "data", "c3d"),
                    help="folder of C3D captures for the extra section (skipped when absent)")
    ap.add_argument("--hold-frames", type=int, default=1)
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        print("no data at %s" % a.data)
        return 1
    t0 = time.perf_counter()
    clips = load_clips(a.data, FPS)
    t1 = time.perf_counter()
    frames = sum(len(f) for f in clips.values())
    print("# gestures: %d clips, %d frames at %g fps (%.2f s to load and compute features)"
          % (len(clips), frames, FPS, t1 - t0))
    from host.gestures.evaluate import LABELS, definition_evidence, stride_landing
    ev = definition_evidence(a.data, FPS)
    print("\n## label definitions, measured\n")
    print("| clip | flights > 0.2 leg (frames, lower ankle height in legs) | pelvis speed before "
          "each labelled walk start, max over 0.3 s (leg/s) | first stride's landing (label end) |")
    print("|---|---|---|---|")
    for c, d in ev.items():
        fl = ", ".join("%d-%d: %.2f" % f for f in d["flights"] if f[2] > 0.2) or "-"
        ws = ", ".join("@%d: %.2f" % (x, d["speed"][max(0, x - 9):x].max())
                       for cc, x, _ in LABELS["walk_start"] if cc == c) or "-"
        land = ", ".join("%s foot @%d (label %d)" % (stride_landing(d, x)[1], stride_landing(d, x)[0], y)
                         for cc, x, y in LABELS["walk_start"] if cc == c) or "-"
        if c == "131_03.bvh":
            ws += " (walk-off @224, not labelled: %.2f)" % d["speed"][215:224].max()
        print("| %s | %s | %s | %s |" % (c, fl, ws, land))
    skeleton_table(clips)
    cache = {}                          # learned gestures, reused for other hold_frames
    rows, summary = evaluate(clips, a.hold_frames, cache=cache)
    known = {(a.hold_frames, "as configured"): summary}
    table(rows, summary, "as configured (kick: rows by energy; walk_start, hop: rows given; "
                         "amplitude-scaled templates x1/2..x2)")
    goal_line(summary, rows)
    print("The hop folds tested on 05_20 (-mb and -daz, one take) ask for a jete, a leap with "
          "the ankles 0.68 leg high, from one example of 131_03's hop (0.39 leg): both "
          "skeletons give the same answer, as the features agree between them.")
    size_tempo_table(clips)
    from host.gestures.evaluate import evaluate_takes
    rows, summary = evaluate_takes(clips, a.hold_frames, cache=cache)
    print("\n## leave-one-take-out (learned without the take, negatives the other takes whole; "
          "every clip scored whole)\n")
    print("| gesture | held-out take | trained on | tested on | threshold | found | false positives |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %.3f | %s | %s |" % (
            r["gesture"], r["take"], ", ".join("%s@%d-%d" % t for t in r["train"]),
            "%s@%d-%d" % r["test"] if r["test"] else "(no instance)", r["threshold"],
            ("yes" if r["tp"] else "NO") if r["test"] else "-", ", ".join(r["fp_where"]) or "0"))
    summary_table(summary)
    known[(a.hold_frames, "leave-one-take-out")] = summary
    goal_line(summary, rows)
    print("\nLeave-one-take-out holds every take out in turn. kick occurs in one take only "
          "(dataset-1_kick), so its folds are leave-one-out inside that take; walk_start occurs in "
          "two takes (131_01, 131_03), hop in two (131_03: a hop; 05_20: a jete, a leap, the only "
          "jump of that take), so each hop fold learns from the other take: a jete from one hop "
          "example (twice as big: found by the hop's x2 copy) or the reverse. Searched with the definitions' measures, the clips hold no further "
          "instance: no other flight above 0.3 leg; dataset-1_dance's high leg raises (1230-1259, "
          "1364-1410) are left-leg, not the right kick the examples show (no mirroring), and "
          "score as negatives; its standing-then-stride moments (e.g. @280, @437) cannot be told from "
          "dance steps by the walk-start measures (the kick clip's kicks meet them too), so they "
          "are not labelled and count as negatives; dataset-1_walk and the runs start moving; "
          "131_03's walk-off does not start from standing.")
    decision_table(clips, known, cache)
    rows, summary = evaluate(clips, a.hold_frames, amplitudes=(1.0,))
    table(rows, summary, "without amplitude-scaled templates (the examples only)")
    rows, summary = evaluate(clips, a.hold_frames, auto_rows=True)
    table(rows, summary, "every gesture's rows chosen by motion energy")

    extra_section(clips, a.data, a.hold_frames)
    c3d_section(clips, cache, a.data, a.c3d, a.hold_frames)

    # per-frame cost of the live path: FK + body features + SPRING for three gestures
    from device.gestures.recognizer import Recognizer
    from host.bvh import read_bvh
    from host.gestures.learn import learn_gesture
    st = read_bvh(os.path.join(a.data, "dataset-1_kick_normal_001.bvh"))
    gs = []
    for name, inst in LABELS.items():
        gs.append(learn_gesture(name, [clips[c][x:y + 1] for c, x, y in inst[:2]], fps=FPS))
    rec = Recognizer(gs, skeleton=st.skeleton, fps=st.fps)
    v = st.values.T
    t = time.perf_counter()
    for i in range(len(v)):
        rec.step(v[i], i / st.fps)
    per = (time.perf_counter() - t) / len(v)
    print("\n## live cost\n")
    print("| path | frames | ms per frame | budget at 30 fps |")
    print("|---|---|---|---|")
    print("| FK + features + SPRING, %d gestures, %d templates | %d | %.3f | 33.3 ms |"
          % (len(gs), sum(len(g.templates) for g in gs), len(v), per * 1000))
    print("\nDecision latency = frame the match is reported minus the labelled last frame; the"
          " matcher reports at most hold_frames=%d frames (%.0f ms) after the match's end."
          % (a.hold_frames, a.hold_frames / FPS * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
