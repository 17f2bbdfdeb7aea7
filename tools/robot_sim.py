"""A staff of servo angles played on the robot's physics twin: did it fall, how well did it track.

    from tools.robot_sim import simulate
    rep = simulate(servo_staff, "op3-dynamixel", stance=res.contacts)
    rep["fell"], rep["fall_time_s"], rep["tracking_rms_deg"], rep["foot_slip_mm"]

A test and benchmark harness until host/physics/simulate.py (simulate_staff, the same twin
behind the controller emulator) lands: each frame's goal goes straight to the twin's servo models
(host/physics/twin.py: XM430-W350 / STS3215 stall torque, no-load speed, encoder, PD from the
default gains), the bus left out. The robot stands at home with torque on, ramps to the first
frame over 0.5 s (as the player's ramp does), then plays. A fall: torso height below 0.6 of its
standing height, or tilt above 45 deg.
"""

import time

import numpy as np

RAMP_S = 0.5


def simulate(staff, robot_name, stance=None, seconds=None, seed=0):
    """dict: frames, duration_s, fell, fall_time_s, tracking_rms_deg, self_collision_frames,
    foot_slip_mm, real_time_factor. stance: (left, right) per-frame flags of the feet that should
    stand (from the retargeting); without it a foot stands while it touches the floor."""
    from host.physics.twin import Twin
    tw = Twin(robot_name, seed=seed)
    rm = tw.rm
    servos = rm.servos
    idx = [staff.row_index(s.name) for s in servos]
    home = np.array([s.home_deg for s in servos])
    deg = staff.values[idx].T.astype(float)
    deg = np.where(np.isfinite(deg), deg, home)
    F = deg.shape[0] if seconds is None else min(deg.shape[0], int(seconds * staff.fps) + 1)
    dt = 1.0 / staff.fps

    def goal(angles):
        for s, a in zip(servos, angles):
            tw.set_goal(s.id, s.to_units(float(a)), 0.0, True)

    n_ramp = max(1, int(RAMP_S / dt))
    for k in range(1, n_ramp + 1):
        goal(home + (deg[0] - home) * k / n_ramp)
        tw.advance(dt)
    tw.advance(0.2)
    z_stand = tw.torso_height_m()
    feet = {side: rm.model.body(b).id for side, b in _feet(rm).items()}
    fell, fall_t = False, None
    err2, nerr, coll = 0.0, 0, 0
    slip, anchor = [], {}
    t0 = time.perf_counter()
    for f in range(F):
        goal(deg[f])
        tw.advance(dt)
        if rm.floating and not fell and (tw.torso_height_m() < 0.6 * z_stand or tw.tilt_deg() > 45.0):
            fell, fall_t = True, f * dt
        if fell:
            continue
        e = tw.servo_deg() - deg[f]
        err2 += float(np.sum(e * e))
        nerr += e.size
        selfc, on_floor = tw.contacts()
        coll += selfc > 0
        for side, b in feet.items():
            p = tw.data.xpos[b][:2].copy()
            # travel while it should stand: planned stance (or any time) and touching the floor
            on = on_floor.get(side, False) and (
                stance is None or bool(stance["lr".index(side)][min(f, len(stance[0]) - 1)]))
            if on:
                anchor.setdefault(side, p)
                slip.append(float(np.linalg.norm(p - anchor[side])))
            else:
                anchor.pop(side, None)
    wall = time.perf_counter() - t0
    return {"frames": F, "duration_s": F * dt, "fell": fell, "fall_time_s": fall_t,
            "tracking_rms_deg": float(np.sqrt(err2 / nerr)) if nerr else float("nan"),
            "self_collision_frames": int(coll),
            "foot_slip_mm": 1000.0 * max(slip) if slip else 0.0,
            "real_time_factor": F * dt / wall if wall > 0 else float("inf")}


def _feet(rm):
    seg = getattr(rm, "segments", {})
    out = {}
    for side in "lr":
        for key in (side + "_foot", side + "_ank_roll"):
            if key in seg:
                out[side] = seg[key]
                break
    return out
