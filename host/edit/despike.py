"""Despike: find protruding pixels (tracking glitches) and replace them.

    from host.edit.despike import despike
    clean = despike(staff)                                  # Hampel, window 7, 3 sigma
    clean = despike(staff, method="median", window=5)       # classic median filter of the image
    clean, mask = despike(staff, return_mask=True)          # which pixels were replaced

Hampel: a pixel is an outlier when |v - median| > threshold * 1.4826 * MAD over a window of
`window` frames of its row (and more than `min_steps` quantisation steps away, so the 8-bit
staircase is never mistaken for a spike); outliers are replaced by the running median
(`replace="median"`) or interpolated from the good neighbours (`replace="interp"`, default).
A still row has MAD 0, so nothing on it is replaced but real spikes: no motion is invented.
Missing values stay missing (fill them with host.edit.fill). Vectorised over the whole image
with scipy.ndimage.median_filter.
"""

import numpy as np
from scipy import ndimage

from host.edit._base import derive, fill_nan_linear, row_steps
from protocol.errors import FormatError

METHODS = ("hampel", "median")


def _running_median(v, window):
    return ndimage.median_filter(v, size=(1, window), mode="nearest")


def despike(staff, method="hampel", window=7, threshold=3.0, min_steps=2.0, replace="interp",
            return_mask=False):
    """A despiked copy of `staff` (and the (rows, frames) bool mask of replaced pixels)."""
    if method not in METHODS:
        raise FormatError("despike: method must be one of %s, not %r" % ("/".join(METHODS), method))
    window = int(window)
    if window < 3 or window % 2 == 0:
        raise FormatError("despike: window must be an odd number of frames >= 3, not %r" % window)
    if not threshold > 0:
        raise FormatError("despike: threshold must be > 0")
    if replace not in ("median", "interp"):
        raise FormatError("despike: replace must be median or interp, not %r" % (replace,))
    v = staff.values
    miss = np.isnan(v)
    work = fill_nan_linear(v)
    med = _running_median(work, window)
    if method == "median":
        out = np.where(miss, np.nan, med)
        mask = ~miss & (out != v)
    else:
        dev = np.abs(work - med)
        mad = _running_median(dev, window)
        floor = (min_steps * row_steps(staff))[:, None]
        mask = (dev > np.maximum(threshold * 1.4826 * mad, floor)) & ~miss
        if replace == "median":
            out = np.where(mask, med, v)
        else:
            # outliers become holes, interpolated from the good pixels of their row
            holes = np.where(mask, np.nan, work)
            out = fill_nan_linear(holes)
            out[miss] = np.nan
            out = np.where(mask, out, v)
    res = derive(staff, out)
    return (res, mask) if return_mask else res
