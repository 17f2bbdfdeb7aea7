"""The T-pose of a humanoid skeleton, for VMC: each bone's world rotation when the body stands
in Unity's T-pose, found from the skeleton's rest pose.

    from device.outputs.tpose import tpose_rotations
    T = tpose_rotations(bone_names, parents, rest_pos_u, rest_rot_u)   # {bone: (3, 3)}
    N_b = W_b @ T[bone].T     # a frame's world rotation relative to the T-pose (identity there)

VMC receivers (VSeeFace, Warudo, VNyan, EVMC4U) put each received local rotation on a
normalised humanoid whose every bone is identity in the T-pose: arms straight out to the
sides, legs and spine straight, feet forward. A skeleton's own rest pose is often not that:
the built-in human model and CMU's MotionBuilder conversions rest with the arms hanging, so
rotations relative to the rest pose put a T-posed avatar's arms 90 degrees off.

Each bone's direction at rest (from its joint to the next joint of its chain at least 1 cm
away: upper arm to lower arm, spine to chest ...) is turned onto the T-pose direction of that bone (Unity axes: X right, Y up, Z
forward; the left arm along -X, the right along +X, legs down, the spine up) by the smallest
rotation S_b, applied in the world: T_b = S_b W_b(rest). A bone without a T-pose direction
of its own or without a child to measure (hands, head, feet, toes, fingers) keeps its rest
relation to its parent: S_b = S_parent; the hips keep their rest orientation. The rotation about a bone's own axis (twist) is not
changed: the rest pose's is kept.
"""

import numpy as np

_UP, _DOWN, _LEFT, _RIGHT = (0.0, 1.0, 0.0), (0.0, -1.0, 0.0), (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0)

# Unity HumanBodyBones name -> its direction in the T-pose (Unity axes)
DIRECTIONS = {"Spine": _UP, "Chest": _UP, "UpperChest": _UP, "Neck": _UP,
              "LeftShoulder": _LEFT, "LeftUpperArm": _LEFT, "LeftLowerArm": _LEFT,
              "RightShoulder": _RIGHT, "RightUpperArm": _RIGHT, "RightLowerArm": _RIGHT,
              "LeftUpperLeg": _DOWN, "LeftLowerLeg": _DOWN, "RightUpperLeg": _DOWN,
              "RightLowerLeg": _DOWN}
# the bone a direction is measured to, in order of preference (the next one in the chain)
NEXT = {"Hips": ("Spine", "Chest", "UpperChest", "Neck"), "Spine": ("Chest", "UpperChest", "Neck"), "Chest": ("UpperChest", "Neck"),
        "UpperChest": ("Neck",), "Neck": ("Head",)}
for _s in ("Left", "Right"):
    NEXT.update({_s + "Shoulder": (_s + "UpperArm",), _s + "UpperArm": (_s + "LowerArm",),
                 _s + "LowerArm": (_s + "Hand",), _s + "UpperLeg": (_s + "LowerLeg",),
                 _s + "LowerLeg": (_s + "Foot",)})
MIN_BONE_M = 0.01


def swing(a, b):
    """The smallest rotation matrix taking direction a onto direction b (3,)."""
    a = np.asarray(a, float) / np.linalg.norm(a)
    b = np.asarray(b, float) / np.linalg.norm(b)
    v = np.cross(a, b)
    c = float(np.dot(a, b))
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        if c > 0:
            return np.eye(3)
        # opposite: half a turn about any axis perpendicular to a
        p = np.cross(a, (1.0, 0.0, 0.0) if abs(a[0]) < 0.9 else (0.0, 1.0, 0.0))
        p /= np.linalg.norm(p)
        return 2.0 * np.outer(p, p) - np.eye(3)
    k = v / s
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    # Rodrigues: R = I + sin(t) K + (1 - cos(t)) K^2
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def tpose_rotations(bone_names, parents, rest_pos, rest_rot):
    """{bone: T_b (3, 3)}: each bone's world rotation in the T-pose (see the module docstring).

    bone_names: Unity names in skeleton order (parents before children); parents: the index
    (into bone_names) of each bone's nearest mapped ancestor, or -1; rest_pos (n, 3) and
    rest_rot (n, 3, 3): each bone's world position and rotation at rest, in Unity axes."""
    n = len(bone_names)
    rest_pos = np.asarray(rest_pos, float)
    children = [[] for _ in range(n)]
    for i, p in enumerate(parents):
        if p >= 0:
            children[p].append(i)
    S = [np.eye(3)] * n
    for i, name in enumerate(bone_names):
        p = parents[i]
        S[i] = S[p] if p >= 0 else np.eye(3)
        if name == "Hips":
            S[i] = _hips(i, bone_names, children, rest_pos)
            continue
        target = DIRECTIONS.get(name)
        d = None if target is None else _direction(i, bone_names, children, rest_pos)
        if d is not None:
            # the parent's correction first (it carries the twist), then the least swing left
            S[i] = swing(S[i] @ d, target) @ S[i]
    return {name: S[i] @ np.asarray(rest_rot[i], float) for i, name in enumerate(bone_names)}


def stands(bone_names, parents, pos):
    """True when a pose (bone world positions, Unity axes) can define the T-pose: the thighs
    point more than 120 degrees away from the spine (legs below the trunk). A BVH rest pose
    that lays every bone along one axis (Bandai-Namco's) does not."""
    n = len(bone_names)
    children = [[] for _ in range(n)]
    for i, p in enumerate(parents):
        if p >= 0:
            children[p].append(i)
    idx = {b: i for i, b in enumerate(bone_names)}
    if "Hips" not in idx:
        return True
    up = _direction(idx["Hips"], bone_names, children, np.asarray(pos, float))
    legs = [_direction(idx[s], bone_names, children, np.asarray(pos, float))
            for s in ("LeftUpperLeg", "RightUpperLeg") if s in idx]
    legs = [d for d in legs if d is not None]
    if up is None or not legs:
        return True
    cos = [np.dot(up, d) / np.linalg.norm(up) / np.linalg.norm(d) for d in legs]
    return max(cos) < np.cos(np.radians(120.0))


def _hips(i, names, children, pos):
    """The hips' correction: their rest frame (up: to the spine; left: from the right hip
    joint to the left) turned onto the T-pose's (up, left = -X); identity if either is not
    there to measure."""
    up = _direction(i, names, children, pos)
    legs = {names[c]: c for c in children[i]}
    if up is None or "LeftUpperLeg" not in legs or "RightUpperLeg" not in legs:
        return np.eye(3)
    left = pos[legs["LeftUpperLeg"]] - pos[legs["RightUpperLeg"]]
    rest = _triad(left, up)
    if rest is None:
        return np.eye(3)
    return _triad(_LEFT, _UP) @ rest.T


def _triad(left, up):
    """Orthonormal columns (left, up, left x up) from two directions, up kept; None if they
    are parallel."""
    u = np.asarray(up, float) / np.linalg.norm(up)
    lft = np.asarray(left, float) - np.dot(left, u) * u
    if np.linalg.norm(lft) < 1e-9:
        return None
    lft /= np.linalg.norm(lft)
    return np.stack([lft, u, np.cross(lft, u)], axis=1)


def _direction(i, names, children, pos):
    """The bone's direction at rest: to the next bone of its chain (NEXT), or past it when
    that one sits closer than MIN_BONE_M (a zero-length link); None if there is none."""
    j = i
    while True:
        nxt = [c for want in NEXT.get(names[j], ()) for c in children[j] if names[c] == want]
        if not nxt:
            return None
        j = nxt[0]
        d = pos[j] - pos[i]
        if np.linalg.norm(d) >= MIN_BONE_M:
            return d
