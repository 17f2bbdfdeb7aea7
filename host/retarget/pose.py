"""Retargeting by pose: the robot's segments point where the person's do, within its limits.

    from host.retarget.pose import retarget_to_robot
    res = retarget_to_robot(read_bvh("131_01.bvh"), "op3-dynamixel", balance=True)
    res.staff            # rows = the robot's servos, degrees, at res.staff.fps
    res.retimed          # >= 1.0: the motion was slowed by this factor
    res.infeasible       # [[start_s, stop_s, why]] in the result's time (e.g. flight phases)
    res.pose_error_deg   # median angle between corresponding segment directions

Per output frame (at the robot's command rate), a differential IK (mink, over the robot's MuJoCo
model) moves the previous frame's solution (warm start, so a continuous motion gives continuous
commands) towards:
  knee* = hip + L_thigh * d_thigh,  ankle* = knee* + L_shank * d_shank  (robot lengths L, the
  person's directions d from forward kinematics: limb lengths are scaled, never Euler rows),
  the same for elbows and wrists, the torso's tilt and the feet's pitch from the person's;
with the description's joint limits (ConfigurationLimit), FOLLOW_FRACTION of its velocity limits
(VelocityLimit) and self-collision avoidance (CollisionAvoidanceLimit); the player's own
Limiter law is the last step (limits, max_vel_dps, acceleration). With balance (humanoids): a
standing foot is held flat and still where it stood, the centre of mass (ComTask) over the
stance sole in single support and between the soles in double support, a long lift (a kick, a
leg raised) swings and lands back where the foot stood, walking steps are done with the feet
down; a feed-forward adds each servo's expected give under load (_sag); the motion is slowed
(retimed) where a segment turns faster than the servos follow or the weight cannot shift in
the time the person takes; flight phases (run, hop, jump) are reported in `infeasible` with both
feet kept down, and the rest is played. The staff begins with a lead-in from home.
"""

import numpy as np

from host.retarget.segments import SEGMENTS, person_frames, segment_directions
from protocol.errors import FormatError

ITERS = 2
WEIGHT_RAMP_S = 0.5        # time the weight takes to move onto one foot (OP3, quasi-static)
MAX_TRUNK_TILT_DEG = 25.0  # with balance the torso bows at most this far
SWING_PITCH_DEG = 25.0     # a swing foot pitches at most this much (its toe must not dig in)
SWING_CLEAR_M = 0.015      # and clears the floor by this much
# the swing foot turns to the person's pitch as w ** 2 of the swing (w in _swing_weights): it
# leaves the floor flat; pitching it as it lifts dragged the toe (131_03 at 5.3 s: 17 mm)
SWING_PITCH_POWER = 2.0
COM_INWARD_M = 0.02       # the weight over the stance sole, this far inside its centre
SETTLE_S = 0.1             # and rests there before the other foot lifts
MIN_SWING_S = 0.6          # a lift shorter than this (a walking step) keeps the foot down
MAX_RETIME = 4.0
COM_COST = 3000.0          # the centre-of-mass task's cost (horizontal) against the segment tasks
# the upper arm's direction before the forearm's: an OP3 arm (shoulder pitch, roll, elbow) holds
# upper arm and forearm in one plane through the shoulders' axis, so a forearm bent forward off
# a hanging arm is out of reach; with balance the IK matches the upper arm and puts the forearm
# in that plane as close to the person's as it goes, rather than bending both away. The forearm's
# task is weakened (x0.25), not the upper arm's raised: stronger arm tasks pulled against the
# balance (measured whole-length: 4x on the upper arm tipped the twin over on 05_20-daz at 24 s,
# 05_20-mb at 24 s and 131_03 at 12 s; the base did not fall there)
UPPER_ARM_WEIGHT = 1.0
FOREARM_WEIGHT = 0.25
# with balance the arms move at half the legs' joint speed once the clip runs: at full speed
# the arm swing tipped the OP3 twin over (dataset-2_run at 6.4 s: the feet knocked together)
ARM_VEL_SCALE = 0.5
# XM430-W350 at P gain 800 in the twin: 4.6 duty/rad, so at 120 deg/s (0.4 of 300) the back-EMF
# leaves an error of about 5 deg; faster than that the motion is slowed
FOLLOW_FRACTION = 0.4
# the IK keeps self-collision pairs this far apart unless the robot's pair says otherwise
# (robotmodel.SPECS "collide": an OP3 elbow passing its hip keeps 15 mm, see there)
COLLISION_MARGIN_M = 0.004


class Result:
    __slots__ = ("staff", "retimed", "infeasible", "pose_error_deg", "segment_error_deg",
                 "contacts", "notes", "qpos", "lead_in_s")

    def __init__(self, staff, retimed, infeasible, pose_error_deg, segment_error_deg, contacts, notes):
        self.staff, self.retimed, self.infeasible = staff, retimed, infeasible
        self.pose_error_deg, self.segment_error_deg = pose_error_deg, segment_error_deg
        self.contacts, self.notes = contacts, notes
        self.qpos = None            # (F, nq) the IK's whole-body solution (root included)
        self.lead_in_s = 0.0        # the staff starts with this long a move from home to the first pose

    def lines(self):
        out = ["pose retargeting onto %d servos, %d frames at %g fps; median pose error %.1f deg"
               % (self.staff.nrows, self.staff.frames, self.staff.fps, self.pose_error_deg)]
        if self.retimed > 1.0:
            out.append("slowed down %.2fx (the robot cannot follow at full speed)" % self.retimed)
        for a, b, why in self.infeasible:
            out.append("cannot do %.2f-%.2f s: %s (played with both feet down)" % (a, b, why))
        out.extend(self.notes)
        return out


def _needed(body):
    pts = set()
    for seg in body.spec["segments"]:
        a, b = SEGMENTS[seg]
        pts.update(p for p in (a, b) if p not in ("l_toe", "r_toe", "mid_hip", "l_hand_tip", "r_hand_tip"))
    return sorted(pts)


def _resample(arr, t_src):
    """Linear interpolation of (F, ...) at fractional frame indices t_src."""
    F = arr.shape[0]
    t = np.clip(t_src, 0, F - 1)
    i0 = np.floor(t).astype(int)
    i1 = np.minimum(i0 + 1, F - 1)
    w = (t - i0).reshape((-1,) + (1,) * (arr.ndim - 1))
    return arr[i0] * (1 - w) + arr[i1] * w


def _unit(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def _mount(body, dirs):
    """The person's directions in the robot's frame: an arm's base may be mounted turned (the
    SO-101 points forward where the person's arm hangs down)."""
    M = body.spec.get("mount")
    if M is None:
        return dirs
    M = np.asarray(M, float)
    return {k: v @ M.T for k, v in dirs.items()}


def _flat_feet(dirs, contacts):
    """Foot directions measured against the person's flat-foot pitch (its median while standing):
    the ankle-to-toe line points down even when the sole is flat."""
    out = dict(dirs)
    for k, s in (("l_foot", 0), ("r_foot", 1)):
        if k not in dirs:
            continue
        d = dirs[k]
        el = np.arcsin(np.clip(d[:, 2], -1, 1))
        c = contacts[s] if contacts is not None and contacts[s].any() else np.ones(len(d), bool)
        out[k] = pitch_foot(d, float(np.median(el[c])))
    return out


def pitch_foot(d, e0_rad):
    """(F, 3) foot directions d turned toe-up by -e0_rad about the foot's own lateral axis (the
    horizontal axis across the foot; a foot pitched past the vertical, pointing back in a run's
    back swing, keeps its left: its yaw folded back), so the flat-foot line becomes level.
    Rodrigues: d' = d cos(e0) + (k x d) sin(e0) + k (k . d)(1 - cos(e0)), k the foot's left axis
    (a rotation by e0 < 0 about k lifts the toe)."""
    d = np.atleast_2d(d)
    az = np.arctan2(d[:, 1], d[:, 0])
    az = np.where(np.abs(az) > np.pi / 2, az - np.pi * np.sign(az), az)
    k = np.stack([-np.sin(az), np.cos(az), np.zeros_like(az)], axis=1)
    c, s = np.cos(e0_rad), np.sin(e0_rad)
    return d * c + np.cross(k, d) * s + k * np.sum(k * d, axis=1, keepdims=True) * (1 - c)


def _frame_from(z, x_hint):
    """Rotation matrix with its Z along z and X as close to x_hint as the orthogonality allows."""
    z = _unit(z)
    x = x_hint - (x_hint @ z) * z
    if np.linalg.norm(x) < 1e-6:
        x = np.array([1.0, 0, 0]) - z[0] * z
    x = _unit(x)
    return np.column_stack([x, np.cross(z, x), z])


def _foot_rot(d, max_el_deg=85.0):
    """A foot frame with X along the sole-forward direction d, Y to the left, level."""
    x, y, z = _unit(d)
    az = np.arctan2(y, x)
    el = np.arcsin(np.clip(z, -1.0, 1.0))
    if abs(az) > np.pi / 2:
        # pitched past the vertical (toe-off, a kick): the same foot, yaw turned back
        az = az - np.pi * np.sign(az)
        el = np.sign(el) * np.pi - el
    # a foot turns at most 40 deg (the hip yaw's range) and never points straight down
    az = np.clip(az, -np.radians(40), np.radians(40))
    el = np.clip(el, -np.radians(max_el_deg), np.radians(max_el_deg))
    ca, sa, ce, se = np.cos(az), np.sin(az), np.cos(el), np.sin(el)
    fx = np.array([ce * ca, ce * sa, se])
    fy = np.array([-sa, ca, 0.0])
    return np.column_stack([fx, fy, np.cross(fx, fy)])


def robot_directions(body, deg_frames, root_qpos=None):
    """{segment: (F, 3)} the robot's segment directions for servo angles (F, nservo) degrees, in
    its heading frame; the root (floating base) from root_qpos (F, 7), e.g. the IK's, else
    upright at home (a row copy commands no root: its torso is taken as standing straight)."""
    import mujoco
    m = body.model
    data = mujoco.MjData(m)
    keys = body.spec["segments"]
    out = {k: np.zeros((len(deg_frames), 3)) for k in keys}
    q = body.qpos_home()
    for f, a in enumerate(deg_frames):
        q[body.qadr] = body.to_model_rad(a)
        if root_qpos is not None and body.floating:
            q[:7] = root_qpos[f]
        data.qpos[:] = q
        mujoco.mj_kinematics(m, data)
        R = _heading(body, data)
        for k in keys:
            out[k][f] = R @ _robot_dir(body, data, k)
    return out


def pose_error_deg(person_staff, servo_staff, robot_name, retimed=1.0, root_qpos=None, lead_in_s=0.0):
    """(median, {segment: median}) angle between the person's segment directions and the
    robot's for a staff of the robot's servo rows (any method: row copy, pose, balance); the
    servo staff's frame k is the person's time (k / fps - lead_in_s) / retimed."""
    from host.retarget.robotmodel import robot_body
    body = robot_body(robot_name)
    hp, wp = person_frames(person_staff, _needed(body))
    dirs = _mount(body, segment_directions(hp, body.spec["segments"]))
    contacts = None
    if body.humanoid:
        from host.retarget import support
        contacts = support.foot_contacts(wp, float(person_staff.fps))
    dirs = _flat_feet(dirs, contacts)
    t = np.arange(servo_staff.frames) / servo_staff.fps - lead_in_s
    keep = t >= -1e-9
    t_src = np.maximum(t[keep], 0.0) / retimed * person_staff.fps
    D = {k: _unit(_resample(v, t_src)) for k, v in dirs.items()}
    idx = [servo_staff.row_index(s.name) for s in body.servos]
    deg = np.nan_to_num(servo_staff.values[idx].T)[keep]
    R = robot_directions(body, deg, None if root_qpos is None else root_qpos[keep])
    seg = {k: angle_deg(R[k], D[k]) for k in R if k in D}
    allv = np.concatenate(list(seg.values())) if seg else np.array([np.nan])
    return float(np.median(allv)), {k: float(np.median(v)) for k, v in seg.items()}


def _heading(body, data):
    """World -> robot heading frame (yaw of the hips' left-right line; identity for an arm)."""
    if not body.humanoid:
        return np.eye(3)
    left = body.point_pos(data, "l_hip") - body.point_pos(data, "r_hip")
    y = _unit(np.array([left[0], left[1], 0.0]))
    x = np.array([y[1], -y[0], 0.0])
    return np.stack([x, y, [0.0, 0.0, 1.0]])


def _robot_dir(body, data, seg):
    """A segment's direction in the world: limbs joint to joint, the foot's sole-forward axis,
    the torso's up axis."""
    m = body.model
    if seg in ("l_foot", "r_foot"):
        return data.xmat[m.body(body.spec["feet"][seg[0]]).id].reshape(3, 3)[:, 0].copy()
    if seg == "trunk":
        return data.xmat[m.body(body.spec["torso"]).id].reshape(3, 3)[:, 2].copy()
    a, b = SEGMENTS[seg]
    return _unit(body.point_pos(data, b) - body.point_pos(data, a))


def angle_deg(a, b):
    return np.degrees(np.arccos(np.clip(np.sum(_unit(a) * _unit(b), axis=-1), -1.0, 1.0)))


def retarget_to_robot(staff, robot_name, balance=True, fps=None, max_retime=MAX_RETIME,
                      iterations=ITERS, collisions=True, retime=True, lead_in_s=1.0):
    """Result (module docstring) for a staff with a skeleton on a built-in robot."""
    from host.retarget.robotmodel import robot_body
    from host.retarget import support
    body = robot_body(robot_name)
    if staff.frames < 1:
        raise FormatError("%s: the staff has no frames" % (staff.meta.get("source") or "staff"))
    hp, wp = person_frames(staff, _needed(body))
    src_fps = float(staff.fps)
    dirs = _mount(body, segment_directions(hp, body.spec["segments"]))
    if not dirs:
        raise FormatError("%s: no usable segments for %s (needs %s)" % (
            staff.meta.get("source") or "staff", body.name, ", ".join(body.spec["segments"])))
    humanoid = body.humanoid and balance
    contacts = None
    notes = []
    if body.humanoid and all(k in wp for k in ("l_ankle", "r_ankle", "l_hip", "l_knee")):
        contacts = support.foot_contacts(wp, src_fps)
    dirs = _flat_feet(dirs, contacts)
    # -- retime: segments turning faster than the servos, weight shifts faster than the robot
    factor = 1.0
    if retime and staff.frames > 2:
        # a segment turning at w needs its joints at about w; a position servo under its
        # default P gain follows within a few degrees up to FOLLOW_FRACTION of its rated speed
        vmax = np.radians(np.min(body.vmax_dps)) * FOLLOW_FRACTION
        for k, d in dirs.items():
            w = np.radians(angle_deg(d[1:], d[:-1])) * src_fps           # rad/s
            if w.size >= 10:
                factor = max(factor, float(np.percentile(w, 95)) / vmax)
        if humanoid and contacts is not None:
            factor = max(factor, _weight_factor(contacts, src_fps))
        factor = float(min(max(factor, 1.0), max_retime))
    # the robot's own command rate: the player sends one frame per period, and the limiter's
    # braking between sparser frames would leave the commands behind the plan
    out_fps = float(fps or body.robot.rate_hz)
    duration = (staff.frames - 1) / src_fps * factor
    N = int(np.floor(duration * out_fps + 1e-9)) + 1
    # a lead-in from the robot's home to the first pose, inside the staff (the player's ramp
    # moves each servo on its own, which can tip a humanoid over; this one keeps it balanced)
    L = int(round(lead_in_s * out_fps))
    # (the first pose may be a bow or a crouch: the lead-in goes at a quarter of the speed)
    t_src = np.r_[np.zeros(L), np.arange(N) / out_fps / factor * src_fps]   # fractional source frame
    D = {k: _unit(_resample(v, t_src)) for k, v in dirs.items()}
    infeasible = []
    swing_l = swing_r = None
    if humanoid and contacts is not None:
        idx = np.clip(np.round(t_src).astype(int), 0, staff.frames - 1)
        cl, cr = contacts[0][idx], contacts[1][idx]
        cl[:L] = cr[:L] = True
        for a, b in support.runs(~(cl | cr)):
            infeasible.append([round(a / out_fps, 3), round(b / out_fps, 3),
                               "flight phase: both feet off the floor"])
        swing_l, swing_r = _swings(cl, cr, out_fps, infeasible, factor)
    elif body.humanoid and not balance:
        notes.append("balance off: the feet follow the person's legs")
    height = None
    if humanoid and all(k in wp for k in ("mid_hip", "l_hip", "l_knee", "l_ankle", "r_ankle")):
        # the person's hip height over their ankles' floor against their own leg (thigh +
        # shank, hip to ankle straight): as crouched as the person is. (Against the clip's 90th
        # percentile of hip height, a person who dances crouched throughout had a robot
        # standing straight: 131_03 thighs 23/18 deg off; measured on benchmarks/robot.py's
        # 3 s, pose error 15.3 -> 11.8 deg there, 131_01 18.2 -> 14.8, walk 11.1 -> 9.4, no falls)
        z = wp["mid_hip"][:, 2] - np.percentile(np.minimum(wp["l_ankle"][:, 2], wp["r_ankle"][:, 2]), 3)
        leg = float(np.median(np.linalg.norm(wp["l_hip"] - wp["l_knee"], axis=1)
                              + np.linalg.norm(wp["l_knee"] - wp["l_ankle"], axis=1)))
        # (no lower than 0.7: deeper, the torso would sink to where a fall is counted; a leg
        # of no length, a skeleton's knee and ankle on its hip, gives no height: the robot
        # stands straight, not a NaN target for its torso)
        if np.isfinite(leg) and leg > 0.0:
            with np.errstate(invalid="ignore", over="ignore"):
                r = z / leg
            height = np.clip(_resample(np.where(np.isfinite(r), r, 1.0), t_src), 0.7, 1.0)
    qs = _solve(body, D, out_fps, humanoid, swing_l, swing_r, iterations, collisions, height,
                converge_first=L == 0, lead=L)
    deg = body.to_servo_deg(qs[:, body.qadr])
    if humanoid and swing_l is not None:
        sag = _sag(body, qs, ~swing_l, ~swing_r)
        deg = deg + body.to_servo_deg(_ramp_sag(sag, ~swing_l, ~swing_r, int(round(WEIGHT_RAMP_S * out_fps))))
    deg = _limit(deg, body, out_fps)
    qfinal = qs.copy()
    qfinal[:, body.qadr] = body.to_model_rad(deg)
    R = robot_directions(body, deg, qfinal[:, :7] if body.floating else None)
    seg_err = {k: angle_deg(R[k][L:], D[k][L:]) for k in R if k in D}
    err = float(np.median(np.concatenate(list(seg_err.values())))) if seg_err else float("nan")
    from host.staff import Row, Staff
    rows = [Row(s.name, "deg", s.lo_deg, s.hi_deg, True) for s in body.servos]
    meta = dict(staff.meta)
    meta["source"] = ("retargeted by pose from %s" % staff.meta.get("source", "a staff")).strip()
    meta["retimed"] = factor
    out = Staff(deg.T.copy(), rows, out_fps, 16, None, meta)
    infeasible = _merge(infeasible)
    res = Result(out, factor, infeasible, err, {k: float(np.median(v)) for k, v in seg_err.items()},
                 None if swing_l is None else (~swing_l, ~swing_r), notes)
    res.qpos = qfinal
    res.lead_in_s = L / out_fps
    return res


def _sag(body, qs, stand_l, stand_r):
    """(F, nservo) model radians to add to each command so that a position servo, which gives
    way under load by torque / stiffness, ends where the plan wants it (feed-forward).

    Statics at each planned pose (velocities zero): qfrc_bias = tau + J_c^T f, the contact
    wrench f at the standing soles carries the floating base (root rows: qfrc_bias_root =
    J_c,root^T f, least squares with both feet down), so tau = bias_joint - J_c,joint^T f; the
    servo's stiffness k = stall torque x duty per radian (host/physics/servo.py, the twin's and
    the data sheet's), and the offset is tau / k."""
    import mujoco
    from host.physics.models import MODELS
    from host.physics.servo import SPECS
    spec = SPECS[MODELS[body.name]["servo"]]
    k_nm_per_rad = spec.stall_nm * spec.kp_duty_per_rad
    m = body.model
    d = mujoco.MjData(m)
    out = np.zeros((qs.shape[0], len(body.servos)))
    jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    for f in range(qs.shape[0]):
        d.qpos[:] = qs[f]
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        J = []
        for s, on in (("l", stand_l[f]), ("r", stand_r[f])):
            if on:
                mujoco.mj_jac(m, d, jp, jr, body.point_pos(d, s + "_sole"), m.body(body.spec["feet"][s]).id)
                J.append(np.vstack([jp, jr]).copy())
        if not J:
            continue
        Jc = np.vstack(J)                                    # (6 or 12, nv)
        bias = d.qfrc_bias.copy()
        wrench = np.linalg.lstsq(Jc[:, :6].T, bias[:6], rcond=None)[0]
        tau = bias[body.dadr] - Jc[:, body.dadr].T @ wrench
        out[f] = tau / k_nm_per_rad
    return out


def _ramp_sag(sag, stand_l, stand_r, n):
    """The feed-forward of _sag moved across each change of support over n frames, as the weight
    moves (the weight schedule's ramp), not in one frame: the statics switch between one foot
    and two at the instant a foot lifts or lands, and a 4 deg step in a hip roll's command at a
    landing kicked the OP3 twin's feet 12 mm along the floor (05_20-daz at 27.4 s). Before a
    lift-off the load is already on the stance foot (the weight moved over the n frames before):
    the change is spread over [f - n, f]; after a landing it moves over [f, f + n]."""
    out = sag.copy()
    F = sag.shape[0]
    if n < 2 or F < 3:
        return out
    for flag in (np.asarray(stand_l, bool), np.asarray(stand_r, bool)):
        for f in np.flatnonzero(np.diff(flag.astype(np.int8))) + 1:
            a, b = (max(0, f - n), f) if not flag[f] else (f - 1, min(F - 1, f + n))
            if b - a < 2:
                continue
            # linear between the two ends: out[a + i] = out[a] + (out[b] - out[a]) i / (b - a)
            # (the ends as they stand: a ramp overlapping an earlier one starts where it left
            # off; from sag[a] it was a step at a, 3.2 deg on dataset-1_dance-short)
            w = (np.arange(b - a + 1) / float(b - a))[:, None]
            out[a:b + 1] = (1 - w) * out[a] + w * out[b]
    return out


def _merge(spans):
    out = []
    for a, b, why in sorted(spans):
        if out and out[-1][2] == why and a <= out[-1][1] + 1e-6:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b, why])
    return out


def _weight_factor(contacts, fps):
    """How much slower the motion must be for the weight to move onto the stance foot before
    each lift: the time from the other foot's landing to this foot's lift, against WEIGHT_RAMP_S."""
    from host.retarget.support import runs
    cl, cr = contacts
    lifts = [(a, "l") for a, b in runs(~cl) if (b - a) / fps >= MIN_SWING_S]
    lifts += [(a, "r") for a, b in runs(~cr) if (b - a) / fps >= MIN_SWING_S]
    lands = [(b, "l") for a, b in runs(~cl) if b < len(cl)] + [(b, "r") for a, b in runs(~cr) if b < len(cr)]
    need = 1.0
    for a, s in lifts:
        prev = [b for b, o in lands if b <= a]
        gap = (a - max(prev)) / fps if prev else a / fps + WEIGHT_RAMP_S
        need = max(need, (WEIGHT_RAMP_S + SETTLE_S) / max(gap, 1e-3))
    return need


def _swings(cl, cr, fps, infeasible, factor=1.0):
    """Which frames each foot swings: the person lifts it, for long enough, with the weight able
    to reach the other foot (a lift right after a landing keeps the foot down)."""
    from host.retarget.support import runs
    n_ramp = (WEIGHT_RAMP_S + SETTLE_S) * fps
    sl, sr = np.zeros(cl.size, bool), np.zeros(cr.size, bool)
    events = []
    for flag, out, s in ((cl, sl, "l"), (cr, sr, "r")):
        for a, b in runs(~flag):
            # a flight (the other foot off too) counts as both feet down for the robot
            other = cr if s == "l" else cl
            own = np.flatnonzero(other[a:b])
            if own.size == 0:
                continue
            a2, b2 = a + own[0], a + own[-1] + 1
            events.append((a2, b2, s, out))
    events.sort()
    last_land = 0                                    # the clip starts in double support
    for a, b, s, out in events:
        # the weight needs n_ramp frames after the last landing: the lift waits for it
        a2 = max(a, int(np.ceil(last_land + n_ramp)))
        # lifts shorter than MIN_SWING_S of the person's time keep the foot down
        if (b - a2) / fps < MIN_SWING_S * factor:
            if (b - a) / fps >= MIN_SWING_S * factor:
                infeasible.append([round(a / fps, 3), round(b / fps, 3),
                                   "no time to shift the weight before the %s foot lifts"
                                   % ("left" if s == "l" else "right")])
            continue
        if sl[a2:b].any() or sr[a2:b].any():
            continue
        out[a2:b] = True
        last_land = b
    return sl, sr


def _limit(deg, body, fps):
    """The last word, the player's own: device/servo/limiter.py over the frames at 1 / fps (each
    command within the servo's limits, its velocity and, best effort, acceleration limit), so
    what the player sends is this staff."""
    from device.servo.limiter import Limiter
    lim = Limiter(body.servos, start_deg=list(np.clip(deg[0], body.lo_deg, body.hi_deg)))
    out = np.empty_like(deg)
    for f in range(deg.shape[0]):
        out[f] = lim.step(list(deg[f]), 0.0 if f == 0 else 1.0 / fps)
    return out


def _geoms(model, root):
    """Colliding geom ids of a body's subtree (a name), of those bodies alone (a tuple), or the
    floor plane ("floor")."""
    import mink
    if root == "floor":
        return [model.geom("floor").id]
    if isinstance(root, str):
        ids = mink.get_subtree_geom_ids(model, model.body(root).id)
    else:
        ids = [g for b in root for g in range(model.ngeom) if model.geom_bodyid[g] == model.body(b).id]
    return [g for g in ids if model.geom_contype[g] or model.geom_conaffinity[g]]


def _solve(body, D, fps, balance, swing_l, swing_r, iterations, collisions, height=None,
           converge_first=True, lead=0):
    """(N, nq) qpos per output frame."""
    return np.array(list(solve_frames(body, D, fps, balance, swing_l, swing_r, iterations, collisions,
                                      height, converge_first, lead=lead)))


def solve_frames(body, D, fps, balance, swing_l, swing_r, iterations, collisions, height=None,
                 converge_first=True, weights=None, frames=None, lead=0, com_cost=COM_COST,
                 upper_arm_weight=UPPER_ARM_WEIGHT, arm_vel_scale=ARM_VEL_SCALE,
                 forearm_weight=None, stance_leg_weight=0.2, swing_reach_m=None):
    """Yields qpos per output frame, frame f computed when the caller asks for it: a live
    caller (host/retarget/live.py) fills D[seg][f], swing_l[f], ... just before; `weights`
    (weight, {"l": swing weight, "r": ...}) then replaces the whole-clip schedules, `frames` N;
    the first `lead` frames (the lead-in from home) move at the lead-in's lower velocity limits."""
    import mink
    import mujoco
    m = body.model
    N = next(iter(D.values())).shape[0] if frames is None else frames
    q = body.qpos_home()
    conf = mink.Configuration(m, q)
    data = conf.data
    if body.floating:
        # stand the home pose on the floor: the soles at z = 0
        mujoco.mj_kinematics(m, data)
        q[2] -= min(body.point_pos(data, "l_sole")[2], body.point_pos(data, "r_sole")[2])
        conf.update(q)
    lengths = {}
    for seg, (a, b) in SEGMENTS.items():
        if a in body.points and b in body.points:
            lengths[seg] = float(np.linalg.norm(body.point_pos(data, b) - body.point_pos(data, a)))
    tasks = []
    ankle_z = {k: float(body.point_pos(data, k)[2]) for k in ("l_ankle", "r_ankle") if k in body.points}
    # a twist about a limb's own axis (hip yaw) is what the directions leave open: hold it home
    pcost = np.full(m.nv, 0.02)
    for k, sv in enumerate(body.servos):
        if sv.name.endswith("hip_yaw") or sv.name.startswith("head"):
            # and a joint no segment drives (the head) stays home: it is no counterweight
            pcost[body.dadr[k]] = 2.0
    if body.floating:
        pcost[:6] = 0.0
    posture = mink.PostureTask(m, cost=pcost)
    posture.set_target(q.copy())
    tasks.append(posture)
    chains = []
    for seg in ("l_thigh", "l_shank", "r_thigh", "r_shank", "l_upper_arm", "l_forearm",
                "r_upper_arm", "r_forearm", "r_hand"):
        if seg in D and seg in lengths:
            a, b = SEGMENTS[seg]
            kind, name = body.points[b]
            # (with balance: the torso is held upright then, so the arms cannot drag the body)
            w = _arm_weight(seg, upper_arm_weight, forearm_weight) if balance and body.humanoid else 1.0
            t = mink.FrameTask(name, kind, position_cost=w / max(lengths[seg], 0.02), orientation_cost=0.0)
            tasks.append(t)
            chains.append((seg, a, b, t))
    torso = None
    if body.floating:
        torso = mink.FrameTask(body.spec["torso"], "body",
                               position_cost=[0.0, 0.0, 20.0] if balance else 50.0,
                               orientation_cost=100.0 if balance else 2.0)
        tasks.append(torso)
        torso_home = data.xpos[m.body(body.spec["torso"]).id].copy()
        # the hips' standing height above the soles (the robot's leg length at home)
        hip_z = body.point_pos(data, "l_hip")[2] - body.point_pos(data, "l_sole")[2]
    feet = {}
    for s in body.spec["feet"]:
        name = body.spec["feet"][s]
        t = mink.FrameTask(name, "body", position_cost=0.0, orientation_cost=0.0)
        tasks.append(t)
        feet[s] = (t, data.xpos[m.body(name).id].copy(), data.xmat[m.body(name).id].reshape(3, 3).copy())
    com = None
    if balance:
        com = mink.ComTask(cost=np.array([com_cost, com_cost, 0.0]))
        tasks.append(com)
        soles = {s: body.point_pos(data, s + "_sole").copy() for s in "lr"}
        half = 0.5 * np.linalg.norm(soles["l"] - soles["r"])
        shrink = max(0.0, (half - COM_INWARD_M) / half)
        if weights is None:
            weight = _weight_schedule(swing_l, swing_r, fps)
            wsw = {"l": _swing_weights(swing_l), "r": _swing_weights(swing_r)}
        else:
            weight, wsw = weights
        half_len = float(body.spec["sole_half_m"][0])
    limits = [mink.ConfigurationLimit(m)]
    # the IK moves each joint at most at the speed its servo follows closely (FOLLOW_FRACTION of
    # the rated one); _limit keeps the description's max_vel_dps as the hard bound
    vel = {s.name: float(np.radians(s.max_vel_dps * FOLLOW_FRACTION)) for s in body.servos}
    # (with balance the arms at ARM_VEL_SCALE of that once the clip runs)
    arm = {k: v * (arm_vel_scale if balance and body.humanoid and k[2:5] in ("sho", "el") else 1.0)
           for k, v in vel.items()}
    limits.append(mink.VelocityLimit(m, arm))
    # the lead-in from home goes at a quarter of that: a bow or a crouch into the first pose
    # taken fast would throw the body
    lead_limits = [limits[0], mink.VelocityLimit(m, dict((k, v * 0.25) for k, v in vel.items()))]
    unpushed = {}                # id(a pushing collision limit) -> the same pairs without the push
    if collisions and body.spec["collide"]:
        # one limit per (margin, push): (subtree, subtree[, margin m[, push m/s]]) pairs; the
        # push (mink's bound_relaxation, < 0) moves a pair back out once inside its margin (the
        # linear constraint alone lets it creep in: an SO-101 gripper reached the table)
        groups = {}
        for pair in body.spec["collide"]:
            key = (pair[2] if len(pair) > 2 else COLLISION_MARGIN_M, pair[3] if len(pair) > 3 else 0.0)
            groups.setdefault(key, []).append((_geoms(m, pair[0]), _geoms(m, pair[1])))
        for (margin, push), pairs in sorted(groups.items()):
            for p in (push, 0.0) if push else (push,):
                lim = mink.CollisionAvoidanceLimit(m, pairs, minimum_distance_from_collisions=margin,
                                                   collision_detection_distance=margin + 0.03,
                                                   bound_relaxation=p)
                if p != push:
                    unpushed[id(limits[-1])] = lim
                else:
                    limits.append(lim)
                    lead_limits.append(lim)
    dt = 1.0 / fps
    SE3, SO3 = mink.SE3, mink.SO3
    for f in range(N):
        if balance:
            for seg, a, b, t in chains:
                # the stance leg's shape follows from the hips over the planted foot
                sw = swing_l if seg[0] == "l" else swing_r
                stance = seg.endswith(("thigh", "shank")) and not sw[f]
                w = _arm_weight(seg, upper_arm_weight, forearm_weight) if body.humanoid else 1.0
                t.set_position_cost((stance_leg_weight if stance else w) / max(lengths[seg], 0.02))
        # the first frame converges without the velocity limit (the player ramps to it from
        # wherever the robot stands); after it, each frame moves on from the one before
        first = f == 0 and converge_first
        for it in range(40 if first else iterations):
            mujoco.mj_kinematics(m, data)
            Rw = np.eye(3)          # the robot keeps facing +X: the person's heading frame is its world
            targets = {}
            for seg, a, b, t in chains:
                base = targets.get(a)
                if base is None:
                    base = body.point_pos(data, a).copy()
                p = base + lengths[seg] * (Rw @ D[seg][f])
                if balance and b in ankle_z:
                    # an ankle never below its standing height: the sole stays above the floor
                    p[2] = max(p[2], ankle_z[b])
                targets[b] = p
                t.set_target(SE3.from_rotation_and_translation(SO3.identity(), p))
            if torso is not None:
                z = Rw @ D["trunk"][f] if "trunk" in D else np.array([0.0, 0, 1])
                if balance:
                    # a bow deeper than MAX_TRUNK_TILT_DEG would carry the torso past where
                    # it can be held (and where a tilt counts as a fall)
                    tilt = np.arccos(np.clip(z[2], -1, 1))
                    cap = np.radians(MAX_TRUNK_TILT_DEG)
                    if tilt > cap:
                        h = _unit(np.array([z[0], z[1], 0.0]) + 1e-12)
                        z = np.cos(cap) * np.array([0.0, 0, 1]) + np.sin(cap) * h
                Rt = _frame_from(z, Rw[:, 0])
                tp = torso_home.copy()
                if height is not None:
                    # as low as the person crouches: hip height scaled by the standing height
                    tp[2] -= (1.0 - height[f]) * hip_z
                torso.set_target(SE3.from_rotation_and_translation(SO3.from_matrix(Rt), tp))
            for s, (t, p0, R0) in feet.items():
                key = s + "_foot"
                swing = None if not balance else (swing_l if s == "l" else swing_r)
                if balance and not swing[f]:
                    # stance: the foot stays where it stood, flat on the floor
                    t.set_position_cost(1000.0)
                    t.set_orientation_cost(300.0)
                    t.set_target(SE3.from_rotation_and_translation(SO3.from_matrix(R0), p0))
                    continue
                Rf = _foot_rot(Rw @ D[key][f], SWING_PITCH_DEG if balance else 85.0) if key in D else R0
                if balance:
                    w = wsw[s][f]
                    # the swing foot follows the leg mid-swing and comes back to its place to land
                    ank = targets.get(s + "_ankle", p0)
                    foot_p = body.point_pos(data, s + "_ankle")
                    off = data.xpos[m.body(body.spec["feet"][s]).id] - foot_p
                    p = (1 - w) * p0 + w * (ank + off)
                    if swing_reach_m is not None:
                        # (live) the swing foot stays within swing_reach_m of where it stood,
                        # horizontally: it lands back there, and a reach further (a lunge)
                        # drops the hips over the stance knee
                        dxy = p[:2] - p0[:2]
                        n = float(np.hypot(*dxy))
                        if n > swing_reach_m:
                            p[:2] = p0[:2] + dxy * (swing_reach_m / n)
                    Rb = SO3.from_matrix(R0).interpolate(SO3.from_matrix(Rf), w ** SWING_PITCH_POWER)
                    # clear the floor with the sole's toe or heel, however the foot is pitched
                    pitch = abs(Rb.as_matrix()[2, 0])
                    p[2] = max(p[2], p0[2] + (half_len * pitch + SWING_CLEAR_M) * min(1.0, 4 * w))
                    # never across the stance foot's side: the soles stand 2 cm apart
                    p[1] = max(p[1], p0[1]) if s == "l" else min(p[1], p0[1])
                    # sideways the swing foot keeps its place (the hips move over the other
                    # foot, the leg must not swing in under them)
                    c = 20.0 * (1 - w) + 1.0
                    t.set_position_cost([c, 100.0, 100.0])
                    t.set_orientation_cost(5.0)
                    t.set_target(SE3.from_rotation_and_translation(Rb, p))
                else:
                    t.set_position_cost(0.0)
                    t.set_orientation_cost(1.0)
                    t.set_target(SE3.from_rotation_and_translation(SO3.from_matrix(Rf), p0))
            if com is not None:
                u = weight[f]
                mid = 0.5 * (soles["l"] + soles["r"])
                # over the stance sole, COM_INWARD_M short of its centre (the servos' give
                # lets the body sag outwards over a single foot)
                c = mid + max(u, 0.0) * (soles["l"] - mid) * shrink + max(-u, 0.0) * (soles["r"] - mid) * shrink
                com.set_target(c)
            use = [x for x in (lead_limits if f < lead else limits)
                   if not (first and isinstance(x, mink.VelocityLimit))]
            v = None
            # a push out of a margin can contradict a joint's stop: then without the push (the
            # pair only kept from coming closer), and failing that the robot holds still
            for lim in (use, [unpushed.get(id(x), x) for x in use]):
                try:
                    v = mink.solve_ik(conf, tasks, dt / iterations, "daqp", damping=1e-3, limits=lim)
                    break
                except mink.NoSolutionFound:
                    continue
            if v is None:
                v = np.zeros(m.nv)
            conf.integrate_inplace(v, dt / iterations)
        yield conf.q.copy()


def _arm_weight(seg, upper_arm_weight, forearm_weight):
    """A segment task's cost factor with balance: the upper arm's and the forearm's."""
    if seg.endswith("upper_arm"):
        return upper_arm_weight
    if seg.endswith("forearm"):
        return FOREARM_WEIGHT if forearm_weight is None else forearm_weight
    return 1.0


def _weight_schedule(swing_l, swing_r, fps):
    from host.retarget.support import weight_schedule
    return weight_schedule(swing_l, swing_r, fps, WEIGHT_RAMP_S)


def _swing_weights(swing):
    """(F,) 0 at lift-off and landing, 1 mid-swing."""
    from host.retarget.support import runs
    w = np.zeros(len(swing))
    for a, b in runs(swing):
        # the leg follows the person over the first 65 % of the swing; the rest brings the foot
        # back down to its place (the servos' speed limits it, so it must start early)
        s = np.clip((np.arange(a, b) - a + 0.5) / (0.65 * (b - a)), 0.0, 1.0)
        w[a:b] = np.minimum(1.0, 1.5 * np.sin(np.pi * s))
    return w
