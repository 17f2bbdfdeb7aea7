"""`motionstaff info FILE [--json]`: what a motion file holds (frames, rate, depth, rows, ranges, bounds).

Each row's +- is its exact bound (half a step); a staff made with an error budget also shows the
budget (mm at every joint and every point 3 cm from a bone).

    motionstaff info walk.png
    motionstaff info walk.bvh --json | python -m json.tool
"""

import json
import os

from host.formats import read_motion

HELP = "describe a motion file: frames, fps, bits, duration, rows with units and ranges"


def add_arguments(p):
    p.add_argument("file", help="motion file (.png .bvh .csv ...)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def describe(path):
    """The info dict of a motion file."""
    st = read_motion(path)
    sk = st.skeleton
    err = st.max_error()
    return {
        "file": os.fspath(path), "bytes": os.path.getsize(path),
        "frames": st.frames, "fps": st.fps, "bits": st.bits, "duration_s": st.duration_s,
        "missing": int(st.codes()[1].sum()),
        "source": st.meta.get("source", ""), "captured": st.meta.get("captured", ""),
        "max_error_mm": st.meta.get("max_error_mm"),
        "max_error_bound": st.meta.get("max_error_bound", "chain") if st.meta.get("max_error_mm") is not None else None,
        "skeleton": None if sk is None else {"name": getattr(sk, "name", ""), "links": sk.nlinks, "dofs": sk.ndof},
        "rows": [{"name": r.name, "unit": r.unit, "lo": r.lo, "hi": r.hi, "wrap": r.wrap,
                  "max_error": float(e)} for r, e in zip(st.rows, err)],
    }


def run(args):
    d = describe(args.file)
    if args.json:
        print(json.dumps(d))
        return 0
    sk = d["skeleton"]
    print("%s: %d frames at %g fps (%.2f s), %d-bit staff, %d rows, %d missing values"
          % (d["file"], d["frames"], d["fps"], d["duration_s"], d["bits"], len(d["rows"]), d["missing"]))
    if sk:
        print("skeleton %r: %d links, %d dofs" % (sk["name"], sk["links"], sk["dofs"]))
    if d["max_error_mm"] is not None:
        if d["max_error_bound"] == "measured":
            print("made with --max-error-mm %g: every joint and its points 3 cm along the bone's axes within %g mm "
                  "in every frame (measured by forward kinematics when written)" % (d["max_error_mm"], d["max_error_mm"]))
        else:
            print("made with --max-error-mm %g: every joint and every point 3 cm from a bone within %g mm"
                  % (d["max_error_mm"], d["max_error_mm"]))
    w = max(len(r["name"]) for r in d["rows"])
    for r in d["rows"]:
        print("  %-*s %-4s [%12.6g, %12.6g]  +-%.3g" % (w, r["name"], r["unit"], r["lo"], r["hi"], r["max_error"]))
    return 0
