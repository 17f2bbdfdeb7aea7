"""Segment: split a staff at still periods or at named times, and list the segments.

    from host.edit.segment import find_segments, split, still_mask
    segs = find_segments(staff)                          # [(start_frame, stop_frame), ...] moving parts
    segs = find_segments(staff, times_s=[2.0, 5.5])      # cut at these times
    parts = split(staff, segs)                           # one Staff per segment

Still: the 90th percentile of the rotation rows' speeds (deg/s, 0.1 s moving average) stays under
`speed_deg_s` for at least `min_still_s`. Segments are the stretches between still periods
(shorter than `min_segment_s` are dropped). Without rotation rows all rows are used, in their
units per second.
"""

import numpy as np
from scipy import ndimage

from host.edit._base import fill_nan_linear, seconds_to_frame
from host.edit.timeline import trim
from protocol.errors import FormatError


def speed(staff, percentile=90.0):
    """(frames,) how fast the body moves: the `percentile` of its rows' speeds per second
    (rotation rows in deg/s when there are any), so one jittering finger does not count."""
    rot = [i for i, r in enumerate(staff.rows) if r.unit in ("deg", "rad") or r.wrap]
    rows = rot if rot else list(range(staff.nrows))
    v = fill_nan_linear(staff.values[rows])
    if staff.frames < 2 or not rows:
        return np.zeros(staff.frames)
    d = np.abs(np.gradient(v, axis=1)) * staff.fps
    win = max(1, int(round(0.1 * staff.fps)))
    d = ndimage.uniform_filter1d(d, win, axis=1, mode="nearest")
    return np.percentile(d, percentile, axis=0)


def still_mask(staff, speed_deg_s=15.0, min_still_s=0.5):
    """(frames,) True where the body is still for at least min_still_s."""
    slow = speed(staff) < speed_deg_s
    need = max(1, int(round(min_still_s * staff.fps)))
    d = np.diff(np.concatenate(([0], slow.astype(np.int8), [0])))
    out = np.zeros(staff.frames, bool)
    for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)):
        if b - a >= need:
            out[a:b] = True
    return out


def find_segments(staff, times_s=None, speed_deg_s=15.0, min_still_s=0.5, min_segment_s=0.2):
    """[(start, stop)] frame ranges: between named times, or the moving parts between still ones."""
    if times_s is not None:
        cuts = sorted({0, staff.frames} | {seconds_to_frame(staff, t, "segment time") for t in times_s})
        return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    still = still_mask(staff, speed_deg_s, min_still_s)
    d = np.diff(np.concatenate(([0], (~still).astype(np.int8), [0])))
    need = max(1, int(round(min_segment_s * staff.fps)))
    return [(int(a), int(b)) for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1))
            if b - a >= need]


def split(staff, segments):
    """One Staff per (start, stop) frame range."""
    out = []
    for a, b in segments:
        if not 0 <= a < b <= staff.frames:
            raise FormatError("segment %d..%d is outside the staff's %d frames" % (a, b, staff.frames))
        out.append(trim(staff, a / staff.fps, b / staff.fps))
    return out


def describe(staff, segments):
    """Lines listing the segments: index, start and stop in seconds, frames."""
    lines = ["#   start_s   stop_s  frames"]
    for i, (a, b) in enumerate(segments):
        lines.append("%-3d %7.3f %8.3f %7d" % (i + 1, a / staff.fps, b / staff.fps, b - a))
    return lines
