"""Retime: play faster or slower, or resample to another frame rate.

    from host.edit.retime import retime
    fast = retime(staff, speed=2.0)          # half as long, same fps
    slow = retime(staff, speed=0.5)          # twice as long
    s60 = retime(staff, fps=60)              # same duration, 60 frames a second

Values are interpolated along time (linear or cubic); a new frame is missing when either
original frame around it is missing. When frames are dropped (speed up or lower fps) the rows
are first low-passed with a Gaussian (sigma = half the decimation ratio in frames) against
aliasing.
"""

import numpy as np
from scipy import interpolate, ndimage

from host.edit._base import derive, fill_nan_linear
from protocol.errors import FormatError


def retime(staff, speed=1.0, fps=None, method="linear"):
    """A staff played `speed` times as fast and/or resampled to `fps`."""
    speed = float(speed)
    new_fps = staff.fps if fps is None else float(fps)
    if not (speed > 0 and np.isfinite(speed)) or speed > 1000:
        raise FormatError("retime: speed must be > 0, not %r" % (speed,))
    if not (new_fps > 0 and np.isfinite(new_fps)) or new_fps > 100000:
        raise FormatError("retime: fps must be > 0, not %r" % (fps,))
    if method not in ("linear", "cubic"):
        raise FormatError("retime: method must be linear or cubic")
    n = staff.frames
    # source frame position of each new frame: new frame k at time k/new_fps plays source
    # time k/new_fps * speed
    ratio = speed * staff.fps / new_fps           # source frames per new frame
    m = int(np.floor((n - 1) / ratio + 1e-9)) + 1 if n > 0 else 0
    x = np.arange(m) * ratio
    v = staff.values
    miss = np.isnan(v)
    work = fill_nan_linear(v) if n else v
    if ratio > 1.5 and n > 1:
        work = ndimage.gaussian_filter1d(work, 0.5 * ratio, axis=1, mode="nearest")
    if n < 2 or m == 0:
        out = work[:, :m].copy()
    elif method == "cubic" and n >= 4:
        out = interpolate.CubicSpline(np.arange(n), work, axis=1)(x)
    else:
        out = interpolate.interp1d(np.arange(n), work, axis=1, assume_sorted=True)(x)
    if miss.any() and n:
        lo = np.clip(np.floor(x + 1e-9).astype(int), 0, n - 1)
        hi = np.clip(np.ceil(x - 1e-9).astype(int), 0, n - 1)
        out[miss[:, lo] | miss[:, hi]] = np.nan
    return derive(staff, out, fps=new_fps)
