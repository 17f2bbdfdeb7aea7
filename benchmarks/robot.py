"""Retargeting onto real robots, in physics: row copy (anchor) vs pose vs pose with balance.

    python benchmarks/robot.py                    # every clip in ../shared/data/bvh and c3d
    python benchmarks/robot.py --max-s 6 --clips walk kick
    python benchmarks/robot.py --out docs/benchmarks/robot.txt
    python benchmarks/robot.py --max-s 1000 --jobs 2     # whole clips, 2 clips at a time
    python benchmarks/robot.py --methods bal imu         # only the balanced plans (OP3)

For each clip (the first --max-s seconds of the person's motion, default 3 s, so the whole set
runs in minutes on 2 shared cores; the result is slowed down up to 4x and starts with a 1 s
lead-in from home) on the ROBOTIS OP3 and, for its right arm, on the SO-101:
  row   the description's per-servo row map, the anchor (today's behaviour): "cmu" with each
        CMU joint name found in the clip's own naming (LeftKnee -> LowerLeg_L ...), "human"
        for a C3D capture (markers -> the human model by IK)
  pose  host/retarget/pose.py without balance
  bal   host/retarget/pose.py with balance (OP3), played open loop (`motionstaff play`)
  imu   the same plan with the robot's own IMU fed back at the standing ankles on every frame
        sent (host/retarget/feedback.py), read through the bus as `motionstaff play
        --imu-feedback` reads it: the driver's READ of the OpenCR board (device/servo/opencr.py),
        answered by the emulator with the twin's IMU (0.2 deg / 0.01 rad/s noise) in the board's
        0.1 deg and 16.4 LSB per deg/s, after the request's wire time
Each staff of servo angles is played through the product path (host/physics/simulate.py: the
player's limiter and ramp, the driver's bytes, the controller emulator, the MuJoCo twin's servo
models, XM430-W350 / STS3215): fell and fall time, tracking RMS (commanded vs achieved, deg),
self-collision frames, foot slip (mm: a foot's travel from where it touched down while it stays
on the floor), retime factor, kinematic pose error (median angle
between corresponding segment directions; the robot's torso where the IK put it for pose and
bal, upright for the row copy, which commands none; per segment for pose and bal), and the
simulation's real-time factor (simulated seconds per CPU second of this process and per wall
second; the machine's 2 cores are shared, so wall is the noisier). All figures are from
simulation of real recordings. `--max-s 1000` runs every clip whole (docs/robots.md says how long).
"""

import argparse
import glob
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from device.servo.robot import load_robot                       # noqa: E402
from host.formats import read_motion                            # noqa: E402
from host.retarget.pose import pose_error_deg, retarget_to_robot  # noqa: E402
from host.retarget.segments import SIDED, match_points, side_and_base  # noqa: E402
from host.staff import Row, Staff                               # noqa: E402
from host.physics.simulate import run_simulation               # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SHARED = [os.path.join(REPO, "..", "shared", "data"), os.path.join(REPO, "..", "..", "shared", "data")]
FOOT_ON_FLOOR = ("walk", "dance", "kick", "turn", "05_20", "131_01", "gait", "Walking")


def shared():
    for p in SHARED:
        if os.path.isdir(p):
            return os.path.normpath(p)
    raise SystemExit("no ../shared/data here")


def row_copy(staff, robot):
    """The description's row map, the CMU joint names translated to the clip's links."""
    names = set(staff.names)
    mapping = "human" if any(s.map.get("human") in names or s.map.get("human", "")[1:] in names
                             for s in robot.servos) else "cmu"
    link_of = {}
    if mapping == "cmu" and staff.skeleton is not None:
        idx = match_points(staff.skeleton)
        for k, i in idx.items():
            link_of[k] = staff.skeleton.link_names[i]
    V = np.array([[s.home_deg] * staff.frames for s in robot.servos], float)
    for si, s in enumerate(robot.servos):
        spec = s.map.get(mapping)
        if not isinstance(spec, str):
            continue
        sign = -1.0 if spec.startswith("-") else 1.0
        row = spec.lstrip("-")
        if row not in names and mapping == "cmu":
            joint, ch = row.split(".")
            side, base = side_and_base(joint)
            point = next((p for p, bases in SIDED.items() if base in bases), None)
            if point is None and base == "head":
                key = "head"
            else:
                key = "%s_%s" % (side, point) if side and point else None
            row = "%s.%s" % (link_of.get(key, joint), ch)
        if row in names:
            V[si] = np.clip(sign * staff.values[staff.row_index(row)], s.lo_deg, s.hi_deg)
    V = np.where(np.isfinite(V), V, 0.0)
    rows = [Row(s.name, "deg", s.lo_deg, s.hi_deg, True) for s in robot.servos]
    return Staff(V, rows, staff.fps, 16, None, {"source": "row copy (%s)" % mapping}), mapping


def clips(args):
    d = shared()
    out = sorted(glob.glob(os.path.join(d, "bvh", "*.bvh"))) + sorted(glob.glob(os.path.join(d, "c3d", "*.c3d")))
    if args.clips:
        out = [p for p in out if any(c in os.path.basename(p) for c in args.clips)]
    return out


def cut(staff, seconds):
    n = min(staff.frames, int(round(seconds * staff.fps)) + 1)
    s = staff.copy()
    s.values = s.values[:, :n]
    return s


def fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


SHORT = {"upper_arm": "uarm", "forearm": "farm", "thigh": "thigh", "shank": "shank", "foot": "foot",
         "hand": "hand"}


def segment_line(seg):
    """'trunk 0 thigh 25/19 shank ...': median error deg per segment, left/right."""
    out = []
    if "trunk" in seg:
        out.append("trunk %.0f" % seg["trunk"])
    for part, short in SHORT.items():
        lr = [seg.get(s + "_" + part) for s in "lr"]
        if any(v is not None for v in lr):
            out.append("%s %s" % (short, "/".join("-" if v is None else "%.0f" % v for v in lr)))
    return " ".join(out)


def run_robot(robot_name, staff, methods):
    robot = load_robot(robot_name)
    out = {}
    plans = {}
    for method in methods:
        t0 = time.perf_counter()
        if method == "row":
            cmd, how = row_copy(staff, robot)
            res, retimed, infeasible, root, lead = None, 1.0, [], None, 0.0
        else:
            # "imu" plays the balanced plan ("bal") with the IMU feedback at the ankles
            balance = method in ("bal", "imu")
            if balance not in plans:
                plans[balance] = retarget_to_robot(staff, robot_name, balance=balance)
            res = plans[balance]
            cmd, retimed, infeasible = res.staff, res.retimed, res.infeasible
            root, lead, how = res.qpos[:, :7], res.lead_in_s, method
        t_ret = time.perf_counter() - t0
        err, seg = pose_error_deg(staff, cmd, robot_name, retimed, root, lead)
        # the product path: the player's limiter and ramp, the driver's bytes, the controller
        # emulator, the physics twin (host/physics/simulate.py)
        sim = run_simulation(staff, robot_name, retargeted=(cmd, res), feedback=(method == "imu")).report
        out[method] = dict(sim, pose_error_deg=err, segment_error_deg=seg, retimed=retimed,
                           infeasible=infeasible, how=how, retarget_s=t_ret)
    return out


def _clip_task(job):
    """One clip on both robots: (name, [(summary key, results)], its table lines, CPU s)."""
    path, max_s, only = job
    cpu0 = time.process_time()
    name = os.path.basename(path)
    lines, out = [], []
    try:
        staff = read_motion(path)
    except Exception as e:                                   # a clip the readers refuse
        return name, out, ["%s: cannot read (%s)" % (name, e)], time.process_time() - cpu0
    staff = cut(staff, max_s)
    for robot_name, methods, key in (("op3-dynamixel", ("row", "pose", "bal", "imu"), "op3"),
                                     ("so101-feetech", ("row", "pose"), "so101")):
        if only:
            methods = tuple(m for m in methods if m in only)
            if not methods:
                continue
        try:
            res = run_robot(robot_name, staff, methods)
        except Exception as e:
            lines.append("%s on %s: %s" % (name, robot_name, e))
            continue
        lines.append("%s on %s (%.1f s of the clip)" % (name, robot_name, staff.duration_s))
        for m in methods:
            lines.extend(method_lines(m, res[m]))
        out.append((key, res))
    return name, out, lines, time.process_time() - cpu0


def method_lines(m, r):
    """A method's table row, its per-segment line and its infeasible spans."""
    out = ["  %-36s %-5s %9s %6.1f %6.2f %5d %7.1f %6.2f %6.1f %6.1f" % (
        r["how"] if m == "row" else "", m,
        ("yes@%.2f" % r["fall_time_s"]) if r["fell"] else "no", r["pose_error_deg"],
        r["tracking_rms_deg"] or float("nan"), r["self_collision_frames"],
        r["foot_slip_mm"] or 0.0, r["retimed"], r["cpu_realtime_factor"],
        r["realtime_factor"])]
    if m in ("pose", "bal"):
        out.append("  %-36s        per segment: %s" % ("", segment_line(r["segment_error_deg"])))
    if m == "imu":
        return out                       # (the same plan and spans as bal)
    for a, b, why in r["infeasible"][:4]:
        out.append("  %-36s        infeasible %.2f-%.2f s: %s" % ("", a, b, why))
    if len(r["infeasible"]) > 4:
        out.append("  %-36s        ... %d more spans" % ("", len(r["infeasible"]) - 4))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-s", type=float, default=3.0, help="seconds of each clip (default 3)")
    ap.add_argument("--clips", nargs="*", help="substrings of clip names to run")
    ap.add_argument("--methods", nargs="*", choices=("row", "pose", "bal", "imu"),
                    help="only these methods (default all; SO-101 runs only row and pose)")
    ap.add_argument("--out", help="also write the table here")
    ap.add_argument("--jobs", type=int, default=1,
                    help="clips run in this many processes (the table in the clips' order; default 1)")
    args = ap.parse_args(argv)
    lines = []

    def say(s=""):
        print(s)
        sys.stdout.flush()
        lines.append(s)

    say("benchmarks/robot.py --max-s %g: the first %g s of every clip; physics: host/physics/simulate.py "
        "(player, driver bytes, controller emulator, MuJoCo twin)" % (args.max_s, args.max_s))
    say("columns: fell (time s after the first frame) | pose error median deg | tracking RMS deg | "
        "self-collision frames | foot slip mm | retime factor | physics real-time factor: simulated s "
        "per CPU s (RTF) and per wall s (RTFw, on 2 cores shared with other jobs); "
        "per segment: median pose error deg, left/right")
    say()
    hdr = "%-38s %-5s %9s %6s %6s %5s %7s %6s %6s %6s" % ("clip (s)", "meth", "fell@s", "pose", "track",
                                                         "coll", "slip", "retim", "RTF", "RTFw")
    say(hdr)
    summary = {"op3": [], "so101": []}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    paths = clips(args)
    jobs = max(1, min(args.jobs, len(paths)))
    if jobs > 1:
        import multiprocessing
        pool = multiprocessing.get_context("spawn").Pool(jobs)
        done = pool.imap(_clip_task, [(p, args.max_s, args.methods) for p in paths])
    else:
        pool, done = None, (_clip_task((p, args.max_s, args.methods)) for p in paths)
    cpu_workers = 0.0
    for name, out, clip_lines, cpu_s in done:
        # (each clip's lines as they would have been said in one process, in the clips' order)
        for ln in clip_lines:
            say(ln)
        if pool is not None:
            cpu_workers += cpu_s
        for key, res in out:
            summary[key].append((name, res))
    if pool is not None:
        pool.close()
        pool.join()
    say()
    say("whole run: %.0f s wall, %.0f s CPU (retargeting, C3D IK and physics)%s"
        % (time.perf_counter() - wall0, time.process_time() - cpu0 + cpu_workers,
           " in %d processes" % jobs if jobs > 1 else ""))
    say("summary, OP3 (%d clips):" % len(summary["op3"]))
    for m in ("row", "pose", "bal", "imu"):
        rs = [r[m] for _, r in summary["op3"] if m in r]
        if not rs:
            continue
        say("  %-4s fell on %d/%d; pose error median of clips %.1f deg (worst %.1f); tracking RMS median "
            "%.2f deg (worst %.2f); self-collision frames %d; slip worst %.1f mm; RTF median %.1f CPU, %.1f wall"
            % (m, sum(r["fell"] for r in rs), len(rs), np.median([r["pose_error_deg"] for r in rs]),
               max(r["pose_error_deg"] for r in rs), np.median([r["tracking_rms_deg"] or np.nan for r in rs]),
               max(r["tracking_rms_deg"] or 0.0 for r in rs), sum(r["self_collision_frames"] for r in rs),
               max(r["foot_slip_mm"] or 0.0 for r in rs), np.median([r["cpu_realtime_factor"] for r in rs]),
               np.median([r["realtime_factor"] for r in rs])))
    better = sum(r["bal"]["pose_error_deg"] < r["row"]["pose_error_deg"] for _, r in summary["op3"]
                 if "bal" in r and "row" in r)
    both = sum("bal" in r and "row" in r for _, r in summary["op3"])
    if both:
        say("  pose error with balance under the row copy's on %d/%d clips" % (better, both))
    for m in ("row", "pose"):
        rs = [r[m] for _, r in summary["so101"] if m in r]
        if rs:
            say("  SO-101 %-4s pose error median of clips %.1f deg; tracking RMS median %.2f deg"
                % (m, np.median([r["pose_error_deg"] for r in rs]),
                   np.median([r["tracking_rms_deg"] or np.nan for r in rs])))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
