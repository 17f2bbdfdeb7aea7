"""The ACL-reporting sizes of the CMU clips, quickly: benchmarks/compression.py's search (the
largest --max-error-mm whose measured 99th percentile is within 0.01 cm) on the clips named.

    PYTHONPATH=$PWD .venv/bin/python tools/acl_sizes.py 131_01.bvh            # one clip, a quick loop
    PYTHONPATH=$PWD .venv/bin/python tools/acl_sizes.py                       # the 4 CMU clips, and their total
    PYTHONPATH=$PWD .venv/bin/python tools/acl_sizes.py --set host.budget_rounding.MIN_RESIDUAL_CODES=3
    PYTHONPATH=$PWD .venv/bin/python tools/acl_sizes.py --no-aim --digits 2   # the search before session 16

--set module.NAME=value patches a module constant first (to try a lever without editing it).
Prints per clip the PNG bytes, header bytes, the budget found, the measured p99 and max (cm).
"""

import argparse
import importlib
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.compression import acl_rows  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clips", nargs="*", help="clip names in --data (default: every CMU clip)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bvh"))
    ap.add_argument("--effort", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], metavar="module.NAME=value")
    ap.add_argument("--no-aim", action="store_true", help="the joint codes not aimed at 0.1 mm (before session 16)")
    ap.add_argument("--digits", type=int, default=3, help="significant digits of the budget searched (2 before session 16)")
    args = ap.parse_args(argv)
    for s in args.set:
        name, _, value = s.partition("=")
        mod, _, attr = name.rpartition(".")
        if not mod or not value:
            print("--set %r: not module.NAME=value" % s, file=sys.stderr)
            return 2
        setattr(importlib.import_module(mod), attr, type(getattr(importlib.import_module(mod), attr))(value))
    data = pathlib.Path(args.data)
    clips = [data / c for c in args.clips] or sorted(c for c in data.glob("*.bvh") if not c.name.startswith("dataset-"))
    missing = [str(c) for c in clips if not c.exists()]
    if missing:
        print("no such clip: %s" % ", ".join(missing), file=sys.stderr)
        return 2
    total = 0
    for r in acl_rows(clips, args.effort, bound="measured", measured=True, aim=not args.no_aim,
                      digits=args.digits):
        total += r["png"]
        print("%s  E %g  PNG %d  header %d  p99 %.5f cm  max %.5f cm" % (
            r["clip"], r["budget"], r["png"], r["hdr"], r["p99_cm"], r["max_cm"]), flush=True)
    print("total PNG %d" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
