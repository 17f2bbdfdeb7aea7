"""Mirror: swap left and right (the skeleton says which rows pair and which change sign).

    from host.edit.mirror import mirror, mirror_map
    flipped = mirror(staff)
    idx, sign = mirror_map(staff)        # row r of the result = sign[r] * row idx[r] of the source

With a skeleton whose dofs carry `mirror`/`mirror_sign` (the built-in human model) those are
used. Otherwise (BVH skeletons) rows pair by name - Left/Right, left/right, L/R before a capital
letter, l_/r_, _l/_r - and the sign comes from geometry: the lateral axis is the one along which
paired links lie apart; a rotation about it keeps its sign, rotations about the other axes
change sign, a translation along it changes sign. A row's new range is its source row's range
(sign applied), so nothing is clipped.
"""

import re

import numpy as np

from host.edit._base import as_skeleton, derive
from protocol.errors import FormatError

_SWAPS = [(re.compile(p), f) for p, f in (
    (r"Left", "Right"), (r"Right", "Left"), (r"left", "right"), (r"right", "left"),
    (r"LEFT", "RIGHT"), (r"RIGHT", "LEFT"),
    (r"(?<![A-Za-z])L(?=[A-Z_])", "R"), (r"(?<![A-Za-z])R(?=[A-Z_])", "L"),
    (r"(?<![A-Za-z])l_", "r_"), (r"(?<![A-Za-z])r_", "l_"),
    (r"_l(?![a-z])", "_r"), (r"_r(?![a-z])", "_l"))]


def partner_name(name, known):
    """The left/right partner of a name among `known`, or None."""
    for pat, rep in _SWAPS:
        if pat.search(name):
            cand = pat.sub(rep, name, count=1)
            if cand in known and cand != name:
                return cand
    return None


def _lateral_axis(sk):
    names = sk.link_names
    known = set(names)
    spread = np.zeros(3)
    pos = {}
    # home positions of links (offsets summed along the chain)
    for i, ln in enumerate(sk.links):
        pos[i] = ln.offset + (pos[ln.parent] if ln.parent >= 0 else 0.0)
    for i, n in enumerate(names):
        p = partner_name(n, known)
        if p:
            spread += np.abs(pos[i] - pos[sk.link_index(p)])
    return int(np.argmax(spread)) if spread.any() else 0


def mirror_map(staff):
    """(idx (rows,), sign (rows,)): row r of the mirror is sign[r] * source row idx[r]."""
    sk = as_skeleton(staff.skeleton)
    names = staff.names
    where = {n: i for i, n in enumerate(names)}
    idx = np.arange(staff.nrows)
    sign = np.ones(staff.nrows)
    if sk is not None and any(d.mirror for d in sk.dofs):
        for r, n in enumerate(names):
            if n in sk._dof_index:
                d = sk.dofs[sk.dof_index(n)]
                if d.mirror and d.mirror in where:
                    idx[r] = where[d.mirror]
                sign[r] = d.mirror_sign
        return idx, sign
    if sk is None:
        raise FormatError("mirror: the staff has no skeleton to say which rows pair")
    lat = _lateral_axis(sk)
    known = set(names)
    for r, n in enumerate(names):
        p = partner_name(n, known)
        if p:
            idx[r] = where[p]
        try:
            d = sk.dofs[sk.dof_index(n)]
        except KeyError:
            continue
        along = abs(d.axis[lat]) > 0.9
        if d.kind == "rotation":
            sign[r] = 1.0 if along else -1.0
        else:
            sign[r] = -1.0 if along else 1.0
    return idx, sign


def mirror(staff):
    """The left/right mirror of the staff (same rows, names and skeleton)."""
    idx, sign = mirror_map(staff)
    v = staff.values[idx] * sign[:, None]
    rows = []
    for r, row in enumerate(staff.rows):
        src = staff.rows[idx[r]]
        lo, hi = (src.lo, src.hi) if sign[r] > 0 else (-src.hi, -src.lo)
        rows.append(row._replace(lo=float(lo), hi=float(hi)))
    return derive(staff, v, rows=rows)
