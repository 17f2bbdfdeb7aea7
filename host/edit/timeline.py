"""Timeline edits: trim (cut), remove, splice, insert and concatenate, with crossfades.

    from host.edit.timeline import trim, remove, splice, insert, concatenate
    part = trim(staff, 1.0, 4.5)                         # keep 1.0 s .. 4.5 s
    rest = remove(staff, 1.0, 4.5, crossfade_s=0.2)      # take it out, join smoothly
    both = concatenate([a, b], crossfade_s=0.25)         # b after a, 0.25 s blend
    more = insert(staff, other, at_s=2.0, crossfade_s=0.2)
    new = splice(staff, other, 1.0, 4.5, crossfade_s=0.2) # replace 1.0..4.5 s by `other`

A crossfade of n frames overlaps the last n frames of the first part with the first n of the
second and blends them with a raised-cosine weight (so the join has no jump and no kink); the
result is n frames shorter than the parts laid end to end. The other staff's rows are matched
by name (it must have every row of the first); its frame rate is resampled to the first's; the
result keeps the first staff's rows, ranges and skeleton.
"""

import numpy as np

from host.edit._base import derive, seconds_to_frame
from protocol.errors import FormatError


def trim(staff, start_s, stop_s=None):
    """The part of the staff from start_s to stop_s (seconds; None = the end)."""
    a = seconds_to_frame(staff, start_s, "start")
    b = staff.frames if stop_s is None else seconds_to_frame(staff, stop_s, "stop")
    if b <= a:
        raise FormatError("cut: stop %s must be after start %g s" % (stop_s, start_s))
    return derive(staff, staff.values[:, a:b].copy())


def _aligned(staff, other):
    """other's values laid out in staff's row order and frame rate."""
    if other.fps != staff.fps:
        from host.edit.retime import retime
        other = retime(other, fps=staff.fps)
    idx = {n: i for i, n in enumerate(other.names)}
    missing = [n for n in staff.names if n not in idx]
    if missing:
        raise FormatError("the other staff has no row %r (of %d rows missing)" % (missing[0], len(missing)))
    return other.values[[idx[n] for n in staff.names]]


def _join(a, b, n):
    """Values a then b (rows, frames) overlapping n frames with a raised-cosine blend."""
    n = int(min(n, a.shape[1], b.shape[1]))
    if n <= 0:
        return np.concatenate([a, b], axis=1)
    w = 0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 1.0) / (n + 1.0))   # 0 -> 1, excl. ends
    x, y = a[:, -n:], b[:, :n]
    mixed = (1 - w) * x + w * y
    mixed = np.where(np.isnan(x), y, np.where(np.isnan(y), x, mixed))
    return np.concatenate([a[:, :-n], mixed, b[:, n:]], axis=1)


def _frames(staff, seconds):
    if seconds is None or seconds <= 0:
        return 0
    return int(round(float(seconds) * staff.fps))


def concatenate(staffs, crossfade_s=0.0):
    """The staffs one after another (rows, ranges and skeleton of the first)."""
    staffs = list(staffs)
    if not staffs:
        raise FormatError("concatenate: no staffs")
    first = staffs[0]
    v = first.values
    n = _frames(first, crossfade_s)
    for other in staffs[1:]:
        v = _join(v, _aligned(first, other), n)
    return derive(first, v)


def remove(staff, start_s, stop_s, crossfade_s=0.0):
    """The staff without start_s..stop_s, the two sides joined (crossfade optional)."""
    a = seconds_to_frame(staff, start_s, "start")
    b = seconds_to_frame(staff, stop_s, "stop")
    if b <= a:
        raise FormatError("remove: stop must be after start")
    return derive(staff, _join(staff.values[:, :a], staff.values[:, b:], _frames(staff, crossfade_s)))


def insert(staff, other, at_s, crossfade_s=0.0):
    """`other` inserted at at_s, crossfaded at both joins."""
    at = seconds_to_frame(staff, at_s, "insert time")
    n = _frames(staff, crossfade_s)
    mid = _aligned(staff, other)
    return derive(staff, _join(_join(staff.values[:, :at], mid, n), staff.values[:, at:], n))


def splice(staff, other, start_s, stop_s, crossfade_s=0.0):
    """start_s..stop_s of the staff replaced by `other`, crossfaded at both joins."""
    a = seconds_to_frame(staff, start_s, "start")
    b = seconds_to_frame(staff, stop_s, "stop")
    if b < a:
        raise FormatError("splice: stop must not be before start")
    n = _frames(staff, crossfade_s)
    mid = _aligned(staff, other)
    return derive(staff, _join(_join(staff.values[:, :a], mid, n), staff.values[:, b:], n))
