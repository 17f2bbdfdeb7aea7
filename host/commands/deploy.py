"""`motionstaff deploy --port PORT [--receiver | --core] [--dry-run]`: put our MicroPython code on a board.

    motionstaff deploy --port /dev/ttyACM0 --receiver --robot myrobot.json
    motionstaff deploy --port /dev/ttyACM0 --core --dry-run      # list what would be copied

--receiver (the default) copies the servo receiver firmware with the protocol modules it imports,
a receiver.json made from the robot description (or --config), and /main.py so that it starts
at boot. --core copies the protocol modules a capture node needs (codec, packets, container,
header). It no longer copies the fixed-point EKF (device/core/ekf_q.py): on the rp2 port its
Q20/Q30/Q40 ints are heap long ints, and a step allocates 66 KB for 6 joints and more than
the free heap for 48 (benchmarks/micropython.py), so no Pico firmware runs it. Library modules are
precompiled with mpy-cross (the board then skips compiling: less RAM at import), main.py stays
source (MicroPython boots /main.py). Copies go through mpremote (PyPI), one chained command.
"""

import ast
import os
import shutil
import subprocess
import sys
import tempfile

from host import pico_image
from protocol.errors import FormatError

HELP = "copy the MicroPython receiver firmware or core to a board (mpremote, mpy-cross)"

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECEIVER_ENTRY = ("device.firmware.receiver", "device.firmware.config")
CORE_ENTRY = ("protocol.staffcodec", "protocol.packets", "protocol.container", "protocol.staffheader")
# controller units -> microseconds, for robots whose servos the receiver can drive as PWM
US_PER_UNIT = {"native": 1.0, "pico": 1.0, "pwm": 1.0, "ssc32": 1.0, "maestro": 0.25}


def add_arguments(p):
    p.add_argument("--port", required=True, help="the board's serial port (mpremote connect PORT)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--receiver", action="store_true", help="the servo receiver firmware (default)")
    g.add_argument("--core", action="store_true", help="the protocol modules only (no EKF: see docs/micropython.md)")
    p.add_argument("--robot", help="robot description (name or JSON) to make /receiver.json from")
    p.add_argument("--mapping", help="which of the robot's row mappings to use")
    p.add_argument("--pins", help="comma-separated GPIO pins, one per servo (default: servo ids)")
    p.add_argument("--config", help="a ready receiver.json to copy instead of --robot")
    p.add_argument("--no-compile", action="store_true", help="copy .py sources, no mpy-cross")
    p.add_argument("--dry-run", action="store_true", help="list what would be copied; touch nothing")


def _module_file(mod):
    base = os.path.join(REPO, *mod.split("."))
    if os.path.isfile(base + ".py"):
        return base + ".py"
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py")
    return None


def _imports(path, mod):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
            out += ["%s.%s" % (node.module, a.name) for a in node.names]
    return out


def needed_modules(entries):
    """Our modules (repo-relative .py paths) the entries import, transitively, with packages."""
    seen = {}
    todo = list(entries)
    while todo:
        mod = todo.pop()
        if mod in seen or mod.split(".")[0] not in ("protocol", "device"):
            continue
        path = _module_file(mod)
        if path is None:
            continue
        seen[mod] = path
        parts = mod.split(".")
        for k in range(1, len(parts)):
            todo.append(".".join(parts[:k]))  # the packages' __init__
        todo += _imports(path, mod)
    return sorted(os.path.relpath(p, REPO) for p in seen.values())


def receiver_config(robot_name, mapping=None, pins=None):
    """A receiver.json dict from a robot description (device/servo/robot.py)."""
    from device.firmware import config
    from device.servo.robot import load_robot, _spec

    robot = load_robot(robot_name)
    k = US_PER_UNIT.get(robot.controller)
    if k is None:
        raise FormatError("%s: controller %r is not driven by PWM pulses (use one of %s)"
                          % (robot_name, robot.controller, ", ".join(sorted(US_PER_UNIT))))
    names = robot.mappings()
    if mapping is not None and mapping not in names + ["servo"]:
        raise FormatError("%s: no mapping %r (it has: %s)" % (robot_name, mapping, ", ".join(names)))
    use = mapping or (names[0] if names else "servo")
    pin_list = None
    if pins:
        try:
            pin_list = [int(p) for p in pins.split(",")]
        except ValueError:
            raise FormatError("--pins %r: comma-separated GPIO numbers, one per servo" % pins)
    if pin_list is not None and len(pin_list) != len(robot.servos):
        raise FormatError("--pins: %d pins for %d servos" % (len(pin_list), len(robot.servos)))
    servos = []
    for i, s in enumerate(robot.servos):
        spec = s.name if use == "servo" else s.map.get(use)
        row, scale, off = _spec(spec, s.name) if spec is not None else (None, 1.0, 0.0)
        lo, hi = sorted((s.min * k, s.max * k))
        servos.append({"name": s.name, "pin": pin_list[i] if pin_list else s.id, "row": row,
                       "scale": scale, "offset_deg": off, "neutral_us": s.neutral * k,
                       "direction": int(s.direction), "us_per_deg": s.units_per_deg * k,
                       "min_us": lo, "max_us": hi, "home_deg": s.home_deg,
                       "max_vel_dps": s.max_vel_dps})
    action = {"hold": "hold", "home": "home", "torque_off": "release"}[robot.failsafe_action]
    d = {"format": config.FORMAT, "version": 1, "robot": robot.name, "mapping": use,
         "failsafe": {"timeout_ms": int(robot.failsafe_timeout_s * 1000), "action": action},
         "heartbeat_ms": 1000, "servos": servos}
    return config.check(d)


def plan(receiver=True, compile_=True):
    """[(source path or None, board path, how)] with how in "mpy", "copy"; main.py last."""
    files = needed_modules(RECEIVER_ENTRY if receiver else CORE_ENTRY)
    out = []
    for rel in files:
        dest = "/lib/" + rel.replace(os.sep, "/")
        if compile_:
            out.append((rel, dest[:-3] + ".mpy", "mpy"))
        else:
            out.append((rel, dest, "copy"))
    if receiver:
        out.append(("device/firmware/main.py", "/main.py", "copy"))
    return out


def _mpremote():
    exe = shutil.which("mpremote")
    if exe:
        return [exe]
    try:
        import mpremote  # noqa: F401
    except ImportError:
        raise OSError("mpremote is not installed (pip install mpremote)")
    return [sys.executable, "-m", "mpremote"]


def mpremote_args(port, steps, dirs):
    """One chained mpremote command: make the folders, copy every file, reset the board."""
    mk = "import os\nfor d in %r:\n    try:\n        os.mkdir(d)\n    except OSError:\n        pass\n" % (dirs,)
    args = ["connect", port, "exec", mk]
    for src, dest in steps:
        args += ["+", "fs", "cp", src, ":" + dest]
    return args + ["+", "reset"]


def _dirs(dests):
    out = []
    for d in dests:
        parts = d.strip("/").split("/")[:-1]
        for k in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:k])
            if p not in out:
                out.append(p)
    return out


def run(args):
    receiver = not args.core
    compile_ = not args.no_compile
    steps = plan(receiver, compile_)
    cfg_note = None
    cfg = None
    if receiver:
        if args.config:
            from device.firmware import config

            cfg = config.load(args.config)
            cfg_note = args.config
        elif args.robot:
            cfg = receiver_config(args.robot, args.mapping, args.pins)
            cfg_note = "generated from robot %s" % args.robot
        else:
            cfg_note = "not copied (give --robot or --config; the board keeps its own)"
    mpremote_cmd = "mpremote connect %s ..." % args.port
    if cfg is not None:
        from host import pico_emulator

        pico_emulator.check_board(cfg, args.config or "robot %s" % args.robot)
    if args.dry_run:
        print("deploy %s to %s (dry run, nothing copied)" % ("receiver" if receiver else "core",
                                                              args.port))
        for src, dest, how in steps:
            print("  %-34s -> :%-36s %s" % (src, dest, "mpy-cross" if how == "mpy" else "copy"))
        if receiver:
            print("  %-34s -> :%-36s %s" % ("receiver.json", "/receiver.json", cfg_note))
            print("  /main.py starts the receiver at boot; `motionstaff emulate pico` boots these same files")
        print("%d files; then %s + reset" % (len(steps) + (1 if cfg is not None else 0), mpremote_cmd))
        return 0
    # the same files, byte for byte, as the emulated Pico boots (host/pico_image.py)
    files = pico_image.board_files(steps, cfg)
    with tempfile.TemporaryDirectory() as tmp:
        copies = []
        for dest, data in files:
            path = os.path.join(tmp, dest.strip("/").replace("/", "_"))
            with open(path, "wb") as f:
                f.write(data)
            copies.append((path, dest))
        cmd = _mpremote() + mpremote_args(args.port, copies, _dirs([d for _, d in copies]))
        r = subprocess.run(cmd)
        if r.returncode != 0:
            raise OSError("mpremote failed (exit %d) on %s" % (r.returncode, args.port))
    print("deployed %d files to %s" % (len(copies), args.port))
    return 0
