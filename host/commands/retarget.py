"""`motionstaff retarget SRC DST --robot NAME` (by pose) or `retarget SRC MAPPING DST` (by rows).

    motionstaff retarget 131_01.bvh op3.png --robot op3-dynamixel          # pose + balance
    motionstaff retarget walk.c3d so101.png --robot so101-feetech --no-balance
    motionstaff retarget walk.png human_to_so101.json arm.png
    motionstaff retarget walk.bvh cmu_to_robot.json robot.png --target robot.urdf

With --robot, the robot's segments are made to point where the person's do (host/retarget/pose.py:
forward kinematics of the person, IK over the robot's model with its joint and velocity limits,
self-collision avoidance, balance for a humanoid); the staff written has the robot's servo rows
in degrees. Prints the retime factor, the spans the robot cannot do and the median pose error.
With a MAPPING file, rows are copied (scaled, offset) onto a URDF / skeleton / "human" body and
what was clamped to its limits is printed.
"""

from host.formats import read_motion, write_motion
from host.retarget import load_body, load_mapping, retarget
from protocol.errors import FormatError

HELP = "retarget a staff onto a robot by pose (--robot), or onto a body by a mapping file"


def add_arguments(p):
    p.add_argument("src", help="motion file (.png .bvh .csv .c3d ...)")
    p.add_argument("mapping", help="with --robot: the staff to write; else a mapping JSON (docs/editing.md#retarget)")
    p.add_argument("dst", nargs="?", help="staff to write (.png, .bvh, .csv) after a mapping")
    p.add_argument("--robot", help="built-in robot to retarget onto by pose (op3-dynamixel, so101-feetech)")
    p.add_argument("--no-balance", action="store_true", help="with --robot: no balance (feet follow the legs)")
    p.add_argument("--target", help="target body: URDF, skeleton JSON or 'human' (default: the mapping's)")


def run(args):
    if args.robot:
        if args.dst is not None:
            raise ValueError("with --robot give SRC and DST only (a mapping file is for row copies)")
        from host.retarget.pose import retarget_to_robot
        from host.retarget.robotmodel import robot_body
        robot_body(args.robot)                              # a robot without a model: one line, before reading
        staff = read_motion(args.src)
        res = retarget_to_robot(staff, args.robot, balance=not args.no_balance)
        for line in res.lines():
            print(line)
        write_motion(args.mapping, res.staff)
        print("wrote %s: %d servos x %d frames" % (args.mapping, res.staff.nrows, res.staff.frames))
        return 0
    if args.dst is None:
        raise ValueError("give SRC MAPPING DST, or SRC DST --robot NAME")
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
