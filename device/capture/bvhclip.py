"""A minimal BVH reader for the device (which never imports host/): a Skeleton and its frames.

    from device.capture.bvhclip import load_bvh
    clip = load_bvh("131_01.bvh")            # Clip: .skeleton .values (F, ndof) .frame_time_s
    clip.skeleton.dof_names[:4]              # ['Hips.Xposition', 'Hips.Yposition', ...]

Naming follows host/bvh.py: one link per ROOT/JOINT, End Sites as links `<Parent>_End`, one dof
per channel named `<Joint>.<Channel>`; a position channel replaces the OFFSET along its axis
(as in Blender, bvhio and host/bvh.py). Rotations stay in degrees. Positions are converted to
metres (dof unit "m") with a scale guessed from the body's height in the rest pose (a standing
adult is taken as ~1.7 m tall), because BVH files do not state their unit. BVH is Y-up, so the
skeleton's gravity is (0, -9.81, 0). Every link with dofs carries one IMU feature (`<link>_imu`)
and one marker (`<link>_m`) at its joint.
"""

import numpy as np

from device.body.skeleton import Dof, Feature, Link, Skeleton
from protocol.errors import FormatError

_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


class Clip:
    def __init__(self, skeleton, values, frame_time_s, metres_per_unit, source=""):
        self.skeleton = skeleton
        self.values = values                # (F, ndof) in dof units (deg, m)
        self.frame_time_s = frame_time_s
        self.metres_per_unit = metres_per_unit
        self.source = source

    @property
    def frames(self):
        return self.values.shape[0]

    @property
    def duration_s(self):
        return self.frames * self.frame_time_s


def canonical_euler(skeleton, values):
    """The same motion with each joint's three rotation angles (distinct orthogonal axes) in
    the canonical triple: of (a, b, c) and (a+180, 180-b, c+180) the one with |b| <= 90 deg.
    Mocap exports switch between the two near b = 90 deg; the estimator writes the canonical
    one, so truth and estimate are the same function of the rotation."""
    v = np.array(values, float)
    for ln in range(len(skeleton.links)):
        js = [j for j in skeleton.links[ln].dofs if skeleton.dofs[j].kind == "rotation"]
        if len(js) != 3:
            continue
        A = np.array([skeleton.dofs[j].axis for j in js])
        if not np.allclose(np.abs(A @ A.T), np.eye(3), atol=1e-9):
            continue
        if any(skeleton.dofs[j].lo > -180 or skeleton.dofs[j].hi < 180 for j in js):
            continue                      # limited joints: the limits choose (see orient.py)
        x = v[:, js]
        b = (x[:, 1] + 180.0) % 360.0 - 180.0
        flip = np.abs(b) > 90.0
        alt = np.stack([x[:, 0] + 180.0, 180.0 - x[:, 1], x[:, 2] + 180.0], 1)
        x[flip] = (alt[flip] + 180.0) % 360.0 - 180.0
        v[:, js] = x
    return v


def load_bvh(path, metres_per_unit=None):
    with open(path, "r") as f:
        text = f.read()
    return parse_bvh(text, path, metres_per_unit)


def parse_bvh(text, where="bvh", metres_per_unit=None):
    tok = text.split()
    i = 0
    joints = []     # (name, parent index, offset, channels)
    stack = []

    def need(k):
        if k >= len(tok):
            raise FormatError("%s: unexpected end of file in HIERARCHY" % where)
        return tok[k]

    if not tok or tok[0] != "HIERARCHY":
        raise FormatError("%s: not a BVH file (no HIERARCHY)" % where)
    i = 1
    pending = None
    while True:
        t = need(i)
        if t in ("ROOT", "JOINT"):
            pending = need(i + 1)
            i += 2
        elif t == "End":
            pending = (joints[stack[-1]][0] if stack else "root") + "_End"
            i += 2
        elif t == "{":
            joints.append([pending, stack[-1] if stack else -1, np.zeros(3), []])
            stack.append(len(joints) - 1)
            i += 1
        elif t == "}":
            stack.pop()
            i += 1
            if not stack:
                break
        elif t == "OFFSET":
            try:
                joints[stack[-1]][2] = np.array([float(need(i + k)) for k in (1, 2, 3)])
            except ValueError:
                raise FormatError("%s: bad OFFSET of %s" % (where, joints[stack[-1]][0]))
            i += 4
        elif t == "CHANNELS":
            n = int(need(i + 1))
            joints[stack[-1]][3] = [need(i + 2 + k) for k in range(n)]
            i += 2 + n
        else:
            raise FormatError("%s: unexpected %r in HIERARCHY" % (where, t))
    if need(i) != "MOTION" or need(i + 1) != "Frames:":
        raise FormatError("%s: MOTION section missing" % where)
    nframes = int(need(i + 2))
    if need(i + 3) != "Frame" or need(i + 4) != "Time:":
        raise FormatError("%s: 'Frame Time:' missing" % where)
    ft = float(need(i + 5))
    if not ft > 0:
        raise FormatError("%s: Frame Time must be > 0" % where)
    nch = sum(len(j[3]) for j in joints)
    data = tok[i + 6:]
    if len(data) < nframes * nch or nch == 0:
        raise FormatError("%s: %d motion values for %d frames x %d channels"
                          % (where, len(data), nframes, nch))
    raw = np.array(data[:nframes * nch], float).reshape(nframes, nch)
    if not np.all(np.isfinite(raw)):
        raise FormatError("%s: motion values are not all finite" % where)

    # rest-pose extent along Y (up) to guess the unit (position channels of non-root joints
    # replace their offsets: take frame 0's values for them)
    pos = np.zeros((len(joints), 3))
    col = 0
    for k, (name, parent, off, ch) in enumerate(joints):
        o = np.array(off, float)
        for c in ch:
            if c.endswith("position") and c[0] in "XYZ" and parent >= 0:
                o["XYZ".index(c[0])] = raw[0, col]
            col += 1
        pos[k] = o + (pos[parent] if parent >= 0 else 0)
    if metres_per_unit is None:
        extent = float(pos[:, 1].max() - pos[:, 1].min())
        metres_per_unit = 1.7 / extent if extent > 0 else 0.01
    s = metres_per_unit

    links, dofs, feats = [], [], []
    col = 0
    scale_cols = []
    for k, (name, parent, off, ch) in enumerate(joints):
        off = np.array(off, float)
        for c in ch:
            if c.endswith("position") and c[0] in "XYZ":
                off["XYZ".index(c[0])] = 0.0      # a position channel replaces OFFSET (Blender, bvhio)
        links.append(Link(name, parent, off * s, 1.0 if ch else 0.0))
        for c in ch:
            axis = _AXES.get(c[0])
            if axis is None or c[1:] not in ("position", "rotation"):
                raise FormatError("%s: unknown channel %r of %s" % (where, c, name))
            if c.endswith("rotation"):
                dofs.append(Dof("%s.%s" % (name, c), k, "rotation", axis, -180.0, 180.0))
            else:
                v = raw[:, col] * s
                lo, hi = float(v.min()) - 1.0, float(v.max()) + 1.0
                # home inside the range (a skeleton whose home is outside fails its own check,
                # and convert/info refuse its recordings): where the clip starts
                dofs.append(Dof("%s.%s" % (name, c), k, "translation", axis, lo, hi,
                                home=float(v[0]) if len(v) else 0.5 * (lo + hi), unit="m"))
                scale_cols.append(col)
            col += 1
        if ch:
            feats.append(Feature(name + "_imu", k, "imu", (0.0, 0.0, 0.0)))
            feats.append(Feature(name + "_m", k, "marker", (0.0, 0.0, 0.0)))
    raw[:, scale_cols] *= s
    sk = Skeleton(links, dofs, feats, name=where.split("/")[-1], gravity=(0.0, -9.81, 0.0),
                  meta={"source": where, "metres_per_unit": s})
    return Clip(sk, raw, ft, s, where)
