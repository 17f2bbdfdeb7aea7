"""`motionstaff demo`: import a bundled real clip, write its staff PNG and render it.

    motionstaff demo                      # files in ./motionstaff-demo/
    motionstaff demo --out /tmp/d --json  # one JSON object naming the files

run_demo() is the one function later issues grow into the whole pipeline.
"""

import json
import os

HELP = "import a bundled CMU clip, write its motion staff and render it (the first thing to run)"
DEFAULT_CLIP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                            "131_03_short.bvh")


def add_arguments(p):
    p.add_argument("--out", default="motionstaff-demo", help="output folder (default ./motionstaff-demo)")
    p.add_argument("--clip", help="a BVH (or any motion file) to use instead of the bundled clip")
    p.add_argument("--json", action="store_true", help="print one JSON object naming the files")


def run_demo(out_dir, clip=None, json_out=False):
    """Import the clip, write <out_dir>/staff.png (8-bit), staff16.png, staff_colour.png and
    score.png (the rendering); return a dict of what was written."""
    from host.commands.show import render_staff
    from host.formats import read_motion
    from host.stafffile import write_staff

    clip = clip or DEFAULT_CLIP
    os.makedirs(out_dir, exist_ok=True)
    staff = read_motion(clip)
    files = {"staff": os.path.join(out_dir, "staff.png"),
             "staff16": os.path.join(out_dir, "staff16.png"),
             "colour": os.path.join(out_dir, "staff_colour.png"),
             "score": os.path.join(out_dir, "score.png")}
    write_staff(files["staff"], staff)
    write_staff(files["staff16"], staff.with_bits(16).refit("fit"))
    if not staff.codes()[1].any():
        write_staff(files["colour"], staff, colour=True)
    else:
        del files["colour"]
    render_staff(staff, files["score"], title="%s (motion staff)" % os.path.basename(clip))
    result = {"clip": clip, "rows": staff.nrows, "frames": staff.frames, "fps": staff.fps,
              "bytes": {k: os.path.getsize(v) for k, v in files.items()}, "files": files}
    if json_out:
        print(json.dumps(result))
    else:
        print("motionstaff demo: %s, %d rows x %d frames at %g fps"
              % (os.path.basename(clip), staff.nrows, staff.frames, staff.fps))
        for k, v in files.items():
            print("  %-8s %s (%d bytes)" % (k, v, result["bytes"][k]))
        print("open %s to see the staff as a score" % files["score"])
    return result


def run(args):
    run_demo(args.out, args.clip, args.json)
    return 0
