"""`motionstaff gestures`: learn gestures from example staffs, list or remove them, run the
recogniser.

    motionstaff gestures learn kick kick.bvh@1.6:2.5 kick.bvh@6.0:6.9 --command "osc:/tv/power 1"
    motionstaff gestures learn wave wave1.png wave2.png --negative walk.png --rows r_shoulder_abd_deg,r_elbow_deg
    motionstaff gestures list [--library gestures.json]
    motionstaff gestures remove kick [--library gestures.json]
    motionstaff gestures run dance.bvh [--library gestures.json] [--osc-target 127.0.0.1:9000] [--dry-run]
    motionstaff gestures run --from-capture [--config unit.json] [--seconds 20]

An example is a staff file (any format host.formats reads) or a cut of one, PATH@START:END in
seconds. `learn` adds (or replaces) the gesture in the library file, with thresholds learned
from the examples and the negatives (host/gestures/learn.py); `remove` drops one (the file is
rewritten atomically either way). `run` prints one line per match
(`--json` for JSON lines) and performs the gesture's command (host/gestures/actions.py).
"""

import json
import math
import os
import sys

from protocol.errors import FormatError, describe

HELP = "learn gestures by example and recognise them in recordings or live capture"


def add_arguments(p):
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    lp = sub.add_parser("learn", help="add a gesture learned from example staffs")
    lp.add_argument("name")
    lp.add_argument("staffs", nargs="+", metavar="STAFF[@START:END]",
                    help="examples: staff files or cuts in seconds")
    lp.add_argument("--command", default="", help="osc:/ADDR ARGS | osc://HOST:PORT/ADDR ARGS | "
                    "serial:URL LINE | exec:PROGRAM ARGS | shell:COMMAND LINE")
    lp.add_argument("--rows", default="", help="comma-separated rows (body features or staff rows); "
                    "default: chosen by the examples' motion energy")
    lp.add_argument("--negative", nargs="*", default=[], metavar="STAFF[@START:END]",
                    help="motion that must not match")
    lp.add_argument("--space", choices=("auto", "body", "rows"), default="auto")
    lp.add_argument("--mirror", action="store_true",
                    help="also recognise the gesture done with the other side of the body (body space)")
    lp.add_argument("--fps", type=float, default=30.0)
    lp.add_argument("--amplitudes", default="0.5,0.7071,1,1.4142,2", metavar="A,B,...",
                    help="amplitude factors: each example also becomes copies scaled about its start "
                         "pose by these, each with its own threshold (default 0.5,0.7071,1,1.4142,2; "
                         "1 = the examples only)")
    lp.add_argument("--hold-frames", type=int, default=1,
                    help="report at most this many frames after the gesture's end (default 1: "
                         "as soon as the match stops improving)")
    lp.add_argument("--library", default="gestures.json")
    ls = sub.add_parser("list", help="list the gestures of a library")
    ls.add_argument("--library", default="gestures.json")
    rm = sub.add_parser("remove", help="remove a gesture from a library")
    rm.add_argument("name")
    rm.add_argument("--library", default="gestures.json")
    rp = sub.add_parser("run", help="recognise gestures in a staff file or live capture")
    rp.add_argument("file", nargs="?")
    rp.add_argument("--from-capture", action="store_true", help="run on the capture unit's live estimate")
    rp.add_argument("--config", help="capture unit configuration (JSON), with --from-capture")
    rp.add_argument("--seconds", type=float, default=10.0, help="capture duration (default 10)")
    rp.add_argument("--realtime", action="store_true",
                    help="pace the capture by the wall clock (default: virtual time, as fast as possible)")
    rp.add_argument("--library", default="gestures.json")
    rp.add_argument("--osc-target", default="127.0.0.1:9000", help="HOST:PORT for osc: commands")
    rp.add_argument("--baud", type=int, default=115200, help="baud rate for serial: commands")
    rp.add_argument("--dry-run", action="store_true", help="print commands instead of performing them")
    rp.add_argument("--json", action="store_true", help="one JSON object per match")


def _cut(spec):
    path, at, rng = spec.rpartition("@")
    if not at or ":" not in rng:
        return spec, None
    a, _, b = rng.partition(":")
    try:
        span = (float(a), float(b))
    except ValueError:
        span = (math.nan, math.nan)
    if not all(math.isfinite(x) for x in span):
        raise FormatError("%s: the cut must be @START:END in seconds" % spec)
    return path, span


def _read(spec):
    from host.formats import read_motion
    path, span = _cut(spec)
    if not os.path.exists(path):
        raise FormatError("%s: no such file" % path)
    return path, span, read_motion(path)


def _values(staff, span, space, rows, fps, where):
    from host.gestures.learn import cut, motion_features, motion_rows
    if space == "body":
        from host.gestures.learn import _skeleton
        if _skeleton(staff) is None:
            raise FormatError("%s: has no skeleton, so body features cannot be computed (use --rows)" % where)
        v = motion_features(staff, fps)
        scales = None
    else:
        missing = [r for r in rows if r not in staff.names]
        if missing:
            from device.gestures.features import NAMES
            unknown = [r for r in missing if r not in NAMES]
            if not unknown and len(missing) < len(rows):
                raise FormatError("%s: --rows: %r is a body feature and %r a staff row: give one kind"
                                  % (where, missing[0], next(r for r in rows if r not in missing)))
            raise FormatError("%s: --rows: no row named %r (give the staff's own rows, or body features: %s)"
                              % (where, (unknown or missing)[0], ", ".join(NAMES)))
        v, scales = motion_rows(staff, rows, fps)
    if span is not None:
        if not span[1] > span[0]:
            raise FormatError("%s: the cut's end must be after its start" % where)
        try:
            v = cut(v, fps, span[0], span[1])
        except FormatError as e:
            raise FormatError("%s: %s (the motion lasts %.3f s)" % (where, e, staff.duration_s)) from None
    if len(v) < 2:
        raise FormatError("%s: too short: %d frame(s) at %g fps; at least 2 are needed"
                          % (where, len(v), fps))
    return v, scales


def _learn(args):
    from device.gestures.features import NAMES
    from device.gestures.library import load_library, save_library
    from host.gestures.actions import parse_command
    from host.gestures.learn import body_space_ok, learn_gesture
    parse_command(args.command)              # refuse a malformed command before any work
    if not (math.isfinite(args.fps) and args.fps > 0):
        raise FormatError("--fps must be a number > 0, not %r" % args.fps)
    try:
        amps = tuple(float(a) for a in args.amplitudes.split(",") if a.strip())
    except ValueError:
        raise FormatError("--amplitudes: give numbers separated by commas, not %r" % args.amplitudes) from None
    if not amps or not all(0 < a < 100 for a in amps):
        raise FormatError("--amplitudes: give positive factors, e.g. 0.5,1,2")
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    exs = [_read(s) for s in args.staffs]
    negs = [_read(s) for s in args.negative]
    space = args.space
    if space == "auto":
        if rows and all(r in NAMES for r in rows):
            space = "body"
        elif rows:
            space = "rows"
        else:
            space = "body" if all(body_space_ok(st) for _, _, st in exs + negs) else "rows"
    if space == "rows" and not rows:
        if args.space == "rows":
            raise FormatError("gesture %r: --space rows needs --rows (the staff rows to match)" % args.name)
        raise FormatError("gesture %r: these staffs have no skeleton with known landmarks; "
                          "name the rows to match with --rows" % args.name)
    ex_v, neg_v, scales = [], [], None
    for path, span, st in exs:
        v, scales = _values(st, span, space, rows, args.fps, path)
        ex_v.append(v)
    for path, span, st in negs:
        neg_v.append((_values(st, span, space, rows, args.fps, path)[0], None))
    names = None if space == "body" else rows
    g = learn_gesture(args.name, ex_v, neg_v, rows=rows or None, names=names, scales=scales,
                      command=args.command, space=space, fps=args.fps, hold_frames=args.hold_frames,
                      mirror=args.mirror,
                      sources=list(args.staffs), amplitudes=amps)
    lib = [x for x in load_library(args.library, missing_ok=True) if x.name != g.name]
    lib.append(g)
    save_library(args.library, lib)
    print("%s: learned %r from %d example(s) as %d templates, %d negative(s): rows %s, threshold %.3f%s"
          % (args.library, g.name, len(ex_v), len(g.templates), len(neg_v), ",".join(g.rows), g.threshold,
             "" if not g.learned.get("positive") else
             ", example distances %s" % " ".join("%.3f" % d for d in g.learned["positive"])))
    return 0


def _list(args):
    from device.gestures.library import load_library
    lib = load_library(args.library)
    if not lib:
        print("%s: no gestures" % args.library)
    for g in lib:
        print("%-16s %-5s thr %.3f  %d template(s)  rows %s  command %s"
              % (g.name, g.space, g.threshold, len(g.templates), ",".join(g.rows), g.command or "-"))
    return 0


def _remove(args):
    """Drop the named gesture and write the library back atomically (as learn does)."""
    from device.gestures.library import load_library, save_library
    lib = load_library(args.library)
    kept = [g for g in lib if g.name != args.name]
    if len(kept) == len(lib):
        raise FormatError("%s: no gesture named %r (the library has: %s)"
                          % (args.library, args.name, ", ".join(g.name for g in lib) or "none"))
    save_library(args.library, kept)
    print("%s: removed %r, %d gesture(s) left" % (args.library, args.name, len(kept)))
    return 0


def _reporter(args, actions):
    def report(m):
        if args.json:
            print(json.dumps(m._asdict()))
        else:
            print("%8.3f s  %-16s confidence %.2f  (%.3f-%.3f s, distance %.3f / %.3f)"
                  % (m.t_decided_s, m.name, m.confidence, m.t_start_s, m.t_end_s, m.distance, m.threshold))
        done = actions.perform(m)
        if done and args.dry_run and not args.json:
            print("          would send %s %s" % done)
        sys.stdout.flush()
    return report


def _run(args):
    from device.gestures.library import load_library
    from device.gestures.recognizer import Recognizer
    from device.outputs.osc import parse_target
    from host.gestures.actions import Actions
    if bool(args.file) == bool(args.from_capture):
        raise FormatError("gestures run: give a FILE or --from-capture (one of them)")
    lib = load_library(args.library)
    if not lib:
        raise FormatError("%s: the library has no gestures" % args.library)
    actions = Actions(parse_target(args.osc_target), args.baud, dry_run=args.dry_run)
    report = _reporter(args, actions)
    n = 0
    try:
        if args.file:
            from host.formats import read_motion
            from host.gestures.learn import _hold, _skeleton
            st = read_motion(args.file)
            if _skeleton(st) is None and any(g.space == "body" for g in lib):
                raise FormatError("%s: has no skeleton, and gestures in body space (%s) need one"
                                  % (args.file, ", ".join(g.name for g in lib if g.space == "body")))
            rec = Recognizer(lib, row_names=st.names, skeleton=_skeleton(st), fps=st.fps, on_match=report)
            n = len(rec.run(_hold(st.values.T)))
            n += len(rec.finish())           # a gesture ending on the recording's last frame
        else:
            n = _capture(args, lib, report)
    finally:
        actions.close()
    if not args.json:
        print("%d match(es)" % n)
    return 0


def _capture(args, lib, report):
    """Run the capture loop (simulated unless the unit configuration names real buses) for
    --seconds with the recogniser as one of its outputs; returns the number of matches."""
    from device.capture.config import default_config, load_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    from device.gestures.recognizer import Recognizer
    cfg = load_config(args.config) if args.config else default_config()
    unit = build_unit(cfg)
    matches = []
    rec = Recognizer(lib, skeleton=unit.skeleton, fps=unit.rate_hz, on_match=report)
    loop = CaptureLoop(unit, realtime=args.realtime,
                       outputs=[lambda k, t_s, values, codes: matches.extend(rec(k, t_s, values, codes))])
    try:
        loop.run(duration_s=args.seconds)
        matches.extend(rec.finish())         # a gesture ending on the last captured frame
    finally:
        loop.close()
    if loop.output_errors:
        raise FormatError("gestures run: the recogniser or a command failed on %d frame(s); the first: %s"
                          % (loop.output_errors, describe(loop.first_output_error)))
    return len(matches)


def run(args):
    return {"learn": _learn, "list": _list, "remove": _remove, "run": _run}[args.action](args)
