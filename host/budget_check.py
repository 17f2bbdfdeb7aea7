"""A staff file's error bound ("e", "em" in its header) checked for the values it is written with.

    from host.budget_check import checked, stamp
    staff = stamp(staff)       # the bound was made for these values, rows and bits (budget_ranges)
    staff = checked(staff)     # before writing: the staff, or a copy without a bound that fails

`convert --max-error-mm E` chooses the steps for the clip's own values and checks them; but an
edit (smooth, despike, retime ...) keeps the meta of the staff it came from, the bound with it,
while its values are new ones: a smoothed clip overshoots the ranges fitted to the old one
(clamped: 58 mm at a joint) and a measured bound was measured on other poses. So a bound whose
values, ranges or depth changed since it was made (a fingerprint of them, kept in the meta) is
measured again before it is written: by exact forward kinematics of the decoded values
(host/fkerror.py) where the rows are the skeleton's dofs, else (no skeleton to measure with,
missing values) by no value lying outside its range; one that fails is not written.
"""

import hashlib

import numpy as np

KEY = "max_error_for"           # meta: the fingerprint of the values the bound holds for


def fingerprint(staff):
    """sha1 of the values, row names, ranges and depth."""
    h = hashlib.sha1()
    h.update(np.ascontiguousarray(staff.values, dtype=np.float64).tobytes())
    h.update("\0".join(staff.names).encode("utf-8"))
    h.update(np.array([[r.lo, r.hi] for r in staff.rows], dtype=np.float64).tobytes())
    h.update(b"%d" % staff.bits)
    return h.hexdigest()


def stamp(staff):
    """The staff, its bound (if any) marked as holding for its values as they are."""
    if staff.meta.get("max_error_mm") is not None:
        staff.meta[KEY] = fingerprint(staff)
    return staff


def holds(staff, max_error_mm):
    """True when the staff's decoded values are within max_error_mm of its values (every joint
    and 3 cm point by forward kinematics; without a skeleton to measure, no value clamped)."""
    from host import budget
    from host.budget_measured import _measurable
    from host.fkerror import point_errors_mm

    v = np.asarray(staff.values, dtype=np.float64)
    sk = budget._skeleton(staff)
    if _measurable(sk, staff):
        return float(point_errors_mm(sk, v, staff.quantised().values).max()) <= max_error_mm
    lo = np.array([r.lo for r in staff.rows])[:, None]
    hi = np.array([r.hi for r in staff.rows])[:, None]
    # half a step of room at each end: the codes' own rounding
    half = (hi - lo) / (2.0 * ((1 << staff.bits) - 1))
    ok = ~np.isfinite(v) | ((v >= lo - half) & (v <= hi + half))
    return bool(ok.all())


def checked(staff):
    """The staff if its bound holds for its values (or it has none), else a copy without it."""
    e = staff.meta.get("max_error_mm")
    if e is None or staff.meta.get(KEY) == fingerprint(staff):
        return staff
    out = staff.copy()
    if holds(staff, e):
        return stamp(out)
    for k in ("max_error_mm", "max_error_bound", KEY):
        out.meta.pop(k, None)
    return out
