"""`motionstaff convert SRC DST`: between motion formats, chosen by the files' extensions.

    motionstaff convert walk.bvh walk.png                    # 8 bits, the default error budget
    motionstaff convert walk.bvh walk.png --max-error-mm 0.1 # each row's step for 0.1 mm (8 or 16 bits)
    motionstaff convert walk.bvh walk.png --max-error-mm 0.3 --bound chain   # guaranteed for any pose
    motionstaff convert walk.bvh walk.png --max-error-mm 0.2 --aim-mm 0.1 # within 0.2, most points within 0.1
    motionstaff convert walk.bvh walk.png --max-error-mm 0.2 --aim-mm 0.1 --aim-p99  # and rows coarser while
                                                             # the 99th percentile stays within 0.1
    motionstaff convert walk.bvh walk.png --max-error-mm 0.1 --transform none # 16-bit pixels = codes
    motionstaff convert walk.bvh walk.png --bits 8 --ranges fit
    motionstaff convert walk.png walk.bvh ; motionstaff convert walk.png walk.csv
    motionstaff convert walk.bvh walk_colour.png --colour

A staff written from an import (BVH, CSV, C3D...) with neither --ranges, --max-error-mm nor
--bits 16 gets the default budget: 8 bits, every joint and every point 3 cm from a bone within 1.5x the
tightest bound an 8-bit staff of that motion can hold (host/budget.py; the file says the bound,
`info` shows it). Without bone lengths (no skeleton) the ranges are fitted to the data.

`--max-error-mm E` chooses the steps from the errors this clip's decoding makes, checked by
forward kinematics of every frame before the file is written (host/budget_measured.py: every
joint and ACL's points 3 cm along each bone's axes within E on this motion); `--bound chain`
asks for the bound that holds for any pose instead (host/budget.py: about 3x finer steps).
`--aim-mm A` (with the measured bound) chooses the codes on those steps to put as few points as
they can over A (host/budget_rounding.py: ACL reports the 99th percentile against a threshold),
every point still within E; `--aim-p99` then coarsens rows while the 99th percentile of the
point errors stays within A (host/budget_percentile.py, ACL's reporting). A
16-bit staff's pixels hold the codes' differences in byte planes (`--transform dxe`, the
default for 16 bits: each row's order 0-3 chosen, rows that never move left out, rows
predicted from others, the low planes in the order of their high planes, the differences
starting at the first frame; `--transform dxs` the same from zeros before it and `dxp` the
same unsorted, the files written before;
`--transform d2p` every row's second difference; protocol/rowtransform.py): 15-20% smaller,
still a PNG any viewer opens, but not a picture of the motion; `--transform none` keeps the
codes as pixels.
"""

import os

from host.formats import extension, read_motion, write_motion

HELP = "convert between motion files (.bvh .png .csv ...) by extension"


def add_arguments(p):
    p.add_argument("src", help="input motion file")
    p.add_argument("dst", help="output motion file")
    p.add_argument("--bits", type=int, choices=(8, 16), help="staff bit depth (default: the source's, or 8)")
    p.add_argument("--ranges", choices=("fit", "skeleton", "budget"),
                   help="row ranges: fitted to the data, the skeleton's dof limits, or steps for an error "
                        "budget (default: kept for a staff, the default budget for an import)")
    p.add_argument("--max-error-mm", type=float, metavar="E",
                   help="each row's step so every joint and every point 3 cm from a bone stays within E mm "
                        "(8 bits when they hold it, else 16; with --bits, that depth or an error)")
    p.add_argument("--bound", choices=("measured", "chain"), default="measured",
                   help="with --max-error-mm: measured on this clip by forward kinematics (default) or "
                        "guaranteed for any pose through the chain")
    p.add_argument("--aim-mm", type=float, metavar="A",
                   help="with --max-error-mm (measured): the codes put as few points as they can over A mm "
                        "(a threshold whose 99th percentile is reported, as ACL does)")
    p.add_argument("--aim-p99", action="store_true",
                   help="with --aim-mm: rows coarsened while the 99th percentile of the errors stays within A")
    p.add_argument("--transform", choices=("auto", "none", "d2p", "dxp", "dxs", "dxe"), default="auto",
                   help="PNG pixels: auto (dxe for 16 bits, the codes for 8), none (the codes), d2p "
                        "(16 bits: second differences in byte planes), dxp (each row's order of difference, "
                        "rows that never move left out, rows predicted from others), dxs (dxp, the low "
                        "planes sorted by their high planes), dxe (dxs, the differences starting at the first frame)")
    p.add_argument("--colour", "--color", action="store_true",
                   help="8-bit PNG: store as a palette PNG whose palette is a colour map")
    p.add_argument("--units", choices=("m", "cm", "mm", "in"),
                   help="BVH length units (default: guessed from the body's size)")


def convert(src, dst, bits=None, ranges=None, colour=False, units=None, max_error_mm=None, bound="measured",
            transform="auto", aim_mm=None, aim_p99=False):
    """Read src, re-range / re-depth as asked, write dst; returns the Staff written."""
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError("%s: source and destination are the same file" % dst)
    if max_error_mm is not None and not (max_error_mm > 0 and max_error_mm < float("inf")):
        raise ValueError("--max-error-mm must be a positive number of millimetres, not %r" % max_error_mm)
    if max_error_mm is not None and ranges not in (None, "budget"):
        raise ValueError("--max-error-mm sets the ranges; it cannot go with --ranges %s" % ranges)
    if ranges == "budget" and max_error_mm is None:
        raise ValueError("--ranges budget needs --max-error-mm E")
    if aim_mm is not None and (max_error_mm is None or bound != "measured"):
        raise ValueError("--aim-mm needs --max-error-mm E with the measured bound")
    if aim_p99 and aim_mm is None:
        raise ValueError("--aim-p99 needs --aim-mm A")
    if aim_mm is not None and not (aim_mm > 0 and aim_mm < float("inf")):
        raise ValueError("--aim-mm must be a positive number of millimetres, not %r" % aim_mm)
    from_staff = extension(src) == ".png"
    staff = read_motion(src, bits=bits, units=units, ranges=None if ranges == "budget" else ranges)
    if max_error_mm is None and ranges is None and bits in (None, 8) and not from_staff and extension(dst) == ".png":
        from host.budget import default_budget_mm

        max_error_mm = default_budget_mm(staff)
        if max_error_mm is not None:
            staff = staff.refit("budget", max_error_mm=max_error_mm, bits=bits or 8)
    elif max_error_mm is not None:
        staff = staff.refit("budget", max_error_mm=max_error_mm, bits=bits, bound=bound, aim_mm=aim_mm,
                              aim_p99=aim_p99)
    else:
        if bits is not None and bits != staff.bits:
            staff = staff.with_bits(bits)
        if ranges is not None:
            staff = staff.refit(ranges)
    opts = {"units": units}
    if extension(dst) == ".png":
        opts["colour"] = colour
        opts["transform"] = transform
    elif colour:
        raise ValueError("--colour applies to .png output only")
    elif transform != "auto":
        raise ValueError("--transform applies to .png output only")
    write_motion(dst, staff, **opts)
    return staff


def run(args):
    st = convert(args.src, args.dst, args.bits, args.ranges, args.colour, args.units, args.max_error_mm,
                 args.bound, args.transform, args.aim_mm, args.aim_p99)
    bound = st.meta.get("max_error_mm")
    how = " (measured on this clip)" if st.meta.get("max_error_bound") == "measured" else ""
    print("%s: %d rows x %d frames, %g fps, %d bits, %d bytes%s"
          % (args.dst, st.nrows, st.frames, st.fps, st.bits, os.path.getsize(args.dst),
             "" if bound is None else ", every joint and 3 cm point within %g mm%s" % (bound, how)))
    return 0
