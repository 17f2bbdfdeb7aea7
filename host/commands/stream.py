"""`motionstaff stream`: replay a staff at its frame rate as OSC and/or VMC over UDP.

    motionstaff stream walk.png --osc 127.0.0.1:9000
    motionstaff stream kick.bvh --vmc 127.0.0.1:39539 --osc :9000 --per-row --speed 0.5
    motionstaff stream kick.bvh --vmc :39539 --as-fast-as-possible

OSC address space: device/outputs/osc.py (/motionstaff/frame i t v..., /motionstaff/rows ...,
/motionstaff/row/<name> with --per-row). VMC: device/outputs/vmc.py (the staff needs a
skeleton with humanoid bone names: the human model, or a BVH clip). Frames are paced by a
monotonic clock (frame k leaves at start + k / (fps * speed)); --loop repeats the staff.
"""

import time

from protocol.errors import FormatError

HELP = "replay a staff at its frame rate as OSC (/motionstaff/...) and/or VMC bones over UDP"


def add_arguments(p):
    p.add_argument("staff", help="a staff file (PNG, BVH, CSV...)")
    p.add_argument("--osc", metavar="HOST:PORT", help="send /motionstaff/... OSC messages here")
    p.add_argument("--vmc", metavar="HOST:PORT", help="send VMC bones here (default port 39539)")
    p.add_argument("--per-row", action="store_true", help="also /motionstaff/row/<name> per row")
    p.add_argument("--prefix", default="/motionstaff", help="OSC address prefix")
    p.add_argument("--speed", type=float, default=1.0, help="play speed (default 1)")
    p.add_argument("--loop", type=int, default=1, help="times to play (default 1)")
    p.add_argument("--as-fast-as-possible", action="store_true", help="do not pace frames")


def outputs_for(staff, osc=None, vmc=None, per_row=False, prefix="/motionstaff"):
    """The OSC / VMC outputs (callables per frame) a staff streams to."""
    from device.outputs.osc import OscOutput, parse_target
    outs = []
    if osc:
        h, p = parse_target(osc, 9000)
        outs.append(OscOutput(staff.names, h, p, prefix=prefix, per_row=per_row,
                              units=[r.unit for r in staff.rows]))
    if vmc:
        from device.outputs.vmc import VmcOutput
        sk = staff.skeleton
        if sk is None:
            raise FormatError("--vmc: this staff has no skeleton to pose")
        if isinstance(sk, dict):
            from device.body.skeleton import Skeleton
            sk = Skeleton.from_dict(sk)
        h, p = parse_target(vmc, 39539)
        outs.append(VmcOutput(sk, h, p, row_names=staff.names))
    return outs


def run(args):
    from host.formats import read_motion
    if not (args.osc or args.vmc):
        raise FormatError("stream: give --osc HOST:PORT and/or --vmc HOST:PORT")
    if not (args.speed > 0) or args.loop < 1:
        raise FormatError("stream: --speed must be > 0 and --loop >= 1")
    staff = read_motion(args.staff)
    outs = outputs_for(staff, args.osc, args.vmc, args.per_row, args.prefix)
    period_s = 1.0 / (staff.fps * args.speed)
    sent = 0
    try:
        start = time.monotonic()
        for rep in range(args.loop):
            for f in range(staff.frames):
                k = rep * staff.frames + f
                if not args.as_fast_as_possible:
                    wait = start + k * period_s - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                v = staff.values[:, f]
                for out in outs:
                    out(k, k / staff.fps, v, None)
                sent += 1
    finally:
        for out in outs:
            out.close()
    dropped = sum(out.dropped for out in outs)
    print("streamed %d frames of %s (%g fps) to %s%s" % (
        sent, args.staff, staff.fps, ", ".join(x for x in ("osc " + (args.osc or ""), "vmc " + (args.vmc or ""))
                                           if not x.endswith(" ")),
        "; %d datagram(s) dropped (send buffer full)" % dropped if dropped else ""))
    return 0
