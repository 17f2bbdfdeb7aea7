"""The edit operation grammar of `motionstaff edit SRC DST OPERATION...`, applied in order.

    from host.edit.ops import parse_ops, apply_ops
    ops = parse_ops(["despike:hampel,window=7", "fill:cubic", "smooth:butter,cutoff=6",
                     "cut:1.0-4.5", "mirror", "retime:fps=60"])
    staff, notes = apply_ops(staff, ops)        # notes: lines to report (e.g. what clamp did)

OPERATION := NAME[:ARG(,ARG)*]   ARG := VALUE | KEY=VALUE   (times in seconds, A-B a range)
docs/editing.md lists every operation and its arguments. `segment` splits: it must be last and
apply_ops then returns a list of staffs.
"""

from host.edit.despike import despike
from host.edit.fill import fill
from host.edit.limits import clamp, drop_rows, select_rows
from host.edit.mirror import mirror
from host.edit.retime import retime
from host.edit.segment import describe, find_segments, split
from host.edit.smooth import smooth
from host.edit.timeline import concatenate, insert, remove, splice, trim
from protocol.errors import FormatError


class Op:
    """One parsed operation: name, positional args (strings), keyword args (strings)."""

    __slots__ = ("name", "args", "kw", "text")

    def __init__(self, name, args, kw, text):
        self.name, self.args, self.kw, self.text = name, args, kw, text

    def __repr__(self):
        return "Op(%r)" % self.text


def parse_op(text):
    """Op from 'name:arg,key=value,...'."""
    name, _, rest = text.partition(":")
    name = name.strip().lower()
    if name not in OPS:
        raise FormatError("edit: unknown operation %r (one of: %s)" % (name, ", ".join(sorted(OPS))))
    args, kw = [], {}
    for item in (rest.split(",") if rest.strip() else []):
        item = item.strip()
        if not item:
            continue
        if "=" in item:
            k, _, v = item.partition("=")
            kw[k.strip().lower()] = v.strip()
        else:
            if kw:
                raise FormatError("edit: %r: positional argument %r after key=value" % (text, item))
            args.append(item)
    return Op(name, args, kw, text)


def parse_ops(texts):
    ops = [parse_op(t) for t in texts]
    for i, op in enumerate(ops):
        if op.name == "segment" and i != len(ops) - 1:
            raise FormatError("edit: segment must be the last operation")
    return ops


def _num(op, value, what):
    try:
        return float(value.rstrip("sS"))
    except (ValueError, AttributeError):
        raise FormatError("edit: %r: %s must be a number, not %r" % (op.text, what, value)) from None


def _range(op, text):
    a, sep, b = text.partition("-")
    if not sep:
        raise FormatError("edit: %r: expected a time range START-STOP (seconds)" % op.text)
    return _num(op, a, "start"), (None if b.strip() in ("", "end") else _num(op, b, "stop"))


def _take(op, allowed, npos=1):
    extra = set(op.kw) - set(allowed)
    if extra:
        raise FormatError("edit: %r: unknown argument %r (allowed: %s)"
                          % (op.text, sorted(extra)[0], ", ".join(allowed) or "none"))
    if len(op.args) > npos:
        raise FormatError("edit: %r: too many arguments" % op.text)


def _read(path):
    try:
        from host.formats import read_motion
    except ImportError:  # the format registry not there yet: BVH only
        from host.bvh import read_bvh as read_motion
    return read_motion(path)


# options a despike method would silently ignore
DESPIKE_IGNORES = {"robust": ("window", "protrude"), "isolated": ("window", "protrude"),
                   "median": ("threshold", "min_steps", "protrude", "max_run")}


def _despike(st, op):
    _take(op, ("method", "window", "threshold", "min_steps", "protrude", "max_run"))
    kw = {"method": op.kw.get("method", op.args[0] if op.args else "robust")}
    for k in ("window", "threshold", "min_steps", "protrude", "max_run"):
        if k in op.kw:
            kw[k] = _num(op, op.kw[k], k)
    unused = [k for k in DESPIKE_IGNORES.get(kw["method"], ()) if k in op.kw]
    if unused:
        uses = [k for k in ("window", "threshold", "min_steps", "protrude", "max_run")
                if k not in DESPIKE_IGNORES[kw["method"]]]
        raise FormatError("edit: %r: despike:%s takes no %s (it takes: %s)"
                          % (op.text, kw["method"], unused[0], ", ".join(uses)))
    return despike(st, **kw), []


def _fill(st, op):
    _take(op, ("method", "max_gap"))
    mg = _num(op, op.kw["max_gap"], "max_gap") if "max_gap" in op.kw else None
    return fill(st, op.kw.get("method", op.args[0] if op.args else "rotation"), max_gap_s=mg), []


def _smooth(st, op):
    _take(op, ("method", "cutoff", "order", "sigma", "window"))
    kw = {}
    for k, name in (("cutoff", "cutoff_hz"), ("sigma", "sigma_s"), ("window", "window_s"), ("order", "order")):
        if k in op.kw:
            kw[name] = _num(op, op.kw[k], k)
    return smooth(st, op.kw.get("method", op.args[0] if op.args else "butter"), **kw), []


def _cut(st, op):
    _take(op, ())
    if len(op.args) != 1:
        raise FormatError("edit: %r: expected cut:START-STOP" % op.text)
    return trim(st, *_range(op, op.args[0])), []


def _remove(st, op):
    _take(op, ("crossfade",))
    if len(op.args) != 1:
        raise FormatError("edit: %r: expected remove:START-STOP" % op.text)
    a, b = _range(op, op.args[0])
    return remove(st, a, st.duration_s if b is None else b, _num(op, op.kw.get("crossfade", "0"), "crossfade")), []


def _splice(st, op):
    _take(op, ("crossfade",), npos=2)
    if len(op.args) != 2:
        raise FormatError("edit: %r: expected splice:FILE,START-STOP" % op.text)
    a, b = _range(op, op.args[1])
    return splice(st, _read(op.args[0]), a, st.duration_s if b is None else b,
                  _num(op, op.kw.get("crossfade", "0"), "crossfade")), []


def _insert(st, op):
    _take(op, ("crossfade",), npos=2)
    if len(op.args) != 2:
        raise FormatError("edit: %r: expected insert:FILE,AT" % op.text)
    return insert(st, _read(op.args[0]), _num(op, op.args[1], "time"),
                  _num(op, op.kw.get("crossfade", "0"), "crossfade")), []


def _append(st, op):
    _take(op, ("crossfade",), npos=1)
    if len(op.args) != 1:
        raise FormatError("edit: %r: expected append:FILE" % op.text)
    return concatenate([st, _read(op.args[0])], _num(op, op.kw.get("crossfade", "0"), "crossfade")), []


def _mirror(st, op):
    _take(op, (), npos=0)
    return mirror(st), []


def _retime(st, op):
    _take(op, ("speed", "fps", "method"))
    speed = _num(op, op.kw.get("speed", op.args[0] if op.args else "1"), "speed")
    fps = _num(op, op.kw["fps"], "fps") if "fps" in op.kw else None
    return retime(st, speed=speed, fps=fps, method=op.kw.get("method", "linear")), []


def _clamp(st, op):
    _take(op, ("limits",))
    out, report = clamp(st, op.kw.get("limits", op.args[0] if op.args else "skeleton"))
    notes = ["clamp: %s: %d values" % (k, v) for k, v in report.items()] or ["clamp: nothing clamped"]
    return out, notes


def _select(st, op):
    _take(op, (), npos=10 ** 6)
    return select_rows(st, op.args), []


def _drop(st, op):
    _take(op, (), npos=10 ** 6)
    return drop_rows(st, op.args), []


def _segment(st, op):
    _take(op, ("speed", "min_still", "min_segment"), npos=10 ** 6)
    if op.args and op.args[0] != "still":
        segs = find_segments(st, times_s=[_num(op, a, "time") for a in op.args])
    else:
        kw = {}
        for k, name in (("speed", "speed_deg_s"), ("min_still", "min_still_s"), ("min_segment", "min_segment_s")):
            if k in op.kw:
                kw[name] = _num(op, op.kw[k], k)
        segs = find_segments(st, **kw)
    if not segs:
        raise FormatError("segment: no segments found (the staff is still throughout)")
    return split(st, segs), describe(st, segs)


OPS = {"despike": _despike, "fill": _fill, "smooth": _smooth, "cut": _cut, "remove": _remove,
       "splice": _splice, "insert": _insert, "append": _append, "mirror": _mirror,
       "retime": _retime, "clamp": _clamp, "select": _select, "drop": _drop, "segment": _segment}


def apply_ops(staff, ops):
    """(result staff - or a list of staffs after segment -, report lines) of ops in order."""
    notes = []
    for op in ops:
        if isinstance(op, str):
            op = parse_op(op)
        staff, more = OPS[op.name](staff, op)
        notes.extend(more)
    return staff, notes
