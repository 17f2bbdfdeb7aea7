"""Despike: find protruding pixels (tracking glitches) and replace them.

    from host.edit.despike import despike
    clean = despike(staff)                                  # robust: leave-one-out, joint rotations
    clean = despike(staff, "hampel")                        # Hampel + protrusion test
    clean = despike(staff, method="median", window=5)       # classic median filter of the image
    clean, mask = despike(staff, return_mask=True)          # which pixels were replaced

"hampel", two stages, whole image at once:
1. candidates: the Hampel identifier - |v - running median| > threshold * 1.4826 * MAD over
   `window` frames, and more than `min_steps` quantisation steps (so the 8-bit staircase is
   never a spike);
2. confirmation: a candidate is a spike only if it protrudes from what its neighbours agree
   on: |v - M| > protrude * max(|L - M|, |R - M|) + min_steps steps, where M interpolates the
   nearest good frames either side and L, R extrapolate the two good frames on each side.
   A real fast movement (several frames off the median, but consistent with its neighbours)
   stays; a pixel next to another candidate is tested again with that neighbour left out (runs
   of up to `max_run` candidates), so pairs of glitches are found too.
Spikes are replaced by linear interpolation from the good pixels of their row. A still row
has MAD 0 and |L - M| = 0: only pixels that really protrude change, no motion is invented.
Missing values stay missing (fill them with host.edit.fill).
"median": every pixel becomes the running median of its row (an image median filter).
"isolated": a pixel is a spike only if it sticks out from BOTH sides - far from the cubic of its
   valid neighbours (> threshold x the row's own robust residual scale + min_steps steps) and
   from each side's linear extrapolation and from the line between them (host.edit._predict.
   isolated): a spike goes out and comes back, a genuine step or Euler flip stays, so it is
   never "repaired". Pairs of glitches: pixels off the running median of 5 in runs of up to two
   are tested again with each other left out; at most `max_run` consecutive pixels are ever
   replaced; a frame where more than 8% of rows (and more than 3) jump at once is a whole-body event (a T-pose
   first frame), not a glitch. Spikes are replaced by the local cubic of the good pixels.
"robust" (default; host.edit.robust, the repair chain's despike, with fill "rotation"): every pixel is
   predicted without its own value from both sides (the cubic of the nearest good pixels, gaps
   and other suspects left out) and, for a joint's three Euler rows, from the joint's rotation
   across the frame with the frame's other two rows (intact: spikes are independent per
   pixel) - so Euler flips and gimbal lock are no spikes. Threshold: `threshold` (6) x the local
   residual scale (running median over 15 frames, at least the row's tail) + `min_steps`
   quantisation steps of the row; the worst pixel of a neighbourhood is flagged first, the
   rest predicted again without it (iterated). A still row has residual 0: nothing changes.
"""

import warnings

import numpy as np
from scipy import ndimage

from host.edit._base import derive, fill_nan_linear, row_steps
from host.edit._predict import neighbours_at
from protocol.errors import FormatError

METHODS = ("hampel", "median", "isolated", "robust")


def _running_median(v, window):
    return ndimage.median_filter(v, size=(1, window), mode="nearest")


def protrudes(values, valid, k, floor, where):
    """(rows, frames) bool: at the pixels of `where`, the pixel deviates from what its valid
    neighbours agree on (see the module docstring)."""
    rr, tt = np.nonzero(where)
    out = np.zeros(values.shape, bool)
    if rr.size == 0:
        return out
    p1, p2, n1, n2 = neighbours_at(valid, rr, tt)
    x = values
    t = tt.astype(np.float64)

    def at(i):
        return x[rr, np.maximum(i, 0)]

    has_p1, has_p2, has_n1, has_n2 = p1 >= 0, p2 >= 0, n1 >= 0, n2 >= 0
    xp1, xp2, xn1, xn2 = at(p1), at(p2), at(n1), at(n2)
    with np.errstate(invalid="ignore", divide="ignore"):
        M = np.where(has_p1 & has_n1, xp1 + (xn1 - xp1) * (t - p1) / (n1 - p1), np.nan)
        L = np.where(has_p1 & has_p2, xp1 + (xp1 - xp2) * (t - p1) / (p1 - p2), np.nan)
        Rr = np.where(has_n1 & has_n2, xn1 + (xn1 - xn2) * (t - n1) / (n1 - n2), np.nan)
    # at the edges the one-sided extrapolation stands in for the missing predictions
    M = np.where(np.isnan(M), np.where(np.isnan(L), Rr, L), M)
    L = np.where(np.isnan(L), M, L)
    Rr = np.where(np.isnan(Rr), M, Rr)
    agree = np.maximum(np.abs(L - M), np.abs(Rr - M))
    fl = np.broadcast_to(floor, values.shape)[rr, tt]
    with np.errstate(invalid="ignore"):
        hit = np.abs(x[rr, tt] - M) > k * agree + fl
    out[rr[hit], tt[hit]] = True
    return out


def _short_runs(mask, longest):
    """True where mask is in a run of at most `longest` consecutive frames."""
    out = np.zeros_like(mask)
    d = np.diff(np.pad(mask, ((0, 0), (1, 1))).astype(np.int8), axis=1)
    for r in np.flatnonzero(mask.any(axis=1)):
        for a, b in zip(np.flatnonzero(d[r] == 1), np.flatnonzero(d[r] == -1)):
            if b - a <= longest:
                out[r, a:b] = True
    return out


def isolated_spikes(v, steps, threshold=16.0, min_steps=2.0, max_run=2, side=0.4, passes=3,
                    column_share=0.08):
    """(rows, frames) bool mask of the spikes method "isolated" finds in values v (NaN missing)."""
    from host.edit import _predict as P
    valid = ~np.isnan(v)
    # the cubic through t-2, t-1, t+1, t+2 where all four are there (NaN elsewhere): the row's
    # own residual scale, and a screen - only pixels off it (or near a gap or an end) are tested
    cf = np.full(v.shape, np.nan)
    cf[:, 2:-2] = (4.0 * (v[:, 1:-3] + v[:, 3:-1]) - v[:, :-4] - v[:, 4:]) / 6.0
    res = np.abs(v - cf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sig = 1.4826 * np.nanmedian(res, axis=1)
    sig = np.where(np.isnan(sig), 0.0, sig)
    thr = (threshold * sig + min_steps * np.asarray(steps, dtype=np.float64))[:, None]
    with np.errstate(invalid="ignore"):
        screen = valid & ~(res <= thr)
    del cf, res
    flag = np.zeros(v.shape, bool)
    held = np.zeros(v.shape, bool)              # parts of longer runs: motion, never flagged
    for it in range(passes):
        if it == 0:
            f = P.isolated(v, valid, thr, side, test=screen)
            med = _running_median(fill_nan_linear(v), 5)
            with np.errstate(invalid="ignore"):
                cand = valid & (np.abs(v - med) > thr)
            pairs = P.short_runs(cand, max_run) & ~f
            if pairs.any():
                f |= P.isolated(v, valid & ~cand, thr, side, test=pairs)
        else:
            near = np.zeros_like(flag)
            for d in (-2, -1, 1, 2):
                near |= np.roll(flag, d, axis=1)
            f = P.isolated(v, valid & ~flag, thr, side, test=near & valid & ~flag & ~held)
        f = (f & ~held) | flag
        keep = P.short_runs(f, max_run)
        held |= f & ~keep
        f = keep & ~(f.sum(axis=0) > max(3.0, column_share * v.shape[0]))[None, :]
        if np.array_equal(f, flag):
            break
        flag = f
    return flag


def despike(staff, method="robust", window=7, threshold=None, protrude=3.0, min_steps=2.0,
            max_run=2, return_mask=False):
    """A despiked copy of `staff` (and the (rows, frames) bool mask of replaced pixels)."""
    if method not in METHODS:
        raise FormatError("despike: method must be one of %s, not %r" % ("/".join(METHODS), method))
    if not (np.isfinite(window) and window == int(window) and window >= 3 and int(window) % 2 == 1):
        raise FormatError("despike: window must be an odd number of frames >= 3, not %r" % window)
    window = int(window)
    if threshold is None:
        threshold = {"isolated": 16.0, "robust": 6.0}.get(method, 2.0)
    for name, val, lo in (("threshold", threshold, 0), ("protrude", protrude, 0)):
        if not (np.isfinite(val) and val > lo):
            raise FormatError("despike: %s must be a finite number > 0, not %r" % (name, val))
    if not (np.isfinite(min_steps) and min_steps >= 0):
        raise FormatError("despike: min_steps must be a finite number >= 0, not %r" % min_steps)
    if not (np.isfinite(max_run) and max_run >= 1 and max_run == int(max_run)):
        raise FormatError("despike: max_run must be a whole number of frames >= 1, not %r" % max_run)
    v = staff.values
    miss = np.isnan(v)
    # every method counts steps of an 8-bit staff at least: a "glitch" smaller than two 8-bit
    # steps (0.8 % of the row's range) is no tracking glitch, and at 16 bits the sharp turns of
    # real motion would otherwise stand out of a 256 times finer staircase
    steps = np.maximum(row_steps(staff), (staff.hi - staff.lo) / 255.0)
    if method == "robust":
        from host.edit._rotation import euler_groups
        from host.edit.robust import robust_spikes
        mask, out = robust_spikes(v, steps, euler_groups(staff),
                                  threshold=threshold, min_steps=min_steps, max_run=int(max_run))
        out[miss] = np.nan
        res = derive(staff, out)
        return (res, mask) if return_mask else res
    if method == "isolated":
        mask = isolated_spikes(v, steps, threshold=threshold,
                               min_steps=min_steps, max_run=int(max_run))
        from host.edit.fill import local_cubic
        out = local_cubic(np.where(mask | miss, np.nan, v))
        out[miss] = np.nan
        res = derive(staff, out)
        return (res, mask) if return_mask else res
    work = fill_nan_linear(v)
    med = _running_median(work, window)
    if method == "median":
        out = np.where(miss, np.nan, med)
        mask = ~miss & (out != v)
    else:
        floor = (min_steps * steps)[:, None]
        dev = np.abs(work - med)
        mad = _running_median(dev, window)
        cand = (dev > np.maximum(threshold * 1.4826 * mad, floor)) & ~miss
        mask = protrudes(v, ~miss, protrude, floor, cand)
        short = cand & _short_runs(cand, int(max_run)) & ~mask
        if short.any():
            mask |= protrudes(v, ~miss & ~cand, protrude, floor, short)
        out = fill_nan_linear(np.where(mask | miss, np.nan, v))
        out[miss] = np.nan
    res = derive(staff, out)
    return (res, mask) if return_mask else res
