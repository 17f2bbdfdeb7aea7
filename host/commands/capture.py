"""`motionstaff capture`: run the capture unit (the simulated subject when no config is given).

    motionstaff capture --duration 8 --record rec.msr --truth truth.png
    motionstaff convert rec.msr est.png && motionstaff diff est.png truth.png
    motionstaff capture --clip walk.bvh --raw-log raw.jsonl --status
    motionstaff capture --replay raw.jsonl --record again.msr     # re-estimate a raw log
    motionstaff capture --config unit.json --realtime             # a Pi with real sensors
    motionstaff capture --realtime --link /dev/ttyUSB0 --baud 115200   # live frames to a robot

Also home of read_msr(path) -> Staff, the `.msr` reader registered in host/formats.py.
SIGUSR1 prints the timing statistics while capturing (real-time mode).
"""

import json
import os
import signal
import sys

import numpy as np

HELP = "capture motion from the unit's sensors (default: the simulated subject) into a staff"


def add_arguments(p):
    p.add_argument("--config", help="unit configuration JSON (default: the simulated unit)")
    p.add_argument("--duration", type=float, help="seconds to capture (default: the clip's length)")
    p.add_argument("--record", help="write the estimate: .msr recording container (or .png staff)")
    p.add_argument("--raw-log", help="write every raw sensor reading (JSON Lines) for replay")
    p.add_argument("--replay", help="read sensors from a raw log / x-io .csv / BROAD .mat instead")
    p.add_argument("--clip", help="the motion the simulated subject performs (any BVH)")
    p.add_argument("--truth", help="write the subject's true joint values as a staff (.png)")
    p.add_argument("--realtime", action="store_true", help="pace frames by the wall clock")
    p.add_argument("--rate", type=float, help="frame rate in Hz (default: the config's, 30)")
    p.add_argument("--estimator", help="estimator name (orient, or device.estimate's ekf, ...)")
    p.add_argument("--body", choices=("clip", "human", "human-floating", "humanoid18"),
                   help="the simulated subject's body (default: the clip's own skeleton)")
    p.add_argument("--chip", choices=("bno055", "mpu6050", "mpu9250"), help="simulated IMU chip")
    p.add_argument("--seed", type=int, help="simulated subject's seed")
    p.add_argument("--camera", action="store_true", help="add the simulated camera (markers)")
    p.add_argument("--status", action="store_true", help="print a status line every second")
    p.add_argument("--json", action="store_true", help="print the timing summary as JSON")
    p.add_argument("--link", metavar="PORT", help="stream the live frames over the serial link "
                   "(a port or pyserial URL; paced, header every second and on request)")
    p.add_argument("--baud", type=int, default=115200, help="the link's baud rate (default 115200)")


def read_msr(path, skeleton_object=True):
    """A recording container as a Staff: frames by index, gaps and missing values as NaN."""
    from device.body.skeleton import Skeleton
    from host.staff import Row, Staff
    from protocol import container
    rec = container.read(path)
    h = rec.header
    rows = [Row(r["name"], r.get("unit", ""), r["lo"], r["hi"], r.get("wrap", False)) for r in h["rows"]]
    n = (max(f[0] for f in rec.frames) + 1) if rec.frames else 0
    codes = np.zeros((len(rows), n), np.uint16 if h["bits"] == 16 else np.uint8)
    mask = np.ones((len(rows), n), bool)
    for idx, _t, c in rec.frames:
        col = np.array([0 if v is None else v for v in c])
        codes[:, idx] = col
        mask[:, idx] = np.array([v is None for v in c])
    sk = h.get("skeleton")
    if sk is not None and skeleton_object:
        sk = Skeleton.from_dict(sk)
    meta = {"source": h.get("source", ""), "captured": h.get("captured", ""), "recovery": rec.report()}
    return Staff.from_codes(codes, mask, rows, h["fps"], h["bits"], sk, meta)


def _config(args):
    from device.capture.config import default_config, load_config
    if args.config:
        cfg = load_config(args.config)
    else:
        cfg = default_config(body=args.body or "clip", chip=args.chip or "bno055")
    if args.rate:
        cfg["rate_hz"] = float(args.rate)
    if args.estimator:
        cfg["estimator"] = args.estimator
    if args.camera and not cfg.get("camera"):
        cfg["camera"] = {"url": "sim-cam://", "calibration": None}
    if cfg.get("subject") is not None:
        if args.clip:
            cfg["subject"]["clip"] = args.clip
        if args.seed is not None:
            cfg["subject"]["seed"] = args.seed
    return cfg


def _status_line(s):
    return ("t=%6.1fs frame %6d  sensors %d/%d  rate %.1f Hz  health %.2f  busy %.2f ms%s%s"
            % (s["t_s"], s["frame"], s["sensors_alive"], s["sensors"], s["rate_hz"], s["health"],
               s["busy_ms"], "  CALIBRATING (stand still)" if s["calibrating"] else "",
               ("  skipped %d" % s["skipped"]) if s["skipped"] else "")) + (
        ("  stale: %s" % " ".join(s["stale"][:6])) if s.get("stale") else "")


def run(args):
    from device.capture.loop import CaptureLoop
    from device.capture.rawlog import RawLogWriter, open_replay, single_imu_config
    from device.capture.unit import build_unit
    import time
    cfg = _config(args)
    if getattr(args, "link", None):
        if not 300 <= args.baud <= 10000000:
            raise ValueError("capture: --baud %d is not a serial baud rate" % args.baud)
        cfg.setdefault("outputs", []).append({"kind": "packets", "url": args.link, "baud": args.baud})
    replay = None
    source = args.replay or cfg.get("replay")          # a config may name a replay: source too
    if source:
        path = source[len("replay:"):] if source.startswith("replay:") else source
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        replay = open_replay(path, rate_hz=args.rate)
        if not hasattr(replay, "head"):
            cfg = single_imu_config(replay.rate_hz)
    if args.clip and not os.path.exists(args.clip):
        raise FileNotFoundError(2, "No such file or directory", args.clip)
    unit = build_unit(cfg, clip_path=args.clip, replay=replay)
    captured = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record = args.record
    png_out = None
    if record and record.lower().endswith(".png"):
        png_out, record = record, None
    raw = RawLogWriter(args.raw_log, unit) if args.raw_log else None
    loop = CaptureLoop(unit, record=record, realtime=args.realtime, raw_log=raw,
                       truth=bool(args.truth), captured=captured)
    loop.add_configured_outputs()
    values = []
    if png_out:
        loop.outputs.append(lambda k, t, v, c: values.append([np.nan if x is None else x for x in v]))
    duration = args.duration
    if duration is None:
        if replay is not None:
            duration = replay.frames / unit.rate_hz
        elif unit.subject is not None and np.isfinite(unit.subject.duration_s):
            duration = unit.subject.duration_s
        else:
            duration = 10.0
    if args.status:
        loop.status_callback = lambda s: print(_status_line(s), file=sys.stderr)
    old = None
    if hasattr(signal, "SIGUSR1"):
        old = signal.signal(signal.SIGUSR1, lambda *a: print(loop.stats.table(), file=sys.stderr))
    try:
        loop.run(duration_s=duration, status_every_s=1.0 if args.status else None)
    except EOFError:
        pass                                    # a replay ran out: keep what was captured
    finally:
        loop.close()
        if old is not None:
            signal.signal(signal.SIGUSR1, old)
    if png_out:
        _write_staff(png_out, np.array(values).T, loop.header, unit.skeleton)
    if args.truth:
        if unit.subject is None:
            raise ValueError("--truth needs the simulated subject (no config, or one with 'subject')")
        _write_staff(args.truth, loop.truth_values().T, loop.header, unit.skeleton, "truth")
    summary = loop.stats.summary()
    summary["output_errors"] = loop.output_errors
    if loop.output_errors:
        from protocol.errors import describe
        print("motionstaff: warning: %d output error(s), the first: %s"
              % (loop.output_errors, describe(loop.first_output_error)), file=sys.stderr)
    summary["sensors"] = unit.sensor_status()
    links = [o.counts() for o in getattr(loop, "_owned", []) if hasattr(o, "link")]
    if links:
        summary["link"] = links[0]
    if args.json:
        print(json.dumps(summary, default=float))
    else:
        st = loop.status()
        print("captured %d frames at %.1f Hz (%d sensors alive of %d)"
              % (loop.frame_index, unit.rate_hz, st["sensors_alive"], st["sensors"]))
        print(loop.stats.table())
    return 0


def _write_staff(path, values, header, skeleton, what="estimate"):
    from host.formats import write_motion
    from host.staff import Row, Staff
    rows = [Row(r["name"], r["unit"], r["lo"], r["hi"], r["wrap"]) for r in header["rows"]]
    v = np.asarray(values, float).reshape(len(rows), -1)
    st = Staff(v, rows, header["fps"], header["bits"], skeleton,
               {"source": "motionstaff capture (%s)" % what, "captured": header.get("captured", "")})
    write_motion(path, st)
