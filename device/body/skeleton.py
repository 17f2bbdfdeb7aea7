"""The body component data structure: links, degrees of freedom and feature points, as JSON.

    from device.body.skeleton import Skeleton
    sk = Skeleton.load("robot.json")            # SkeletonError names the field that is wrong
    sk.ndof, sk.dof_names[:3], sk.link_index("l_thigh")
    sk.save("copy.json")

A link's frame has its origin at the link's joint, placed at `offset` (metres) in the parent's
frame; the link's own dofs are then applied in the order they are listed (each rotation about
`axis` of the frame built so far, each translation along it), which is BVH's channel order.
The order of the dofs is the order of a staff's rows. See docs/ARCHITECTURE.md for the format.
"""

import json
import math

import numpy as np

from protocol.errors import FormatError

FORMAT = "motionstaff-skeleton"
VERSION = 1
ROTATION_UNITS = {"deg": math.pi / 180.0, "rad": 1.0}
# "cmu": the CMU motion capture database's ASF length unit (":length 0.45" = 1/0.45 inch), which
# its BVH conversions keep
LENGTH_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "in": 0.0254, "cmu": 0.0254 / 0.45}
FEATURE_KINDS = ("marker", "imu")


class SkeletonError(FormatError):
    """A skeleton document that is wrong; the message names the field."""


class Link:
    """A rigid segment: its joint frame's placement in the parent, mass and inertia."""

    __slots__ = ("name", "parent", "offset", "mass", "com", "inertia", "dofs")

    def __init__(self, name, parent, offset, mass=0.0, com=(0, 0, 0), inertia=None):
        self.name = name
        self.parent = parent            # index of the parent link, -1 for the root
        self.offset = np.asarray(offset, float).reshape(3)   # metres, in the parent's frame
        self.mass = float(mass)         # kg
        self.com = np.asarray(com, float).reshape(3)         # metres, in this link's frame
        self.inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, float)
        self.dofs = []                  # indices of this link's dofs, in order

    def __repr__(self):
        return "Link(%r, parent=%d, mass=%.3g)" % (self.name, self.parent, self.mass)


class Dof:
    """One degree of freedom (one staff row): a rotation or translation of its link."""

    __slots__ = ("name", "link", "kind", "axis", "lo", "hi", "home", "unit", "scale",
                 "mirror", "mirror_sign")

    def __init__(self, name, link, kind, axis, lo, hi, home=0.0, unit=None,
                 mirror=None, mirror_sign=1):
        self.name = name
        self.link = link                # index of the link it moves
        self.kind = kind                # "rotation" or "translation"
        a = np.asarray(axis, float).reshape(3)
        self.axis = a / np.linalg.norm(a)
        self.lo = float(lo)
        self.hi = float(hi)
        self.home = float(home)
        self.unit = unit or ("deg" if kind == "rotation" else "m")
        table = ROTATION_UNITS if kind == "rotation" else LENGTH_UNITS
        self.scale = table[self.unit]   # value * scale -> radians or metres
        self.mirror = mirror
        self.mirror_sign = int(mirror_sign)

    @property
    def is_rotation(self):
        return self.kind == "rotation"

    def __repr__(self):
        return "Dof(%r, %s, [%g, %g] %s)" % (self.name, self.kind, self.lo, self.hi, self.unit)


class Feature:
    """A feature point fixed to a link: a marker or an IMU, with local position and orientation."""

    __slots__ = ("name", "link", "kind", "position", "orientation")

    def __init__(self, name, link, kind, position, orientation=(1, 0, 0, 0)):
        self.name = name
        self.link = link
        self.kind = kind
        self.position = np.asarray(position, float).reshape(3)     # metres, link frame
        q = np.asarray(orientation, float).reshape(4)               # w, x, y, z
        self.orientation = q / np.linalg.norm(q)

    def rotation(self):
        """The sensor frame's rotation matrix in the link frame."""
        w, x, y, z = self.orientation
        return np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ])


class Skeleton:
    """Links (a tree, parents before children), dofs (staff rows) and feature points."""

    def __init__(self, links, dofs, features=(), name="", gravity=(0.0, 0.0, -9.81), meta=None):
        self.name = name
        self.links = list(links)
        self.dofs = list(dofs)
        self.features = list(features)
        self.gravity = np.asarray(gravity, float).reshape(3)
        self.meta = dict(meta or {})
        for ln in self.links:
            ln.dofs = []
        for j, d in enumerate(self.dofs):
            self.links[d.link].dofs.append(j)
        self._link_index = {ln.name: i for i, ln in enumerate(self.links)}
        self._dof_index = {d.name: j for j, d in enumerate(self.dofs)}

    # -- look-ups -----------------------------------------------------------------------------
    @property
    def ndof(self):
        return len(self.dofs)

    @property
    def nlinks(self):
        return len(self.links)

    @property
    def dof_names(self):
        return [d.name for d in self.dofs]

    @property
    def link_names(self):
        return [ln.name for ln in self.links]

    @property
    def feature_names(self):
        return [f.name for f in self.features]

    def dof_index(self, name):
        try:
            return self._dof_index[name]
        except KeyError:
            raise KeyError("no dof named %r in skeleton %r" % (name, self.name)) from None

    def link_index(self, name):
        try:
            return self._link_index[name]
        except KeyError:
            raise KeyError("no link named %r in skeleton %r" % (name, self.name)) from None

    @property
    def lo(self):
        return np.array([d.lo for d in self.dofs])

    @property
    def hi(self):
        return np.array([d.hi for d in self.dofs])

    @property
    def home(self):
        return np.array([d.home for d in self.dofs])

    @property
    def scales(self):
        """Per dof: multiply a value in the dof's unit by this to get radians or metres."""
        return np.array([d.scale for d in self.dofs])

    @property
    def total_mass(self):
        return float(sum(ln.mass for ln in self.links))

    def children(self, i):
        return [k for k, ln in enumerate(self.links) if ln.parent == i]

    def mirror_map(self):
        """(index of the row each row swaps with, sign) for a left/right mirror."""
        idx = np.arange(self.ndof)
        sign = np.ones(self.ndof)
        for j, d in enumerate(self.dofs):
            if d.mirror:
                idx[j] = self._dof_index.get(d.mirror, j)
            sign[j] = d.mirror_sign
        return idx, sign

    # -- JSON ---------------------------------------------------------------------------------
    def to_dict(self):
        def lst(a):
            return [round(float(v), 9) for v in a]

        links = []
        for ln in self.links:
            i = ln.inertia
            links.append({
                "name": ln.name,
                "parent": None if ln.parent < 0 else self.links[ln.parent].name,
                "offset": lst(ln.offset), "mass": round(ln.mass, 9), "com": lst(ln.com),
                "inertia": lst([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]]),
            })
        dofs = []
        for d in self.dofs:
            e = {"name": d.name, "link": self.links[d.link].name, "kind": d.kind,
                 "axis": lst(d.axis), "min": d.lo, "max": d.hi, "home": d.home, "unit": d.unit}
            if d.mirror:
                e["mirror"] = d.mirror
            if d.mirror_sign != 1:
                e["mirror_sign"] = d.mirror_sign
            dofs.append(e)
        feats = [{"name": f.name, "link": self.links[f.link].name, "kind": f.kind,
                  "position": lst(f.position), "orientation": lst(f.orientation)}
                 for f in self.features]
        d = {"format": FORMAT, "version": VERSION, "name": self.name,
             "gravity": lst(self.gravity), "links": links, "dofs": dofs, "features": feats}
        if self.meta:
            d["meta"] = self.meta
        return d

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)
            f.write("\n")

    @classmethod
    def load(cls, path):
        try:
            with open(path, "rb") as f:
                raw = f.read(64 << 20)
        except OSError as e:
            raise SkeletonError("%s: cannot read: %s" % (path, e.strerror)) from None
        try:
            d = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise SkeletonError("%s: not a JSON skeleton (%s)" % (path, e)) from None
        return cls.from_dict(d, where=str(path))

    @classmethod
    def from_dict(cls, d, where="skeleton"):
        """Validate a skeleton document and build it; SkeletonError names the wrong field."""
        v = _Validator(where)
        v.obj(d, "")
        if d.get("format", FORMAT) != FORMAT:
            v.fail("format", "must be %r" % FORMAT)
        ver = d.get("version", VERSION)
        if not isinstance(ver, int) or ver < 1 or ver > VERSION:
            v.fail("version", "unknown version %r (this reader knows 1..%d)" % (ver, VERSION))
        gravity = v.vec(d.get("gravity", [0, 0, -9.81]), "gravity", 3)
        raw_links = v.list(d.get("links"), "links", nonempty=True)
        links, index = [], {}
        for i, e in enumerate(raw_links):
            at = "links[%d]" % i
            v.obj(e, at)
            name = v.name(e.get("name"), at + ".name")
            if name in index:
                v.fail(at + ".name", "%r repeats links[%d]" % (name, index[name]))
            parent = e.get("parent")
            if parent is None:
                if links:
                    v.fail(at + ".parent", "only the first link may be the root (parent null)")
                p = -1
            else:
                if parent not in index:
                    v.fail(at + ".parent", "%r is not a link listed before this one" % (parent,))
                p = index[parent]
            if not links and parent is not None:
                v.fail(at + ".parent", "the first link must be the root (parent null)")
            offset = v.vec(e.get("offset", [0, 0, 0]), at + ".offset", 3)
            mass = v.num(e.get("mass", 0.0), at + ".mass", lo=0.0)
            com = v.vec(e.get("com", [0, 0, 0]), at + ".com", 3)
            inertia = _inertia(v, e.get("inertia", [0, 0, 0, 0, 0, 0]), at + ".inertia")
            index[name] = len(links)
            links.append(Link(name, p, offset, mass, com, inertia))
        dofs, dnames = [], {}
        for j, e in enumerate(v.list(d.get("dofs", []), "dofs")):
            at = "dofs[%d]" % j
            v.obj(e, at)
            name = v.name(e.get("name"), at + ".name")
            if name in dnames:
                v.fail(at + ".name", "%r repeats dofs[%d]" % (name, dnames[name]))
            dnames[name] = j
            link = e.get("link")
            if link not in index:
                v.fail(at + ".link", "%r is not a link" % (link,))
            kind = e.get("kind", "rotation")
            if kind not in ("rotation", "translation"):
                v.fail(at + ".kind", "must be 'rotation' or 'translation', not %r" % (kind,))
            axis = v.vec(e.get("axis"), at + ".axis", 3)
            if np.linalg.norm(axis) < 1e-9:
                v.fail(at + ".axis", "must not be zero")
            units = ROTATION_UNITS if kind == "rotation" else LENGTH_UNITS
            unit = e.get("unit", "deg" if kind == "rotation" else "m")
            if unit not in units:
                v.fail(at + ".unit", "%r is not one of %s" % (unit, "/".join(units)))
            lo = v.num(e.get("min"), at + ".min")
            hi = v.num(e.get("max"), at + ".max")
            if not hi > lo:
                v.fail(at + ".max", "must be greater than min (%g)" % lo)
            home = v.num(e.get("home", min(max(0.0, lo), hi)), at + ".home")
            if not lo <= home <= hi:
                v.fail(at + ".home", "%g is outside [%g, %g]" % (home, lo, hi))
            mirror = e.get("mirror")
            if mirror is not None and not isinstance(mirror, str):
                v.fail(at + ".mirror", "must be a dof name")
            msign = e.get("mirror_sign", 1)
            if msign not in (1, -1):
                v.fail(at + ".mirror_sign", "must be 1 or -1")
            dofs.append(Dof(name, index[link], kind, axis, lo, hi, home, unit, mirror, msign))
        for j, dd in enumerate(dofs):
            if dd.mirror is not None and dd.mirror not in dnames:
                v.fail("dofs[%d].mirror" % j, "%r is not a dof" % dd.mirror)
        feats, fnames = [], set()
        for k, e in enumerate(v.list(d.get("features", []), "features")):
            at = "features[%d]" % k
            v.obj(e, at)
            name = v.name(e.get("name"), at + ".name")
            if name in fnames:
                v.fail(at + ".name", "%r repeats" % name)
            fnames.add(name)
            link = e.get("link")
            if link not in index:
                v.fail(at + ".link", "%r is not a link" % (link,))
            kind = e.get("kind", "marker")
            if kind not in FEATURE_KINDS:
                v.fail(at + ".kind", "must be one of %s" % "/".join(FEATURE_KINDS))
            pos = v.vec(e.get("position", [0, 0, 0]), at + ".position", 3)
            ori = v.vec(e.get("orientation", [1, 0, 0, 0]), at + ".orientation", 4)
            if np.linalg.norm(ori) < 1e-9:
                v.fail(at + ".orientation", "must be a non-zero quaternion (w, x, y, z)")
            feats.append(Feature(name, index[link], kind, pos, ori))
        meta = d.get("meta", {})
        if not isinstance(meta, dict):
            v.fail("meta", "must be an object")
        name = d.get("name", "")
        if not isinstance(name, str):
            v.fail("name", "must be a string")
        return cls(links, dofs, feats, name=name, gravity=gravity, meta=meta)

    def __repr__(self):
        return "Skeleton(%r, %d links, %d dofs, %d features)" % (
            self.name, self.nlinks, self.ndof, len(self.features))


def _inertia(v, e, at):
    a = v.vec(e, at, None)
    if a.size == 6:
        ixx, iyy, izz, ixy, ixz, iyz = a
        m = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    elif a.size == 9:
        m = a.reshape(3, 3)
        if not np.allclose(m, m.T):
            v.fail(at, "must be symmetric")
    else:
        v.fail(at, "must be [ixx, iyy, izz, ixy, ixz, iyz] or a 3x3 matrix")
    if np.linalg.eigvalsh(m).min() < -1e-9:
        v.fail(at, "must be positive semi-definite")
    return m


class _Validator:
    def __init__(self, where):
        self.where = where

    def fail(self, field, msg):
        raise SkeletonError("%s: %s: %s" % (self.where, field or "document", msg))

    def obj(self, e, at):
        if not isinstance(e, dict):
            self.fail(at, "must be a JSON object")

    def list(self, e, at, nonempty=False):
        if not isinstance(e, list) or (nonempty and not e):
            self.fail(at, "must be a %slist" % ("non-empty " if nonempty else ""))
        return e

    def name(self, e, at):
        if not isinstance(e, str) or not e or len(e) > 200:
            self.fail(at, "must be a non-empty string")
        return e

    def num(self, e, at, lo=None):
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e):
            self.fail(at, "must be a finite number, not %r" % (e,))
        if lo is not None and e < lo:
            self.fail(at, "must be >= %g" % lo)
        return float(e)

    def vec(self, e, at, n):
        if isinstance(e, list) and e and isinstance(e[0], list):
            e = [x for row in e for x in (row if isinstance(row, list) else [row])]
        if not isinstance(e, list) or (n is not None and len(e) != n):
            self.fail(at, "must be a list of %s numbers" % (n if n else "6 or 9"))
        for x in e:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                self.fail(at, "must contain finite numbers only, not %r" % (x,))
        return np.asarray(e, float)
