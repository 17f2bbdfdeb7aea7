"""A simulation run as the viewer draws it: the robot's links as segments per frame (JSON).

    from host.physics.recording import robot_body_json, write_recording, read_recording
    doc = robot_body_json(run, name="op3 (simulated)")   # host/view body format + the run
    write_recording(run, "run.json"); doc, staff = read_recording("run.json")

The body format is host.view.data.body_json's (segments frames x shapes x 2 x 3, metres, Z up,
relative to the first frame's centre; centre per frame; colours; radius_m), so the page draws
the simulated robot beside the person with the same code. Each link is a segment from its
parent body's origin to its own; each foot adds its sole. Extra keys: format, robot,
servo_names, times_s, achieved_deg, commanded_deg (frames x servos), report.
"""

import json

import numpy as np

from host.render.outline import _side_colour
from protocol.errors import FormatError

FORMAT = "motionstaff-robot-run"


def _segments(rm, qpos_frames):
    import mujoco
    m = rm.model
    d = mujoco.MjData(m)
    links = [b for b in range(1, m.nbody) if m.body_parentid[b] != 0]
    soles = [g for side in sorted(rm.foot_geoms) for g in rm.foot_geoms[side][:1]]
    out = np.zeros((len(qpos_frames), len(links) + len(soles), 2, 3))
    for f, q in enumerate(qpos_frames):
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        for k, b in enumerate(links):
            out[f, k, 0] = d.xpos[m.body_parentid[b]]
            out[f, k, 1] = d.xpos[b]
        for j, g in enumerate(soles):
            r = d.geom_xmat[g].reshape(3, 3)
            half = r[:, 0] * m.geom_size[g][0]
            out[f, len(links) + j, 0] = d.geom_xpos[g] - half
            out[f, len(links) + j, 1] = d.geom_xpos[g] + half
    names = [m.body(b).name for b in links] + [m.body(m.geom_bodyid[g]).name for g in soles]
    return out, names


def robot_body_json(run, name=None):
    rm = run.robot
    seg, names = _segments(rm, run.qpos)
    torso = rm.segments.get("torso", rm.segments.get("base"))
    ti = [k for k, n in enumerate(names) if n == torso]
    c = seg[:, :, 1, :].mean(axis=1) if not ti else seg[:, ti[0], 1, :]
    centre = np.column_stack([c[:, 0], c[:, 1], np.full(len(c), c[0, 2])]) if rm.floating \
        else np.repeat(c[:1], len(c), axis=0)
    c0 = centre[0]
    ext = float(np.max(np.abs(seg[0].reshape(-1, 3) - c0))) if len(seg) else 0.3
    return {
        "name": name or "%s (simulated)" % rm.name,
        "fps": float(run.staff.fps),
        "frames": int(len(run.qpos)),
        "rows": list(rm.servo_names),
        "shapes": int(seg.shape[1]),
        "segments": np.round(seg - c0, 4).ravel().tolist(),
        "centre": np.round(centre - c0, 4).ravel().tolist(),
        "half_m": round(max(0.15, 1.3 * ext), 4),
        "floor_z": round(float(0.0 - c0[2]), 4),
        "colours": [_side_colour(n) for n in names],
        "radius_m": [0.012] * int(seg.shape[1]),
        "format": FORMAT,
        "robot": rm.name,
        "servo_names": list(rm.servo_names),
        "times_s": list(run.times_s),
        "achieved_deg": np.round(np.array(run.achieved_deg), 3).tolist(),
        "commanded_deg": np.round(np.array(run.commanded_deg), 3).tolist(),
        "report": run.report,
    }


def write_recording(run, path):
    with open(path, "w") as f:
        json.dump(robot_body_json(run), f)


def recording_staff(doc):
    """The achieved joint angles as a Staff (the robot's rows), for the page's staff image."""
    from host.staff import Row, Staff
    a = np.array(doc["achieved_deg"], dtype=float).T
    rows = [Row(n, "deg", float(np.nanmin(a[i])) - 1.0, float(np.nanmax(a[i])) + 1.0, False)
            for i, n in enumerate(doc["servo_names"])]
    return Staff(a, rows, fps=doc["fps"])


def read_recording(path):
    """(body doc, staff of achieved angles); FormatError naming the file when it is not one."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError as e:
        raise FormatError("%s: not JSON (%s)" % (path, str(e).splitlines()[0]))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError("%s: not a simulation recording (format %r expected; write one with "
                          "motionstaff simulate --record)" % (path, FORMAT))
    for k in ("segments", "centre", "shapes", "frames", "achieved_deg", "servo_names", "fps"):
        if k not in doc:
            raise FormatError("%s: recording lacks %r" % (path, k))
    if len(doc["segments"]) != doc["frames"] * doc["shapes"] * 6 or not doc["frames"]:
        raise FormatError("%s: segments do not match frames x shapes" % path)
    return doc, recording_staff(doc)
