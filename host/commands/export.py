"""`motionstaff export STAFF ...`: BVH, CSV, a labelled colour picture, feature-point trajectories.

    motionstaff export walk.png --markers walk_markers.c3d     # feature points as C3D (mm, Z up)
    motionstaff export walk.png --markers walk_markers.csv     # ... or CSV (m)
    motionstaff export walk.png --bvh walk.bvh --csv walk.csv --picture walk_score.png

Feature points are the skeleton's markers (all its features with --all-features); a skeleton
without features (a BVH clip's) exports its link origins, named by link. Positions come from
forward kinematics of every frame, turned so that up is +Z.
"""

import numpy as np

from protocol.errors import FormatError

HELP = "export a staff: BVH, CSV, a labelled colour picture, feature points as C3D or CSV"


def add_arguments(p):
    p.add_argument("staff", help="motion file (.png .bvh .csv .c3d ...)")
    p.add_argument("--markers", help="feature-point trajectories: OUT.c3d or OUT.csv")
    p.add_argument("--all-features", action="store_true", help="IMUs and markers, not only markers")
    p.add_argument("--bvh", help="the staff as BVH")
    p.add_argument("--csv", help="the staff as CSV (one column per row)")
    p.add_argument("--picture", help="a labelled colour staff picture (.png .svg .pdf)")


def feature_trajectories(staff, all_features=False):
    """(names, positions (F, K, 3) m, Z up) of the staff's feature points (or link origins)."""
    from device.body.kinematics import forward_kinematics
    from host.edit._base import as_skeleton
    from host.render.figure import staff_q, up_rotation
    sk = as_skeleton(staff.skeleton)
    if sk is None:
        raise FormatError("the staff has no skeleton, so it has no feature points")
    pose = forward_kinematics(sk, staff_q(staff, sk))
    feats = [k for k, f in enumerate(sk.features) if all_features or f.kind == "marker"]
    if feats:
        names, pos = [sk.features[k].name for k in feats], pose.feature_pos_m[:, feats]
    else:
        names, pos = list(sk.link_names), pose.link_pos_m
    pos = pos @ up_rotation(sk).T
    missing = np.isnan(staff.values).all(axis=0)          # frames with nothing known
    pos = pos.copy()
    pos[missing] = np.nan
    return names, pos


def write_markers_csv(path, names, pos_m, fps):
    with open(path, "w") as f:
        f.write(",".join(["time_s"] + ["%s.%s_m" % (n, a) for n in names for a in "xyz"]) + "\n")
        for i in range(pos_m.shape[0]):
            vals = ["" if not np.isfinite(v) else "%.6f" % v for v in pos_m[i].ravel()]
            f.write("%.6f," % (i / fps) + ",".join(vals) + "\n")


def run(args):
    if not (args.markers or args.bvh or args.csv or args.picture):
        raise FormatError("export: say what to write: --markers, --bvh, --csv or --picture")
    from host.formats import read_motion, write_motion
    staff = read_motion(args.staff)
    if args.markers:
        names, pos = feature_trajectories(staff, args.all_features)
        low = args.markers.lower()
        if low.endswith(".c3d"):
            from host.c3d import write_markers_c3d
            write_markers_c3d(args.markers, names, pos, staff.fps)
        elif low.endswith(".csv"):
            write_markers_csv(args.markers, names, pos, staff.fps)
        else:
            raise FormatError("--markers: write .c3d or .csv, not %r" % args.markers)
        print("wrote %s: %d points x %d frames" % (args.markers, len(names), pos.shape[0]))
    for path in (args.bvh, args.csv):
        if path:
            write_motion(path, staff)
            print("wrote %s" % path)
    if args.picture:
        from host.commands.show import render_staff
        render_staff(staff, args.picture)
        print("wrote %s" % args.picture)
    return 0
