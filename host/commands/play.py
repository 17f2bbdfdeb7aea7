"""`motionstaff play STAFF --port PORT --controller NAME --robot ROBOT`: a staff on a robot.

    motionstaff play walk.png --port /dev/ttyACM0 --controller maestro --robot khr17-maestro
    motionstaff play 131_01.bvh --port /dev/pts/4 --robot op3-dynamixel --speed 0.5 --loop
    motionstaff play dance.bvh --port /dev/ttyUSB0 --robot op3-dynamixel --imu-feedback   # closed loop

Frames are paced by absolute deadlines; Ctrl-C (or the end) leaves the robot in its failsafe
state; a summary of what was sent is printed at the end. STAFF is any motion file
host.formats reads (staff PNG, BVH, CSV, C3D, the unit's .msr recording).
`--osc HOST:PORT` / `--vmc HOST:PORT` also stream every frame sent to the robot (docs/osc.md).
`--imu-feedback` reads the robot's own IMU on its bus each frame (the OP3's OpenCR board, ID 200:
device/servo/opencr.py) and turns the standing ankle against the torso's tilt; a robot with no
known IMU is refused (one line, exit 2).
"""

import json
import sys
import time
from functools import partial

HELP = "play a staff on a robot through its servo controller, in real time"


def add_arguments(p):
    p.add_argument("staff", help="a motion file: staff PNG, BVH, CSV, C3D, .msr (any host.formats reads)")
    p.add_argument("--port", required=True, help="serial port or URL (pty path, loop://), or I2C URL")
    p.add_argument("--controller", help="controller protocol (default: the robot's)")
    p.add_argument("--robot", required=True, help="robot description file or built-in name")
    p.add_argument("--baud", type=int, help="baud rate (default: the robot's)")
    p.add_argument("--mapping", help="row mapping of the robot to use (e.g. cmu, human); default: "
                   "retarget by pose for a built-in robot with a model, else the best match")
    p.add_argument("--no-balance", action="store_true", help="retarget by pose without balance")
    p.add_argument("--imu-feedback", action="store_true",
                   help="close the balance loop through the robot's own IMU on its bus (the OP3's "
                        "OpenCR board, read each frame): the standing ankle turns against the "
                        "torso's tilt (host/retarget/feedback.py)")
    p.add_argument("--speed", type=float, default=1.0, help="playback speed factor (default 1)")
    p.add_argument("--loop", action="store_true", help="play again and again until Ctrl-C")
    p.add_argument("--reverse", action="store_true", help="play backwards")
    p.add_argument("--from", dest="from_s", type=float, default=None, help="start at T seconds")
    p.add_argument("--to", dest="to_s", type=float, default=None, help="stop at T seconds")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--osc", metavar="HOST:PORT", help="also stream every frame sent as OSC "
                   "(/motionstaff/frame ..., see docs/osc.md; default port 9000)")
    p.add_argument("--vmc", metavar="HOST:PORT", help="also stream every frame sent as VMC bones "
                   "(default port 39539)")


def load_staff(path):
    """The motion to play, from any format host.formats reads (by extension); FormatError or
    OSError (one line) for a file it cannot read."""
    from host.formats import read_motion
    return read_motion(path)


def _by_pose(args, robot, staff):
    """(staff, retarget result or None): the staff retargeted by pose (host/retarget/pose.py)
    when the description says "retarget": "pose" (every built-in with a model), unless a row
    mapping is named or the staff already has the servos' own rows; it prints what it did."""
    from host.robot_link import pose_capable
    servos = set(s.name for s in robot.servos)
    by_pose = pose_capable(robot)
    if args.mapping or servos & set(staff.names) or not by_pose or staff.skeleton is None:
        return staff, None
    from host.retarget.pose import retarget_to_robot
    if args.from_s is not None or args.to_s is not None:
        # retarget only what is played; --from/--to then cover the result
        a = 0 if args.from_s is None else max(0, int(round(args.from_s * staff.fps)))
        b = staff.frames if args.to_s is None else min(staff.frames, int(round(args.to_s * staff.fps)) + 1)
        if a >= b:
            raise ValueError("--from/--to select no frames (the staff has %.3f s)" % staff.duration_s)
        staff = staff.copy()
        staff.values = staff.values[:, a:b]
        args.from_s = args.to_s = None
    res = retarget_to_robot(staff, robot.name, balance=not getattr(args, "no_balance", False))
    for line in res.lines():
        print(line, file=sys.stderr)
    return res.staff, res


def check_imu_flag(robot):
    """ValueError "--imu-feedback: robot X has no known IMU ..." for a robot without one."""
    from device.servo.opencr import check_imu
    try:
        check_imu(robot)
    except ValueError as e:
        raise ValueError("--imu-feedback: %s" % e) from None


def _check_feedback(args, robot, controller, res=False):
    """--imu-feedback needs the robot's bus IMU and a balanced plan of single supports: a
    one-line error otherwise, before any port is opened (res False: the flags only, before the
    staff is read; then the retarget result)."""
    check_imu_flag(robot)                                   # a robot without a known IMU
    if controller != "dynamixel":
        raise ValueError("--imu-feedback: robot %s's IMU is on its Dynamixel bus, not on %s"
                         % (robot.name, controller))
    why = ("--mapping" if args.mapping else "--no-balance" if getattr(args, "no_balance", False)
           else None if res is False or (res is not None and res.contacts is not None)
           else "this staff is not retargeted by pose")
    if why:
        raise ValueError("%s: --imu-feedback needs a person's motion retargeted with balance (%s)"
                         % (args.staff, why))


def _stream_outputs(args, staff, driver):
    """--osc / --vmc: (outputs, on_frame) where on_frame(k, values) streams a frame the player
    sent to the robot. The frame index counts the frames sent (0, 1, 2, ...: a gap is a lost
    datagram); the time is the motion's own, k / fps of the source frame k, so frames skipped to
    stay real time leave the times as they are in the staff."""
    if not (getattr(args, "osc", None) or getattr(args, "vmc", None)):
        return [], None
    from host.commands.stream import outputs_for
    try:
        outs = outputs_for(staff, args.osc, args.vmc)
    except Exception:
        driver.close()
        raise
    sent = [0]

    def on_frame(k, values):
        n = sent[0]
        sent[0] += 1
        for o in outs:
            o(n, k / staff.fps, values, None)
    return outs, on_frame


def run(args):
    import math
    from device.servo.drivers import open_driver
    from device.servo.player import Player
    from device.servo.robot import load_robot

    if not (args.speed > 0 and math.isfinite(args.speed)):
        raise ValueError("--speed must be a positive number")
    robot = load_robot(args.robot)
    controller = args.controller or robot.controller
    if args.imu_feedback:
        _check_feedback(args, robot, controller)        # before reading or retargeting
    staff = load_staff(args.staff)
    staff, res = _by_pose(args, robot, staff)
    if args.imu_feedback:
        _check_feedback(args, robot, controller, res)
    first = 0 if args.from_s is None else max(0, int(round(args.from_s * staff.fps)))
    last = staff.frames if args.to_s is None else min(staff.frames, int(round(args.to_s * staff.fps)) + 1)
    if first >= last:
        raise ValueError("--from/--to select no frames (the staff has %.3f s)" % staff.duration_s)
    opts = dict(robot.options)
    driver = open_driver(controller, args.port, baud=args.baud or robot.baud, clock=time.monotonic, **opts)
    player = Player(robot, driver, row_names=staff.names, mapping=args.mapping)
    fb = bus_imu = None
    if args.imu_feedback:
        from device.servo.opencr import WAIT_READY_S, imu_reader
        from host.retarget.feedback import StaffFeedback
        try:
            bus_imu = imu_reader(robot, driver, staff.fps * args.speed)
        except ValueError:
            driver.close()
            raise
        fb = StaffFeedback(res, robot.name, partial(bus_imu.timed, player.clock))
    outs, on_frame = _stream_outputs(args, staff, driver)
    bar = None
    if not args.no_progress:
        from host.progress import progress      # plain lines when stderr is a log, not a tty
        bar = progress(total=None if args.loop else last - first, unit="frame",
                       desc="%s -> %s" % (robot.name, controller), leave=False)
    from host.interrupts import as_interrupt, restore
    interrupted = False
    old = as_interrupt()            # SIGTERM / SIGHUP: the failsafe below, as Ctrl-C
    try:
        player.start()
        if bus_imu is not None and not bus_imu.wait_ready(time.sleep, stand=player.stand_by):
            # (the OpenCR answers about 2.9 s after power-up: its gyro calibration)
            # (or not upright and still at home: its reference refused, its reads uncorrected)
            print("--imu-feedback: the robot's IMU gave no standing reference in %g s (no answer, "
                  "or not upright and still at home); playing, its feedback skips the frames it "
                  "misses" % WAIT_READY_S, file=sys.stderr)
        summary = player.play(staff.values, staff.fps, speed=args.speed, loop=args.loop,
                              reverse=args.reverse, first=first, last=last,
                              progress=bar.update if bar is not None else None, on_frame=on_frame,
                              adjust=fb)
    except KeyboardInterrupt:
        interrupted = True
        summary = player._summary(0, 0.0)
    finally:
        player.failsafe("torque_off" if robot.failsafe_action == "torque_off" else None)
        player.settle()             # "home": the move runs to its end at the ramp velocity
        if bar is not None:
            bar.close()
        driver.close()
        for out in outs:
            out.close()
        restore(old)
    summary["interrupted"] = interrupted
    summary["mapping"] = getattr(robot, "mapping_used", None)
    summary["servos_driven"] = len(player.rows)
    summary["failsafe"] = player.failsafe_action
    summary["feedback"] = None if fb is None else fb.report(summary, bus_imu)
    if outs:
        summary["stream_dropped"] = sum(out.dropped for out in outs)   # send buffer full
    if args.json:
        print(json.dumps(summary))
    else:
        d = summary["driver"]
        print("played %d frames (%d late, %d skipped) to %d servos of %s via %s [%s rows]; "
              "%d bytes sent, %d send errors; limiter clamped %d, rate-limited %d, invalid %d; "
              "failsafe: %s%s" % (summary["frames"], summary["late"], summary["skipped"],
                                  summary["servos_driven"], robot.name, controller, summary["mapping"],
                                  d["bytes"], summary["send_errors"], summary["limiter_clamped"],
                                  summary["limiter_rate_limited"], summary["limiter_invalid"],
                                  summary["failsafe"], " (interrupted)" if interrupted else "")
              + ("; IMU feedback: %d of %d frames read the bus IMU (%d missed), ankles at most %.1f deg"
                 % (summary["feedback"]["frames"] - summary["feedback"]["imu_missed"],
                    summary["feedback"]["frames"], summary["feedback"]["imu_missed"],
                    summary["feedback"]["max_ankle_deg"]) if fb is not None else "")
              + ("; OSC/VMC: %d datagram(s) dropped (send buffer full)" % summary["stream_dropped"]
                 if summary.get("stream_dropped") else "")
              + ("; servo power lost %d time(s), restored %d%s (%d commands not sent)"
                 % (summary["power_lost"], summary["power_restored"],
                    ", still off at the end" if summary["power_off_at_end"] else "",
                    summary["unpowered"]) if summary.get("power_lost") else "")
              + ("; %d servo(s) never answered the power probe (played on without them)"
                 % summary["servos_silent"] if summary.get("servos_silent") else "")
              + ("; %d servo shutdown(s) by the servos themselves (a hardware error: overload, "
                 "overheating, voltage; torque off till rebooted), the rest played on"
                 % summary["shutdowns"] if summary.get("shutdowns") else ""))
    return 130 if interrupted else 0
