"""Body features: a skeleton-independent description of a pose for gesture matching.

    from device.body.human import human_model
    from device.gestures.features import BodyFeatures
    bf = BodyFeatures(human_model())                  # or a BVH clip's skeleton
    bf.names                                          # ["l_hip_flex_deg", ..., "pelvis_vz_leg_s"]
    f = bf.batch(q_frames, fps=30.0)                  # (F, ndof) dof units -> (F, nfeatures)
    row = bf.step(q)                                  # one frame at a time (keeps velocity state)

Staff rows of different bodies are not comparable (a CMU clip's `LeftKnee.Xrotation` is not
the human model's `l_knee_flex`), so a gesture cut from one body could never be recognised on
another. Body features are computed from forward kinematics instead: joint positions of a few
landmarks (hips, knees, ankles, toes, shoulders, elbows, wrists, neck) found by name for the
skeleton conventions we know (the built-in human model, Bandai-Namco, CMU/Hahne "max" and
"MotionBuilder", Daz), then angles in the body's own frame (heading-free) and heights in leg
lengths (size-free). Only joint centres are used (hips, knees, ankles, shoulders, elbows), never
a root or neck link, whose place differs between conventions: the trunk frame's up axis runs
from the mid-hip point to the mid-shoulder point, lateral along the hip joints; the pelvis point
of the velocities is the mid-hip point. So one take in two conventions gives nearly the same
curves (CMU 05_20 -mb and -daz: tests/test_gesture_features.py, benchmarks/gestures.py):

* `*_hip_flex_deg`, `*_hip_abd_deg`, `*_shoulder_flex_deg`, `*_shoulder_abd_deg`: the thigh /
  upper arm direction in the trunk frame as a swing from hanging down (0, 0): the angle from
  "down" split into its forward and sideways (abduction) parts, so a limb swung straight
  forward by 90 deg is (90, 0) and one raised sideways (a T-pose arm) is (0, 90). Continuous
  everywhere except pointing straight up (where the split is undefined);
* `*_knee_deg`, `*_elbow_deg`: interior bend, 0 = straight; `*_ankle_deg`: foot against shank;
* `trunk_lean_fwd_deg`, `trunk_lean_side_deg`: the trunk against the world vertical (gravity);
* `*_foot_h_leg`: ankle height above the hip joints over leg length (-1 standing);
* `pelvis_vz_leg_s`: the pelvis's vertical speed in leg lengths per second (0 on a fixed base),
  a backward difference (0 on the first frame);
* `pelvis_vh_leg_s`: the pelvis's horizontal speed (magnitude, so heading-free) in leg lengths
  per second, a backward difference (0 on the first frame and on a fixed base): standing
  still and walking differ most in this one.

What stays different between conventions is their own rest geometry where a conversion keeps
it: the Daz rest pose bends the knees 8 deg and the elbows 17 deg, and the -daz file of 05_20
shows those bends on top of the -mb file's (about 0.3 and 0.6 typical sizes).

`SCALES` gives each feature's typical size; matching divides by it so degrees and leg lengths
weigh alike. A skeleton we do not recognise raises FeatureError (a FormatError).
"""

import numpy as np

from device.body.kinematics import forward_kinematics
from protocol.errors import FormatError

LANDMARKS = ("pelvis", "neck", "l_hip", "l_knee", "l_ankle", "l_toe", "l_shoulder", "l_elbow",
             "l_wrist", "r_hip", "r_knee", "r_ankle", "r_toe", "r_shoulder", "r_elbow", "r_wrist")


def _sides(left, right, common):
    d = dict(common)
    for k, v in left.items():
        d["l_" + k] = v
    for k, v in right.items():
        d["r_" + k] = v
    return d


def _limb(hip, knee, ankle, toe, shoulder, elbow, wrist):
    return {"hip": hip, "knee": knee, "ankle": ankle, "toe": toe, "shoulder": shoulder,
            "elbow": elbow, "wrist": wrist}


# landmark -> link name, per skeleton convention (first convention whose names all exist wins)
CONVENTIONS = {
    "human48": _sides(_limb("l_thigh", "l_shank", "l_foot", "l_toes", "l_upper_arm", "l_forearm", "l_hand"),
                      _limb("r_thigh", "r_shank", "r_foot", "r_toes", "r_upper_arm", "r_forearm", "r_hand"),
                      {"pelvis": "pelvis", "neck": "neck"}),
    "bandai": _sides(_limb("UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L", "UpperArm_L", "LowerArm_L", "Hand_L"),
                     _limb("UpperLeg_R", "LowerLeg_R", "Foot_R", "Toes_R", "UpperArm_R", "LowerArm_R", "Hand_R"),
                     {"pelvis": "Hips", "neck": "Neck"}),
    "cmu-max": _sides(_limb("LeftHip", "LeftKnee", "LeftAnkle", "LeftToe", "LeftShoulder", "LeftElbow", "LeftWrist"),
                      _limb("RightHip", "RightKnee", "RightAnkle", "RightToe", "RightShoulder", "RightElbow",
                            "RightWrist"),
                      {"pelvis": "Hips", "neck": "Neck"}),
    "cmu-mb": _sides(_limb("LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase", "LeftArm", "LeftForeArm", "LeftHand"),
                     _limb("RightUpLeg", "RightLeg", "RightFoot", "RightToeBase", "RightArm", "RightForeArm",
                           "RightHand"),
                     {"pelvis": "Hips", "neck": "Neck"}),
    "daz": _sides(_limb("lThigh", "lShin", "lFoot", "lFoot_End", "lShldr", "lForeArm", "lHand"),
                  _limb("rThigh", "rShin", "rFoot", "rFoot_End", "rShldr", "rForeArm", "rHand"),
                  {"pelvis": "hip", "neck": "neck"}),
}

NAMES = []
for _s in ("l", "r"):
    NAMES += ["%s_hip_flex_deg" % _s, "%s_hip_abd_deg" % _s, "%s_knee_deg" % _s, "%s_ankle_deg" % _s,
              "%s_shoulder_flex_deg" % _s, "%s_shoulder_abd_deg" % _s, "%s_elbow_deg" % _s,
              "%s_foot_h_leg" % _s]
NAMES += ["trunk_lean_fwd_deg", "trunk_lean_side_deg", "pelvis_vz_leg_s", "pelvis_vh_leg_s"]
VELOCITY = 2          # the last VELOCITY features are pelvis velocities (vz, vh)
RATES = tuple(NAMES[-VELOCITY:])      # features that are rates (0 at rest)

# typical size of each feature: distances divide by it
SCALES = np.array([0.25 if n.endswith("_leg") else 0.5 if n.endswith("_leg_s") else 30.0 for n in NAMES])

# the body mirrored left to right: each side's features trade places (abduction is measured
# outwards on both sides, so it keeps its sign) and the sideways trunk lean changes sign
MIRROR = np.array([NAMES.index(("r_" + n[2:]) if n.startswith("l_") else ("l_" + n[2:]) if n.startswith("r_")
                               else n) for n in NAMES])
MIRROR_SIGN = np.array([-1.0 if n == "trunk_lean_side_deg" else 1.0 for n in NAMES])


def mirrored(features):
    """Features (..., len(NAMES)) of the same motion done with the other side of the body."""
    f = np.asarray(features, float)
    return f[..., MIRROR] * MIRROR_SIGN


class FeatureError(FormatError):
    """The skeleton's landmarks cannot be found."""


def convention_of(skeleton):
    """The name of the convention whose landmark links all exist in the skeleton, or None."""
    have = set(skeleton.link_names)
    for name, table in CONVENTIONS.items():
        if all(v in have for v in table.values()):
            return name
    return None


def _unit(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, 1e-12)


def _angle_deg(a, b):
    """Angle between vectors a and b (..., 3), degrees."""
    c = np.sum(_unit(a) * _unit(b), axis=-1)
    return np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


class BodyFeatures:
    """Computes NAMES from a skeleton's dof values (see the module docstring)."""

    names = NAMES
    scales = SCALES

    def __init__(self, skeleton, convention=None):
        conv = convention or convention_of(skeleton)
        if conv is None or conv not in CONVENTIONS:
            raise FeatureError("skeleton %r: body features need the landmarks of one of %s "
                               "(hips, knees, ankles, toes, shoulders, elbows, wrists, neck)"
                               % (skeleton.name, ", ".join(CONVENTIONS)))
        self.skeleton = skeleton
        self.convention = conv
        self._idx = {k: skeleton.link_index(v) for k, v in CONVENTIONS[conv].items()}
        g = -np.asarray(skeleton.gravity, float)
        self.world_up = g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
        self._last_z = None

    @staticmethod
    def leg_m(p):
        """Mean leg length (hip-knee + knee-ankle) of each frame of landmark positions: (F,)."""
        n = np.linalg.norm
        return np.maximum(1e-6, 0.5 * sum(n(p[s + "_hip"] - p[s + "_knee"], axis=-1) +
                                          n(p[s + "_knee"] - p[s + "_ankle"], axis=-1) for s in "lr"))

    def positions(self, q):
        """Landmark positions {name: (F, 3)} in metres for q (F, ndof); missing (NaN) dof values
        are posed at their home value (see _missing for what that leaves undefined)."""
        q = np.atleast_2d(np.asarray(q, float))
        if np.isnan(q).any():
            q = np.where(np.isnan(q), self.skeleton.home[None, :], q)
        pos = forward_kinematics(self.skeleton, q).link_pos_m
        return {k: pos[:, i] for k, i in self._idx.items()}

    def _missing(self, q, f):
        """Mark features NaN where the estimate is missing: every feature of a frame with every
        rotation missing, the pelvis velocity of a frame with a translation missing."""
        q = np.atleast_2d(np.asarray(q, float))
        miss = np.isnan(q)
        if not miss.any():
            return f
        rot = np.array([d.kind == "rotation" for d in self.skeleton.dofs])
        f = np.array(f, float)
        if rot.any():
            f[miss[:, rot].all(axis=1)] = np.nan
        if (~rot).any():
            f[miss[:, ~rot].any(axis=1), -VELOCITY:] = np.nan
        return f

    @staticmethod
    def _swing_deg(v, fwd, lat, up, sgn):
        """A limb direction v (F, 3) in the trunk frame as a swing from hanging down: the
        rotation angle from "down" to v (0..180) split along its forward and (sgn) lateral
        parts. Continuous for every direction except straight up; equal to the projected
        angle for a purely forward or purely sideways limb."""
        u = _unit(v)
        f = np.sum(u * fwd, axis=-1)
        s = sgn * np.sum(u * lat, axis=-1)
        theta = np.degrees(np.arccos(np.clip(-np.sum(u * up, axis=-1), -1.0, 1.0)))
        rho = np.sqrt(f * f + s * s)
        k = np.where(rho > 1e-9, theta / np.maximum(rho, 1e-9), 0.0)
        return k * f, k * s

    @staticmethod
    def _trunk(p):
        """Trunk frame (up, lat, fwd) (F, 3) each, and the mid-hip point: up runs from the
        middle of the hip joints to the middle of the shoulder joints (the joint centres of
        every convention; a root or neck link sits at a convention's own place)."""
        mid_hip = 0.5 * (p["l_hip"] + p["r_hip"])
        up = _unit(0.5 * (p["l_shoulder"] + p["r_shoulder"]) - mid_hip)
        lat = p["l_hip"] - p["r_hip"]
        lat = _unit(lat - np.sum(lat * up, axis=-1, keepdims=True) * up)   # towards the left
        fwd = np.cross(lat, up)                                              # left x up = forward
        return up, lat, fwd, mid_hip

    def from_positions(self, p):
        """Features (F, nfeatures) of landmark positions, without pelvis velocities (set to 0)."""
        up_w = self.world_up
        leg = self.leg_m(p)
        up, lat, fwd, mid_hip = self._trunk(p)
        out = []
        for s, sgn in (("l", 1.0), ("r", -1.0)):
            thigh = p[s + "_knee"] - p[s + "_hip"]
            shank = p[s + "_ankle"] - p[s + "_knee"]
            foot = p[s + "_toe"] - p[s + "_ankle"]
            uarm = p[s + "_elbow"] - p[s + "_shoulder"]
            farm = p[s + "_wrist"] - p[s + "_elbow"]
            hf, ha = self._swing_deg(thigh, fwd, lat, up, sgn)
            sf, sa = self._swing_deg(uarm, fwd, lat, up, sgn)
            foot_h = np.sum((p[s + "_ankle"] - mid_hip) * up_w, axis=-1) / leg
            out += [hf, ha, _angle_deg(thigh, shank), _angle_deg(shank, foot) - 90.0, sf, sa,
                    _angle_deg(uarm, farm), foot_h]
        lean_fwd = -np.degrees(np.arcsin(np.clip(np.sum(fwd * up_w, axis=-1), -1, 1)))
        lean_side = np.degrees(np.arcsin(np.clip(np.sum(lat * up_w, axis=-1), -1, 1)))
        out += [lean_fwd, lean_side, np.zeros_like(lean_fwd), np.zeros_like(lean_fwd)]
        return np.stack(out, axis=-1)

    def batch(self, q, fps):
        """Features (F, nfeatures) of a whole motion q (F, ndof) sampled at fps."""
        q = np.atleast_2d(np.asarray(q, float))
        p = self.positions(q)
        f = self.from_positions(p)
        z, h = self._pelvis(p)
        if len(z) > 1:                        # backward differences, as step() computes them
            f[1:, -2] = np.diff(z) * fps
            f[1:, -1] = np.linalg.norm(np.diff(h, axis=0), axis=-1) * fps
        return self._missing(q, f)

    def _pelvis(self, p):
        """Pelvis (mid-hip point) height (F,) and horizontal position (F, 3), in leg lengths."""
        leg = self.leg_m(p)
        mid_hip = 0.5 * (p["l_hip"] + p["r_hip"])
        z = np.sum(mid_hip * self.world_up, axis=-1)
        h = mid_hip - z[:, None] * self.world_up[None, :]
        return z / leg, h / leg[:, None]

    def step(self, q, dt_s):
        """Features (nfeatures,) of one frame; the pelvis velocity is a backward difference."""
        p = self.positions(q)
        f = self.from_positions(p)[0]
        z, h = self._pelvis(p)
        z, h = float(z[0]), h[0]
        if self._last_z is not None and dt_s > 0:
            f[-2] = (z - self._last_z[0]) / dt_s
            f[-1] = float(np.linalg.norm(h - self._last_z[1])) / dt_s
        f = self._missing(q, f[None])[0]
        # a frame whose root position is guessed (missing) is no base for the next velocity
        self._last_z = None if np.isnan(f[-1]) else (z, h)
        return f

    def reset(self):
        self._last_z = None
