"""`motionstaff render STAFF -o OUT.gif|OUT.mp4`: the moving 3D figure above its staff image.

    motionstaff render walk.png -o walk.gif
    motionstaff render walk.bvh -o walk.mp4 --speed 0.5 --view 30,15
    motionstaff render edited.png -o cmp.gif --compare original.png --body robot_outline.json

MP4 needs ffmpeg on the PATH (a clear message says so when it is missing).
"""

from host.formats import read_motion
from host.render import load_outline, render
from protocol.errors import FormatError

HELP = "render a staff as a moving 3D figure with its staff image (GIF, or MP4 via ffmpeg)"


def add_arguments(p):
    p.add_argument("staff", help="motion file (.png .bvh .csv ...)")
    p.add_argument("-o", "--output", required=True, help="OUT.gif or OUT.mp4")
    p.add_argument("--body", help="outline JSON of the body (default: capsules along the skeleton)")
    p.add_argument("--speed", type=float, default=1.0, help="playback speed (0.5 = half speed)")
    p.add_argument("--view", default="-60,15", help="azimuth,elevation in degrees (default -60,15)")
    p.add_argument("--compare", help="a second motion file drawn beside the first")
    p.add_argument("--fps", type=float, default=None, help="output frame rate (gif 20, mp4 30)")
    p.add_argument("--max-frames", type=int, default=None, help="at most this many output frames")
    p.add_argument("--size", default="800x600", help="WIDTHxHEIGHT in pixels")


def parse_view(text):
    try:
        az, el = (float(x) for x in text.split(","))
    except ValueError:
        raise FormatError("--view: expected AZIMUTH,ELEVATION in degrees, not %r" % text) from None
    return az, el


def parse_size(text):
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise FormatError("--size: expected WIDTHxHEIGHT, not %r" % text) from None
    if not (64 <= w <= 4096 and 64 <= h <= 4096):
        raise FormatError("--size: %dx%d is outside 64..4096" % (w, h))
    return w, h


def run(args):
    view, size = parse_view(args.view), parse_size(args.size)
    staff = read_motion(args.staff)
    compare = read_motion(args.compare) if args.compare else None
    from host.edit._base import as_skeleton
    body = load_outline(args.body, as_skeleton(staff.skeleton)) if args.body else None
    gif = args.output.lower().endswith(".gif")
    fps = args.fps or (20.0 if gif else 30.0)
    max_frames = args.max_frames if args.max_frames else (600 if gif else None)
    n = render(staff, args.output, compare=compare, fps=fps, max_frames=max_frames, speed=args.speed,
               body=body, view=view, size_px=size)
    print("wrote %s: %d frames at %g fps" % (args.output, n, fps))
    return 0
