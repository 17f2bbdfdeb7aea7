"""A staff of servo angles played on the robot's MuJoCo model: did it fall, how well did it track.

    from tools.robot_sim import simulate
    rep = simulate(servo_staff, "op3-dynamixel", stance=res.contacts)
    rep["fell"], rep["fall_time_s"], rep["tracking_rms_deg"], rep["foot_slip_mm"]

A test and benchmark harness until the physics twin (host/physics, simulate_staff) drives the
same model through the controller emulators. Each frame's command is held (zero-order hold, as a
servo holds its goal position) by the model's position actuators (kp 21.1 N m/rad) with torque
capped at the XM430-W350's 4.1 N m stall torque at 12 V (ROBOTIS e-manual), never the model's
kinder 5 N m; the robot starts standing on the floor in the first frame's pose, holds it 0.5 s,
then plays. A fall: torso height below 0.6 of its standing height, or tilt above 45 deg.
"""

import copy
import time

import numpy as np

STALL_NM = 4.1
SETTLE_S = 0.5


def simulate(staff, robot_name, stance=None, seconds=None):
    """dict: frames, duration_s, fell, fall_time_s, tracking_rms_deg, self_collision_frames,
    foot_slip_mm, real_time_factor. stance: (left, right) per-frame flags of the feet that should
    stand (from the retargeting), else a foot stands when it touches the floor."""
    import mujoco
    from host.retarget.robotmodel import robot_body
    body = robot_body(robot_name)
    m = body.model
    m = copy.copy(m)
    m.actuator_forcerange[:] = [-STALL_NM, STALL_NM]
    d = mujoco.MjData(m)
    idx = [staff.row_index(n) for n in body.servo_names]
    deg = staff.values[idx].T.astype(float)                     # (F, nservo)
    deg = np.where(np.isfinite(deg), deg, body.home_deg)
    F = deg.shape[0]
    if seconds is not None:
        F = min(F, int(seconds * staff.fps) + 1)
    act = [m.actuator(n + "_act").id if _has(m, n + "_act") else _act_for(m, n) for n in body.servo_names]
    q0 = body.qpos_home()
    q0[body.qadr] = body.to_model_rad(deg[0])
    d.qpos[:] = q0
    mujoco.mj_kinematics(m, d)
    floor = 0.0
    if body.floating:
        z = min(body.point_pos(d, "l_sole")[2], body.point_pos(d, "r_sole")[2])
        d.qpos[2] -= z - floor
    mujoco.mj_forward(m, d)
    torso = m.body(body.spec["torso"]).id if body.floating else None
    ctrl = body.to_model_rad(deg[0])
    d.ctrl[act] = ctrl
    steps_frame = max(1, int(round(1.0 / staff.fps / m.opt.timestep)))
    for _ in range(int(SETTLE_S / m.opt.timestep)):
        mujoco.mj_step(m, d)
    z_stand = d.xpos[torso][2] if torso is not None else None
    home_pairs = _robot_contacts(m, d)
    foot_bodies = {s: m.body(body.spec["feet"][s]).id for s in body.spec["feet"]}
    fell, fall_t = False, None
    err2, nerr, coll = 0.0, 0, 0
    slip = {s: [] for s in foot_bodies}
    anchor = {s: None for s in foot_bodies}
    t0 = time.perf_counter()
    for f in range(F):
        d.ctrl[act] = body.to_model_rad(deg[f])
        for _ in range(steps_frame):
            mujoco.mj_step(m, d)
        if torso is not None and not fell:
            up = d.xmat[torso].reshape(3, 3)[:, 2]
            tilt = np.degrees(np.arccos(np.clip(up[2], -1, 1)))
            if d.xpos[torso][2] < 0.6 * z_stand or tilt > 45.0:
                fell, fall_t = True, f / staff.fps
        if fell:
            continue
        e = np.degrees(d.qpos[body.qadr] - body.to_model_rad(deg[f])) * body.sign
        err2 += float(np.sum(e * e))
        nerr += e.size
        if _robot_contacts(m, d) - home_pairs:
            coll += 1
        for s, b in foot_bodies.items():
            p = d.xpos[b][:2].copy()
            on = (bool(stance[0 if s == "l" else 1][min(f, len(stance[0]) - 1)]) if stance is not None
                  else _touches_floor(m, d, b))
            if on:
                if anchor[s] is None:
                    anchor[s] = p
                slip[s].append(float(np.linalg.norm(p - anchor[s])))
            else:
                anchor[s] = None
    wall = time.perf_counter() - t0
    sim_s = F * steps_frame * m.opt.timestep
    all_slip = slip["l"] + slip["r"] if slip else []
    return {"frames": F, "duration_s": F / staff.fps, "fell": fell, "fall_time_s": fall_t,
            "tracking_rms_deg": float(np.sqrt(err2 / nerr)) if nerr else float("nan"),
            "self_collision_frames": coll,
            "foot_slip_mm": 1000.0 * max(all_slip) if all_slip else 0.0,
            "real_time_factor": sim_s / wall if wall > 0 else float("inf")}


def _has(m, name):
    try:
        m.actuator(name)
        return True
    except KeyError:
        return False


def _act_for(m, joint):
    j = m.joint(joint).id
    for a in range(m.nu):
        if m.actuator_trnid[a, 0] == j:
            return a
    raise KeyError("no actuator drives joint %s" % joint)


def _robot_contacts(m, d):
    """Pairs of robot bodies in contact (the floor, body 0's geoms, left out)."""
    out = set()
    for i in range(d.ncon):
        c = d.contact[i]
        b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
        if b1 == 0 or b2 == 0:
            continue
        out.add((min(b1, b2), max(b1, b2)))
    return out


def _touches_floor(m, d, body_id):
    for i in range(d.ncon):
        c = d.contact[i]
        b = (m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2])
        if body_id in b and 0 in b:
            return True
    return False
