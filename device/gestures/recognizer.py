"""The live gesture recogniser: frames in, matches (name, time, confidence) out.

    from device.gestures.library import load_library
    from device.gestures.recognizer import Recognizer
    rec = Recognizer(load_library("gestures.json"), skeleton=sk, row_names=sk.dof_names,
                     fps=30.0, on_match=print)
    for i, q in enumerate(frames):             # q: (rows,) one staff column in row units
        for m in rec.step(q, t_s=i / 30.0):    # Match(name, command, confidence, ...)
            print(m.name, m.t_end_s, m.confidence)
    # as a capture-loop output: rec(frame_index, t_s, values, codes) -> list of Match
    matches = rec.run(values_frames)           # a whole recording (F, rows), for testing

Each gesture's templates run as SPRING matchers (device/gestures/spring.py) over the gesture's
rows: body features (device/gestures/features.py, any known skeleton) or the staff's own rows
by name. A match is reported when its time-warped distance is under the gesture's threshold,
at most `hold_frames` frames after the match's end (default 1: as soon as it stops
improving). Confidence = 1 - distance / (2 threshold): 1 for a perfect match, 0.5 at the
threshold; motion that matches nothing reports nothing.
When two gestures claim overlapping stretches in the same frame the more confident one wins.
"""

from typing import NamedTuple

import numpy as np

from device.gestures.features import NAMES as FEATURE_NAMES
from device.gestures.features import BodyFeatures
from device.gestures.spring import Spring, tempo_bounds
from protocol.errors import FormatError


class Match(NamedTuple):
    name: str
    command: str
    confidence: float
    distance: float
    threshold: float
    frame_start: int
    frame_end: int
    frame_decided: int
    t_start_s: float
    t_end_s: float
    t_decided_s: float


def resample(values, from_fps, to_fps):
    """Linear resampling of frames x rows values from one frame rate to another."""
    v = np.asarray(values, float)
    if abs(from_fps - to_fps) < 1e-9 * to_fps or len(v) < 2:
        return v.copy()
    t_in = np.arange(len(v)) / from_fps
    n_out = max(2, int(np.floor(t_in[-1] * to_fps + 1e-9)) + 1)
    t_out = np.arange(n_out) / to_fps
    return np.stack([np.interp(t_out, t_in, v[:, r]) for r in range(v.shape[1])], axis=1)


def _best_pending(best, sps):
    """A decided match (ratio, (dist, start, end, now), threshold) or, if better, another
    template's candidate still waiting for its own decision over an overlapping stretch and
    ending before now (so, like every report, it ends before the frame that decides it): the
    gesture is reported once, now, with the closest alignment known (the other templates are
    suppressed over that stretch as soon as it is reported)."""
    ratio, (dist, fs, fe, fnow), thr = best
    for sp in sps:
        if sp.cand is not None:
            d, cs, ce = sp.cand
            if cs <= fe and fs <= ce and ce < fnow and d / sp.threshold < ratio:
                ratio, dist, fs, fe, thr = d / sp.threshold, d, cs, ce, sp.threshold
    return ratio, (dist, fs, fe, fnow), thr


class Recognizer:
    """Streams frames through every gesture's matchers (see the module docstring)."""

    def __init__(self, gestures, row_names=None, skeleton=None, fps=30.0, on_match=None,
                 precomputed=False):
        """precomputed=True: body features will be given to step(features=)/run_features(), so
        no skeleton is needed."""
        self.fps = float(fps)
        if not (self.fps > 0):
            raise ValueError("fps must be > 0")
        self.gestures = list(gestures)
        self.on_match = on_match
        self.row_names = list(row_names) if row_names is not None else (
            skeleton.dof_names if skeleton is not None else None)
        self.features = None
        if any(g.space == "body" for g in self.gestures) and not precomputed:
            if skeleton is None:
                raise FormatError("gestures in body space need the motion's skeleton")
            self.features = BodyFeatures(skeleton)
            if self.row_names is not None and list(self.row_names) != skeleton.dof_names:
                raise FormatError("the staff rows are not the skeleton's dofs in order")
        self._select = []      # per gesture: ("body"|"rows", column indices)
        self._springs = []     # per gesture: list of Spring
        for g in self.gestures:
            if g.space == "body":
                idx = [FEATURE_NAMES.index(r) if r in FEATURE_NAMES else -1 for r in g.rows]
                bad = [r for r, i in zip(g.rows, idx) if i < 0]
                if bad:
                    raise FormatError("gesture %r: unknown body features %s" % (g.name, ", ".join(bad)))
            else:
                if self.row_names is None:
                    raise FormatError("gesture %r: rows space needs the staff's row names" % g.name)
                have = {n: i for i, n in enumerate(self.row_names)}
                bad = [r for r in g.rows if r not in have]
                if bad:
                    raise FormatError("gesture %r: the motion has no rows %s" % (g.name, ", ".join(bad)))
                idx = [have[r] for r in g.rows]
            self._select.append((g.space, np.array(idx, dtype=np.intp)))
            hold = g.hold_frames if abs(g.fps - self.fps) < 1e-6 else int(round(g.hold_frames * self.fps / g.fps))
            self._springs.append([Spring(resample(t, g.fps, self.fps), g.scales, th, hold,
                                         *tempo_bounds(a))
                                  for t, th, a in zip(g.templates, g.thresholds, g.amplitudes)])
        self.reset()

    def reset(self):
        self.frame = -1
        self.last_t_s = None
        for sps in self._springs:
            for sp in sps:
                sp.reset()
        if self.features is not None:
            self.features.reset()

    # --- streaming ------------------------------------------------------------------------------
    def step(self, values, t_s=None, features=None):
        """Feed one frame (staff column in row units); returns the matches decided now."""
        self.frame += 1
        dt_s = 1.0 / self.fps
        if t_s is None:
            t_s = self.frame / self.fps
        elif self.last_t_s is not None and t_s > self.last_t_s:
            dt_s = t_s - self.last_t_s
        self.last_t_s = t_s
        if features is None and self.features is not None:
            features = self.features.step(np.asarray(values, float), dt_s)
        x = np.asarray(values, float) if values is not None else None
        hits = []
        for g, (space, idx), sps in zip(self.gestures, self._select, self._springs):
            col = features[idx] if space == "body" else x[idx]
            best = None
            for sp in sps:                    # each template against its own threshold
                h = sp.step(col)
                if h is not None and (best is None or h[0] / sp.threshold < best[0]):
                    best = (h[0] / sp.threshold, h, sp.threshold)
            if best is not None:
                best = _best_pending(best, sps)
                hits.append((best[0], g, best[1], sps, best[2]))
        return self._decide(hits, t_s)

    def finish(self):
        """At the end of a recording: the matches still waiting for their decision frame (a
        gesture that ends on the last frame), decided on that frame. run() does not call it
        (the benchmark protocol streams clips as if live); `motionstaff gestures run FILE` does."""
        if self.frame < 0:
            return []
        hits = []
        for g, sps in zip(self.gestures, self._springs):
            best = None
            for sp in sps:
                h = sp.flush()
                if h is not None and (best is None or h[0] / sp.threshold < best[0]):
                    best = (h[0] / sp.threshold, h, sp.threshold)
            if best is not None:
                hits.append((best[0], g, best[1], sps, best[2]))
        t_s = self.last_t_s if self.last_t_s is not None else self.frame / self.fps
        return self._decide(hits, t_s)

    def _decide(self, hits, t_s):
        """Of the matches decided at this frame, the more confident owns an overlapping stretch."""
        out = []
        hits.sort(key=lambda h: h[0])
        taken = []
        for ratio, g, (dist, fs, fe, fnow), sps, thr in hits:
            for sp in sps:
                sp.suppress_until(fe)
            if any(fs <= te and ts <= fe for ts, te in taken):
                continue                      # a more confident gesture owns this stretch
            taken.append((fs, fe))
            back = lambda f: t_s - (fnow - f) / self.fps  # noqa: E731
            shift = self.frame - fnow           # matcher frames count from its last reset
            m = Match(g.name, g.command, float(max(0.0, 1.0 - 0.5 * ratio)), float(dist), thr,
                      int(fs + shift), int(fe + shift), int(self.frame), back(fs), back(fe), float(t_s))
            out.append(m)
        if out and self.on_match is not None:
            for m in out:
                self.on_match(m)
        return out

    def __call__(self, frame_index, t_s, values, codes=None):
        """The capture loop's output signature. Frames the loop skipped (frame_index jumps)
        are fed as missing, so no match spans a gap and frame numbers stay the loop's; a gap
        longer than 10 s restarts the matchers."""
        gap = int(frame_index) - (self.frame + 1)
        if self.frame >= 0 and 0 < gap <= 10 * self.fps:
            blank = np.full(len(values), np.nan)
            out = []
            for k in range(gap):
                out += self.step(blank, t_s - (gap - k) / self.fps)
            return out + self.step(values, t_s)
        if gap != 0:
            self.reset()
            self.frame = int(frame_index) - 1
        return self.step(values, t_s)

    def run(self, values):
        """All matches in a recording: values (F, rows) at self.fps (starts from a reset)."""
        self.reset()
        v = np.asarray(values, float)
        feats = None
        if self.features is not None:
            feats = self.features.batch(v, self.fps)
        out = []
        for f in range(len(v)):
            out += self.step(v[f], f / self.fps, None if feats is None else feats[f])
        return out

    def run_features(self, features):
        """All matches over precomputed body features (F, len(FEATURE_NAMES)), for body gestures."""
        self.reset()
        out = []
        for f in range(len(features)):
            out += self.step(None, f / self.fps, features[f])
        return out
