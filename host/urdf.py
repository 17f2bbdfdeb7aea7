"""URDF import: a robot description becomes a Skeleton (links, dofs in joint order, limits).

    from host.urdf import read_urdf, urdf_to_skeleton
    sk = read_urdf("so101.urdf")                 # Skeleton; dofs = movable joints, in file order
    sk.dof_names                                 # ["shoulder_pan", "shoulder_lift", ...]

The skeleton format has no fixed rotation between links, so each joint's <origin rpy> is folded
in: a link's frame is kept parallel to its parent's at the zero pose, and the offsets and axes
below a rotated joint are turned by the accumulated fixed rotation C (offset' = C_parent @ xyz,
axis' = C @ axis). Forward kinematics gives the same link positions as URDF's own. Revolute
limits become degrees (continuous joints get -180..180), prismatic stay metres; fixed joints
add a link and no dof; <inertial> gives mass, centre of mass and inertia (turned likewise).
Malformed input raises FormatError naming the file and the element.
"""

import xml.etree.ElementTree as ET

import numpy as np

from protocol.errors import FormatError

MAX_BYTES = 32 << 20


def _rpy(r, p, y):
    """URDF fixed-axis roll-pitch-yaw: R = Rz(y) @ Ry(p) @ Rx(r)."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _vec(text, n, where, default):
    if text is None:
        return np.array(default, float)
    try:
        v = np.array([float(x) for x in text.split()], float)
    except ValueError:
        raise FormatError("%s: %r is not %d numbers" % (where, text, n)) from None
    if v.size != n or not np.isfinite(v).all():
        raise FormatError("%s: %r is not %d finite numbers" % (where, text, n))
    return v


def _origin(el, where):
    o = el.find("origin") if el is not None else None
    if o is None:
        return np.zeros(3), np.eye(3)
    xyz = _vec(o.get("xyz"), 3, where + " origin xyz", [0, 0, 0])
    rpy = _vec(o.get("rpy"), 3, where + " origin rpy", [0, 0, 0])
    return xyz, _rpy(*rpy)


def read_urdf(path):
    """The Skeleton of a URDF file."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    if len(data) > MAX_BYTES:
        raise FormatError("%s: larger than %d MB" % (path, MAX_BYTES >> 20))
    return urdf_to_skeleton(data, where=str(path))


def urdf_to_skeleton(text, where="urdf"):
    """The Skeleton of URDF text (str or bytes)."""
    from device.body.skeleton import Skeleton
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise FormatError("%s: not XML (%s)" % (where, e)) from None
    if root.tag != "robot":
        raise FormatError("%s: the root element is <%s>, not <robot>" % (where, root.tag))
    links = {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise FormatError("%s: a <link> has no name" % where)
        if name in links:
            raise FormatError("%s: link %r is defined twice" % (where, name))
        links[name] = el
    if not links:
        raise FormatError("%s: no <link> elements" % where)
    joints, child_of = [], {}
    for el in root.findall("joint"):
        name, kind = el.get("name"), el.get("type")
        at = "%s: joint %r" % (where, name)
        p, c = el.find("parent"), el.find("child")
        if not name or p is None or c is None:
            raise FormatError("%s: needs a name, <parent link> and <child link>" % at)
        pl, cl = p.get("link"), c.get("link")
        for ln in (pl, cl):
            if ln not in links:
                raise FormatError("%s: link %r is not defined" % (at, ln))
        if kind not in ("revolute", "continuous", "prismatic", "fixed", "floating", "planar"):
            raise FormatError("%s: unknown type %r" % (at, kind))
        if cl in child_of:
            raise FormatError("%s: link %r already has a parent joint" % (at, cl))
        child_of[cl] = len(joints)
        joints.append((name, kind, pl, cl, el))
    roots = [n for n in links if n not in child_of]
    if len(roots) != 1:
        raise FormatError("%s: expected one root link, found %d (%s)" % (where, len(roots), ", ".join(roots[:4])))
    children = {}
    for j, (_, _, pl, cl, _) in enumerate(joints):
        children.setdefault(pl, []).append(j)
    out_links, out_dofs = [], []
    C = {roots[0]: np.eye(3)}
    order = [(roots[0], None)]
    seen = set()
    while order:
        lname, j = order.pop(0)
        if lname in seen:
            raise FormatError("%s: the links form a loop at %r" % (where, lname))
        seen.add(lname)
        if j is None:
            offset, parent = np.zeros(3), None
            Ci = np.eye(3)
        else:
            jname, kind, pl, _, el = joints[j]
            xyz, Rf = _origin(el, "%s: joint %r" % (where, jname))
            offset = C[pl] @ xyz
            Ci = C[pl] @ Rf
            parent = pl
            if kind in ("revolute", "continuous", "prismatic"):
                axis = _vec(el.find("axis").get("xyz") if el.find("axis") is not None else None, 3,
                            "%s: joint %r axis" % (where, jname), [1, 0, 0])
                if np.linalg.norm(axis) < 1e-9:
                    raise FormatError("%s: joint %r: zero axis" % (where, jname))
                lim = el.find("limit")
                rot = kind != "prismatic"
                if kind == "continuous" or lim is None:
                    lo, hi = (-180.0, 180.0) if rot else (-1.0, 1.0)
                else:
                    try:
                        lo, hi = float(lim.get("lower", "0")), float(lim.get("upper", "0"))
                    except ValueError:
                        raise FormatError("%s: joint %r: bad <limit>" % (where, jname)) from None
                    if rot:
                        lo, hi = np.degrees(lo), np.degrees(hi)
                    if not hi > lo:
                        raise FormatError("%s: joint %r: limit upper must exceed lower" % (where, jname))
                home = min(max(0.0, lo), hi)
                out_dofs.append({"name": jname, "link": lname, "kind": "rotation" if rot else "translation",
                                 "axis": [float(a) for a in Ci @ axis], "min": float(lo), "max": float(hi),
                                 "home": float(home), "unit": "deg" if rot else "m"})
            elif kind in ("floating", "planar"):
                raise FormatError("%s: joint %r: %s joints are not supported" % (where, jname, kind))
        C[lname] = Ci
        mass, com, inertia = 0.0, np.zeros(3), np.zeros(6)
        inl = links[lname].find("inertial")
        if inl is not None:
            m = inl.find("mass")
            try:
                mass = float(m.get("value", "0")) if m is not None else 0.0
            except ValueError:
                raise FormatError("%s: link %r: bad mass" % (where, lname)) from None
            cxyz, cR = _origin(inl, "%s: link %r inertial" % (where, lname))
            com = Ci @ cxyz
            ie = inl.find("inertia")
            if ie is not None:
                try:
                    g = {k: float(ie.get(k, "0")) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
                except ValueError:
                    raise FormatError("%s: link %r: bad inertia" % (where, lname)) from None
                Il = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]],
                               [g["ixz"], g["iyz"], g["izz"]]])
                R = Ci @ cR
                Iw = R @ Il @ R.T
                inertia = [Iw[0, 0], Iw[1, 1], Iw[2, 2], Iw[0, 1], Iw[0, 2], Iw[1, 2]]
        out_links.append({"name": lname, "parent": parent, "offset": [float(x) for x in offset],
                          "mass": max(mass, 0.0), "com": [float(x) for x in com],
                          "inertia": [float(x) for x in inertia]})
        for jj in children.get(lname, []):
            order.append((joints[jj][3], jj))
    if len(seen) != len(links):
        raise FormatError("%s: links not connected to the root: %s" % (where, ", ".join(sorted(set(links) - seen))[:200]))
    doc = {"format": "motionstaff-skeleton", "version": 1, "name": root.get("name", "urdf"),
           "links": out_links, "dofs": out_dofs, "features": []}
    try:
        return Skeleton.from_dict(doc, where=where)
    except FormatError:
        raise
    except Exception as e:  # the skeleton validator is the judge; keep its message
        raise FormatError("%s: %s" % (where, e)) from None
