"""Stream a skeleton's pose live in the VMC protocol (Virtual Motion Capture, OSC over UDP).

    from device.body.human import human_model
    from device.outputs.vmc import VmcOutput
    sk = human_model()
    out = VmcOutput(sk, host="127.0.0.1", port=39539)    # 39539: VMC's performer port
    out(frame_index=0, t_s=0.0, values=sk.home)           # the capture-loop signature
    root, bones = out.bones(sk.home)                      # what one frame sends, for tests
    out.close()

Per frame, one OSC bundle (protocol: https://protocol.vmc.info/english):

    /VMC/Ext/Root/Pos  "root" px py pz qx qy qz qw    the avatar's origin (identity here)
    /VMC/Ext/Bone/Pos  name   px py pz qx qy qz qw    per humanoid bone: position and rotation
                                                      LOCAL to its parent humanoid bone
    /VMC/Ext/OK        1                               avatar loaded
    /VMC/Ext/T         t_s                             the frame's time

Coordinates are Unity's: left-handed, Y up, Z forward, X to the right, metres. The body model
(Z up, X forward, Y left) maps as unity = (-y, z, x); a BVH skeleton (Y up, Z forward) as
unity = (-x, y, z); rotations are conjugated by the same reflection (R_u = M R M^T), so they
stay proper. Hips carries the pelvis pose relative to the root; every other bone its offset and
rotation relative to the nearest ancestor that is a humanoid bone, from forward kinematics.
Rotations are those of a normalised humanoid, as receivers expect: every bone is identity in
Unity's T-pose (arms straight out, legs and spine straight). The T-pose is found from the
skeleton's rest pose (device/outputs/tpose.py), which for the human model and CMU's
MotionBuilder conversions has the arms hanging; a rest pose that is no standing pose
(Bandai-Namco's lays every bone along X) gives way to the first frame sent. Bones are mapped from link names: the human
model, Bandai-Namco, CMU/Hahne max and MotionBuilder, and Daz skeletons.
"""

import numpy as np

from device.body.kinematics import forward_kinematics
from device.gestures.features import convention_of
from device.outputs.osc import _client, send_frame


def _sided(table):
    out = {}
    for k, v in table.items():
        if "{s}" in k or "{S}" in k or "{Side}" in k:
            for s, S, side in (("l", "L", "Left"), ("r", "R", "Right")):
                out[k.format(s=s, S=S, Side=side)] = v.format(Side=side)
        else:
            out[k] = v
    return out


# link name -> Unity HumanBodyBones name, per skeleton convention (see features.CONVENTIONS)
BONE_MAPS = {
    "human48": _sided({"pelvis": "Hips", "abdomen": "Spine", "chest": "Chest", "neck": "Neck",
                       "head": "Head", "{s}_upper_arm": "{Side}UpperArm", "{s}_forearm": "{Side}LowerArm",
                       "{s}_hand": "{Side}Hand", "{s}_fingers": "{Side}MiddleProximal",
                       "{s}_thumb": "{Side}ThumbProximal", "{s}_thigh": "{Side}UpperLeg",
                       "{s}_shank": "{Side}LowerLeg", "{s}_foot": "{Side}Foot", "{s}_toes": "{Side}Toes"}),
    "bandai": _sided({"Hips": "Hips", "Spine": "Spine", "Chest": "Chest", "Neck": "Neck", "Head": "Head",
                      "Shoulder_{S}": "{Side}Shoulder", "UpperArm_{S}": "{Side}UpperArm",
                      "LowerArm_{S}": "{Side}LowerArm", "Hand_{S}": "{Side}Hand",
                      "UpperLeg_{S}": "{Side}UpperLeg", "LowerLeg_{S}": "{Side}LowerLeg",
                      "Foot_{S}": "{Side}Foot", "Toes_{S}": "{Side}Toes"}),
    "cmu-max": _sided({"Hips": "Hips", "lowerback": "Spine", "Chest": "Chest", "Chest2": "UpperChest",
                       "Neck": "Neck", "Head": "Head", "{Side}Collar": "{Side}Shoulder",
                       "{Side}Shoulder": "{Side}UpperArm", "{Side}Elbow": "{Side}LowerArm",
                       "{Side}Wrist": "{Side}Hand", "{Side}Hip": "{Side}UpperLeg",
                       "{Side}Knee": "{Side}LowerLeg", "{Side}Ankle": "{Side}Foot", "{Side}Toe": "{Side}Toes"}),
    "cmu-mb": _sided({"Hips": "Hips", "LowerBack": "Spine", "Spine": "Chest", "Spine1": "UpperChest",
                      "Neck": "Neck", "Head": "Head", "{Side}Shoulder": "{Side}Shoulder",
                      "{Side}Arm": "{Side}UpperArm", "{Side}ForeArm": "{Side}LowerArm",
                      "{Side}Hand": "{Side}Hand", "{Side}UpLeg": "{Side}UpperLeg",
                      "{Side}Leg": "{Side}LowerLeg", "{Side}Foot": "{Side}Foot", "{Side}ToeBase": "{Side}Toes"}),
    "daz": _sided({"hip": "Hips", "abdomen": "Spine", "chest": "Chest", "neck": "Neck", "head": "Head",
                   "{s}Collar": "{Side}Shoulder", "{s}Shldr": "{Side}UpperArm", "{s}ForeArm": "{Side}LowerArm",
                   "{s}Hand": "{Side}Hand", "{s}Thigh": "{Side}UpperLeg", "{s}Shin": "{Side}LowerLeg",
                   "{s}Foot": "{Side}Foot"}),
}

Z_UP_TO_UNITY = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
Y_UP_TO_UNITY = np.diag([-1.0, 1.0, 1.0])


def to_unity_matrix(skeleton):
    """The reflection M with unity = M @ p for the skeleton's world (Z up or Y up, by gravity)."""
    g = np.asarray(skeleton.gravity, float)
    axis = int(np.argmax(np.abs(g)))
    if axis == 2:
        return Z_UP_TO_UNITY
    if axis == 1:
        return Y_UP_TO_UNITY
    raise ValueError("skeleton %r: gravity %r is neither along Z nor Y" % (skeleton.name, list(g)))


def quat_xyzw(R):
    """Unit quaternion (x, y, z, w) of rotation matrices R (..., 3, 3), w >= 0."""
    R = np.asarray(R, float)
    m00, m11, m22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    q = np.empty(R.shape[:-2] + (4,))
    # four candidate largest components, pick the best conditioned one per matrix
    t = np.stack([1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22, 1 + m00 + m11 + m22], -1)
    k = np.argmax(t, axis=-1)
    s = np.sqrt(np.maximum(np.take_along_axis(t, k[..., None], -1)[..., 0], 1e-300)) * 2.0
    r = R
    cand = [
        (0.25 * s, (r[..., 0, 1] + r[..., 1, 0]) / s, (r[..., 0, 2] + r[..., 2, 0]) / s, (r[..., 2, 1] - r[..., 1, 2]) / s),
        ((r[..., 0, 1] + r[..., 1, 0]) / s, 0.25 * s, (r[..., 1, 2] + r[..., 2, 1]) / s, (r[..., 0, 2] - r[..., 2, 0]) / s),
        ((r[..., 0, 2] + r[..., 2, 0]) / s, (r[..., 1, 2] + r[..., 2, 1]) / s, 0.25 * s, (r[..., 1, 0] - r[..., 0, 1]) / s),
        ((r[..., 2, 1] - r[..., 1, 2]) / s, (r[..., 0, 2] - r[..., 2, 0]) / s, (r[..., 1, 0] - r[..., 0, 1]) / s, 0.25 * s),
    ]
    for i, c in enumerate(cand):
        sel = k == i
        for j in range(4):
            q[..., j] = np.where(sel, c[j], q[..., j] if i else 0.0)
    q = np.where(q[..., 3:4] < 0, -q, q)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def rest_values(skeleton):
    """The skeleton's rest pose as dof values: home, except that a BVH joint whose position
    channels replace its OFFSET (Bandai-Namco: every joint has them) sits at that OFFSET, the
    file's rest geometry (skeleton.meta["bvh_offsets"], in the channels' units)."""
    q = np.array(skeleton.home, float)
    offsets = (skeleton.meta or {}).get("bvh_offsets") or {}
    names = skeleton.link_names
    for k, d in enumerate(skeleton.dofs):
        off = offsets.get(names[d.link] if isinstance(d.link, int) else d.link)
        if off is not None and d.kind == "translation":
            q[k] = float(np.dot(off, d.axis))
    return q


class VmcOutput:
    """Sends each frame's bones in the VMC protocol (see the module docstring)."""

    def __init__(self, skeleton, host="127.0.0.1", port=39539, row_names=None, bone_map=None):
        self.skeleton = skeleton
        if row_names is not None and list(row_names) != skeleton.dof_names:
            raise ValueError("VMC output: the rows are not the skeleton's dofs in order")
        if bone_map is None:
            conv = convention_of(skeleton)
            if conv is None:
                raise ValueError("VMC output: skeleton %r has no known humanoid bone names; pass bone_map"
                                 % skeleton.name)
            bone_map = BONE_MAPS[conv]
        names = skeleton.link_names
        self.links = [i for i, n in enumerate(names) if n in bone_map]
        if not self.links:
            raise ValueError("VMC output: no link of skeleton %r maps to a humanoid bone" % skeleton.name)
        self.bone_names = [bone_map[names[i]] for i in self.links]
        mapped = set(self.links)
        self.parents = []                 # nearest mapped ancestor link index, or -1 (the root)
        for i in self.links:
            p = skeleton.links[i].parent
            while p >= 0 and p not in mapped:
                p = skeleton.links[p].parent
            self.parents.append(p)
        self.M = to_unity_matrix(skeleton)
        # {bone: its world rotation in the T-pose, Unity axes}: from the rest pose, or from the
        # first frame sent when the rest pose is no standing pose (tpose.stands)
        self.tpose = self._tpose(rest_values(skeleton), need_standing=True)
        self._T = None if self.tpose is None else [self.tpose[b] for b in self.bone_names]
        self.host, self.port = host, port
        self.client = _client(host, port, "VMC target") if port is not None else None
        self.frames_sent = 0
        self.dropped = 0              # datagrams dropped: the send buffer was full

    def bones(self, q):
        """(root (pos (3,), quat (4,)), [(bone name, local pos (3,), local quat xyzw (4,))])."""
        q = np.asarray(q, float)
        if q.shape != (self.skeleton.ndof,):
            raise ValueError("VMC output: frame has %d values for %d dofs" % (q.size, self.skeleton.ndof))
        if np.isnan(q).any():
            q = np.where(np.isnan(q), self.skeleton.home, q)   # missing: the rest value
        if self._T is None:
            self.tpose = self._tpose(q)
            self._T = [self.tpose[b] for b in self.bone_names]
        pose = forward_kinematics(self.skeleton, q)
        M = self.M
        # every bone's world rotation relative to its T-pose, in Unity axes: N = M W M' T'
        N = {i: M @ pose.link_rot[i] @ M.T @ T.T for i, T in zip(self.links, self._T)}
        out = []
        for name, i, p in zip(self.bone_names, self.links, self.parents):
            Np, pp = (np.eye(3), np.zeros(3)) if p < 0 else (N[p], M @ pose.link_pos_m[p])
            # local to the parent bone: L = Np' N, offset Np' (P - Pp)
            R_local = Np.T @ N[i]
            p_local = Np.T @ (M @ pose.link_pos_m[i] - pp)
            out.append((name, p_local, quat_xyzw(R_local)))
        return (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])), out

    def _tpose(self, q, need_standing=False):
        """{bone: world rotation in the T-pose} from the pose q (device/outputs/tpose.py);
        None if need_standing and q is no standing pose."""
        from device.outputs.tpose import stands, tpose_rotations
        pose = forward_kinematics(self.skeleton, q)
        M = self.M
        idx = {l: k for k, l in enumerate(self.links)}
        parents = [idx.get(p, -1) for p in self.parents]
        pos = [M @ pose.link_pos_m[i] for i in self.links]
        if need_standing and not stands(self.bone_names, parents, pos):
            return None
        return tpose_rotations(self.bone_names, parents, pos,
                               [M @ pose.link_rot[i] @ M.T for i in self.links])

    def messages(self, t_s, q):
        (rp, rq), bones = self.bones(q)
        msgs = [("/VMC/Ext/Root/Pos", ["root"] + [float(v) for v in rp] + [float(v) for v in rq])]
        for name, p, qq in bones:
            msgs.append(("/VMC/Ext/Bone/Pos", [name] + [float(v) for v in p] + [float(v) for v in qq]))
        msgs.append(("/VMC/Ext/OK", [1]))
        msgs.append(("/VMC/Ext/T", [float(t_s)]))
        return msgs

    def __call__(self, frame_index, t_s, values, codes=None):
        self.dropped += send_frame(self.client, self.messages(t_s, values),
                                   "VMC target %s:%d" % (self.host, self.port))
        self.frames_sent += 1

    def close(self):
        sock = getattr(self.client, "_sock", None)
        if sock is not None:
            sock.close()
