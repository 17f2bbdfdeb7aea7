"""The retarget mapping file: which source rows drive which target joints.

    from host.retarget.mapping import load_mapping
    m = load_mapping("human_to_arm.json")
    m.target            # path of the target body (URDF or skeleton JSON), relative to the file; or None
    m.joints            # [JointMap(target="shoulder_pan", source="r_shoulder_rot", scale=1.0, offset=0.0, sign=1)]

JSON:
    {"format": "motionstaff-retarget", "version": 1,
     "target": "so101.urdf",                       // optional; or "human" for the built-in body
     "joints": [{"target": "shoulder_pan", "source": "r_shoulder_rot",
                 "scale": 1.0, "offset": 0.0, "sign": 1}, ...]}
target = sign * scale * source + offset, in the target dof's unit (source in its row's unit).
Target joints without an entry stay at their home value. A "source" may be prefixed with "-"
as a shorthand for sign -1 (as the robot descriptions write it).
"""

import json
import os

from protocol.errors import FormatError

FORMAT = "motionstaff-retarget"


class JointMap:
    __slots__ = ("target", "source", "scale", "offset", "sign")

    def __init__(self, target, source, scale=1.0, offset=0.0, sign=1):
        self.target, self.source = target, source
        self.scale, self.offset, self.sign = float(scale), float(offset), int(sign)

    def __repr__(self):
        return "JointMap(%r <- %s%g*%r%+g)" % (self.target, "-" if self.sign < 0 else "", self.scale,
                                               self.source, self.offset)


class Mapping:
    __slots__ = ("target", "joints", "where")

    def __init__(self, joints, target=None, where="mapping"):
        self.joints, self.target, self.where = list(joints), target, where


def _num(e, key, default, at):
    v = e.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise FormatError("%s: %s must be a finite number, not %r" % (at, key, v))
    return float(v)


def mapping_from_dict(d, where="mapping", base_dir="."):
    if not isinstance(d, dict):
        raise FormatError("%s: must be a JSON object" % where)
    if d.get("format", FORMAT) != FORMAT:
        raise FormatError("%s: format must be %r" % (where, FORMAT))
    if d.get("version", 1) != 1:
        raise FormatError("%s: unknown version %r" % (where, d.get("version")))
    joints = d.get("joints")
    if not isinstance(joints, list) or not joints:
        raise FormatError("%s: 'joints' must be a non-empty list" % where)
    out, seen = [], set()
    for i, e in enumerate(joints):
        at = "%s: joints[%d]" % (where, i)
        if not isinstance(e, dict):
            raise FormatError("%s: must be an object" % at)
        tgt, src = e.get("target"), e.get("source")
        if not isinstance(tgt, str) or not tgt or not isinstance(src, str) or not src:
            raise FormatError("%s: needs 'target' and 'source' names" % at)
        if tgt in seen:
            raise FormatError("%s: target %r is mapped twice" % (at, tgt))
        seen.add(tgt)
        sign = e.get("sign", 1)
        if sign not in (1, -1):
            raise FormatError("%s: sign must be 1 or -1" % at)
        if src.startswith("-"):
            src, sign = src[1:], -sign
        out.append(JointMap(tgt, src, _num(e, "scale", 1.0, at), _num(e, "offset", 0.0, at), sign))
    target = d.get("target")
    if target is not None:
        if not isinstance(target, str):
            raise FormatError("%s: target must be a path" % where)
        if target != "human" and not os.path.isabs(target):
            target = os.path.join(base_dir, target)
    return Mapping(out, target, where)


def load_mapping(path):
    try:
        with open(path, "rb") as f:
            raw = f.read(16 << 20)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError("%s: not a JSON mapping (%s)" % (path, e)) from None
    return mapping_from_dict(d, str(path), os.path.dirname(os.path.abspath(path)))
