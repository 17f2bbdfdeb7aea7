"""A BVH clip performed by the built-in human model: joint centres matched by IK, pelvis held.

    from device.capture.bvhclip import load_bvh
    from device.capture.retarget import retarget_clip
    motion = retarget_clip(load_bvh("131_03.bvh"), human_model())   # callable t_s -> q (dof units)
    motion(1.5), motion.duration_s, motion.q_frames (F, ndof)

Why: the torque-state EKF needs a body with masses and well-conditioned joints. A clip's own
BVH skeleton has neither (Euler channels at gimbal lock, e.g. CMU Hips and hands; massless End
Site links; 96 dofs), so with a model estimator the simulated subject is the human model
performing the clip, as in benchmarks/estimation.py: the clip's joint centres (its own FK) are
expressed in a frame moving with its hips (the world at the first frame; the model's pelvis is
fixed), turned Y-up -> Z-up, faced along
the model's +X by the hip line of the first frame, scaled to the model's leg length, and matched
by damped least squares IK (device/body/ik.py) frame by frame, warm-started, with a posture
prior; then low-passed at 8 Hz (zero phase) as motion-capture processing does. The truth is
this retargeted motion (a C2 cubic spline through the frames, so the simulated IMUs see smooth
accelerations).
"""

import numpy as np

from device.body.ik import solve_ik
from device.body.kinematics import forward_kinematics

# human-model link <- BVH joint at its origin (Bandai, CMU, MotionBuilder and DAZ names): the
# joint centres IK matches (the first name present wins: CMU's LeftShoulder is the shoulder
# joint, MotionBuilder's is the collar, so its LeftArm is looked up first).
MAP = {
    "neck": ("Neck", "Neck1", "neck"), "head": ("Head", "head"),
    "l_thigh": ("UpperLeg_L", "LeftHip", "LeftUpLeg", "lThigh"),
    "l_shank": ("LowerLeg_L", "LeftKnee", "LeftLeg", "lShin"),
    "l_foot": ("Foot_L", "LeftAnkle", "LeftFoot", "lFoot"),
    "l_toes": ("Toes_L", "LeftToe", "LeftToeBase", "lToe"),
    "l_upper_arm": ("UpperArm_L", "LeftArm", "LeftShoulder", "lShldr"),   # MotionBuilder's LeftShoulder is the collar
    "l_forearm": ("LowerArm_L", "LeftElbow", "LeftForeArm", "lForeArm"),
    "l_hand": ("Hand_L", "LeftWrist", "LeftHand", "lHand"),
    "l_fingers": ("Hand_L_End", "LFingers", "LeftFingerBase", "lMid1", "LeftHandMiddle1"),
}


def _right(name):
    if name.startswith("l") and len(name) > 1 and name[1].isupper():
        return "r" + name[1:]                                   # DAZ: lThigh -> rThigh
    return name.replace("_L", "_R").replace("Left", "Right").replace("LFingers", "RFingers")


for _k, _v in list(MAP.items()):
    if _k.startswith("l_"):
        MAP["r_" + _k[2:]] = tuple(_right(n) for n in _v)
_LIGHT = ("l_fingers", "r_fingers", "l_toes", "r_toes", "head")


class RetargetedMotion:
    """q(t) of the retargeted clip (dof units), a cubic spline through its frames."""

    def __init__(self, skeleton, values, frame_time_s):
        from scipy.interpolate import CubicSpline
        self.skeleton = skeleton
        self.q_frames = values               # (F, ndof); not "values": Subject reads that as a Clip
        self.frame_time_s = float(frame_time_s)
        self.duration_s = len(values) * self.frame_time_s
        t = np.arange(len(values)) * self.frame_time_s
        self._spline = CubicSpline(t, values, axis=0, bc_type="natural") if len(values) > 1 else None
        self._lo, self._hi = skeleton.lo, skeleton.hi

    def __call__(self, t_s):
        if self._spline is None:
            return self.q_frames[0].copy()
        t = float(np.clip(t_s, 0.0, (len(self.q_frames) - 1) * self.frame_time_s))
        return np.clip(self._spline(t), self._lo, self._hi)


def retarget_clip(clip, skeleton, max_s=None, fps=30.0):
    """The clip (device.capture.bvhclip.Clip) on skeleton (the human model or a subset of its
    dofs), resampled at fps: a RetargetedMotion. max_s limits the seconds retargeted."""
    bsk = clip.skeleton
    names = bsk.link_names
    n_src = clip.frames
    t_src = np.arange(n_src) * clip.frame_time_s
    dur = t_src[-1] if max_s is None else min(t_src[-1], float(max_s))
    t = np.arange(0.0, dur + 1e-9, 1.0 / fps)
    # the clip's own channels, linearly interpolated at the new rate (angles unwrapped first)
    v = np.array(clip.values, float)
    rot = np.array([d.kind == "rotation" for d in bsk.dofs])
    v[:, rot] = np.degrees(np.unwrap(np.radians(v[:, rot]), axis=0))
    qb = np.stack([np.interp(t, t_src, v[:, j]) for j in range(v.shape[1])], axis=1)
    pose = forward_kinematics(bsk, qb)
    hips = [i for i, ln in enumerate(bsk.links) if ln.parent < 0][0]
    # the hips' rotation since the first frame (a rig's constant offset in its hips channels,
    # e.g. MotionBuilder's, would otherwise lean the whole body): the model's pelvis does not
    # move, so the joint centres are taken in a frame that moves with the clip's hips and is the
    # world (upright) at frame 0
    Rh = pose.link_rot[:, hips] @ pose.link_rot[0, hips].T
    ph = pose.link_pos_m[:, hips]
    targets, tnames = [], []
    for h, cands in MAP.items():
        b = [c for c in cands if c in names]
        if b and h in skeleton.link_names:
            targets.append(np.einsum("fji,fj->fi", Rh, pose.link_pos_m[:, names.index(b[0])] - ph))
            tnames.append(h)
    if "l_thigh" not in tnames or "r_thigh" not in tnames or "l_foot" not in tnames:
        raise ValueError("%s: no hip/foot joints recognised for retargeting" % (clip.source or "clip"))
    up = -np.asarray(bsk.gravity, float)
    up /= np.linalg.norm(up)
    C = _to_z_up(up)
    T = np.stack(targets, axis=1) @ C.T                                   # (F, K, 3), Z up
    lt, rt = tnames.index("l_thigh"), tnames.index("r_thigh")
    hip = T[0, lt] - T[0, rt]
    yaw = np.arctan2(hip[1], hip[0]) - np.pi / 2                          # hip line -> +Y
    c, s = np.cos(-yaw), np.sin(-yaw)
    T = T @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]]).T
    T = _bone_directions(skeleton, tnames, T)
    w = {nm: (0.3 if nm in _LIGHT else 1.0) for nm in tnames}
    q = np.array(skeleton.home, float)
    out = np.empty((len(T), skeleton.ndof))
    prior = q.copy()
    for f in range(len(T)):
        q, _info = solve_ik(skeleton, positions=dict(zip(tnames, T[f])), q0=q, weights=w, damping=0.05,
                            max_iter=20, tol_rad=1e-5, q_prior=prior, prior_weight=0.3)
        out[f] = prior = q
    if len(out) > 15:
        from scipy.signal import butter, filtfilt
        b, a = butter(4, min(8.0 / (fps / 2.0), 0.9))
        out = filtfilt(b, a, out, axis=0, padlen=min(3 * max(len(a), len(b)), len(out) - 1))
    out = np.clip(out, skeleton.lo, skeleton.hi)
    return RetargetedMotion(skeleton, out, 1.0 / fps)


def _to_z_up(up):
    """A rotation taking the clip's world (up = its -gravity) to Z-up (Y-up BVH: (x, y, z) ->
    (z, x, y), so the BVH's forward Z becomes X)."""
    if abs(up[1]) > 0.9:
        return np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    if abs(up[2]) > 0.9:
        return np.eye(3)
    return np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])


# the chain a target hangs from ("_hip": the centre of the two hip joints)
_PARENT = {"neck": "_hip", "head": "neck", "l_upper_arm": "neck", "l_forearm": "l_upper_arm",
           "l_hand": "l_forearm", "l_fingers": "l_hand", "l_thigh": "_hip", "l_shank": "l_thigh",
           "l_foot": "l_shank", "l_toes": "l_foot"}
_PARENT.update({"r_" + k[2:]: (("r_" + v[2:]) if v.startswith("l_") else v)
                for k, v in list(_PARENT.items()) if k.startswith("l_")})


def _bone_directions(skeleton, tnames, T):
    """Targets (F, K, 3) with the clip's bone directions and the model's bone lengths, hung
    from the model's (fixed) hip joints: a clip with a shorter trunk or longer arms than the
    model would otherwise pin the spine at its limits (a 40 deg S-bend on CMU 131_03)."""
    P = forward_kinematics(skeleton, skeleton.home).link_pos_m
    pos = {nm: P[skeleton.link_index(nm)] for nm in tnames}
    src = {nm: T[:, k] for k, nm in enumerate(tnames)}
    src["_hip"] = 0.5 * (src["l_thigh"] + src["r_thigh"])
    pos["_hip"] = 0.5 * (pos["l_thigh"] + pos["r_thigh"])
    out = {"_hip": np.broadcast_to(pos["_hip"], src["_hip"].shape)}
    for nm in ("l_thigh", "r_thigh"):
        out[nm] = np.broadcast_to(pos[nm], src[nm].shape)          # the pelvis does not move
    todo = [nm for nm in tnames if nm not in out]
    while todo:
        left = []
        for nm in todo:
            par = _PARENT.get(nm, "_hip")
            while par not in src:                                   # a joint the clip lacks
                par = _PARENT.get(par, "_hip")
            if par not in out:
                left.append(nm)
                continue
            d = src[nm] - src[par]
            d = d / np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), 1e-9)
            out[nm] = out[par] + d * np.linalg.norm(pos[nm] - pos[par])
        if len(left) == len(todo):
            raise ValueError("retarget: cannot chain %s" % ", ".join(left))
        todo = left
    return np.stack([out[nm] for nm in tnames], axis=1)
