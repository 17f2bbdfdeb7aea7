"""`motionstaff show FILE -o staff.png`: the staff drawn for people, like a score.

    motionstaff show walk.png -o walk_score.png
    motionstaff show walk.bvh -o walk_score.png --title "CMU 131_03"

Each row is coloured by its value within its range (viridis; missing values white), rows are
labelled on the left with their name and range and grouped by joint with staff lines, and the
time axis is in seconds.
"""

import os

import numpy as np

from host.formats import read_motion

HELP = "render a motion file as a labelled colour staff image (matplotlib)"


def add_arguments(p):
    p.add_argument("file", help="motion file (.png .bvh .csv ...)")
    p.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
    p.add_argument("--title", help="title (default: the file name)")
    p.add_argument("--dpi", type=int, default=110, help="resolution of a raster output")


def _group(name):
    for sep in (".", "_"):
        if sep in name:
            return name.rsplit(sep, 1)[0]
    return name


def render_staff(staff, out_path, title=None, dpi=110):
    """Write a labelled colour rendering of a staff; returns out_path."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    span = staff.hi - staff.lo
    norm = (staff.values - staff.lo[:, None]) / span[:, None]
    img = np.ma.masked_invalid(np.clip(norm, 0.0, 1.0))
    n = staff.nrows
    height_in = min(2.0 + 0.16 * n, 60.0)
    fig, ax = plt.subplots(figsize=(12.0, height_in))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    ax.imshow(img, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0.0, vmax=1.0,
              extent=(0.0, staff.duration_s, n - 0.5, -0.5))
    ax.set_yticks(range(n))
    labels = ["%s  [%.4g, %.4g] %s" % (r.name, r.lo, r.hi, r.unit) for r in staff.rows]
    ax.set_yticklabels(labels, fontsize=max(4.0, min(8.0, 600.0 / max(n, 1))), family="monospace")
    groups = [_group(r.name) for r in staff.rows]
    for i in range(1, n):
        if groups[i] != groups[i - 1]:
            ax.axhline(i - 0.5, color="black", linewidth=0.8)
    ax.set_xlabel("time (s)")
    ax.set_title(title or staff.meta.get("source") or "motion staff", loc="left")
    ax.text(1.0, 1.01, "%d rows x %d frames, %g fps, %d-bit" % (n, staff.frames, staff.fps, staff.bits),
            transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=matplotlib.colors.Normalize(0, 1))
    cb = fig.colorbar(sm, ax=ax, fraction=0.02, pad=0.01)
    cb.set_label("position in the row's range (lo = 0, hi = 1)")
    fig.tight_layout()
    fig.savefig(out_path, dpi=dpi)
    plt.close(fig)
    return out_path


def run(args):
    staff = read_motion(args.file)
    render_staff(staff, args.output, args.title or os.path.basename(args.file), args.dpi)
    print("wrote %s" % args.output)
    return 0
