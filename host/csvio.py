"""CSV export and import of a staff: a time column, then one column per row, units in the header.

    from host.csvio import write_csv, read_csv
    write_csv("walk.csv", staff)      # time_s,Hips.Xposition [cm],Hips.Zrotation [deg],...
    staff = read_csv("walk.csv")      # fps from the time column, ranges fitted, deg rows wrap

An empty cell is a missing value. Reading fits the ranges to the data (or takes them from
`ranges="skeleton"` when a skeleton is given).
"""

import csv
import os
import re

import numpy as np

from host.staff import Row, Staff
from protocol.errors import FormatError

MAX_BYTES = 1 << 28          # 256 MiB of CSV text
_HEAD = re.compile(r"^(.*?)\s*\[([^\]]*)\]\s*$")


def write_csv(path, staff):
    """Write the staff's values (NaN as empty cells) with a time_s column."""
    t = np.arange(staff.frames) / staff.fps
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["time_s"] + ["%s [%s]" % (r.name, r.unit) for r in staff.rows])
        v = staff.values
        for k in range(staff.frames):
            w.writerow(["%.9g" % t[k]] + ["" if x != x else "%.10g" % x for x in v[:, k]])


def read_csv(path, bits=8, ranges="fit", skeleton=None):
    """Read a CSV written by write_csv (or any CSV with a time column first)."""
    where = os.fspath(path)
    if os.path.getsize(path) > MAX_BYTES:
        raise FormatError("%s: larger than %d bytes" % (where, MAX_BYTES))
    with open(path, newline="") as f:
        try:
            lines = list(csv.reader(f))
        except (csv.Error, UnicodeDecodeError) as e:
            raise FormatError("%s: not a CSV file (%s)" % (where, e)) from None
    lines = [ln for ln in lines if ln and any(c.strip() for c in ln)]
    if len(lines) < 2:
        raise FormatError("%s: needs a header line and at least one frame" % where)
    head = lines[0]
    if len(head) < 2:
        raise FormatError("%s: line 1: needs a time column and at least one value column" % where)
    rows = []
    for name in head[1:]:
        m = _HEAD.match(name)
        nm, unit = (m.group(1), m.group(2)) if m else (name.strip(), "")
        if not nm:
            raise FormatError("%s: line 1: empty column name" % where)
        rows.append(Row(nm, unit, 0.0, 1.0, unit == "deg"))
    data = np.full((len(lines) - 1, len(head)), np.nan)
    for i, ln in enumerate(lines[1:]):
        if len(ln) != len(head):
            raise FormatError("%s: line %d: %d cells, expected %d" % (where, i + 2, len(ln), len(head)))
        for j, c in enumerate(ln):
            c = c.strip()
            if c:
                try:
                    data[i, j] = float(c)
                except ValueError:
                    raise FormatError("%s: line %d: %r is not a number" % (where, i + 2, c[:40])) from None
    t = data[:, 0]
    if np.isnan(t).any():
        raise FormatError("%s: the time column has empty cells" % where)
    dt = np.diff(t)
    if len(t) > 1 and not (dt > 0).all():
        raise FormatError("%s: the time column must increase" % where)
    fps = 1.0 / float(np.median(dt)) if len(t) > 1 else 30.0
    if abs(fps - round(fps)) < 1e-6 * fps:
        fps = float(round(fps))
    st = Staff(data[:, 1:].T, rows, fps=fps, bits=bits, skeleton=skeleton,
               meta={"source": os.path.basename(where)})
    return st.refit(ranges)
