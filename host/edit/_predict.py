"""What a pixel's valid neighbours in its row predict, for the whole image at once (O(pixels)).

    from host.edit._predict import neighbours, predictions, isolated, short_runs
    p2, p1, n1, n2 = neighbours(valid)          # (rows, frames) frame indices, -1 = none
    C, L, M, R, y1, z1 = predictions(values, valid)              # every pixel, dense
    C, L, M, R, y1, z1 = predictions(values, valid, at=(rr, tt)) # only these pixels (sparse)
    spikes = isolated(values, valid, thr, side=0.4, test=where)  # despike:isolated's test

For a pixel at frame t with the two nearest valid frames p2 < p1 < t < n1 < n2 of its row:
C is the cubic through the four (Lagrange), M the line through p1 and n1, L the line through
p2, p1 extrapolated to t and R the line through n1, n2 extrapolated back to t. NaN where the
frames needed are absent. The pixel's own value is never used, so these predictions serve both
to test a pixel (despike) and to fill one that is missing (fill).
"""

import numpy as np


def neighbours(valid):
    """(p2, p1, n1, n2) int arrays like `valid`: nearest valid frames before and after each pixel."""
    R, F = valid.shape
    ar = np.arange(F)
    last = np.maximum.accumulate(np.where(valid, ar, -1), axis=1)        # last valid <= t
    first = np.minimum.accumulate(np.where(valid, ar, F)[:, ::-1], axis=1)[:, ::-1]   # >= t
    p1 = np.full((R, F), -1, dtype=np.int64)
    p1[:, 1:] = last[:, :-1]
    p2 = np.where(p1 >= 1, np.take_along_axis(last, np.maximum(p1 - 1, 0), axis=1), -1)
    p2 = np.where(p1 >= 0, p2, -1)
    n1 = np.full((R, F), F, dtype=np.int64)
    n1[:, :-1] = first[:, 1:]
    n2 = np.where(n1 < F - 1, np.take_along_axis(first, np.minimum(n1 + 1, F - 1), axis=1), F)
    n2 = np.where(n1 < F, n2, F)
    return p2, p1, np.where(n1 < F, n1, -1), np.where(n2 < F, n2, -1)


def neighbours_at(valid, rows, cols):
    """The two nearest valid frames before and after each (row, col) query, in the same row:
    (p1, p2, n1, n2), -1 where there is none. Queries only - O(pixels + K log pixels)."""
    R, F = valid.shape
    vf = np.flatnonzero(valid.ravel())
    c = rows.astype(np.int64) * F + cols
    i = np.searchsorted(vf, c, "left")
    j = np.searchsorted(vf, c, "right")

    def pick(k, ok):
        if vf.size == 0:
            return np.full(c.shape, -1, dtype=np.int64)
        got = vf[np.clip(k, 0, vf.size - 1)]
        return np.where(ok & (got // F == rows), got % F, -1)

    return pick(i - 1, i >= 1), pick(i - 2, i >= 2), pick(j, j < vf.size), pick(j + 1, j + 1 < vf.size)


def predictions(x, valid, nb=None, at=None):
    """(C, L, M, R, y1, z1) like x (see the module docstring; y1, z1 are the nearest valid values
    before and after), or 1-D at the pixels `at` = (rows, frames) only."""
    if at is None:
        p2, p1, n1, n2 = neighbours(valid) if nb is None else nb
        t = np.arange(x.shape[1], dtype=np.float64)[None, :]
        idx = (p2, p1, n1, n2)
        rows = np.arange(x.shape[0])[:, None]
    else:
        rows, cols = at
        t = cols.astype(np.float64)
        if nb is None:
            q1, q2, m1, m2 = neighbours_at(valid, rows, cols)
            idx = (q2, q1, m1, m2)
        else:
            idx = tuple(i[rows, cols] for i in nb)
    y2, y1, z1, z2 = (np.where(i >= 0, x[rows, np.maximum(i, 0)], np.nan) for i in idx)
    f2, f1, g1, g2 = (np.where(i >= 0, i, -10 ** 9).astype(np.float64) for i in idx)
    with np.errstate(invalid="ignore", divide="ignore"):
        M = y1 + (z1 - y1) * ((t - f1) / (g1 - f1))
        L = y1 + (y1 - y2) * ((t - f1) / (f1 - f2))
        Rr = z1 + (z1 - z2) * ((t - g1) / (g1 - g2))
        # Lagrange cubic through (f2, y2), (f1, y1), (g1, z1), (g2, z2)
        a2, a1, b1, b2 = t - f2, t - f1, t - g1, t - g2
        C = (y2 * (a1 * b1 * b2) / ((f2 - f1) * (f2 - g1) * (f2 - g2))
             + y1 * (a2 * b1 * b2) / ((f1 - f2) * (f1 - g1) * (f1 - g2))
             + z1 * (a2 * a1 * b2) / ((g1 - f2) * (g1 - f1) * (g1 - g2))
             + z2 * (a2 * a1 * b1) / ((g2 - f2) * (g2 - f1) * (g2 - g1)))
    return C, L, M, Rr, y1, z1


def short_runs(mask, longest):
    """True where mask is in a run of at most `longest` consecutive frames (vectorised)."""
    R, F = mask.shape
    ar = np.arange(F)
    start = np.maximum.accumulate(np.where(~mask, ar, -1), axis=1) + 1
    end = np.minimum.accumulate(np.where(~mask, ar, F)[:, ::-1], axis=1)[:, ::-1]
    return mask & (end - start <= longest)


def isolated(x, valid, thr, side=0.25, test=None, pred=None):
    """(rows, frames) bool: pixels that stick out from BOTH sides (a spike goes out and comes
    back). With C, L, M, R from the valid neighbours (not the pixel itself), a pixel is a spike
    when |x - C| > thr and x is not explained by either side or by the line between them:
    |x - S| > side * |L - R| + thr for S in L, M, R. A genuine step keeps x near L or R, a
    fast transition keeps it near M; a glitch is far from all of them. Of two neighbouring
    hits only the larger is kept (the other is a victim of it). `thr` (rows, 1). Only the
    pixels of `test` (default: valid) are tested, and predicted only there."""
    test = valid if test is None else test
    out = np.zeros(x.shape, bool)
    if pred is None:
        rr, tt = np.nonzero(test)
        if rr.size == 0:
            return out
        C, L, M, R, y1, z1 = predictions(x, valid, at=(rr, tt))
        xv, th = x[rr, tt], np.broadcast_to(thr, x.shape)[rr, tt]
    else:
        C, L, M, R, y1, z1 = pred
        xv, th = x, thr
    ref = np.where(np.isnan(C), M, C)
    ref = np.where(np.isnan(ref), np.where(np.isnan(L), R, L), ref)
    with np.errstate(invalid="ignore"):
        tol = side * np.abs(L - R) + th
        hit = np.abs(xv - ref) > th
        for s in (L, R, M):
            hit &= ~(np.abs(xv - s) <= tol)
    dev = np.where(hit, np.abs(xv - ref), 0.0)
    if pred is None:
        out[rr, tt] = hit
        d = np.zeros(x.shape)
        d[rr, tt] = dev
        dev = d
    else:
        out = hit & test
        dev = np.where(out, dev, 0.0)
    top = np.ones(dev.shape, bool)
    top[:, 1:] &= dev[:, 1:] >= dev[:, :-1]
    top[:, :-1] &= dev[:, :-1] >= dev[:, 1:]
    return out & top

