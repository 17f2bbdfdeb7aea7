"""`motionstaff demo`: the main job end to end on the built-in simulated unit, with a report.

    motionstaff demo                      # files in ./motionstaff-demo/, report on stdout
    motionstaff demo --clip walk.bvh --seconds 5
    motionstaff demo --json               # the report as one JSON object
    motionstaff demo --faults 0.01 --unplug 5:6   # damage 1% of the link's bytes, unplug it 1 s

A simulated subject performs a real clip wearing IMUs and camera markers; the capture loop
estimates, records the crash-safe container and streams every frame through the product's
paced link output over the serial twin (a pty at 115200 baud) to the robot end (the product's
LinkBridge and Player) driving an emulated Pololu Maestro on the khr17-maestro humanoid; the host gets the recording, converts it to
a PNG staff, despikes and smooths it and renders a GIF of the estimated figure beside the true
one (host/demo/pipeline.py). run_demo() is the entry point.
"""

import json
import os
import sys

HELP = "the main job end to end: simulated subject -> capture -> robot + recording -> staff -> GIF"


def add_arguments(p):
    p.add_argument("--out", default="motionstaff-demo", help="output folder (default ./motionstaff-demo)")
    p.add_argument("--clip", help="a BVH clip for the subject to perform (default: CMU 131_03)")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds of motion (default 10)")
    p.add_argument("--rate", type=float, default=30.0, help="capture rate in Hz (default 30)")
    p.add_argument("--estimator", default="ekf", help="estimator (default: the torque-state EKF)")
    p.add_argument("--seed", type=int, default=1, help="simulation seed (default 1)")
    p.add_argument("--faults", type=float, default=0.0,
                   help="fraction of link bytes damaged (bit flips, drops, garbage; default 0)")
    p.add_argument("--unplug", metavar="START:END", help="the link's cable is pulled from START to "
                   "END seconds of simulated time (e.g. 5:6)")
    p.add_argument("--no-camera", action="store_true", help="IMUs only (no camera markers)")
    p.add_argument("--no-render", action="store_true", help="skip the GIF")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--robot-mapping", choices=("pose", "human"), default="pose",
                   help="the simulated OP3: pose retargeting with balance, live (default), or the "
                   "person's rows copied joint for joint (human)")


def run_demo(out_dir, clip=None, json_out=False, seconds=10.0, rate_hz=30.0, estimator="ekf",
             seed=1, faults=0.0, camera=True, render=True, progress=True, unplug=None,
             robot_mapping="pose"):
    """Run the pipeline, print the report (text or JSON) and return it as a dict."""
    from device.servo.emulate.serialtwin import LineFaults
    from host.demo.pipeline import run_pipeline
    if not (0 < seconds <= 600) or not (1 <= rate_hz <= 200) or not (0 <= faults < 0.5):
        raise ValueError("demo: need 0 < --seconds <= 600, 1 <= --rate <= 200, 0 <= --faults < 0.5")
    from device.estimate.estimators import KINDS
    if estimator not in ("orient",) + tuple(KINDS):
        raise ValueError("demo: --estimator must be one of orient, %s" % ", ".join(KINDS))
    if clip is not None and not os.path.isfile(clip):
        raise FileNotFoundError(2, "No such file or directory", clip)
    vanish = []
    if unplug:
        try:
            a, b = (float(x) for x in str(unplug).split(":"))
        except ValueError:
            raise ValueError("demo: --unplug wants START:END in seconds, not %r" % unplug)
        if not 0 <= a < b:
            raise ValueError("demo: --unplug wants 0 <= START < END")
        vanish = [(a, b)]
    # faults act on the serial twin's line from the first byte (the header repeats every second)
    f = LineFaults(rate=faults, seed=seed, unplug=vanish) if (faults or vanish) else None
    report = run_pipeline(out_dir, clip, seconds, estimator, rate_hz, seed, camera, f, render,
                          progress, robot_mapping=robot_mapping)
    if json_out:
        print(json.dumps(report, default=_plain))
    else:
        print(text_report(report))
    return report


def _plain(o):
    try:
        return float(o)
    except (TypeError, ValueError):
        return str(o)


def _f(v, fmt="%.2f"):
    return "null" if v is None else fmt % v


def text_report(r):
    b = r["bytes_per_frame_detail"]
    lines = [
        "motionstaff demo: %s, %g s of motion at %g Hz, %d rows, %d IMUs%s, estimator %s, robot %s"
        % (os.path.basename(r["clip"]), r["seconds_of_motion"], r["rate_hz"], r["rows"], r["imus"],
           " + camera markers" if r["camera"] else "", r["estimator"], r["robot"]),
        "  joint-angle RMS error vs truth: %s deg recorded (live %s, edited %s)"
        % (_f(r["rms_deg"]), _f(r["rms_live_deg"]), _f(r["rms_edited_deg"])),
        "  frames: %d captured, %d streamed, %d delivered to the robot, %d corrupted delivered"
        % (r["frames_captured"], r["frames_streamed"], r["frames_delivered"],
           r["corrupted_frames_delivered"]),
        "  latency sensor sample -> servo bytes (bus wait, unit CPU, line and queue): median %s ms, p99 %s ms"
        % (_f(r["latency_p50_ms"]), _f(r["latency_p99_ms"])),
        "  unit work p99 %s ms (CPU %s ms), bus p99 %s ms; %s overruns, %s frames skipped"
        % (_f(r.get("unit_busy_p99_ms")), _f(r.get("unit_cpu_p99_ms")), _f(r.get("bus_p99_ms")),
           r.get("overruns"), r.get("skipped")),
        "  bytes per frame: link %s (incl. headers %s), container %s, Maestro %s, raw %d"
        % (_f(b["link_frame_packet"]), _f(b["link_incl_headers"]), _f(b["container"]),
           _f(b["maestro"]), b["raw_codes"]),
        "  link errors: %d writes failed, %d packets dropped by the robot's decoder; "
        "failsafe engaged %d, released %d; servo commands matching the limiter: %d of %d"
        % (r["link"]["write_errors"], r["link"]["relay"]["decoder_dropped"],
           r["link"]["relay"]["failsafe_engaged"], r["link"]["relay"]["failsafe_released"],
           r["checks"]["servo_commands_checked"] - r["checks"]["servo_commands_mismatched"],
           r["servo_commands"]),
    ]
    if r.get("robot_twin"):
        tw = r["robot_twin"]
        how = "pose retargeted live" if tw.get("mapping") == "pose" else "row copy"
        lines.append("  simulated %s on the same link (MuJoCo twin, %s): %s over %s s; torque "
                     "saturated %.1f %% of servo-steps; pose error %s deg"
                     % (tw["robot"], how, "FELL at %.2f s" % tw["fall_time_s"] if tw["fell"] else "stayed up",
                        tw["sim_s"], 100 * tw["torque_saturated_frac"], _f(tw.get("pose_error_deg"), "%.1f")))
    if r.get("download"):
        d = r["download"]
        lines.append("  download over the serial link: %s bytes in %s s%s"
                     % (d.get("bytes"), d.get("seconds"), "" if d.get("identical") else " (DIFFERS)"))
    for k, v in sorted(r["not_measured"].items()):
        lines.append("  note (%s): %s" % (k, v))
    lines.append("files in %s:" % r["out_dir"])
    for k, v in r["files"].items():
        lines.append("  %-10s %s (%d bytes)" % (k, v, r["file_bytes"].get(k, 0)))
    lines.append("took %.1f s" % r["timings_s"]["total_s"])
    return "\n".join(lines)


def run(args):
    run_demo(args.out, args.clip, args.json, seconds=args.seconds, rate_hz=args.rate,
             estimator=args.estimator, seed=args.seed, faults=args.faults,
             camera=not args.no_camera, render=not args.no_render, progress=sys.stderr.isatty(),
             unplug=args.unplug, robot_mapping=args.robot_mapping)
    return 0
