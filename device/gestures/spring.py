"""Streaming subsequence dynamic time warping (SPRING) of one template against a live stream.

    from device.gestures.spring import Spring
    sp = Spring(template, scales, threshold=0.5, hold_frames=1)   # template (m, rows)
    for t, x in enumerate(stream):                                 # x (rows,) per frame
        hit = sp.step(x)                  # None, or (distance, frame_start, frame_end, frame_now)
    best = Spring.best_per_end(template, scales, stream)           # offline: (F,) distances, starts

After Sakurai, Faloutsos and Yamamuro, "Stream monitoring under the time warping distance"
(ICDE 2007): one column of the DTW matrix per frame (O(m) memory and time), a start time
carried along every cell, and the "star-padding" cell d[0] = 0 that lets a match start at any
frame. Differences from the paper:

* Step pattern d(t,i) = c(t,i) + min(d(t-1,i-1), d(t-1,i), d(t-1,i-2)): the stream may be
  up to twice as fast as the template (a skipped template frame) or any slower; no horizontal
  step, so one frame costs a few vectorised numpy operations, no Python loop over m.
* The distance is normalised: accumulated cost / m, where the frame cost c is the root mean
  square over rows of (x - y) / scale. So a distance of 1 means "off by one typical size".
* The decision is bounded in time: SPRING reports a candidate when no overlapping cell can beat
  it any more; we also report it `hold_frames` frames after its end at the latest, so a decision
  never waits for a long gesture-free stretch. The default hold_frames=1 reports a match on the
  first frame whose end distance is not better than the candidate's: at the first local minimum
  of the distance under the threshold, one frame (33 ms at 30 fps) after the match's end.
  hold_frames=0 reports the first frame under the threshold (earliest, but the reported end and
  confidence are those of the threshold crossing, not of the best alignment).
* A match shorter than min_ratio * m or longer than max_ratio * m frames is not accepted
  (1/2 and 2 by default). The check is on the best path ending at a frame, after the DP: a
  best path out of bounds means no match ends there (the DP does not look for the best path
  of an allowed length). Learning measures negatives with the same check (Spring.best_per_end),
  so thresholds are learned on what the recogniser can match.
* A template scaled by an amplitude a (host/gestures/learn.py) gets the bounds of
  `tempo_bounds(a)`: also within a/2 .. 2a, so that size and tempo together change
  velocities by at most a factor of two, as each alone may. Without it an x2 copy of a
  standing hop matched a running stride squeezed to half the copy's length (velocities x4),
  and that set the copy's threshold. Forbidding the squeezing step outright for such a copy
  (exact, but it also forbids any local speed-up inside a slower performance) was tried: it
  misses the jete the bound finds (benchmarks/gestures.py).
"""

import numpy as np

INF = float("inf")


def frame_costs(template, scales, x):
    """(m,) RMS over rows of (x - template[i]) / scales; NaN rows (missing) are left out, and a
    frame with every row missing costs infinity (no match runs through it)."""
    d = (np.asarray(x, float)[None, :] - template) / scales
    ok = ~np.isnan(d)
    if not ok.any():
        return np.full(template.shape[0], INF)
    d = np.where(ok, d, 0.0)
    return np.sqrt((d * d).sum(axis=1) / np.maximum(ok.sum(axis=1), 1))


class Spring:
    """One template's streaming matcher (see the module docstring)."""

    def __init__(self, template, scales, threshold, hold_frames=1, min_ratio=0.5, max_ratio=2.0):
        self.template = np.asarray(template, float)
        if self.template.ndim != 2 or self.template.shape[0] < 2:
            raise ValueError("a gesture template needs at least 2 frames, not shape %r"
                             % (self.template.shape,))
        self.m = self.template.shape[0]
        self.scales = np.broadcast_to(np.asarray(scales, float), (self.template.shape[1],)).copy()
        if not (self.scales > 0).all():
            raise ValueError("gesture row scales must be > 0")
        self.threshold = float(threshold)
        self.hold_frames = int(hold_frames)
        self.min_len = max(2, int(np.floor(min_ratio * self.m)))
        self.max_len = int(np.ceil(max_ratio * self.m)) if np.isfinite(max_ratio) else 1 << 62
        self.reset()

    def reset(self):
        self.t = -1
        self.d = np.full(self.m + 1, INF)
        self.d[0] = 0.0
        self.s = np.zeros(self.m + 1, dtype=np.int64)
        self.cand = None                    # (distance, start, end)

    def _advance(self, x):
        """Next DTW column for frame x: returns the normalised distance ending here and start."""
        self.t += 1
        t = self.t
        c = frame_costs(self.template, self.scales, x)
        prev_d = self.d
        prev_s = self.s.copy()
        prev_s[0] = t                       # a match may start at this frame
        # candidates per cell i = 1..m: diagonal (i-1), vertical (i), skip (i-2)
        diag = prev_d[:-1]
        vert = prev_d[1:]
        skip = np.concatenate(([INF], prev_d[: self.m - 1]))
        stack = np.vstack((diag, vert, skip))
        k = np.argmin(stack, axis=0)
        best = stack[k, np.arange(self.m)]
        idx = np.arange(1, self.m + 1)
        src = np.where(k == 0, idx - 1, np.where(k == 1, idx, idx - 2))
        d = np.empty(self.m + 1)
        s = np.empty(self.m + 1, dtype=np.int64)
        d[0] = 0.0
        s[0] = t + 1
        d[1:] = best + c
        s[1:] = prev_s[src]
        self.d, self.s = d, s
        return d[self.m] / self.m, int(s[self.m])

    def step(self, x):
        """Feed one frame; returns (distance, frame_start, frame_end, frame_now) or None."""
        dist, start = self._advance(x)
        t = self.t
        length = t - start + 1
        if dist <= self.threshold and self.min_len <= length <= self.max_len:
            if self.cand is None or dist < self.cand[0]:
                self.cand = (dist, start, t)
        if self.cand is None:
            return None
        dmin, ts, te = self.cand
        live = self.d[1:] / self.m
        # SPRING's test: every cell that could still end in a better overlapping match
        can_improve = (live < dmin) & (self.s[1:] <= te)
        if t - te >= self.hold_frames or not can_improve.any():
            out = (dmin, ts, te, t)
            self.cand = None
            # forget every path that overlaps the reported match
            dead = self.s <= te
            dead[0] = False
            self.d[dead] = INF
            return out
        return None

    def flush(self):
        """At the end of a stream (a recording's last frame): the pending candidate, reported
        now as step would have on the next frame ((distance, start, end, frame_now)), or None."""
        if self.cand is None:
            return None
        dmin, ts, te = self.cand
        self.cand = None
        return (dmin, ts, te, self.t)

    def suppress_until(self, frame_end):
        """Forget paths starting at or before frame_end (another gesture won that stretch)."""
        dead = self.s <= frame_end
        dead[0] = False
        self.d[dead] = INF
        if self.cand is not None and self.cand[1] <= frame_end:
            self.cand = None

    @staticmethod
    def best_per_end(template, scales, stream, min_ratio=0.5, max_ratio=2.0):
        """Offline: for every frame t of stream (F, rows) the normalised distance of the best
        match ending at t (inf when its length is out of bounds) and its start: ((F,), (F,))."""
        sp = Spring(template, scales, INF, hold_frames=0, min_ratio=min_ratio, max_ratio=max_ratio)
        n = len(stream)
        dist = np.full(n, INF)
        start = np.zeros(n, dtype=np.int64)
        for t in range(n):
            d, s = sp._advance(stream[t])
            start[t] = s
            if sp.min_len <= t - s + 1 <= sp.max_len:
                dist[t] = d
        return dist, start


# how far size and tempo together may change a template's velocities (see tempo_bounds)
VELOCITY_FACTOR = 2.0


def tempo_bounds(amplitude=1.0, tempo=2.0, velocity=None):
    """(min_ratio, max_ratio) of a match's length to its template's, for a template scaled by
    amplitude. The tempo may change by up to `tempo` either way, and so may the velocities that
    size and tempo make together (VELOCITY_FACTOR unless velocity is given): a performance
    twice as big is not also faster, one half as big not also slower. So the ratio lies in
    [1/tempo, tempo] and in [a/velocity, a velocity]; velocity=inf leaves only the tempo."""
    a = float(amplitude)
    v = VELOCITY_FACTOR if velocity is None else float(velocity)
    return max(1.0 / tempo, a / v), min(tempo, a * v)


def dtw_distance(a, b, scales):
    """Normalised DTW distance of two whole sequences a (m, rows), b (n, rows) with the
    same step pattern as Spring (b's best match covering all of a, anchored at both ends
    of b is not required: this is the subsequence distance of a inside b)."""
    dist, _ = Spring.best_per_end(a, scales, b, min_ratio=0.0, max_ratio=INF)
    return float(dist.min()) if len(dist) else INF
