"""A gesture the method was not developed on: walk_stop, the end of CMU 131_01 ("Start Walk
Stop") and 131_03 ("Start Hop Stop").

    from host.gestures.evaluate_extra import walk_stop_labels, evaluate_walk_stop
    labels = walk_stop_labels(definition_evidence(bvh_folder))   # [(clip, first, last frame)]
    rows = evaluate_walk_stop(clips, labels)                      # one fold per direction

Every rule of the recogniser (features, amplitude copies, the size-and-tempo bound, the
threshold rule) was settled on kick, walk_start and hop. This gesture was added afterwards as
a check on them: its definition, its rows (walk_start's, as a user teaching the opposite
motion would pick) and its protocol (the headline one: learned from one take, tested on the
other, thresholds on the first halves of every clip, false positives on the second halves)
were fixed before it was run, and it is reported whatever it gives.

walk_stop: from the lift-off of the last stride (the last time an ankle rose more than 0.3 leg
above its standing height before the stop, back to where it left 0.05 leg) to the stop (the
first frame from which the pelvis moves under 0.3 leg lengths/s for 0.3 s, after faster
motion), measured with `definition_evidence` like walk_start's end.
"""

import numpy as np

from host.gestures.evaluate import FPS, ROWS, run_fold

STOP_CLIPS = ("131_01.bvh", "131_03.bvh")
ROWS_STOP = ROWS["walk_start"]


def stop_span(evidence, still_leg_s=0.3, hold_s=0.3, fps=FPS):
    """(first, last frame) of the clip's last walk stop by the definition above, or None."""
    sp = evidence["speed"]
    hold = int(round(hold_s * fps))
    stop = None
    for t in range(len(sp) - hold, 0, -1):
        if (sp[t:t + hold] < still_leg_s).all() and sp[t - 1] >= still_leg_s:
            stop = t
            break
    if stop is None:
        return None
    start = None
    for s in "lr":
        h = evidence["feet"][s][0]
        up = np.nonzero(h[:stop] > 0.3)[0]
        if len(up):
            i = int(up[-1])
            while i > 0 and h[i - 1] > 0.05:       # back to where the foot left the ground
                i -= 1
            start = i if start is None else max(start, i)
    return None if start is None else (start, stop)


def walk_stop_labels(evidence):
    """[(clip, first, last frame)] of the two CMU 131 takes' stops."""
    out = []
    for c in STOP_CLIPS:
        span = stop_span(evidence[c]) if c in evidence else None
        if span is not None:
            out.append((c,) + span)
    return out


def evaluate_walk_stop(clips, labels, hold_frames=1, fps=FPS):
    """Each take's stop learned alone and the other's tested (the headline protocol, run_fold):
    [dict(train, test, rows, threshold, found, distance, latency_ms, nearest, false_positives)]."""
    from host.gestures.evaluate_c3d import nearest_ratio
    out = []
    for tr, te in ((0, 1), (1, 0)):
        if max(tr, te) >= len(labels):
            break
        g, recs, (tc, ta, tb) = run_fold(clips, "walk_stop", [tr], te, hold_frames, fps,
                                         rows=ROWS_STOP, labels=labels)
        hits = [m for kind, _, m in recs if kind == "tp"]
        out.append({"train": labels[tr], "test": labels[te], "rows": g.rows, "threshold": g.threshold,
                    "found": bool(hits), "distance": hits[0].distance if hits else None,
                    "latency_ms": (hits[0].frame_decided - tb) / fps * 1000.0 if hits else None,
                    "nearest": nearest_ratio(g, clips[tc], ta, tb),
                    "false_positives": ["%s@%d-%d" % (c, m.frame_start, m.frame_end)
                                        for kind, c, m in recs if kind == "fp"]})
    return out
