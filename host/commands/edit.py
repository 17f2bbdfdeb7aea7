"""`motionstaff edit SRC DST OPERATION...`: edit a staff like an image, operations in order.

    motionstaff edit walk.png clean.png despike fill:cubic smooth:butter,cutoff=6
    motionstaff edit mocap.bvh fixed.png despike:robust fill:rotation       # spikes and gaps
    motionstaff edit walk.bvh part.png cut:1.0-4.5 mirror retime:fps=60
    motionstaff edit long.png parts.png segment:still      # writes parts_01.png, parts_02.png ...

The grammar and every operation: docs/editing.md (host/edit/ops.py).
"""

import os

from host.edit.ops import apply_ops, parse_ops
from host.formats import read_motion, write_motion

HELP = "edit a staff: despike, fill, smooth, cut, splice, mirror, retime, clamp, segment ..."


def add_arguments(p):
    p.add_argument("src", help="motion file to edit (.png .bvh .csv ...)")
    p.add_argument("dst", help="file to write (format by extension)")
    p.add_argument("operations", nargs="+", metavar="OPERATION",
                   help="NAME[:ARG,KEY=VALUE...], e.g. despike:robust fill:rotation "
                        "smooth:butter,cutoff=6 cut:1.0-4.5 mirror retime:fps=60 (docs/editing.md)")


def segment_paths(dst, n):
    stem, ext = os.path.splitext(dst)
    return ["%s_%02d%s" % (stem, i + 1, ext) for i in range(n)]


def run(args):
    ops = parse_ops(args.operations)          # bad grammar fails before anything is read
    staff = read_motion(args.src)
    out, notes = apply_ops(staff, ops)
    for line in notes:
        print(line)
    if isinstance(out, list):
        for path, part in zip(segment_paths(args.dst, len(out)), out):
            write_motion(path, part)
            print("wrote %s (%d frames)" % (path, part.frames))
    else:
        write_motion(args.dst, out)
        print("wrote %s: %d rows x %d frames at %g fps" % (args.dst, out.nrows, out.frames, out.fps))
    return 0
