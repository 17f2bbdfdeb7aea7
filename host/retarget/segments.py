"""The person's body segments, frame-independent: joint points by name, directions by forward kinematics.

    from host.retarget.segments import person_points, segment_directions
    pts = person_points(staff)              # {"l_hip": (F, 3) metres, ...}, Z up, X forward
    dirs = segment_directions(pts)          # {"l_thigh": (F, 3) unit vectors, ...}

Points come from forward kinematics of the staff's skeleton (never from single Euler rows), so a
clip whose Euler rows change branch gives the same directions. They are expressed in the
person's heading frame: Z up (against the skeleton's gravity), Y from the right hip to the left
one (horizontal), X = Y x Z forward, origin under the mid-hip point; the heading follows the
pelvis, so a person who turns or walks away still faces +X.
Names: CMU (LeftUpLeg / LeftHip, LeftLeg / LeftKnee, LeftArm / LeftShoulder, ...), the CMU Daz
convention (lThigh, lShin, lShldr, ...), Bandai-Namco (UpperLeg_L, LowerArm_R, ...), Mixamo
("mixamorig:LeftForeArm") and the built-in human (l_thigh, l_forearm, ...).
"""

import re

import numpy as np

from protocol.errors import FormatError

# joint point -> base names of the link whose origin it is, in order of preference
SIDED = {
    "hip": ("upleg", "upperleg", "thigh", "hip", "femur"),
    "knee": ("leg", "lowerleg", "shin", "knee", "shank", "calf", "tibia"),
    "ankle": ("foot", "ankle"),
    "toe": ("toebase", "toe", "toes", "ball"),
    "shoulder": ("arm", "upperarm", "shldr", "humerus", "shoulder"),
    "elbow": ("forearm", "lowerarm", "elbow", "radius"),
    "wrist": ("wrist", "hand"),
}
CENTRE = {
    "pelvis": ("hips", "hip", "pelvis", "root"),
    "neck": ("neck", "lowerneck", "neck1", "upperneck"),
    "head": ("head",),
}
# segment -> (proximal point, distal point)
SEGMENTS = {
    "trunk": ("mid_hip", "neck"),
    "l_thigh": ("l_hip", "l_knee"), "r_thigh": ("r_hip", "r_knee"),
    "l_shank": ("l_knee", "l_ankle"), "r_shank": ("r_knee", "r_ankle"),
    "l_foot": ("l_ankle", "l_toe"), "r_foot": ("r_ankle", "r_toe"),
    "l_upper_arm": ("l_shoulder", "l_elbow"), "r_upper_arm": ("r_shoulder", "r_elbow"),
    "l_forearm": ("l_elbow", "l_wrist"), "r_forearm": ("r_elbow", "r_wrist"),
    "l_hand": ("l_wrist", "l_hand_tip"), "r_hand": ("r_wrist", "r_hand_tip"),
}
_BASES = set(b for v in SIDED.values() for b in v) | {"collar", "hipjoint", "buttock", "clavicle"}


def side_and_base(name):
    """("l" | "r" | "", base) for a link name: "LeftUpLeg" -> ("l", "upleg"), "UpperArm_R" ->
    ("r", "upperarm"), "lShin" -> ("l", "shin"), "mixamorig:Hips" -> ("", "hips")."""
    n = name.split(":")[-1].lower()
    side = ""
    for s, word in (("l", "left"), ("r", "right")):
        if n.startswith(word):
            side, n = s, n[len(word):]
            break
    if not side:
        m = re.match(r"^(.*?)[_.\s-]?(l|r)$", n)
        if m and re.sub(r"[^a-z0-9]", "", m.group(1)) in _BASES:
            side, n = m.group(2), m.group(1)
        elif len(n) > 1 and n[0] in "lr" and re.sub(r"[^a-z0-9]", "", n[1:].lstrip("_.")) in _BASES:
            side, n = n[0], n[1:]
    return side, re.sub(r"[^a-z0-9]", "", n)


def match_points(skeleton, needed=None):
    """{point: link index} for the skeleton's links (hand tip and toe may fall back to a child).

    needed: point names that must be found; FormatError names the missing ones in one line."""
    names = skeleton.link_names
    parsed = [side_and_base(n) for n in names]
    out = {}
    for side in ("l", "r"):
        for point, bases in SIDED.items():
            for b in bases:
                hit = [i for i, (s, nb) in enumerate(parsed) if s == side and nb == b]
                if hit:
                    out["%s_%s" % (side, point)] = hit[0]
                    break
    for point, bases in CENTRE.items():
        for b in bases:
            hit = [i for i, (s, nb) in enumerate(parsed) if s == "" and nb == b]
            if hit:
                out[point] = hit[0]
                break
    if "pelvis" not in out:
        out["pelvis"] = 0
    if "neck" not in out and "head" in out:
        out["neck"] = out["head"]
    for side in ("l", "r"):
        # toe: a child of the ankle when no toe link is named; hand tip: a child of the wrist
        for parent, point in (("ankle", "toe"), ("wrist", "hand_tip")):
            key, pk = "%s_%s" % (side, point), "%s_%s" % (side, parent)
            if key not in out and pk in out:
                kids = skeleton.children(out[pk])
                if kids:
                    far = max(kids, key=lambda k: np.linalg.norm(skeleton.links[k].offset))
                    if np.linalg.norm(skeleton.links[far].offset) > 1e-6:
                        out[key] = far
        # a 3ds Max CMU skeleton names the thigh "LeftHip" and its upper arm "LeftShoulder":
        # the hip point must not be the pelvis' own child that only offsets sideways
    if needed:
        missing = [p for p in needed if p not in out and p != "mid_hip"]
        if missing:
            raise FormatError("skeleton %r: cannot find %s among its links (%s%s)"
                              % (skeleton.name or "?", ", ".join(missing), ", ".join(names[:14]),
                                 ", ..." if len(names) > 14 else ""))
    return out


def _world_up(skeleton):
    g = np.asarray(skeleton.gravity, float)
    n = np.linalg.norm(g)
    return -g / n if n > 0 else np.array([0.0, 0.0, 1.0])


def person_points(staff, needed=None):
    """{point: (F, 3) metres} in the person's heading frame (module docstring); needs a staff
    with a skeleton (BVH, C3D through IK, the human model)."""
    return person_frames(staff, needed)[0]


def person_frames(staff, needed=None):
    """(points in the heading frame, points in a world frame with Z up), each {point: (F, 3)}."""
    from device.body.kinematics import forward_kinematics
    sk = staff.skeleton
    if sk is None or not hasattr(sk, "links"):
        raise FormatError("%s: the staff has no skeleton, so its segments cannot be computed "
                          "(a staff of the robot's own servo rows plays as is)"
                          % (staff.meta.get("source") or "staff"))
    idx = match_points(sk, needed)
    q = np.zeros((staff.frames, sk.ndof))
    index = {n: j for j, n in enumerate(staff.names)}
    for j, d in enumerate(sk.dofs):
        r = index.get(d.name)
        q[:, j] = d.home if r is None else staff.values[r]
    # hold missing values (a lost frame keeps the last pose) so FK stays finite
    bad = ~np.isfinite(q)
    if bad.any():
        for j in np.flatnonzero(bad.any(axis=0)):
            col = q[:, j]
            ok = np.flatnonzero(np.isfinite(col))
            if ok.size == 0:
                q[:, j] = sk.dofs[j].home
            else:
                q[:, j] = np.interp(np.arange(col.size), ok, col[ok])
    pose = forward_kinematics(sk, q)
    P = pose.link_pos_m
    if P.ndim == 2:
        P = P[None]
    up = _world_up(sk)
    raw = {k: P[:, i] for k, i in idx.items()}
    if "l_hip" in raw and "r_hip" in raw and "neck" in raw:
        trunk = np.median(raw["neck"] - 0.5 * (raw["l_hip"] + raw["r_hip"]), axis=0)
        n = np.linalg.norm(trunk)
        if n > 0 and trunk @ up < 0.5 * n:
            # the skeleton's gravity disagrees with its body (a Z-up body written as Y-up BVH):
            # up is the coordinate axis the trunk stands along
            k = int(np.argmax(np.abs(trunk)))
            up = np.zeros(3)
            up[k] = np.sign(trunk[k])
    if "l_hip" in raw and "r_hip" in raw:
        raw["mid_hip"] = 0.5 * (raw["l_hip"] + raw["r_hip"])
        left = raw["l_hip"] - raw["r_hip"]
    elif "l_shoulder" in raw and "r_shoulder" in raw:
        raw["mid_hip"] = raw["pelvis"]
        left = raw["l_shoulder"] - raw["r_shoulder"]
    else:
        raise FormatError("skeleton %r: needs a left and a right hip (or shoulder) to find where "
                          "the person faces" % (sk.name or "?"))
    # heading frame per frame: Y = horizontal left, Z = up, X = Y x Z
    y = left - (left @ up)[:, None] * up[None]
    y /= np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-9)
    z = np.broadcast_to(up, y.shape)
    x = np.cross(y, z)
    R = np.stack([x, y, z], axis=1)                     # (F, 3, 3): rows are the frame's axes
    origin = raw["mid_hip"] - (raw["mid_hip"] @ up)[:, None] * up[None]
    out = {}
    for k, p in raw.items():
        out[k] = np.einsum("fij,fj->fi", R, p - origin)
    # world frame with Z up: the first frame's heading, fixed
    world = {k: p @ R[0].T for k, p in raw.items()}
    return out, world


def segment_directions(points, names=None):
    """{segment: (F, 3) unit vectors} for the segments whose two points exist."""
    out = {}
    for seg, (a, b) in SEGMENTS.items():
        if (names is None or seg in names) and a in points and b in points:
            v = points[b] - points[a]
            n = np.linalg.norm(v, axis=1, keepdims=True)
            if np.all(n > 1e-6):
                out[seg] = v / n
    return out


def segment_lengths(points):
    """{segment: median length in metres}."""
    out = {}
    for seg, (a, b) in SEGMENTS.items():
        if a in points and b in points:
            out[seg] = float(np.median(np.linalg.norm(points[b] - points[a], axis=1)))
    return out
