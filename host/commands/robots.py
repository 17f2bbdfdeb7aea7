"""`motionstaff robots`: list the built-in robot descriptions (or show one as JSON).

    motionstaff robots
    motionstaff robots khr17-maestro --json
"""

import json

HELP = "list the built-in robot descriptions (a built-in's name works wherever a robot file does)"


def add_arguments(p):
    p.add_argument("name", nargs="?", help="show this robot (built-in name or JSON file)")
    p.add_argument("--json", action="store_true", help="print the full description as JSON")


def run(args):
    from device.servo.robot import builtin_names, load_robot
    if args.name:
        r = load_robot(args.name)
        if args.json:
            print(json.dumps(r.raw, indent=1))
            return 0
        print("%s: %s" % (r.name, r.description))
        print("controller %s, %d servos, %g Hz, failsafe %s after %g s, mappings: %s"
              % (r.controller, len(r.servos), r.rate_hz, r.failsafe_action, r.failsafe_timeout_s,
                 ", ".join(r.mappings())))
        print("%-18s %4s %8s %8s %8s %9s %9s" % ("servo", "id", "neutral", "min", "max", "lo_deg", "hi_deg"))
        for s in r.servos:
            print("%-18s %4d %8g %8d %8d %9.1f %9.1f" % (s.name, s.id, s.neutral, s.min, s.max, s.lo_deg, s.hi_deg))
        return 0
    print("%-16s %-10s %6s  %s" % ("name", "controller", "servos", "description"))
    for n in builtin_names():
        r = load_robot(n)
        d = r.description.split(":")[0]
        print("%-16s %-10s %6d  %s" % (n, r.controller, len(r.servos), d[:70]))
    return 0
