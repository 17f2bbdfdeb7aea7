"""Shared helpers of the staff edits: a derived staff with the header kept right.

    from host.edit._base import derive, fill_nan_linear, row_steps
    out = derive(staff, new_values)                 # same rows, fps, bits, skeleton, meta
    filled = fill_nan_linear(values)                # a NaN-free working copy (edges held)

Every edit returns a new Staff; the source is never modified.
"""

import numpy as np

from host.staff import Staff, levels

KEEP = object()


def derive(staff, values, rows=KEEP, fps=KEEP, skeleton=KEEP, meta=KEEP):
    """A new Staff like `staff` with `values` (and optionally other rows/fps/skeleton/meta)."""
    return Staff(values,
                 list(staff.rows) if rows is KEEP else rows,
                 staff.fps if fps is KEEP else fps,
                 staff.bits,
                 staff.skeleton if skeleton is KEEP else skeleton,
                 dict(staff.meta) if meta is KEEP else meta)


def row_steps(staff):
    """(rows,) one quantisation step of each row in its unit."""
    return (staff.hi - staff.lo) / levels(staff.bits)


def fill_nan_linear(values):
    """A copy of values (rows, frames) with NaNs linearly interpolated, edges held, all-NaN rows 0."""
    v = np.array(values, dtype=np.float64, copy=True)
    if v.ndim == 1:
        v = v[None, :]
    miss = np.isnan(v)
    if not miss.any():
        return v
    x = np.arange(v.shape[1])
    for r in np.flatnonzero(miss.any(axis=1)):
        ok = ~miss[r]
        if not ok.any():
            v[r] = 0.0
            continue
        v[r, ~ok] = np.interp(x[~ok], x[ok], v[r, ok])
    return v


def as_skeleton(sk):
    """A Skeleton object from a Skeleton, a dict or None."""
    if sk is None or not isinstance(sk, dict):
        return sk
    from device.body.skeleton import Skeleton
    return Skeleton.from_dict(sk)


def seconds_to_frame(staff, t_s, name="time"):
    """Frame index of a time in seconds (rounded), checked to lie within the staff."""
    f = int(round(float(t_s) * staff.fps))
    if f < 0 or f > staff.frames:
        from protocol.errors import FormatError
        raise FormatError("%s %g s is outside the staff (0 .. %.3f s)" % (name, t_s, staff.duration_s))
    return f
