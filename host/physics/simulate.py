"""A staff played on the simulated robot: the real driver's bytes -> the controller emulator ->
the MuJoCo twin, in simulated time (deterministic, seeded), with what the body did.

    from host.physics.simulate import simulate_staff, run_simulation
    report = simulate_staff(staff, "op3-dynamixel")          # the JSON fields, a dict
    run = run_simulation(staff, "op3-dynamixel", record=True)
    run.report, run.times_s, run.qpos (frames, nq), run.poses (per frame {segment: ...})

The robot-row staff: a staff whose rows are the robot's servo names plays as is; otherwise
host.retarget.pose.retarget_to_robot (pose retargeting, balance) when it is there, else the
description's row map (the row copy). The Player (device/servo/player.py) streams it: limiter,
ramp to the first frame, failsafe, watchdog; its clock is the twin's and its sleeps step it.

Report: frames, duration_s, fell, fall_time_s (null if none; a fall is torso height below 0.6
of standing or tilt above 45 deg), self_collision_frames, tracking_rms_deg (commanded vs
achieved one frame period later, over driven servos), pose_error_deg (from the retargeter,
null without it), torque_saturated_frac (servo-steps at full duty / servo-steps with torque
on), foot_slip_mm (largest travel of a foot from where it touched down while it stays on the
floor), retimed, infeasible, plus mapping, servos_driven, sim_s, wall_s, realtime_factor (simulated
over wall seconds) and cpu_realtime_factor (over this process's CPU seconds).
"""

import math
import time
from functools import partial

import numpy as np

FALL_HEIGHT_FRAC = 0.6
FALL_TILT_DEG = 45.0


class Run:
    def __init__(self):
        self.report = {}
        self.times_s = []
        self.qpos = []
        self.poses = []
        self.commanded_deg = []
        self.achieved_deg = []
        self.robot = None
        self.staff = None


def robot_staff(staff, robot_name, balance=True, pose=True):
    """(staff of the robot's rows or the input, retarget result or None)."""
    from device.servo.robot import load_robot
    names = [s.name for s in load_robot(robot_name).servos]
    if set(staff.names) & set(names) and sum(n in names for n in staff.names) >= len(staff.names) / 2:
        return staff, None
    if not pose:
        return staff, None
    try:
        from host.retarget.pose import retarget_to_robot
    except ImportError:
        return staff, None                   # no pose retargeting here: the row map plays it
    res = retarget_to_robot(staff, robot_name, balance=balance)
    return res.staff, res


def _feet_xy(twin):
    rm = twin.rm
    out = {}
    for side in rm.foot_geoms:
        b = twin.model.body(rm.segments[side + "_foot"]).id
        out[side] = twin.data.xpos[b][:2].copy()
    return out


class FootSlip:
    """Stance-foot slip: a foot's largest horizontal travel from where it touched down, while it
    stays on the floor (metres). observe(feet) once per frame with twin.contacts()'s feet."""

    def __init__(self, twin):
        self.twin = twin
        self.touch = {}
        self.slip_m = 0.0

    def observe(self, feet):
        xy = _feet_xy(self.twin)
        for side, on in feet.items():
            if on:
                p0 = self.touch.setdefault(side, xy[side])
                self.slip_m = max(self.slip_m, float(np.hypot(*(xy[side] - p0))))
            else:
                self.touch.pop(side, None)


def run_simulation(staff, robot, seed=0, balance=True, pose=True, mapping=None, settle_s=0.5,
                   record=False, retargeted=None, feedback=False):
    """Play staff on the robot's twin; a Run with .report (and per frame recordings).

    feedback: the robot's own IMU turned back at the standing ankles on every frame sent
    (host/retarget/feedback.py; a humanoid's pose-retargeted staff only), read through the bus
    as `motionstaff play --imu-feedback` reads it on the robot (device/servo/opencr.py: the
    driver's READ of the OpenCR board, which the emulator answers with the twin's IMU in the
    board's units, paced at the baud); off, the staff plays open loop. A robot without a bus
    IMU has no feedback: ValueError."""
    from device.servo.drivers import open_driver
    from device.servo.emulate import make_emulator
    from device.servo.player import Player
    from host.physics.models import load_robot
    from host.physics.simport import REPLY_DELAY_S, USB_S, SimPort
    from host.physics.twin import Twin

    rm = robot if not isinstance(robot, str) else load_robot(robot)
    desc = rm.description
    if feedback:
        from device.servo.opencr import check_imu
        check_imu(desc)                         # ValueError: no known IMU
    if retargeted is not None:
        played, res = retargeted
    else:
        played, res = robot_staff(staff, rm.name, balance=balance, pose=pose)
    twin = Twin(rm, seed=seed)
    ctl = desc.controller
    kw = {"clock": twin.clock, "body": twin}
    if ctl in ("dynamixel", "feetech", "feetech-scs"):
        kw["ids"] = twin.ids
    if ctl.startswith("feetech"):
        kw["series"] = desc.options.get("series", "sts")
    if ctl == "dynamixel" and getattr(desc, "imu", None):
        kw["imu_id"] = desc.imu["id"]          # the OP3's OpenCR board on the servos' bus
    emu = make_emulator(ctl, **kw)
    port = SimPort(emu, twin, desc.baud, REPLY_DELAY_S.get(ctl, 0.0), usb_s=USB_S.get(ctl, 0.0))
    driver = open_driver(ctl, port, clock=port.clock, **dict(desc.options))
    player = Player(desc, driver, row_names=played.names, mapping=mapping, clock=twin.clock,
                    sleep=twin.advance)
    run = Run()
    run.robot, run.staff = rm, played
    driven = sorted(set(si for si, _, _, _ in player.rows))
    stand_h = rm.standing_height_m
    st = {"fall": None, "selfc": 0, "sat0": None, "t0": None, "last_cmd": None, "err2": 0.0, "nerr": 0}
    slip = FootSlip(twin)

    def observe(t_rel):
        # fall: torso below 0.6 of standing or tilted past 45 deg
        if rm.floating and st["fall"] is None:
            if twin.torso_height_m() < FALL_HEIGHT_FRAC * stand_h or twin.tilt_deg() > FALL_TILT_DEG:
                st["fall"] = round(t_rel, 4)
        selfc, feet = twin.contacts()
        if selfc:
            st["selfc"] += 1
        if rm.humanoid:
            slip.observe(feet)
        return feet

    def on_frame(k, column):
        now = twin.time_s
        if st["t0"] is None:
            st["t0"] = now
            st["sat0"] = (twin.sat_steps, twin.on_steps)
        t_rel = now - st["t0"]
        achieved = twin.servo_deg()
        if st["last_cmd"] is not None:
            # tracking: achieved now vs what was commanded one frame period ago
            e = achieved[driven] - st["last_cmd"][driven]
            st["err2"] += float(np.sum(e * e))
            st["nerr"] += len(driven)
        cmd = np.array([s.to_deg(u) for s, (_, u) in zip(desc.servos, player.last_units)])
        st["last_cmd"] = cmd
        observe(t_rel)
        if hasattr(emu, "tick"):
            emu.tick()
        if record:
            run.times_s.append(round(t_rel, 5))
            run.qpos.append(twin.data.qpos.copy())
            run.poses.append(twin.body_poses())
            run.commanded_deg.append(cmd)
            run.achieved_deg.append(achieved)

    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    player.start()
    fb = None
    # (a plan without its single supports, no balance: the feedback would never act, open loop)
    if feedback and res is not None and getattr(res, "qpos", None) is not None and rm.humanoid \
            and getattr(res, "contacts", None) is not None:
        from device.servo.opencr import imu_reader
        from host.retarget.feedback import StaffFeedback
        # the robot's IMU through the bus, as on the robot: the driver's READ of the board,
        # paced at the baud, the twin's IMU quantised in the board's registers
        bus_imu = imu_reader(desc, driver, played.fps)
        fb = StaffFeedback(res, rm.name, partial(bus_imu.timed, twin.clock))
        # the robot stands (torque on, home) until its board answers (its power-up calibration)
        bus_imu.wait_ready(twin.advance, stand=player.stand_by)
    summary = player.play(played.values, played.fps, on_frame=on_frame, adjust=fb)
    # the last command held for settle_s: a fall right after the motion counts
    end = twin.time_s + settle_s
    while twin.time_s < end - 1e-9:
        twin.advance(min(0.02, end - twin.time_s))
        observe(twin.time_s - st["t0"])
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    sat_steps = twin.sat_steps - st["sat0"][0]
    on_steps = twin.on_steps - st["sat0"][1]
    rep = {
        "robot": rm.name,
        "frames": int(played.frames),
        "duration_s": round(played.frames / float(played.fps), 4),
        "fell": st["fall"] is not None,
        "fall_time_s": st["fall"],
        "self_collision_frames": st["selfc"],
        "tracking_rms_deg": round(math.sqrt(st["err2"] / st["nerr"]), 3) if st["nerr"] else None,
        "pose_error_deg": None if res is None or res.pose_error_deg is None else round(float(res.pose_error_deg), 3),
        "torque_saturated_frac": round(sat_steps / float(on_steps), 5) if on_steps else 0.0,
        "foot_slip_mm": round(1000.0 * slip.slip_m, 2) if rm.humanoid else None,
        "retimed": 1.0 if res is None else float(res.retimed),
        "infeasible": [] if res is None else [list(x) for x in res.infeasible],
        "mapping": "pose" if res is not None else getattr(desc, "mapping_used", None),
        "servos_driven": len(driven),
        "limiter_clamped": summary["limiter_clamped"],
        # (adjust_errors: frames the feedback raised on, sent as planned, open loop)
        "feedback": None if fb is None else fb.report(summary, bus_imu),
        "sim_s": round(twin.time_s, 3),
        "wall_s": round(wall, 3),
        "realtime_factor": round(twin.time_s / wall, 2) if wall > 0 else None,
        "cpu_realtime_factor": round(twin.time_s / cpu, 2) if cpu > 0 else None,
        "seed": seed,
    }
    run.report = rep
    run.twin = twin
    if hasattr(emu, "close"):
        emu.close()                             # its OpenCR board off the twin
    return run


def simulate_staff(staff, robot, seed=0, balance=True, pose=True, mapping=None, settle_s=0.5):
    """The report dict of run_simulation (for benchmarks)."""
    return run_simulation(staff, robot, seed=seed, balance=balance, pose=pose, mapping=mapping,
                          settle_s=settle_s).report
