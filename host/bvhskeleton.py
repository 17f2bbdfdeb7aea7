"""A BVH hierarchy <-> a motionstaff Skeleton (links per joint, dofs per channel, de Leva masses).

    from host.bvhskeleton import build_skeleton, skeleton_hierarchy
    sk = build_skeleton(joints, "cm", values)            # joints from host.bvh.parse_bvh
    joints, columns, factors, adds, units = skeleton_hierarchy(sk, staff.names)

One link per ROOT/JOINT (same name), End Sites as links `<Parent>_End` with no dofs; dofs named
`<Joint>.<Channel>` with axis-aligned axes, rotations in degrees, positions in the file's units;
offsets in metres; gravity along -Y (BVH is Y-up). A position channel holds the joint's whole
local position along its axis (it replaces OFFSET, as in Blender and bvhio), so the link's offset
is zero along that axis and the file's OFFSET is kept in skeleton.meta["bvh_offsets"]. Masses: de Leva (1996), "Adjustments to
Zatsiorsky-Seluyanov's segment inertia parameters", J. Biomech. 29(9):1223-1230, male table,
for a 75 kg body, shared among the links whose names say which segment they are (hip, thigh,
UpLeg, ForeArm, ...); unrecognised links (fingers, eyes, the root anchor) get no mass.
Inertias use the table's radii of gyration about the link's long axis (towards its children).
"""

import numpy as np

from device.body.skeleton import LENGTH_UNITS, Skeleton
from protocol.errors import FormatError

BODY_MASS_KG = 75.0
# segment: (mass fraction of one segment, radius of gyration transverse, longitudinal (of length))
# de Leva 1996, Table 4 (males); limbs are per side, "trunk" is UPT + MPT, "pelvis" is LPT
DE_LEVA = {
    "head": (0.0694, 0.369, 0.312),
    "trunk": (0.3229, 0.360, 0.191),
    "pelvis": (0.1117, 0.360, 0.191),
    "upper_arm": (0.0271, 0.277, 0.158),
    "forearm": (0.0162, 0.271, 0.121),
    "hand": (0.0061, 0.262, 0.184),
    "thigh": (0.1416, 0.329, 0.149),
    "shank": (0.0433, 0.252, 0.103),
    "foot": (0.0137, 0.251, 0.124),
}
_LIMBS = ("upper_arm", "forearm", "hand", "thigh", "shank", "foot")
# (substring of the lower-case name, segment), first match wins
_KEYS = (
    ("end", None), ("eye", None), ("finger", None), ("thumb", None), ("index", None),
    ("hand", "hand"), ("wrist", "hand"),
    ("forearm", "forearm"), ("lowerarm", "forearm"), ("elbow", "forearm"),
    ("collar", "trunk"), ("clavicle", "trunk"),
    ("upperarm", "upper_arm"), ("shldr", "upper_arm"), ("shoulder", "upper_arm"), ("arm", "upper_arm"),
    ("hipjoint", "pelvis"), ("buttock", "pelvis"),
    ("upleg", "thigh"), ("upperleg", "thigh"), ("thigh", "thigh"),
    ("toe", "foot"), ("foot", "foot"), ("ankle", "foot"),
    ("lowerleg", "shank"), ("shin", "shank"), ("knee", "shank"), ("leg", "shank"),
    ("hips", "pelvis"), ("pelvis", "pelvis"), ("hip", "pelvis"),
    ("spine", "trunk"), ("chest", "trunk"), ("back", "trunk"), ("abdomen", "trunk"),
    ("torso", "trunk"), ("neck", "head"), ("head", "head"),
)


def segment_of(name):
    """The de Leva segment a joint name stands for, or None ("LeftUpLeg" -> "thigh")."""
    n = name.lower()
    if n.startswith(("left", "right")) and "hip" in n and "hipjoint" not in n:
        return "thigh"                    # CMU 3dsMax skeleton: LeftHip is the thigh
    for key, seg in _KEYS:
        if key in n:
            return seg
    return None


def _masses(names, child_dirs):
    seg = [segment_of(n) for n in names]
    count = {}
    for s in seg:
        if s:
            count[s] = count.get(s, 0) + 1
    mass = np.zeros(len(names))
    for i, s in enumerate(seg):
        if s:
            frac = DE_LEVA[s][0] * (2 if s in _LIMBS else 1)
            mass[i] = BODY_MASS_KG * frac / count[s]
    return seg, mass


def build_skeleton(joints, units, values=None, name="bvh"):
    """A Skeleton for a parsed BVH hierarchy (values (channels, frames) give the dof ranges)."""
    scale = LENGTH_UNITS[units]
    links, dofs = [], []
    names = [j.name for j in joints]
    ends = []
    for i, j in enumerate(joints):
        for k, e in enumerate(j.end_sites):
            ends.append((i, "%s_End%s" % (j.name, "" if k == 0 else k + 1), e))
    used = set(names)
    child_off = [[] for _ in joints]
    for i, j in enumerate(joints):
        if j.parent >= 0:
            child_off[j.parent].append(j.offset * scale)
    for i, nm, e in ends:
        child_off[i].append(e * scale)
    seg, mass = _masses(names, child_off)
    r = 0
    bvh_offsets = {}
    for i, j in enumerate(joints):
        kids = child_off[i]
        tip = np.mean(kids, axis=0) if kids else np.zeros(3)
        length = float(np.linalg.norm(tip))
        inertia = np.zeros(6)
        if mass[i] > 0 and length > 0:
            _, rt, rl = DE_LEVA[seg[i]]
            u = tip / length
            m = mass[i] * length * length * (rt * rt * (np.eye(3) - np.outer(u, u)) + rl * rl * np.outer(u, u))
            inertia = [_sig(x) for x in (m[0, 0], m[1, 1], m[2, 2], m[0, 1], m[0, 2], m[1, 2])]
        offset = j.offset * scale
        if any(c.endswith("position") for c in j.channels):
            bvh_offsets[j.name] = [float(x) for x in j.offset]
            for c in j.channels:
                if c.endswith("position"):
                    offset["XYZ".index(c[0])] = 0.0
        links.append({"name": j.name, "parent": None if j.parent < 0 else names[j.parent],
                      "offset": [_sig(x, 9) for x in offset], "mass": _sig(mass[i]),
                      "com": [_sig(x) for x in tip / 2.0], "inertia": [float(x) for x in inertia]})
        for c in j.channels:
            rot = c.endswith("rotation")
            axis = [0.0, 0.0, 0.0]
            axis["XYZ".index(c[0])] = 1.0
            lo, hi = (-180.0, 180.0) if rot else (-1.0 / scale, 1.0 / scale)
            home = 0.0
            if values is not None and values.shape[1] > 0:
                a, b = np.floor(np.nanmin(values[r])), np.ceil(np.nanmax(values[r]))
                lo, hi = float(min(lo, a)), float(max(hi, b))
                if not hi > lo:
                    hi = lo + 1.0
                home = min(max(0.0, lo), hi)
            dofs.append({"name": "%s.%s" % (j.name, c), "link": j.name,
                         "kind": "rotation" if rot else "translation", "axis": axis,
                         "min": lo, "max": hi, "home": home, "unit": "deg" if rot else units})
            r += 1
    for i, nm, e in ends:
        while nm in used:
            nm += "_"
        used.add(nm)
        links.append({"name": nm, "parent": names[i], "offset": [_sig(x, 9) for x in e * scale],
                      "mass": 0.0, "com": [0.0, 0.0, 0.0], "inertia": [0.0] * 6})
    d = {"format": "motionstaff-skeleton", "version": 1, "name": name, "gravity": [0.0, -9.81, 0.0],
         "links": links, "dofs": dofs, "features": [], "meta": {"bvh_units": units, "bvh_offsets": bvh_offsets}}
    # End Site links come after every joint, so each parent is listed before its children
    return Skeleton.from_dict(d, where=name)


def _sig(x, digits=4):
    """x rounded to `digits` significant digits (short JSON for estimated quantities)."""
    return float("%.*g" % (digits, x))


def _as_skeleton(sk):
    return Skeleton.from_dict(sk) if isinstance(sk, dict) else sk


def skeleton_hierarchy(skeleton, row_names, units=None):
    """(joints, columns, factors, adds, units) to write a skeleton's motion as BVH.

    joints: host.bvh.Joint list (offsets in the BVH units); columns[k]: the staff row feeding
    BVH channel k; channel = row * factors[k] (axis sign, rad->deg, length units) + adds[k]
    (the link offset a position channel replaces). A translation listed after a rotation of
    its link becomes a parent-frame position (BVH has no other kind): exact only at rest.
    """
    from host.bvh import Joint

    sk = _as_skeleton(skeleton)
    if units is None:
        units = sk.meta.get("bvh_units") if isinstance(sk.meta, dict) else None
        if units is None:
            tr = [d.unit for d in sk.dofs if d.kind == "translation"]
            units = tr[0] if tr else "cm"
    if units not in LENGTH_UNITS:
        raise FormatError("BVH units must be one of %s, not %r" % ("/".join(LENGTH_UNITS), units))
    per_m = 1.0 / LENGTH_UNITS[units]
    rows = {n: i for i, n in enumerate(row_names)}
    kids = {}
    for i, ln in enumerate(sk.links):
        kids.setdefault(ln.parent, []).append(i)
    # BVH lists joints depth first, and its MOTION columns follow that order
    order, stack = [], [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids.get(i, [])))
    meta = sk.meta if isinstance(sk.meta, dict) else {}
    bvh_offsets = meta.get("bvh_offsets") or {}
    joints, index, columns, factors, adds = [], {}, [], [], []
    for i in order:
        ln = sk.links[i]
        is_end = (not ln.dofs and not kids.get(i) and ln.parent >= 0
                  and ln.name.rstrip("_").rstrip("0123456789").endswith("_End"))
        if is_end:
            joints[index[ln.parent]].end_sites.append(ln.offset * per_m)
            continue
        kept = bvh_offsets.get(ln.name)
        off = np.array(kept, float) if kept is not None else ln.offset * per_m
        j = Joint(ln.name, index[ln.parent] if ln.parent >= 0 else -1, off)
        index[i] = len(joints)
        joints.append(j)
        # BVH positions are in the parent's frame whatever their place in CHANNELS: write them
        # first, unless the link came from a BVH file (then its channel order is kept as it was)
        dofs = ln.dofs if kept is not None else sorted(ln.dofs, key=lambda k: sk.dofs[k].kind != "translation")
        for di in dofs:
            d = sk.dofs[di]
            ax = int(np.argmax(np.abs(d.axis)))
            if abs(abs(d.axis[ax]) - 1.0) > 1e-9:
                raise FormatError("dof %r: axis %s is not along X, Y or Z, so BVH cannot hold it"
                                  % (d.name, list(d.axis)))
            ch = "XYZ"[ax] + ("rotation" if d.kind == "rotation" else "position")
            if ch in j.channels:
                raise FormatError("link %r: two dofs on channel %s; BVH allows one" % (ln.name, ch))
            j.channels.append(ch)
            if d.name not in rows:
                raise FormatError("the staff has no row for dof %r" % d.name)
            columns.append(rows[d.name])
            unit_f = (d.scale * 180.0 / np.pi) if d.kind == "rotation" else d.scale * per_m
            factors.append(float(np.sign(d.axis[ax])) * unit_f)
            # a position channel replaces OFFSET along its axis: add the link's offset there
            # (zero for skeletons read from BVH, whose file OFFSET is kept in bvh_offsets)
            adds.append(float(ln.offset[ax] * per_m) if d.kind == "translation" and kept is None else 0.0)
    return joints, columns, factors, adds, units
