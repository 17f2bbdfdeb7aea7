"""`motionstaff view STAFF... [--port N] [--no-browser]`: the staff in the browser, in 3D.

    motionstaff view walk.png                     # opens http://127.0.0.1:PORT/
    motionstaff view edited.png walk.png          # two bodies side by side to compare
    motionstaff view walk.bvh --robot op3-dynamixel        # the simulated robot beside the person
    motionstaff view walk.bvh --robot-run run.json         # from `simulate --record run.json`

Served from 127.0.0.1 only, until Ctrl-C. Controls: docs/viewer.md.
"""

import threading
import webbrowser

from host.formats import read_motion
from host.view import Viewer

HELP = "show staffs as 3D figures in a local web page (play, speed, step, scrub, zoom, orbit)"


def add_arguments(p):
    p.add_argument("staffs", nargs="+", metavar="STAFF", help="motion files; two or more are shown side by side")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser, just serve")
    p.add_argument("--robot", help="simulate the first staff on this robot (host/physics) and show it beside")
    p.add_argument("--robot-run", help="a simulation recording (simulate --record) to show beside")


def run(args, stop_event=None):
    staffs = [read_motion(p) for p in args.staffs]
    extra = []
    if getattr(args, "robot_run", None):
        from host.physics.recording import read_recording
        doc, st = read_recording(args.robot_run)
        extra.append((doc["name"], doc, st))
    if getattr(args, "robot", None):
        from host.physics.recording import recording_staff, robot_body_json
        from host.physics.simulate import run_simulation
        sim = run_simulation(staffs[0], args.robot, record=True)
        doc = robot_body_json(sim)
        extra.append((doc["name"], doc, recording_staff(doc)))
    v = Viewer(staffs, names=args.staffs, port=args.port, extra=extra)
    v.start()
    print("motionstaff viewer: %s (Ctrl-C to stop)" % v.url, flush=True)
    if not args.no_browser:
        webbrowser.open(v.url)
    try:
        (stop_event or threading.Event()).wait()
    except KeyboardInterrupt:
        pass
    finally:
        v.stop()
    return 0
