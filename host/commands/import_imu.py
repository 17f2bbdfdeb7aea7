"""`motionstaff import-imu`: a real IMU recording into the unit's raw log (docs/rawlog.md).

    motionstaff import-imu --map neura.json --out walk.jsonl rawimu/S02-Trial-Walk-1-000_*.txt
    motionstaff import-imu --map mine.json --out walk.jsonl walk.csv     # the generic CSV
    motionstaff capture --replay walk.jsonl --config unit.json --record walk.msr

Xsens MT Manager exports (.txt, one per sensor; the id ends the file name) or one generic CSV.
Every check (format, mapping, rates, packet-counter or time gaps longer than --max-gap, an --out
that exists: a recording is never replaced) runs before the
log is written; lost packets within the limit become null (stale) frames and are listed.
"""

import os
import sys

HELP = "import a real IMU recording (Xsens MT Manager .txt, generic CSV) into a raw log"


def add_arguments(p):
    p.add_argument("inputs", nargs="+", help="Xsens MT Manager exports (.txt) or one CSV")
    p.add_argument("--map", required=True, help="sensor mapping JSON (sensor id -> segment)")
    p.add_argument("--out", required=True, help="the raw log to write (.jsonl)")
    p.add_argument("--max-gap", type=float, default=0.5,
                   help="longest run of lost packets accepted, seconds (default 0.5)")


def run(args):
    from host.imu_import import load_mapping, read_csv, read_xsens, write_rawlog
    from host.outpaths import check_output
    from protocol.errors import FormatError
    if not 0 <= args.max_gap <= 60:          # (nan fails both: it would turn the checks off)
        raise ValueError("--max-gap %r: seconds in [0, 60]" % args.max_gap)
    for p in args.inputs:
        if not os.path.isfile(p):
            raise FileNotFoundError(2, "No such file or directory", p)
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise FileNotFoundError(2, "No such directory", out_dir)
    # a raw log is a recording: never replaced (host/outpaths.py)
    check_output(args.out, "--out", overwrite=False)
    mapping = load_mapping(args.map)
    csvs = [p for p in args.inputs if p.lower().endswith(".csv")]
    if csvs:
        if len(args.inputs) != 1:
            raise FormatError("%s: give one generic CSV (all sensors in it), not with other files" % csvs[0])
        rec = read_csv(csvs[0], mapping, max_gap_s=args.max_gap)
    else:
        rec = read_xsens(args.inputs, mapping, max_gap_s=args.max_gap)
    write_rawlog(args.out, rec)
    for path, (n, at) in sorted(rec.get("lost", {}).items()):
        print("motionstaff: %s: %d packets lost (first after PacketCounter %d): null frames"
              % (path, n, at), file=sys.stderr)
    print("wrote %s: %d frames at %g Hz, %d sensors (%s)"
          % (args.out, rec["frames"], rec["rate_hz"], len(rec["names"]), " ".join(rec["names"])))
    return 0
