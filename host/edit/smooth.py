"""Smooth: Gaussian, Savitzky-Golay, and zero-phase Butterworth with the cutoff in hertz.

    from host.edit.smooth import smooth
    s = smooth(staff, "butter", cutoff_hz=6.0)           # 4th order, forward-backward (no lag)
    s = smooth(staff, "gaussian", sigma_s=0.05)
    s = smooth(staff, "savgol", window_s=0.25, order=3)

The staff's own frame rate turns seconds and hertz into frames. Missing values are bridged
linearly while filtering and are missing again afterwards (fill first to keep them). Whole
image at once (scipy.ndimage / scipy.signal along the frame axis).
"""

import numpy as np
from scipy import ndimage, signal

from host.edit._base import derive, fill_nan_linear
from protocol.errors import FormatError

METHODS = ("butter", "gaussian", "savgol")


def smooth(staff, method="butter", cutoff_hz=6.0, order=None, sigma_s=0.05, window_s=0.25):
    """A smoothed copy of `staff` (see the module docstring for the parameters)."""
    if method not in METHODS:
        raise FormatError("smooth: method must be one of %s, not %r" % ("/".join(METHODS), method))
    v = staff.values
    miss = np.isnan(v)
    work = fill_nan_linear(v)
    n = staff.frames
    if n < 2:
        return derive(staff, v.copy())
    if method == "butter":
        order = 4 if order is None else int(order)
        nyq = staff.fps / 2.0
        if not 0 < cutoff_hz < nyq:
            raise FormatError("smooth: cutoff %g Hz must be between 0 and %g Hz (half of %g fps)"
                              % (cutoff_hz, nyq, staff.fps))
        if not 1 <= order <= 8:
            raise FormatError("smooth: butter order must be 1..8")
        sos = signal.butter(order, cutoff_hz / nyq, output="sos")
        padlen = min(3 * (2 * len(sos) + 1), n - 1)
        out = signal.sosfiltfilt(sos, work, axis=1, padlen=padlen)
    elif method == "gaussian":
        sigma = float(sigma_s) * staff.fps
        if not sigma > 0:
            raise FormatError("smooth: sigma must be > 0")
        out = ndimage.gaussian_filter1d(work, sigma, axis=1, mode="nearest")
    else:
        order = 3 if order is None else int(order)
        win = int(round(float(window_s) * staff.fps)) | 1
        win = min(win, n if n % 2 else n - 1)
        if win <= order:
            raise FormatError("smooth: savgol window (%d frames) must exceed the order %d" % (win, order))
        out = signal.savgol_filter(work, win, order, axis=1, mode="interp")
    out[miss] = np.nan
    return derive(staff, out)
