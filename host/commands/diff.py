"""`motionstaff diff A B [--json]`: per-row and overall RMS and maximum difference of two motions.

    motionstaff diff walk.bvh walk.png
    motionstaff diff walk.png edited.png --json

Rows are matched by name (both files must share at least one); angle rows (wrap) compare
modulo 360 degrees; frames beyond the shorter file are ignored; missing values are skipped.
"""

import json

import numpy as np

from host.formats import read_motion
from protocol.errors import FormatError

HELP = "compare two motion files of one skeleton: RMS and max difference per row"


def add_arguments(p):
    p.add_argument("a", help="first motion file")
    p.add_argument("b", help="second motion file")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def diff_staffs(a, b, where=("a", "b")):
    """The diff dict of two staffs (see module docstring)."""
    names_b = {n: i for i, n in enumerate(b.names)}
    common = [(i, names_b[n]) for i, n in enumerate(a.names) if n in names_b]
    if not common:
        raise FormatError("%s and %s have no rows in common (different skeletons?)" % where)
    if abs(a.fps - b.fps) > 1e-6 * a.fps:
        raise FormatError("%s is %g fps but %s is %g fps" % (where[0], a.fps, where[1], b.fps))
    n = min(a.frames, b.frames)
    rows, sq, cnt, mx = [], 0.0, 0, 0.0
    for i, j in common:
        d = a.values[i, :n] - b.values[j, :n]
        if a.rows[i].wrap and a.rows[i].unit == "deg":
            d = (d + 180.0) % 360.0 - 180.0
        d = np.abs(d[~np.isnan(d)])
        r = {"name": a.rows[i].name, "unit": a.rows[i].unit, "n": int(d.size),
             "rms": float(np.sqrt(np.mean(d * d))) if d.size else 0.0, "max": float(d.max()) if d.size else 0.0}
        rows.append(r)
        sq += float(np.sum(d * d))
        cnt += d.size
        mx = max(mx, r["max"])
    return {"frames": n, "frames_a": a.frames, "frames_b": b.frames,
            "rms": float(np.sqrt(sq / cnt)) if cnt else 0.0, "max": mx, "rows": rows,
            "only_in_a": [x for x in a.names if x not in names_b],
            "only_in_b": [x for x in b.names if x not in set(a.names)]}


def run(args):
    d = diff_staffs(read_motion(args.a), read_motion(args.b), (args.a, args.b))
    if args.json:
        print(json.dumps(d))
        return 0
    w = max(len(r["name"]) for r in d["rows"])
    print("%-*s %-4s %12s %12s" % (w, "row", "unit", "rms", "max"))
    for r in d["rows"]:
        print("%-*s %-4s %12.6g %12.6g" % (w, r["name"], r["unit"], r["rms"], r["max"]))
    print("%-*s %-4s %12.6g %12.6g   (%d rows, %d frames compared)"
          % (w, "overall", "", d["rms"], d["max"], len(d["rows"]), d["frames"]))
    for k in ("only_in_a", "only_in_b"):
        if d[k]:
            print("%s: %d rows (%s%s)" % (k, len(d[k]), ", ".join(d[k][:5]), ", ..." if len(d[k]) > 5 else ""))
    return 0
