"""`motionstaff simulate STAFF --robot NAME [--json] [-o robot.mp4|.gif] [--compare]`: the staff
played on the robot's physics twin through the real driver and controller emulator.

    motionstaff simulate walk.bvh --robot op3-dynamixel --json
    motionstaff simulate walk.bvh --robot op3-dynamixel -o robot.gif --compare
    motionstaff simulate dance.bvh --robot op3-dynamixel --imu-feedback --json   # closed loop

Retargets by pose (with balance) when host.retarget.pose is there, or plays a staff whose rows
are the robot's servo names as is, else the robot's row map; streams it in simulated time
(deterministic, --seed) and reports whether the robot fell, tracking, self-collisions, torque
saturation and foot slip (host/physics/simulate.py has the definitions). --imu-feedback closes
the balance loop through the robot's own IMU (host/retarget/feedback.py), read through the bus
bytes as on the robot (device/servo/opencr.py); a robot without a known IMU is refused. -o renders the
robot (MuJoCo offscreen: MUJOCO_GL egl, else osmesa); --compare puts the person beside it.
"""

import json
import os

HELP = "play a staff on a simulated robot (MuJoCo twin behind the servo emulator) and report"


def add_arguments(p):
    p.add_argument("staff", help="a motion file (staff PNG, BVH, CSV, C3D, .msr)")
    p.add_argument("--robot", required=True, help="a built-in robot with a model (op3-dynamixel, so101-feetech)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("-o", "--output", help="render the robot: OUT.gif or OUT.mp4")
    p.add_argument("--compare", action="store_true", help="with -o: the person's figure beside the robot")
    p.add_argument("--seed", type=int, default=0, help="physics seed (initial joint jitter); same seed, same run")
    p.add_argument("--no-balance", action="store_true", help="pose retargeting without balance")
    p.add_argument("--imu-feedback", action="store_true",
                   help="a humanoid's own IMU, read through its bus as `play --imu-feedback` reads it (the "
                        "OP3's OpenCR board, answered by the emulator with the twin's IMU), fed back at the "
                        "standing ankles on every frame; without it the staff plays open loop")
    p.add_argument("--row-copy", action="store_true", help="the robot's row map, not pose retargeting")
    p.add_argument("--mapping", help="with --row-copy: which row map of the robot")
    p.add_argument("--record", help="write the run (per frame joint angles and body poses) as JSON, "
                                    "for motionstaff view --robot-run")
    p.add_argument("--size", default="320x240", help="rendered panel WIDTHxHEIGHT (each of robot and person)")


def _check_out(path, exts):
    ext = os.path.splitext(path)[1].lower()
    if ext not in exts:
        raise ValueError("%s: must end in %s" % (path, " or ".join(exts)))
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise OSError("%s: no such directory %s" % (path, d))
    if os.path.exists(path) and not os.path.isfile(path):
        raise OSError("%s: exists and is not a regular file" % path)


def run(args):
    import numpy as np
    from host.commands.play import load_staff
    from host.commands.render import parse_size
    if args.compare and not args.output:
        raise ValueError("--compare needs -o OUT.gif|OUT.mp4")
    if args.output:
        _check_out(args.output, (".gif", ".mp4"))
        size = parse_size(args.size)
    if args.record:
        _check_out(args.record, (".json",))
    if args.output:
        from host.physics.render import pick_gl
        pick_gl()                                   # before mujoco loads; one line if neither works
    from host.physics.models import load_robot
    from host.physics.simulate import run_simulation
    rm = load_robot(args.robot)                     # no model / a model that fails: one line
    staff = load_staff(args.staff)
    if not np.isfinite(staff.values).any():
        raise ValueError("%s: every value is missing: nothing to simulate" % args.staff)
    if not staff.meta.get("source"):
        staff.meta["source"] = args.staff           # what one-line errors name
    if args.compare and staff.skeleton is None:
        raise ValueError("%s: --compare needs a person's motion (this staff has no skeleton)" % args.staff)
    if args.imu_feedback:
        from host.commands.play import check_imu_flag
        check_imu_flag(rm.description)                  # a robot without a known IMU: one line
    if args.imu_feedback and (args.row_copy or args.no_balance or not rm.humanoid or staff.skeleton is None):
        # (the feedback acts on the balanced plan's single supports: without one it would be an
        # open-loop run said to be closed loop)
        why = ("--row-copy" if args.row_copy else "--no-balance" if args.no_balance else
               "%s is not a humanoid" % rm.name if not rm.humanoid else "this staff has no skeleton")
        raise ValueError("%s: --imu-feedback needs a person's motion retargeted with balance onto a "
                         "humanoid (%s)" % (args.staff, why))
    run_ = run_simulation(staff, rm, seed=args.seed, balance=not args.no_balance,
                          pose=not args.row_copy, mapping=args.mapping,
                          record=bool(args.output or args.record), feedback=args.imu_feedback)
    rep = dict(run_.report)
    if args.record:
        from host.physics.recording import write_recording
        write_recording(run_, args.record)
        rep["record"] = args.record
    if args.output:
        from host.physics.render import render_run
        rep["rendered_frames"] = render_run(run_, args.output, person=staff if args.compare else None,
                                            size_px=size)
        rep["output"] = args.output
    if args.json:
        print(json.dumps(rep))
    else:
        print("%s on %s: %d frames, %.2f s: %s; tracking RMS %s deg, %d self-collision frames, "
              "torque saturated %.1f %%, foot slip %s mm, retimed x%.2f, %d infeasible span(s); "
              "physics %.1fx real time%s%s"
              % (args.staff, rm.name, rep["frames"], rep["duration_s"],
                 "FELL at %.2f s" % rep["fall_time_s"] if rep["fell"] else "stayed up",
                 rep["tracking_rms_deg"], rep["self_collision_frames"],
                 100 * rep["torque_saturated_frac"], rep["foot_slip_mm"], rep["retimed"],
                 len(rep["infeasible"]), rep["realtime_factor"],
                 "; IMU feedback at the ankles (at most %.1f deg)" % rep["feedback"]["max_ankle_deg"]
                 if rep.get("feedback") else "",
                 (", wrote " + args.output) if args.output else ""))
    return 0
