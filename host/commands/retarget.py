"""`motionstaff retarget SRC MAPPING DST [--target BODY]`: play a staff on another body.

    motionstaff retarget walk.png human_to_so101.json arm.png
    motionstaff retarget walk.bvh cmu_to_robot.json robot.png --target robot.urdf

BODY is a URDF, a skeleton JSON or "human"; without --target the mapping's "target" is used.
Prints what was clamped to the target's limits.
"""

from host.formats import read_motion, write_motion
from host.retarget import load_body, load_mapping, retarget
from protocol.errors import FormatError

HELP = "retarget a staff onto another body (URDF / skeleton) by a mapping file"


def add_arguments(p):
    p.add_argument("src", help="motion file (.png .bvh .csv .c3d ...)")
    p.add_argument("mapping", help="mapping JSON (docs/editing.md#retarget)")
    p.add_argument("dst", help="staff to write (.png, .bvh, .csv)")
    p.add_argument("--target", help="target body: URDF, skeleton JSON or 'human' (default: the mapping's)")


def run(args):
    m = load_mapping(args.mapping)
    target = args.target or m.target
    if not target:
        raise FormatError("%s: no target body (give --target or a \"target\" in the mapping)" % args.mapping)
    body = load_body(target)
    staff = read_motion(args.src)
    out, report = retarget(staff, m, body)
    for line in report.lines():
        print(line)
    write_motion(args.dst, out)
    print("wrote %s: %d joints x %d frames" % (args.dst, out.nrows, out.frames))
    return 0
