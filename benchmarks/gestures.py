"""Gesture recognition on the real BVH clips: precision, recall and decision latency.

    .venv/bin/python benchmarks/gestures.py [--data ../shared/data/bvh] [--hold-frames 2]

Protocol (host/gestures/evaluate.py): leave-one-out over the kicks of one clip, and
template-from-another-clip for the walk start and the hop; thresholds learned on the first
halves of all clips, false positives counted on the second halves; all clips resampled to
30 fps. Then the stricter leave-one-take-out protocol (evaluate_takes). Labels follow
written definitions (evaluate.py), and the measures those definitions
use are printed first. Also prints the same without amplitude-scaled templates, with rows
chosen by motion energy for every gesture, and the per-frame cost of the recogniser.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data", "bvh"))
    ap.add_argument("--hold-frames", type=int, default=2)
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
    from host.gestures.evaluate import LABELS, definition_evidence
    ev = definition_evidence(a.data, FPS)
    print("\n## label definitions, measured\n")
    print("| clip | flights > 0.2 leg (frames, lower ankle height in legs) | pelvis speed before "
          "each labelled walk start, max over 0.3 s (leg/s) |")
    print("|---|---|---|")
    for c, d in ev.items():
        fl = ", ".join("%d-%d: %.2f" % f for f in d["flights"] if f[2] > 0.2) or "-"
        ws = ", ".join("@%d: %.2f" % (x, d["speed"][max(0, x - 9):x].max())
                       for cc, x, _ in LABELS["walk_start"] if cc == c) or "-"
        if c == "131_03.bvh":
            ws += " (walk-off @224, not labelled: %.2f)" % d["speed"][215:224].max()
        print("| %s | %s | %s |" % (c, fl, ws))
    rows, summary = evaluate(clips, a.hold_frames)
    table(rows, summary, "as configured (kick: rows by energy; walk_start, hop: rows given; "
                         "amplitude-scaled templates x1/2..x2)")
    from host.gestures.evaluate import evaluate_takes
    rows, summary = evaluate_takes(clips, a.hold_frames)
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
    rows, summary = evaluate(clips, a.hold_frames, amplitudes=(1.0,))
    table(rows, summary, "without amplitude-scaled templates (the examples only)")
    rows, summary = evaluate(clips, a.hold_frames, auto_rows=True)
    table(rows, summary, "every gesture's rows chosen by motion energy")

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
