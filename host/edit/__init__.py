"""Editing the staff as an image: one module per operation, each a function Staff -> Staff.

    from host.edit import despike, fill, smooth, mirror, retime, trim, concatenate, apply_ops
    clean = smooth(fill(despike(staff)), "butter", cutoff_hz=6)
    out, notes = apply_ops(staff, ["despike:hampel,window=7", "fill:cubic", "mirror"])

See docs/editing.md for the operation grammar of `motionstaff edit`.
"""

from host.edit.despike import despike
from host.edit.fill import fill
from host.edit.limits import clamp, drop_rows, select_rows
from host.edit.mirror import mirror, mirror_map
from host.edit.ops import apply_ops, parse_ops
from host.edit.retime import retime
from host.edit.segment import find_segments, split
from host.edit.smooth import smooth
from host.edit.timeline import concatenate, insert, remove, splice, trim

__all__ = ["despike", "fill", "smooth", "mirror", "mirror_map", "retime", "trim", "remove",
           "splice", "insert", "concatenate", "clamp", "select_rows", "drop_rows",
           "find_segments", "split", "apply_ops", "parse_ops"]
