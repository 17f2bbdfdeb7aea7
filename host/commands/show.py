"""`motionstaff show FILE -o staff.png`: the staff drawn for people, like a score.

    motionstaff show walk.png -o walk_score.png
    motionstaff show walk.bvh -o walk_score.png --title "CMU 131_03"
    motionstaff show dance.png -o hands.png --rows "*Hand*"          # a glob over row names
    motionstaff show dance.png -o legs.png --rows "re:(Up)?Leg|Foot"  # or a regular expression

Each row is coloured by its value within its range (viridis; missing values white; for a staff
made with an error budget, between its smallest and largest value, --scale), rows are
grouped by joint with staff lines, and the time axis is in seconds. Up to LABEL_ROWS rows every
row is labelled with its name and range; above, each joint's band gets one label (at least
MIN_LABEL_PT points) and a legend names the channels in band order, so a 132-row staff stays
readable. A row whose codes never change (a constant in its file) is drawn light grey.
"""

import fnmatch
import os
import re
import warnings

import numpy as np

from host.formats import read_motion

HELP = "render a motion file as a labelled colour staff image (matplotlib)"
LABEL_ROWS = 48             # at most this many rows: one label per row
MIN_LABEL_PT = 7.0          # no label smaller than this


def add_arguments(p):
    p.add_argument("file", help="motion file (.png .bvh .csv ...)")
    p.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
    p.add_argument("--title", help="title (default: the file name)")
    p.add_argument("--dpi", type=int, default=110, help="resolution of a raster output")
    p.add_argument("--scale", choices=("auto", "range", "data"), default="auto",
                   help="colour each row over its range, or over the codes its data uses (auto: the data's "
                        "for a staff made with an error budget, whose steps are already above the noise)")
    p.add_argument("--rows", metavar="PATTERN",
                   help="only rows whose names match: a glob (*Hand*, Left*.?rotation), a comma list of "
                        "globs, or re:REGEX (searched in the name)")


def _group(name):
    for sep in (".", "_"):
        if sep in name:
            return name.rsplit(sep, 1)[0]
    return name


def _channel(name):
    for sep in (".", "_"):
        if sep in name:
            return name.rsplit(sep, 1)[1]
    return ""


def select_rows(names, pattern):
    """Indices of the rows whose names match pattern (see --rows); ValueError if none."""
    if pattern.startswith("re:"):
        try:
            rx = re.compile(pattern[3:])
        except re.error as e:
            raise ValueError("--rows %r: not a regular expression (%s)" % (pattern, e)) from None
        keep = [i for i, n in enumerate(names) if rx.search(n)]
    else:
        globs = [g.strip() for g in pattern.split(",") if g.strip()]
        keep = [i for i, n in enumerate(names) if any(fnmatch.fnmatchcase(n, g) for g in globs)]
    if not keep:
        raise ValueError("--rows %r matches no row (rows are named like %s)"
                         % (pattern, ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")))
    return keep


def render_staff(staff, out_path, title=None, dpi=110, rows=None, scale="auto"):
    """Write a labelled colour rendering of a staff (rows: a --rows pattern); returns out_path."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    keep = list(range(staff.nrows)) if rows is None else select_rows(staff.names, rows)
    lo, hi = staff.lo[keep], staff.hi[keep]
    values = staff.values[keep]
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = (values - lo[:, None]) / span[:, None]
    codes, gone = staff.codes()
    codes, gone = codes[keep], gone[keep]
    by_data = scale == "data" or (scale == "auto" and staff.meta.get("max_error_mm") is not None)
    if by_data:
        # over the codes the data uses: lo .. hi of the decoded values (steps above the noise)
        q = np.where(gone, np.nan, staff.quantised().values[keep])
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)          # all-missing rows
            vmin, vmax = np.nanmin(q, axis=1), np.nanmax(q, axis=1)
        ok = np.isfinite(vmin) & (vmax > vmin)
        norm = np.where(ok[:, None], (values - np.where(ok, vmin, 0)[:, None])
                        / np.where(ok, vmax - vmin, 1.0)[:, None], norm)
    flat = np.array([(c[~g] == c[~g][:1]).all() if (~g).any() else True for c, g in zip(codes, gone)])
    norm[flat] = np.nan
    img = np.ma.masked_invalid(np.clip(norm, 0.0, 1.0))
    sel = [staff.rows[i] for i in keep]
    n = len(sel)
    many = n > LABEL_ROWS
    height_in = min(2.5 + (0.16 if not many else 0.12) * n, 60.0)
    fig, ax = plt.subplots(figsize=(12.0 if not many else 13.0, height_in))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    ax.imshow(img, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0.0, vmax=1.0,
              extent=(0.0, staff.duration_s, n - 0.5, -0.5))
    for i in np.flatnonzero(flat):
        ax.axhspan(i - 0.5, i + 0.5, color="0.78", linewidth=0)
    groups = [_group(r.name) for r in sel]
    starts = [0] + [i for i in range(1, n) if groups[i] != groups[i - 1]]
    for i in starts[1:]:
        ax.axhline(i - 0.5, color="black", linewidth=0.8 if not many else 0.5)
    if not many:
        ax.set_yticks(range(n))
        labels = ["%s  [%.4g, %.4g] %s" % (r.name, r.lo, r.hi, r.unit) for r in sel]
        ax.set_yticklabels(labels, fontsize=max(MIN_LABEL_PT, min(9.0, 600.0 / max(n, 1))), family="monospace")
    else:
        # one label per joint band, at its middle; the channels inside each band in a legend
        ends = starts[1:] + [n]
        ax.set_yticks([(a + b - 1) / 2.0 for a, b in zip(starts, ends)])
        ax.set_yticklabels([groups[a] for a in starts], fontsize=MIN_LABEL_PT + 1, family="monospace")
        for k, (a, b) in enumerate(zip(starts, ends)):
            if k % 2:
                ax.axhspan(a - 0.5, b - 0.5, xmin=-0.012, xmax=0.0, color="0.6", clip_on=False)
        chans = []
        for r in sel:
            c = _channel(r.name)
            if c and c not in chans:
                chans.append(c)
        legend = "one band per joint, its rows top to bottom: %s" % ", ".join(chans[:9])
    ax.set_xlabel("time (s)" + ("" if not many else "      (%s)" % legend))
    ax.set_title(title or staff.meta.get("source") or "motion staff", loc="left")
    bound = staff.meta.get("max_error_mm")
    ax.text(1.0, 1.01, "%d%s rows x %d frames, %g fps, %d-bit%s" % (
        n, "" if n == staff.nrows else " of %d" % staff.nrows, staff.frames, staff.fps, staff.bits,
        "" if bound is None else ", within %g mm" % bound),
        transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=matplotlib.colors.Normalize(0, 1))
    cb = fig.colorbar(sm, ax=ax, fraction=0.02, pad=0.01)
    cb.set_label("position between the row's smallest and largest value (constant rows grey)" if by_data
                 else "position in the row's range (lo = 0, hi = 1; constant rows grey)")
    fig.tight_layout()
    fig.savefig(out_path, dpi=dpi)
    plt.close(fig)
    return out_path


def run(args):
    staff = read_motion(args.file)
    if args.rows is not None:
        select_rows(staff.names, args.rows)          # a bad pattern is one line before any drawing
    render_staff(staff, args.output, args.title or os.path.basename(args.file), args.dpi, rows=args.rows,
                 scale=args.scale)
    print("wrote %s" % args.output)
    return 0
