"""A staff header's skeleton, compactly: a built-in body by name and hash, a BVH hierarchy, or short JSON.

    from host.skeletoncode import encode_skeleton, decode_skeleton, dof_rows
    code = encode_skeleton(human_model())      # {"body": "human48", "mass_kg": 75, "height_m": 1.75, "sha": "7d48fbb1"}
    sk = decode_skeleton(code)                 # FormatError if no known body has that hash
    code = encode_skeleton(bvh_skeleton)       # {"bvhs": "Hips 0 XYZzyx 0 0 0;Chest 1 zyx 0 5.2 0;...", ...}
    sk = decode_skeleton(code, values)         # the dof ranges come from the decoded values
    is_bvh(code)                               # True: a BVH hierarchy (limits from the motion)

Three forms, smallest first:
- built-in bodies (BODIES: the human model of device/body/human.py, fixed or floating) are
  rebuilt from their name and arguments, and the first 8 hex digits of the SHA-256 of the
  rebuilt skeleton's canonical JSON must match the header's: a body this reader does not know
  (or knows differently) is one FormatError naming it. A built-in body whose feature points were
  replaced (markers placed for a C3D recording) is the body plus its feature list (the body's
  own features by name).
- a skeleton derived from a BVH hierarchy (host/bvhskeleton.py) is stored as that hierarchy:
  joint names, parents, offsets in the file's units (6 significant digits, what a BVH file
  prints) and channels ("X".."Z" positions, "x".."z" rotations); masses, inertias and dof limits
  are derived again on reading (limits from the decoded motion), as on import. Written as one
  string, "bvhs": per joint "name back channels x y z [end site x y z]...", joints separated by
  ";", back = rows up to the parent (0 for the root), channels "." when there are none (65-80
  bytes fewer than the JSON list "bvh" on the CMU clips' headers, which files written before
  hold and which is still read and still written when a name has a space or ";"). Since
  session 14 the names of a known rig are tokens of host/jointnames.py's table ("#k", "#" for
  the next entry), the string then under "bvhn" (a reader without the table sees no BVH
  hierarchy and refuses the skeleton): 124-187 bytes fewer on the CMU clips' headers.
- any other skeleton: its JSON with the loader's defaults left out and numbers rounded to 6
  significant digits (micrometres on a metre).
"""

import hashlib
import json

import numpy as np

from host.jointnames import decode_names, encode_names
from protocol.errors import FormatError


def _human(mass_kg=75.0, height_m=1.75):
    from device.body.human import human_model
    return human_model(mass_kg=float(mass_kg), height_m=float(height_m))


def _human_floating(mass_kg=75.0, height_m=1.75):
    from device.body.human import human_model
    return human_model(mass_kg=float(mass_kg), height_m=float(height_m), floating=True)


# name -> (factory(**args), the meta keys that are its arguments)
BODIES = {
    "human48": (_human, ("mass_kg", "height_m")),
    "human54-floating": (_human_floating, ("mass_kg", "height_m")),
}


def register_body(name, factory, args=()):
    """Make a body known by name (factory(**args) -> Skeleton; args: meta keys it takes)."""
    BODIES[name] = (factory, tuple(args))


def skeleton_hash(sk):
    """8 hex digits of the SHA-256 of a skeleton's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(sk.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _short(x):
    x = float("%.6g" % x)
    return int(x) if x == int(x) and abs(x) < 1e15 else x


def _round(v):
    if isinstance(v, float):
        return _short(v)
    if isinstance(v, list):
        return [_round(x) for x in v]
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items()}
    return v


def _as_skeleton(sk):
    if isinstance(sk, dict):
        from device.body.skeleton import Skeleton
        return Skeleton.from_dict(sk)
    return sk


def encode_skeleton(sk):
    """The compact header form of a Skeleton (or skeleton dict); None stays None."""
    if sk is None:
        return None
    sk = _as_skeleton(sk)
    body = BODIES.get(sk.name)
    if body is not None:
        factory, keys = body
        # the arguments exactly (JSON floats round-trip), so the reader rebuilds the same body
        args = {k: _exact(sk.meta[k]) for k in keys if k in sk.meta}
        try:
            base = factory(**args)
        except (TypeError, ValueError):
            base = None
        if base is not None:
            code = {"body": sk.name, "sha": skeleton_hash(base)}
            code.update(args)
            if skeleton_hash(base) == skeleton_hash(sk):
                return code
            # the body with other feature points (markers placed for a recording): only those
            swapped = _with_features(base, sk.features)
            if skeleton_hash(swapped) == skeleton_hash(sk):
                own = {f.name: _feature_code(base, f) for f in base.features}
                # a feature the body has as it is: its name alone
                code["features"] = [f.name if own.get(f.name) == _feature_code(sk, f) else _feature_code(sk, f)
                                    for f in sk.features]
                return code
    meta = sk.meta if isinstance(sk.meta, dict) else {}
    if "bvh_units" in meta and "bvh_offsets" in meta:
        code = _bvh_code(sk)
        if code is not None:
            return code
    from host.staff import _skeleton_dict

    d = _skeleton_dict(sk)
    d.pop("format", None)
    d.pop("version", None)
    return {"json": _round(d)}


def _exact(v):
    v = float(v)
    return int(v) if v == int(v) and abs(v) < 1e15 else v


def _with_features(sk, features):
    from device.body.skeleton import Skeleton

    return Skeleton(sk.links, sk.dofs, features, name=sk.name, gravity=sk.gravity, meta=sk.meta)


def _feature_code(sk, f):
    """[name, link, kind, [x, y, z] (m, to the micrometre), orientation if not identity]."""
    e = [f.name, sk.links[f.link].name, f.kind, [round(float(x), 6) for x in f.position]]
    q = [float(x) for x in f.orientation]
    if q != [1.0, 0.0, 0.0, 0.0]:
        e.append([round(x, 9) for x in q])
    return e


def _features_from(sk, items, where):
    from device.body.skeleton import Feature

    if not isinstance(items, list):
        raise FormatError("%s: 'features' must be a list" % where)
    out = []
    base = {f.name: f for f in sk.features}
    for i, e in enumerate(items):
        if isinstance(e, str):
            if e not in base:
                raise FormatError("%s: features[%d]: the body has no feature %r" % (where, i, e))
            out.append(base[e])
            continue
        try:
            name, link, kind, pos = e[0], e[1], e[2], e[3]
            ori = e[4] if len(e) > 4 else (1.0, 0.0, 0.0, 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):      # a zero quaternion: NaN, refused below
                feat = Feature(name, sk.link_index(link), kind, [float(x) for x in pos], [float(x) for x in ori])
        except (TypeError, ValueError, IndexError, KeyError):
            raise FormatError("%s: features[%d] is not [name, link, kind, [x, y, z]]" % (where, i)) from None
        out.append(feat)
    return out


BVH_KEYS = ("bvh", "bvhs", "bvhn")


def is_bvh(code):
    """True when a skeleton code is a BVH hierarchy ("bvh" list, "bvhs" or "bvhn" string)."""
    return code is not None and any(k in code for k in BVH_KEYS)


def _num(x):
    # a number as JSON writes it (repr of the float, an int as an int): float(text) == x
    return json.dumps(x)


def _bvh_text(items, names=None):
    """The "bvhs" string of "bvh" items (names: written instead of theirs), or None when a name
    holds a space or ";"."""
    out = []
    for i, (name, parent, off, ch, *ends) in enumerate(items):
        if not name or any(c.isspace() or c == ";" for c in name):
            return None
        out.append(" ".join([name if names is None else names[i], str(i - parent if parent >= 0 else 0), ch or "."]
                            + [_num(x) for x in off] + [_num(x) for e in ends for x in e]))
    return ";".join(out)


def _bvh_items(text, where):
    """The "bvh" items of a "bvhs" string, or FormatError."""
    if not isinstance(text, str) or not text:
        raise FormatError("%s: 'bvhs' must be a non-empty string of joints" % where)
    items = []
    for i, part in enumerate(text.split(";")):
        f = part.split(" ")
        try:
            back = int(f[1])
            nums = [float(x) for x in f[3:]]
            ok = len(f) >= 6 and len(nums) % 3 == 0 and (back >= 1) == (i > 0) and back >= 0
        except (ValueError, IndexError):
            ok = False
        if not ok:
            raise FormatError("%s: bvhs joint %d is not 'name back channels x y z [end x y z]...'" % (where, i))
        items.append([f[0], i - back if i else -1, nums[:3], "" if f[2] == "." else f[2]]
                     + [nums[k:k + 3] for k in range(3, len(nums), 3)])
    return items


def _bvh_code(sk):
    from host.bvhskeleton import skeleton_hierarchy

    try:
        joints, columns, _, _, units = skeleton_hierarchy(sk, sk.dof_names)
    except FormatError:
        return None
    if columns != list(range(sk.ndof)):
        return None
    out = []
    for j in joints:
        ch = "".join(c[0] if c.endswith("position") else c[0].lower() for c in j.channels)
        out.append([j.name, j.parent, [_short(x) for x in j.offset], ch]
                   + [[_short(x) for x in e] for e in j.end_sites])
    text = _bvh_text(out)
    if text is None:
        return {"bvh": out, "units": units, "name": sk.name}
    tokens = encode_names([e[0] for e in out])
    if tokens is None or tokens == [e[0] for e in out]:
        return {"bvhs": text, "units": units, "name": sk.name}
    # names of a known rig as table tokens (host/jointnames.py): "bvhn", which a reader that
    # does not know the table refuses rather than misnames
    return {"bvhn": _bvh_text(out, tokens), "units": units, "name": sk.name}


def decode_skeleton(code, values=None, where="header: skeleton"):
    """The Skeleton of a header's skeleton code (values (rows, frames) for a BVH hierarchy)."""
    if code is None:
        return None
    if not isinstance(code, dict):
        raise FormatError("%s: must be an object" % where)
    from device.body.skeleton import Skeleton

    if "body" in code:
        name = code["body"]
        body = BODIES.get(name) if isinstance(name, str) else None
        if body is None:
            raise FormatError("%s: body %r (hash %s) is not one this reader knows (%s)"
                              % (where, name, code.get("sha"), ", ".join(sorted(BODIES))))
        factory, keys = body
        args = {k: code[k] for k in keys if k in code}
        for k, v in args.items():
            # a body's arguments are sizes (kg, m): positive finite numbers, whatever the hash says
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1e6:
                raise FormatError("%s: body %r: %s must be a positive number, not %r" % (where, name, k, v))
        try:
            sk = factory(**args)
        except (TypeError, ValueError, ArithmeticError) as e:
            raise FormatError("%s: body %r cannot be built from %r (%s)" % (where, name, args, e)) from None
        if skeleton_hash(sk) != code.get("sha"):
            raise FormatError("%s: body %r with hash %s matches no known body (this reader's %r is %s)"
                              % (where, name, code.get("sha"), name, skeleton_hash(sk)))
        if "features" in code:
            sk = _with_features(sk, _features_from(sk, code["features"], where))
            Skeleton.from_dict(sk.to_dict(), where="%s: body %r" % (where, name))   # checks the features
        return sk
    if is_bvh(code):
        return _from_bvh(code, values, where)
    if "json" in code:
        return Skeleton.from_dict(code["json"], where=where)
    return Skeleton.from_dict(code, where=where)


def _from_bvh(code, values, where):
    from device.body.skeleton import LENGTH_UNITS
    from host.bvh import Joint
    from host.bvhskeleton import build_skeleton

    units = code.get("units")
    if units not in LENGTH_UNITS:
        raise FormatError("%s: BVH units %r are not one of %s" % (where, units, "/".join(LENGTH_UNITS)))
    if "bvh" in code:
        items = code.get("bvh")
    elif "bvhn" in code:
        items = _bvh_items(code.get("bvhn"), where)
        for e, name in zip(items, decode_names([e[0] for e in items], where)):
            e[0] = name
    else:
        items = _bvh_items(code.get("bvhs"), where)
    if not isinstance(items, list) or not items:
        raise FormatError("%s: 'bvh' must be a non-empty list of joints" % where)
    joints = []
    for i, e in enumerate(items):
        try:
            name, parent, off, ch = e[0], e[1], e[2], e[3]
            ok = (isinstance(name, str) and name and isinstance(parent, int) and -1 <= parent < i
                  and (parent >= 0) == (i > 0) and isinstance(ch, str) and len(ch) <= 6)
            off = np.array(off, float).reshape(3)
            ends = [np.array(x, float).reshape(3) for x in e[4:]]
        except (TypeError, ValueError, IndexError):
            ok = False
        if not ok or not np.isfinite(off).all() or not all(np.isfinite(x).all() for x in ends):
            raise FormatError("%s: bvh[%d] is not [name, parent, [x, y, z], channels, end sites...]" % (where, i))
        chans = []
        for c in ch:
            if c not in "XYZxyz":
                raise FormatError("%s: bvh[%d]: channel %r is not one of XYZxyz" % (where, i, c))
            chans.append(c.upper() + ("position" if c.isupper() else "rotation"))
        j = Joint(name, parent, off, chans)
        j.end_sites = ends
        joints.append(j)
    nch = sum(len(j.channels) for j in joints)
    if values is not None and len(values) != nch:
        raise FormatError("%s: the hierarchy has %d channels but the staff %d rows" % (where, nch, len(values)))
    name = code.get("name", "bvh")
    try:
        return build_skeleton(joints, units, values, name=name if isinstance(name, str) else "bvh")
    except FormatError as e:
        raise FormatError("%s: %s" % (where, e)) from None


def dof_rows(sk):
    """(name, unit, wrap, lo, hi) per dof: what a compact header leaves to the skeleton."""
    if sk is None:
        return None
    return [(d.name, d.unit, d.kind == "rotation", d.lo, d.hi) for d in sk.dofs]
