"""The residuals despike:robust judges pixels by, for the whole image at once, and their scale.

    from host.edit._residual import residuals, scale_parts, running_median_at, ref
    res_c, near = residuals(values, valid)        # |v - C| and min(|v - C|, |v - L|, |v - R|)
    base, floor = scale_parts(near, valid, 15)    # what the local scale is the median of; least
    s = 1.4826 * running_median_at(base, rows, frames, 15)   # only where it is needed

C, L, M, R as in host.edit._predict (from the nearest valid pixels of the row, the pixel's own
value never used); `ref` picks the best there is. `residuals` is the one dense pass of
despike:robust: the neighbours of the frames valid in every row are found once for all rows,
the image is predicted by gathering whole columns in float32 relative to each row's median (a
row spanning a thousandth of a degree keeps its precision), and only pixels whose own row has
holes near them are predicted one by one in float64.
"""

import warnings

import numpy as np

from host.edit import _predict as P

TAIL_FRAMES = 50          # a row's tail is measured on rows of at least this many frames


def ref(C, L, M, Rr, y1, z1):
    """The best of the neighbour predictions there is: C, else M, else one side's line, else held."""
    ref = np.where(np.isnan(C), M, C)
    ref = np.where(np.isnan(ref), np.where(np.isnan(L), Rr, L), ref)
    return np.where(np.isnan(ref), np.where(np.isnan(y1), z1, y1), ref)


def residuals(v, valid):
    """(|v - C|, the least of |v - C|, |v - L|, |v - R|) for every pixel, from the valid
    neighbours (see host.edit._predict). Fast: the neighbours of the frames valid in every row
    are found once for all rows (gaps of whole frames are the common case) and the image is
    predicted in float32 relative to each row's first value (so a row of a thousandth of a
    degree keeps its precision); only pixels whose row has holes of its own near them are
    predicted one by one, in float64. A spike pollutes C of its neighbours, but not both of L
    and R, so the second is a scale that a spike does not spread."""
    R, F = v.shape
    common = valid.all(axis=0)
    p2, p1, n1, n2 = (i[0] for i in P.neighbours(common[None, :]))
    t = np.arange(F, dtype=np.float64)
    f2, f1, g1, g2 = (np.where(i >= 0, i, -10 ** 9).astype(np.float64) for i in (p2, p1, n1, n2))
    with np.errstate(invalid="ignore", divide="ignore"):
        a2, a1, b1, b2 = t - f2, t - f1, t - g1, t - g2
        w = [(a1 * b1 * b2) / ((f2 - f1) * (f2 - g1) * (f2 - g2)),
             (a2 * b1 * b2) / ((f1 - f2) * (f1 - g1) * (f1 - g2)),
             (a2 * a1 * b2) / ((g1 - f2) * (g1 - f1) * (g1 - g2)),
             (a2 * a1 * b1) / ((g2 - f2) * (g2 - f1) * (g2 - g1))]
        wl = (t - f1) / (f1 - f2)
        wr = (t - g1) / (g1 - g2)
    ok4 = (p2 >= 0) & (n2 >= 0)
    w = [np.where(ok4, x, np.nan).astype(np.float32) for x in w]
    wl = np.where(p2 >= 0, wl, np.nan).astype(np.float32)
    wr = np.where(n2 >= 0, wr, np.nan).astype(np.float32)
    with np.errstate(invalid="ignore"), _quiet():
        offset = np.nan_to_num(np.nanmedian(v[:, :: max(1, F // 64)], axis=1))[:, None]
    x32 = (v - offset).astype(np.float32)
    y2, y1, z1, z2 = (x32[:, np.maximum(i, 0)] for i in (p2, p1, n1, n2))
    with np.errstate(invalid="ignore"):
        C = w[0] * y2 + w[1] * y1 + w[2] * z1 + w[3] * z2
        res_c = np.abs(x32 - C)
        del C
        near = np.fmin(res_c, np.fmin(np.abs(x32 - (y1 + (y1 - y2) * wl)),
                                      np.abs(x32 - (z1 + (z1 - z2) * wr))))
    del y2, z2
    # frames without two valid frames either side: the fallbacks of ref(), column by column
    cols = np.flatnonzero(~ok4)
    if cols.size:
        pr = [a[:, cols] for a in (y1, z1)]
        q1, r1 = p1[cols], n1[cols]
        with np.errstate(invalid="ignore", divide="ignore"):
            wm = ((cols - q1) / np.where(r1 - q1 == 0, 1, r1 - q1)).astype(np.float32)
            M = pr[0] + (pr[1] - pr[0]) * wm
            L = pr[0] + (pr[0] - x32[:, np.maximum(p2[cols], 0)]) * wl[cols]
            Rr = pr[1] + (pr[1] - x32[:, np.maximum(n2[cols], 0)]) * wr[cols]
            best = np.where(((q1 >= 0) & (r1 >= 0))[None, :], M,
                            np.where((p2[cols] >= 0)[None, :], L,
                                     np.where((n2[cols] >= 0)[None, :], Rr,
                                              np.where((q1 >= 0)[None, :], pr[0], pr[1]))))
            rc = np.abs(x32[:, cols] - best)
        res_c[:, cols] = rc
        near[:, cols] = np.fmin(rc, near[:, cols])
    del y1, z1
    # pixels whose own row differs from the common pattern within their neighbour span
    own = (valid ^ common[None, :]).astype(np.int32)
    if own.any():
        cs = np.concatenate([np.zeros((R, 1), np.int32), np.cumsum(own, axis=1)], axis=1)
        lo = np.where(p2 >= 0, p2, 0)                      # no second neighbour: to the end
        hi = np.where(n2 >= 0, n2, F - 1)
        bad = valid & ((cs[:, hi + 1] - cs[:, lo]) > 0)
        rr, tt = np.nonzero(bad)
        if rr.size:
            pr = P.predictions(v, valid, at=(rr, tt))
            x = v[rr, tt]
            with np.errstate(invalid="ignore"):
                rc = np.abs(x - ref(*pr))
                res_c[rr, tt] = rc
                near[rr, tt] = np.fmin(rc, np.fmin(np.abs(x - pr[1]), np.abs(x - pr[3])))
    res_c[~valid] = np.nan
    near[~valid] = np.nan
    return res_c, near


def scale_parts(near, good, window):
    """(base, floor): the residuals the local scale is the running median of (NaN and missing
    pixels -> the row's own scale), and per row the least scale - a quarter of the row's own
    (1.4826 x its median) and the row's tail (the 90th percentile is 1.645 sigma for a Gaussian
    row), which a row whose genuine residuals are heavy-tailed (toes slapping the floor) needs;
    measured on rows of TAIL_FRAMES frames or more, a tail of a few frames is noise."""
    F = near.shape[1]
    sub = near[:, :: max(1, F // 20000)]          # row statistics from 20,000 frames at most
    with np.errstate(invalid="ignore"), _quiet():
        row_s = 1.4826 * np.nanmedian(sub, axis=1)
    row_s = np.where(np.isnan(row_s), 0.0, row_s)[:, None].astype(near.dtype)
    base = np.where(np.isnan(near), row_s, near)
    tail = np.percentile(np.where(np.isnan(sub), row_s, sub), 90.0, axis=1)[:, None] / 1.645
    tail = np.where(good.sum(axis=1)[:, None] >= TAIL_FRAMES, tail, 0.0)
    return base, np.maximum(0.25 * row_s, tail).astype(np.float64)


def running_median_at(x, rr, tt, window):
    """The median of x[r, t - window//2 .. t + window//2] (mirrored at the ends) at each (r, t):
    the running median, computed only where it is asked for."""
    F = x.shape[1]
    h = window // 2
    idx = tt[:, None] + np.arange(-h, h + 1)[None, :]
    idx = np.where(idx < 0, -idx, idx)
    idx = np.where(idx > F - 1, 2 * (F - 1) - idx, idx)
    idx = np.clip(idx, 0, F - 1)
    w = x[rr[:, None], idx]
    return np.partition(w, h, axis=1)[:, h]


class _quiet:
    """A context that silences numpy's all-NaN RuntimeWarnings."""

    def __enter__(self):
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *a):
        return self._w.__exit__(*a)
