"""What a pixel's valid neighbours in its row predict, for the whole image at once (O(pixels)).

    from host.edit._predict import neighbours, predictions, row_scale
    p2, p1, n1, n2 = neighbours(valid)          # (rows, frames) frame indices, -1 = none
    C, L, M, R = predictions(values, valid)     # at every pixel, from its valid neighbours only

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


def predictions(x, valid, nb=None):
    """(C, L, M, R) arrays like x (see the module docstring)."""
    p2, p1, n1, n2 = neighbours(valid) if nb is None else nb
    t = np.arange(x.shape[1], dtype=np.float64)[None, :]

    def at(i):
        return np.where(i >= 0, np.take_along_axis(x, np.maximum(i, 0), axis=1), np.nan)

    y2, y1, z1, z2 = at(p2), at(p1), at(n1), at(n2)
    f2, f1, g1, g2 = (np.where(i >= 0, i, np.nan).astype(np.float64) for i in (p2, p1, n1, n2))
    with np.errstate(invalid="ignore", divide="ignore"):
        M = y1 + (z1 - y1) * (t - f1) / (g1 - f1)
        L = y1 + (y1 - y2) * (t - f1) / (f1 - f2)
        Rr = z1 + (z1 - z2) * (t - g1) / (g1 - g2)
        xs, ys = (f2, f1, g1, g2), (y2, y1, z1, z2)
        C = np.zeros(x.shape)
        for a in range(4):
            w = np.ones(x.shape)
            for b in range(4):
                if a != b:
                    w = w * (t - xs[b]) / (xs[a] - xs[b])
            C = C + w * ys[a]
    return C, L, M, Rr, y1, z1


def median3(a, b, c):
    """Elementwise median of three arrays; NaNs are ignored (of two values the larger's side
    is not preferred: the median of (a, b, NaN) is the mean of a and b)."""
    lo, hi = np.fmin(a, b), np.fmax(a, b)
    m = np.fmax(lo, np.fmin(hi, c))
    two = np.isnan(c) & ~np.isnan(a) & ~np.isnan(b)
    return np.where(two, (a + b) / 2, m)
