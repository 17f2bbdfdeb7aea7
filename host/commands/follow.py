"""`motionstaff follow --link PORT --port PORT --robot ROBOT`: the robot end of the live link, run
on the robot's own computer (an OP3's NUC, a Pi beside a servo controller).

    motionstaff follow --link /dev/ttyAMA0 --port /dev/ttyUSB0 --robot op3-dynamixel
    motionstaff follow --link /dev/ttyACM1 --port /dev/ttyACM0 --robot khr17-maestro --mapping human
    motionstaff follow --link /dev/pts/5 --port /dev/pts/7 --robot op3-dynamixel --frames 300 --json

The capture unit streams its frames (`motionstaff capture --realtime --link PORT`) over a serial
line to --link; this end decodes them (protocol/packets.py: COBS + CRC-32, the compact header by
id, asked for again when it is missing), turns the person's rows into the robot's servo angles
(host/robot_link.py: by pose with balance for a robot with a model, the OP3's own IMU read on its
Dynamixel bus and fed back to its standing ankles; else the description's row map) and drives
the servo controller on --port through the player's limiter (limits, velocity, acceleration:
nothing the link carries can move a servo past them). No frame for the description's failsafe
timeout, or the link lost, is the robot's failsafe (hold, home or torque off); Ctrl-C or the
end (--duration-s, --frames) is the failsafe, run to its end, and a summary of what was received
and done; so are SIGTERM (a service stopped) and SIGHUP (its ssh session gone).
"""

import json
import math
import os
import sys
import time

HELP = "the robot end of the live link: a capture unit's frames in, the robot's servos out"


def add_arguments(p):
    p.add_argument("--link", required=True, help="the serial port the capture unit's live link "
                   "arrives on (or a pyserial URL)")
    p.add_argument("--link-baud", type=int, default=115200,
                   help="the link's baud rate (default 115200, capture's default)")
    p.add_argument("--port", required=True, help="the servo controller's serial port or URL")
    p.add_argument("--robot", required=True, help="robot description file or built-in name")
    p.add_argument("--controller", help="controller protocol (default: the robot's)")
    p.add_argument("--baud", type=int, help="the controller's baud rate (default: the robot's)")
    p.add_argument("--mapping", default="auto", help="'pose' (retarget by pose with balance: the "
                   "default for a robot with a model) or a row map of the robot (e.g. human, cmu)")
    p.add_argument("--no-imu", action="store_true", help="do not read the robot's IMU on its bus "
                   "(no balance feedback)")
    p.add_argument("--duration-s", type=float, help="stop after this long (default: until Ctrl-C)")
    p.add_argument("--frames", type=int, help="stop after this many frames came (acted on, or "
                   "superseded by a newer one read with it)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _check(args):
    if args.duration_s is not None and not (args.duration_s > 0 and math.isfinite(args.duration_s)):
        raise ValueError("--duration-s must be a positive number of seconds")
    if args.frames is not None and args.frames < 1:
        raise ValueError("--frames must be at least 1")
    if args.baud is not None and args.baud <= 0:
        raise ValueError("--baud %d: must be a positive baud rate" % args.baud)
    if args.link_baud <= 0:
        raise ValueError("--link-baud %d: must be a positive baud rate" % args.link_baud)
    if _device(args.link) == _device(args.port):
        raise ValueError("--link and --port are both %s: the link and the servo bus are two lines"
                         % _device(args.link))


def _device(port):
    """The device a port names: a path with its symlinks resolved (/dev/serial/by-id/... is
    /dev/ttyUSB0), a URL as it is."""
    return port if "://" in port else os.path.realpath(port)


def run(args):
    from device.servo.drivers import driver_class, open_driver, open_port
    from device.servo.robot import load_robot
    from host.follow_loop import FollowLoop
    from host.retarget.live import TICK_S
    from device.servo.opencr import WAIT_READY_S
    from device.servo.transport import reopening
    from host.interrupts import as_interrupt, restore
    from host.robot_link import open_link_end, resolve_mapping

    _check(args)
    robot = load_robot(args.robot)
    controller = args.controller or robot.controller
    mapping = resolve_mapping(robot, args.mapping)      # "pose" on a robot without a model: exit 2
    if mapping not in ("pose", None) and mapping not in robot.mappings() + ["servo"]:
        raise ValueError("--mapping %s: robot %s has no such row map (it has: %s)"
                         % (mapping, robot.name, ", ".join(["pose"] + robot.mappings())))
    link_url = args.link

    def open_link():
        return open_port(link_url, args.link_baud, TICK_S)
    link_test = open_link()                 # the link first: a bad --link moves nothing
    link_test.close()
    baud = args.baud or robot.baud or driver_class(controller).BAUD
    servo_port = None
    if controller != "pca9685":             # (an I2C bus: not a serial port to reopen)
        # the servo bus reopened when it fails (its USB adapter unplugged and back): the
        # first open's OSError is the one-line error, nothing moved yet
        def open_servos():
            return open_port(args.port, baud, 0.1)
        servo_port = reopening(open_servos(), open_servos, args.port, clock=time.monotonic,
                               baud=baud, drain=False)
    driver = open_driver(controller, servo_port or args.port, baud=baud, clock=time.monotonic,
                         **dict(robot.options))
    try:
        end = open_link_end(robot, driver, clock=None, mapping=mapping, imu=not args.no_imu and controller == "dynamixel")
        loop = FollowLoop(open_link, end, tick_s=TICK_S, servo_port=servo_port)
    except Exception:
        driver.close()
        raise
    interrupted = False
    old = as_interrupt()                    # (before the ready line: a signal after it is caught)
    try:
        if end.bus_imu and not end.power_up(time.sleep):
            # (switched on before the link: home, torque on, until the OpenCR answers, about
            # 2.9 s after its power-up, and the standing reference is taken)
            # (or it answered but not upright and still at home: no standing reference; the
            # bridge holds the frames, standing at home, until it is taken)
            print("motionstaff follow: the robot's IMU gave no standing reference in %g s (no "
                  "answer, or not upright and still at home); standing at home until it does"
                  % WAIT_READY_S, file=sys.stderr)
        print("motionstaff follow: listening on %s at %d baud; %s via %s on %s [%s]%s"
              % (args.link, args.link_baud, robot.name, controller, args.port,
                 "pose" if end.mapping == "pose" else (end.mapping or "row map"),
                 ", its IMU on the bus" if end.bus_imu else ""), file=sys.stderr, flush=True)
        loop.run(duration_s=args.duration_s, frames=args.frames)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        try:
            end.close()                     # the failsafe, a home move run to its end
        finally:
            loop.close()
            driver.close()
            restore(old)
    summary = end.summary()
    summary.update(loop.stats)
    summary["robot"] = robot.name
    summary["controller"] = controller
    summary["interrupted"] = interrupted
    if args.json:
        print(json.dumps(summary))
    else:
        print("followed the link on %s: %d frames to %d servos of %s via %s [%s] (%d superseded "
              "by a newer one); %d headers, %d frames without one, %d of the wrong shape, %d "
              "header requests; failsafe engaged %d times; link errors %d, reopened %d; servo "
              "bus lost %d, reopened %d; servo power lost %d, restored %d; limiter clamped %d, "
              "rate-limited %d%s"
              % (args.link, summary["frames"], summary.get("servos_driven", 0), robot.name,
                 controller, summary["link_mapping"] or "row map", summary["superseded"],
                 summary["headers"], summary["no_header"], summary["wrong_rows"],
                 summary["requests"], summary["failsafe_engaged"], summary["link_errors"],
                 summary["reopens"], summary.get("servo_bus_lost", 0),
                 summary.get("servo_bus_reopened", 0), summary.get("power_lost", 0),
                 summary.get("power_restored", 0), summary.get("limiter_clamped", 0),
                 summary.get("limiter_rate_limited", 0), " (interrupted)" if interrupted else ""))
    return 130 if interrupted else 0

