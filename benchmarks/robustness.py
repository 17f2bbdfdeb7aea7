"""The robustness goals of the live link, the receiver, storage, the bus and the unit's budget,
measured on the product's own code over twins that are as hard as the hardware.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/robustness.py [--quick] [--json]

Sections live in their own modules (one concept each) and are run here in one process:
  robust_link.py   the demo's link through the product streamer over the paced pty; receiver fuzz
  robust_unit.py   power cuts through the power-cut twin; I2C bus budget; the unit's own work p99
Each module has `run(quick) -> dict` (the figures) and `table(result) -> str` (the printed table).
"""

import argparse
import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

SECTIONS = ("robust_link", "robust_unit")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts (a smoke run)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    ap.add_argument("--only", choices=SECTIONS, help="run one section")
    args = ap.parse_args(argv)
    out = {}
    for name in SECTIONS:
        if args.only and name != args.only:
            continue
        mod = importlib.import_module(name)
        res = mod.run(args.quick)
        out[name] = res
        if not args.json:
            print(mod.table(res))
            print()
            sys.stdout.flush()
    if args.json:
        print(json.dumps(out, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
