"""Retarget a staff onto another body: mapped rows, scaled and offset, clamped to its limits.

    from host.retarget import retarget, load_body, load_mapping
    robot = load_body("so101.urdf")                  # URDF, skeleton JSON or "human"
    out, report = retarget(staff, load_mapping("human_to_arm.json"), robot)
    report.clamped      # {"elbow_flex": (frames clamped, worst excess in the joint's unit)}
    report.unmapped     # target joints held at home

The result's rows are the target's dofs in order (ranges = the target's limits, same fps and
bit depth), its skeleton the target. Missing source values stay missing.
"""

import numpy as np

from host.staff import Row, Staff
from protocol.errors import FormatError


class Report:
    __slots__ = ("clamped", "unmapped", "mapped")

    def __init__(self):
        self.clamped, self.unmapped, self.mapped = {}, [], []

    def lines(self):
        out = ["mapped %d joints; held at home: %s" % (len(self.mapped), ", ".join(self.unmapped) or "none")]
        for k, (n, worst) in self.clamped.items():
            out.append("clamped %s: %d frames, up to %.3g beyond its limit" % (k, n, worst))
        if not self.clamped:
            out.append("nothing clamped")
        return out


def load_body(path):
    """A Skeleton from a URDF (.urdf), a skeleton JSON, or "human" (the built-in model)."""
    if path == "human":
        from device.body.human import human_model
        return human_model()
    if str(path).lower().endswith((".urdf", ".xml")):
        from host.urdf import read_urdf
        return read_urdf(path)
    from device.body.skeleton import Skeleton
    return Skeleton.load(path)


def retarget(staff, mapping, target):
    """(staff on the target body, Report)."""
    F = staff.frames
    names = target.dof_names
    index = {n: j for j, n in enumerate(names)}
    v = np.repeat(target.home[:, None], F, axis=1).astype(np.float64)
    rep = Report()
    for jm in mapping.joints:
        if jm.target not in index:
            raise FormatError("%s: target joint %r is not in %s (its joints: %s)"
                              % (mapping.where, jm.target, target.name or "the target",
                                 ", ".join(names[:12])))
        try:
            r = staff.row_index(jm.source)
        except KeyError:
            raise FormatError("%s: source row %r is not in the staff" % (mapping.where, jm.source)) from None
        v[index[jm.target]] = jm.sign * jm.scale * staff.values[r] + jm.offset
        rep.mapped.append(jm.target)
    rep.unmapped = [n for n in names if n not in rep.mapped]
    lo, hi = target.lo[:, None], target.hi[:, None]
    with np.errstate(invalid="ignore"):
        below, above = v < lo, v > hi
        excess = np.where(below, lo - v, np.where(above, v - hi, 0.0))
    for j in np.flatnonzero((below | above).any(axis=1)):
        rep.clamped[names[j]] = (int((below[j] | above[j]).sum()), float(np.nanmax(excess[j])))
    v = np.clip(v, lo, hi)
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in target.dofs]
    meta = dict(staff.meta)
    meta["source"] = ("retargeted from %s" % staff.meta.get("source", "a staff")).strip()
    return Staff(v, rows, staff.fps, staff.bits, target, meta), rep
