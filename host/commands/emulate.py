"""`motionstaff emulate CONTROLLER [--log FILE]`: a controller emulator behind a pseudo-terminal.

    motionstaff emulate dynamixel --log run.csv     # first line of stdout: the pty path
    motionstaff play walk.png --port /dev/pts/5 --controller dynamixel --robot op3-dynamixel
    motionstaff emulate dynamixel --physics op3-dynamixel   # servos on a simulated OP3 body

--physics ROBOT puts the robot's MuJoCo twin (host/physics) behind the servos, stepped in
real time (wall-clock paced) in the background: Present Position, Load and Moving come from
the simulated joints; goals, torque enable and profiles drive its servo models; a robot with a
bus IMU (the OP3's OpenCR board, ID 200) answers its reads with the twin's torso IMU. The bus is then
paced at the robot's baud (--line-baud B sets it, for any controller): a request and its reply
take their wire time, as on the hardware (device/servo/emulate/pty.py).
    motionstaff emulate pico --robot myrobot --log servos.csv   # the real firmware on an emulated RP2040
    motionstaff emulate maestro --robot khr17-maestro   # a Maestro whose channels' Min/Max are set
                                                        # for that robot (default: as it ships, 992-2000 us)
    motionstaff emulate feetech --physics so101-feetech --power-cut 5:1.5   # the servos' power cut
                                                        # 5 s in, back 1.5 s later (docs/robots.md)

Serves until SIGINT/SIGTERM (SIGUSR1 writes the log at once), then writes the timeline (time, servo, position in controller
units and in degrees; .csv or .json) and prints a one-line summary on stderr.
"""

import signal
import sys
import threading

HELP = "emulate a servo controller behind a pseudo-terminal and record what it is told"


def add_arguments(p):
    from device.servo.emulate import EMULATORS
    p.add_argument("controller", choices=sorted([n for n in EMULATORS if n != "pca9685"] + ["pico"]))
    p.add_argument("--log", help="write the timeline here on exit (.csv or .json)")
    p.add_argument("--ids", default="1-20", help="bus servo ids present (bus controllers), e.g. 1-20")
    p.add_argument("--serial-timeout", type=float, default=0.0,
                   help="Maestro serial timeout in s (0 = off), bus watchdog ticks for Dynamixel")
    p.add_argument("--physics", metavar="ROBOT",
                   help="a simulated robot body behind the servos (op3-dynamixel, so101-feetech)")
    p.add_argument("--line-baud", type=int, default=None,
                   help="pace the bus at this baud (each request and reply takes its wire time, "
                        "half duplex); default: the --physics robot's baud, else unpaced")
    p.add_argument("--power-cut", metavar="AT_S[:FOR_S]", default=None,
                   help="cut the servos' power AT_S seconds after start, back FOR_S later (none: "
                        "it never returns); dynamixel, feetech, lx16a, maestro (docs/robots.md)")
    p.add_argument("--robot", help="pico: robot description (name or JSON) to make receiver.json from; "
                                   "maestro: each channel's Min/Max set to the robot's servo limits "
                                   "(as its owner sets them in Maestro Control Center; default: the "
                                   "factory's 992-2000 us)")
    from host import pico_emulator
    pico_emulator.add_arguments(p)   # pico: --mapping/--config/--firmware (host/pico_emulator.py)


def _ids(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    if not out or min(out) < 0 or max(out) > 253:
        raise ValueError("--ids: ids must be in 0..253")
    return out


def _run_pico(args):
    # the emulated RP2040 running our receiver firmware (host/pico_emulator.py)
    from host import pico_emulator
    stop = threading.Event()
    old = [signal.signal(signal.SIGINT, lambda s, f: stop.set()),
           signal.signal(signal.SIGTERM, lambda s, f: stop.set())]
    try:
        rows, pico = pico_emulator.serve(args, stop)
    finally:
        signal.signal(signal.SIGINT, old[0])
        signal.signal(signal.SIGTERM, old[1])
    print("motionstaff emulate pico: %d pulse changes%s" % (rows, (", log " + args.log) if args.log else ""),
          file=sys.stderr)
    return 0


def _power_cut(text):
    """(at_s, for_s or None) of --power-cut AT_S[:FOR_S]."""
    try:
        parts = [float(x) for x in text.split(":")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2) or any(not (v >= 0 and v < 1e9) for v in parts):
        raise ValueError("--power-cut %r: give AT_S or AT_S:FOR_S, seconds >= 0" % text)
    return parts[0], (parts[1] if len(parts) == 2 else None)


def run(args):
    from host.outpaths import check_output
    check_output(args.log, "--log")          # before serving: a session is never lost at exit
    # (before any model is loaded or served: a bad or unusable cut is the one-line error)
    cut = _power_cut(args.power_cut) if getattr(args, "power_cut", None) is not None else None
    if cut is not None and args.controller not in ("dynamixel", "feetech", "feetech-scs", "lx16a", "maestro"):
        raise ValueError("--power-cut: the %s emulator has no power-cut model" % args.controller)
    if args.controller == "pico":
        return _run_pico(args)
    from device.servo.emulate import make_emulator
    from device.servo.emulate.pty import PtyServer
    kw = {}
    if args.controller in ("lx16a", "dynamixel", "feetech", "feetech-scs"):
        kw["ids"] = _ids(args.ids)
    if args.controller == "maestro" and args.serial_timeout > 0:
        kw["serial_timeout_s"] = args.serial_timeout
    if args.controller == "maestro" and getattr(args, "robot", None):
        # the Maestro as that robot's owner set it up in Maestro Control Center: each channel's
        # Min/Max the robot's servo limits (without --robot: the factory's 992-2000 us)
        from device.servo.maestro import maestro_limits
        from device.servo.robot import load_robot
        kw["limits_qus"] = maestro_limits(load_robot(args.robot).servos)
    twin = None
    if args.physics:
        from host.physics.twin import Twin
        twin = Twin(args.physics)                       # a missing model: ValueError, exit 2
        robot_ctl = twin.rm.description.controller
        if robot_ctl == "feetech" and twin.rm.description.options.get("series", "sts") == "scs":
            robot_ctl = "feetech-scs"                   # the other byte order: its own emulator
        if robot_ctl != args.controller:
            raise ValueError("--physics %s: that robot's servos are on a %s controller, not %s"
                             % (args.physics, robot_ctl, args.controller))
        kw["body"] = twin
        kw["clock"] = twin.clock
        if "ids" in kw:
            kw["ids"] = twin.ids
        imu = getattr(twin.rm.description, "imu", None)
        if imu and args.controller == "dynamixel":
            kw["imu_id"] = imu["id"]                    # the OP3's OpenCR board: the twin's IMU
    emu = make_emulator(args.controller, **kw)
    if cut is not None:
        t0 = emu.clock()
        emu.schedule_power_cut(t0 + cut[0], None if cut[1] is None else t0 + cut[0] + cut[1])
    stop = threading.Event()

    def handler(signum, frame):
        stop.set()
    old = [signal.signal(signal.SIGINT, handler), signal.signal(signal.SIGTERM, handler)]
    if args.log and hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, lambda signum, frame: emu.write_log(args.log))   # on request
    baud = args.line_baud
    if baud is not None and baud <= 0:
        raise ValueError("--line-baud %d: must be a positive baud rate" % baud)
    if baud is None and twin is not None:
        baud = twin.rm.description.baud
    from host.physics.simport import REPLY_DELAY_S
    srv = PtyServer(emu, baud=baud, reply_delay_s=REPLY_DELAY_S.get(args.controller, 0.0) if baud else 0.0).start()
    stepper = None
    if twin is not None:
        stepper = threading.Thread(target=twin.run_realtime, args=(stop,), name="twin", daemon=True)
        stepper.start()
    try:
        print(srv.path, flush=True)
        tick = getattr(emu, "tick", None)
        while not stop.wait(0.02):
            if tick is not None:
                tick()
    finally:
        stop.set()
        if stepper is not None:
            stepper.join(2.0)
        srv.stop()
        signal.signal(signal.SIGINT, old[0])
        signal.signal(signal.SIGTERM, old[1])
        if args.log:
            emu.write_log(args.log)
        clamped = getattr(emu, "clamped", 0)
        print("motionstaff emulate: %d commands, %d errors, %d bytes in%s%s%s"
              % (emu.commands, emu.errors, srv.bytes_in,
                 (", %d power cut(s), %d bytes unheard" % (emu.power_cuts, emu.bytes_unpowered))
                 if emu.power_cuts else "",
                 (", %d targets cut to the channels' Min/Max" % clamped) if clamped else "",
                 (", log " + args.log) if args.log else ""), file=sys.stderr)
    return 0
