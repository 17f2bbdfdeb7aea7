"""The joint names of common BVH rigs, so that a staff header names a known rig's joints in a few bytes.

    from host.jointnames import encode_names, decode_names
    tokens = encode_names(["Hips", "LHipJoint", "LeftUpLeg", "Knee"])   # ["#", "#", "#", "Knee"]
    decode_names(tokens) == ["Hips", "LHipJoint", "LeftUpLeg", "Knee"]

A name in JOINT_NAMES at index k is written "#k", or "#" alone when k is one more than the last
name written from the table (a known rig in its own order is then "#k # # # ..."); any other
name is written as it is. encode_names returns None when a name of the rig itself starts with
"#" (the names are then written plainly). The header's "bvhn" (host/skeletoncode.py) holds such
tokens; "bvhs" (files written before) only plain names.

JOINT_NAMES only ever grows at its end: a file names its joints by index. The rigs, each in
its BVH file's order: CMU's MotionBuilder conversion (05_20-mb), CMU's own (131_01, 131_03),
CMU's Daz conversion (05_20-daz), Bandai-Namco's motion dataset; in ../shared/data/bvh.
"""

JOINT_NAMES = tuple("""
Hips LHipJoint LeftUpLeg LeftLeg LeftFoot LeftToeBase RHipJoint RightUpLeg RightLeg RightFoot
RightToeBase LowerBack Spine Spine1 Neck Neck1 Head LeftShoulder LeftArm LeftForeArm LeftHand
LeftFingerBase LeftHandIndex1 LThumb RightShoulder RightArm RightForeArm RightHand
RightFingerBase RightHandIndex1 RThumb
Hips LHipJoint LeftHip LeftKnee LeftAnkle LeftToe RHipJoint RightHip RightKnee RightAnkle
RightToe lowerback Chest Chest2 lowerneck Neck Head LeftCollar LeftShoulder LeftElbow LeftWrist
lhand LFingers LThumb RightCollar RightShoulder RightElbow RightWrist rhand RFingers RThumb
hip abdomen chest neck head leftEye rightEye rCollar rShldr rForeArm rHand rThumb1 rThumb2
rIndex1 rIndex2 rMid1 rMid2 rRing1 rRing2 rPinky1 rPinky2 lCollar lShldr lForeArm lHand lThumb1
lThumb2 lIndex1 lIndex2 lMid1 lMid2 lRing1 lRing2 lPinky1 lPinky2 rButtock rThigh rShin rFoot
lButtock lThigh lShin lFoot
joint_Root Hips Spine Chest Neck Head Shoulder_L UpperArm_L LowerArm_L Hand_L Shoulder_R
UpperArm_R LowerArm_R Hand_R UpperLeg_L LowerLeg_L Foot_L Toes_L UpperLeg_R LowerLeg_R Foot_R
Toes_R
""".split())
TOKEN = "#"


def encode_names(names):
    """The names as tokens (module docstring), or None when a name starts with TOKEN."""
    if any(n.startswith(TOKEN) for n in names):
        return None
    out, last = [], -1
    for i, n in enumerate(names):
        # the table entry after the last one used, else the one the next name follows
        k = last + 1 if last + 1 < len(JOINT_NAMES) and JOINT_NAMES[last + 1] == n else _entry(
            n, names[i + 1] if i + 1 < len(names) else None)
        if k is None:
            out.append(n)
            continue
        out.append(TOKEN if k == last + 1 else "%s%d" % (TOKEN, k))
        last = k
    return out


def _entry(name, following):
    """The index of name in JOINT_NAMES whose next entry is following, else its first, else None."""
    at = [k for k, n in enumerate(JOINT_NAMES) if n == name]
    for k in at:
        if k + 1 < len(JOINT_NAMES) and JOINT_NAMES[k + 1] == following:
            return k
    return at[0] if at else None


def decode_names(tokens, where="header: skeleton"):
    """The names of encode_names' tokens, or FormatError naming a token outside the table."""
    from protocol.errors import FormatError

    out, last = [], -1
    for i, t in enumerate(tokens):
        if not t.startswith(TOKEN):
            out.append(t)
            continue
        digits = t[len(TOKEN):]
        k = last + 1 if not digits else (int(digits) if digits.isdigit() and digits.isascii() else -1)
        if not 0 <= k < len(JOINT_NAMES):
            raise FormatError("%s: joint %d's name %r is not in the table of %d joint names"
                              % (where, i, t, len(JOINT_NAMES)))
        out.append(JOINT_NAMES[k])
        last = k
    return out
