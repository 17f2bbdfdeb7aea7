"""Clamp to joint limits, and select or drop rows.

    from host.edit.limits import clamp, select_rows, drop_rows
    safe, report = clamp(staff)                  # {row name: frames clamped}, skeleton limits
    safe, report = clamp(staff, limits="range")  # to each row's own [lo, hi]
    arms = select_rows(staff, ["l_shoulder_*", "l_elbow_flex"])   # shell-style patterns
    rest = drop_rows(staff, ["*_fingers_*", "*_thumb_*"])

Selecting or dropping rows also drops the matching dofs from the staff's skeleton, so the
rows stay the skeleton's dofs in order (a dropped dof stays at 0 in forward kinematics).
"""

import fnmatch

import numpy as np

from host.edit._base import as_skeleton, derive
from protocol.errors import FormatError


def clamp(staff, limits="skeleton"):
    """(clamped copy, {row: number of values clamped}) to the skeleton's or the rows' limits."""
    lo, hi = staff.lo.copy(), staff.hi.copy()
    if limits == "skeleton":
        sk = as_skeleton(staff.skeleton)
        if sk is None:
            raise FormatError("clamp: the staff has no skeleton (use clamp:range)")
        for r, n in enumerate(staff.names):
            if n in sk._dof_index:
                d = sk.dofs[sk.dof_index(n)]
                lo[r], hi[r] = d.lo, d.hi
    elif limits != "range":
        raise FormatError("clamp: limits must be skeleton or range, not %r" % (limits,))
    v = staff.values
    with np.errstate(invalid="ignore"):
        out = np.clip(v, lo[:, None], hi[:, None])
        changed = (out != v) & ~np.isnan(v)
    report = {staff.names[r]: int(c) for r, c in enumerate(changed.sum(axis=1)) if c}
    return derive(staff, out), report


def _match(staff, patterns):
    pats = list(patterns)
    if not pats:
        raise FormatError("select/drop: no row names given")
    keep = []
    for p in pats:
        hit = [i for i, n in enumerate(staff.names) if fnmatch.fnmatchcase(n, p)]
        if not hit:
            raise FormatError("no row matches %r" % (p,))
        keep.extend(i for i in hit if i not in keep)
    return keep


def _subset(staff, rows):
    rows = sorted(rows)
    sk = staff.skeleton
    if sk is not None:
        d = (as_skeleton(sk)).to_dict()
        names = {staff.names[i] for i in rows}
        d["dofs"] = [x for x in d["dofs"] if x["name"] in names]
        for x in d["dofs"]:
            if x.get("mirror") and x["mirror"] not in names:
                x.pop("mirror")
                x.pop("mirror_sign", None)
        from device.body.skeleton import Skeleton
        sk = Skeleton.from_dict(d)
    return derive(staff, staff.values[rows].copy(), rows=[staff.rows[i] for i in rows], skeleton=sk)


def select_rows(staff, patterns):
    """Only the rows matching any pattern (row order kept)."""
    return _subset(staff, _match(staff, patterns))


def drop_rows(staff, patterns):
    """All rows but those matching any pattern."""
    gone = set(_match(staff, patterns))
    if len(gone) == staff.nrows:
        raise FormatError("drop: that would drop every row")
    return _subset(staff, [i for i in range(staff.nrows) if i not in gone])
