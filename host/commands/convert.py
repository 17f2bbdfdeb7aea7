"""`motionstaff convert SRC DST`: between motion formats, chosen by the files' extensions.

    motionstaff convert walk.bvh walk.png --bits 8 --ranges fit
    motionstaff convert walk.png walk.bvh ; motionstaff convert walk.png walk.csv
    motionstaff convert walk.bvh walk_colour.png --colour
"""

import os

from host.formats import extension, read_motion, write_motion

HELP = "convert between motion files (.bvh .png .csv ...) by extension"


def add_arguments(p):
    p.add_argument("src", help="input motion file")
    p.add_argument("dst", help="output motion file")
    p.add_argument("--bits", type=int, choices=(8, 16), help="staff bit depth (default: the source's, or 8)")
    p.add_argument("--ranges", choices=("fit", "skeleton"),
                   help="row ranges: fitted to the data, or the skeleton's dof limits "
                        "(default: kept for a staff, fitted for an import)")
    p.add_argument("--colour", "--color", action="store_true",
                   help="8-bit PNG: store as a palette PNG whose palette is a colour map")
    p.add_argument("--units", choices=("m", "cm", "mm", "in"),
                   help="BVH length units (default: guessed from the body's size)")


def convert(src, dst, bits=None, ranges=None, colour=False, units=None):
    """Read src, re-range / re-depth as asked, write dst; returns the Staff written."""
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError("%s: source and destination are the same file" % dst)
    staff = read_motion(src, bits=bits, units=units, ranges=ranges)
    if bits is not None and bits != staff.bits:
        staff = staff.with_bits(bits)
    if ranges is not None:
        staff = staff.refit(ranges)
    opts = {"units": units}
    if extension(dst) == ".png":
        opts["colour"] = colour
    elif colour:
        raise ValueError("--colour applies to .png output only")
    write_motion(dst, staff, **opts)
    return staff


def run(args):
    st = convert(args.src, args.dst, args.bits, args.ranges, args.colour, args.units)
    print("%s: %d rows x %d frames, %g fps, %d bits, %d bytes"
          % (args.dst, st.nrows, st.frames, st.fps, st.bits, os.path.getsize(args.dst)))
    return 0
