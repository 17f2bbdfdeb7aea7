"""The staff header: what a receiver needs to read a staff's codes (rows, ranges, rate, depth).

    from protocol import staffheader
    h = staffheader.make(rows=[{"name": "knee", "unit": "deg", "lo": -10.0, "hi": 150.0}],
                         fps=30.0, bits=8)
    text = staffheader.dumps(h); staffheader.loads(text) == h

The same JSON sits in the recording container and in the serial header packet. check() raises
FormatError naming the bad field. The PNG staff file (text chunk keyword KEYWORD) holds the
compact form, version 3 (pack / unpack): row names as a list, or a count when they are the
skeleton's dofs; ranges as "ranges": "sk" when they are the skeleton's limits, else as "r" (a
base64 bit stream of ranges on a binary grid, protocol/staffranges.py, each step predicted
from the skeleton's dof range when there is one) or, for ranges off that grid, as "lo" plus
"step" (hi = lo + step * top) or "hi"; units and wrap only where the skeleton does not give
them; the skeleton as a reference the host resolves ("sk"); the error budget it was made with
("e", mm; "em": 1 when it was measured on the motion by forward kinematics rather than
guaranteed for any pose). The PNG file's "t" (protocol/rowtransform.py) names a row transform
of its pixels. Version 3 leaves out "format" (the text keyword names it). Version 2 (the same
fields without "r", with "format") and version 1 files (the expanded form) keep reading.

    c = staffheader.pack(h, dof_rows=None, skeleton_code=None)   # compact dict
    h2 = staffheader.unpack(c, dof_rows=None)                    # expanded again (== h's rows)
"""

import json

from protocol import staffranges
from protocol.errors import FormatError

FORMAT = "motionstaff"
VERSION = 1                 # the expanded form (container, serial header)
COMPACT = 3                 # the compact form (PNG staff file); version 2 files keep reading
COMPACT_READ = (2, 3)
KEYWORD = "motionstaff"
UNITS = ("deg", "rad", "m", "cm", "mm", "in", "cmu", "")


BOUNDS = ("chain", "measured")


def make(rows, fps=30.0, bits=8, frames=0, skeleton=None, source="", captured="", max_error_mm=None,
         max_error_bound=None):
    """A header dict with every field present (max_error_mm: the budget it was made with, if any;
    max_error_bound: "measured" when it was measured on the motion, not guaranteed for any pose)."""
    h = {
        "format": FORMAT,
        "version": VERSION,
        "fps": float(fps),
        "bits": int(bits),
        "frames": int(frames),
        "rows": [_row(r) for r in rows],
        "skeleton": skeleton,
        "source": source,
        "captured": captured,
    }
    if max_error_mm is not None:
        h["max_error_mm"] = float(max_error_mm)
        if max_error_bound not in (None, "chain"):
            h["max_error_bound"] = max_error_bound
    check(h)
    return h


def _row(r):
    d = {"name": r["name"], "unit": r.get("unit", ""), "lo": float(r["lo"]), "hi": float(r["hi"])}
    d["wrap"] = bool(r.get("wrap", False))
    return d


def _num(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and v == v and v - v == 0


def check(h, where="header"):
    """Raise FormatError naming the first field that is wrong; return h."""
    if not isinstance(h, dict):
        raise FormatError("%s: not a JSON object" % where)
    if h.get("format") != FORMAT:
        raise FormatError("%s: 'format' must be %r, not %r" % (where, FORMAT, h.get("format")))
    v = h.get("version")
    if not isinstance(v, int) or isinstance(v, bool):
        raise FormatError("%s: 'version' must be an integer" % where)
    if v > VERSION or v < 1:
        raise FormatError("%s: unknown version %d (this reader knows 1..%d)" % (where, v, VERSION))
    fps = h.get("fps")
    if not _num(fps) or fps <= 0 or fps > 100000:
        raise FormatError("%s: 'fps' must be a number in (0, 100000], not %r" % (where, fps))
    if h.get("bits") not in (8, 16):
        raise FormatError("%s: 'bits' must be 8 or 16, not %r" % (where, h.get("bits")))
    n = h.get("frames", 0)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise FormatError("%s: 'frames' must be a non-negative integer" % where)
    rows = h.get("rows")
    if not isinstance(rows, list) or not rows:
        raise FormatError("%s: 'rows' must be a non-empty list" % where)
    if len(rows) > 65535:
        raise FormatError("%s: %d rows is more than 65535" % (where, len(rows)))
    names = {}
    for i in range(len(rows)):
        r = rows[i]
        at = "%s: rows[%d]" % (where, i)
        if not isinstance(r, dict):
            raise FormatError("%s: not an object" % at)
        name = r.get("name")
        if not isinstance(name, str) or not name:
            raise FormatError("%s: 'name' must be a non-empty string" % at)
        if name in names:
            raise FormatError("%s: name %r repeats rows[%d]" % (at, name, names[name]))
        names[name] = i
        if not isinstance(r.get("unit", ""), str):
            raise FormatError("%s (%s): 'unit' must be a string" % (at, name))
        lo = r.get("lo")
        hi = r.get("hi")
        if not _num(lo) or not _num(hi):
            raise FormatError("%s (%s): 'lo' and 'hi' must be finite numbers" % (at, name))
        if not hi > lo:
            raise FormatError("%s (%s): 'hi' (%r) must be greater than 'lo' (%r)" % (at, name, hi, lo))
    e = h.get("max_error_mm")
    if e is not None and (not _num(e) or e <= 0):
        raise FormatError("%s: 'max_error_mm' must be a positive number" % where)
    b = h.get("max_error_bound")
    if b is not None and (b not in BOUNDS or e is None):
        raise FormatError("%s: 'max_error_bound' must be one of %s, with 'max_error_mm'" % (where, ", ".join(BOUNDS)))
    sk = h.get("skeleton")
    if sk is not None and not isinstance(sk, dict):
        raise FormatError("%s: 'skeleton' must be an object or null" % where)
    return h


def _canon(v):
    """JSON text with object keys sorted, so CPython and MicroPython (whose dicts keep no
    insertion order) write the same key order."""
    if isinstance(v, dict):
        keys = sorted(v.keys())
        return "{" + ",".join(json.dumps(k) + ":" + _canon(v[k]) for k in keys) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_canon(x) for x in v) + "]"
    return json.dumps(v)


def dumps(h):
    """Compact JSON text of a checked header, keys sorted."""
    check(h)
    return _canon(h)


def loads(text, where="header"):
    """Parse and check header JSON (str or bytes); FormatError on anything wrong."""
    return check(parse(text, where), where)


# ------------------------------------------------------------------------------------------
# the compact form (version 2)

def _short(x):
    """A float written as an int when it is one (JSON "120", not "120.0")."""
    if x == int(x) and abs(x) < 1e15:
        return int(x)
    return x


def pack(h, dof_rows=None, skeleton_code=None, top=None):
    """The compact (version 2) dict of an expanded header h.

    dof_rows: the skeleton's dofs as (name, unit, wrap, lo, hi) tuples, when it has one; what
    they give is left out. skeleton_code: the skeleton as the host encodes it (a reference).
    """
    check(h)
    rows = h["rows"]
    top = (1 << h["bits"]) - 1
    names = [r["name"] for r in rows]
    c = {"version": COMPACT, "fps": _short(h["fps"]), "bits": h["bits"], "frames": h["frames"]}
    same = dof_rows is not None and [d[0] for d in dof_rows] == names
    c["rows"] = len(names) if same else names
    units = [r.get("unit", "") for r in rows]
    wraps = [1 if r.get("wrap") else 0 for r in rows]
    if not (same and units == [d[1] for d in dof_rows]):
        c["unit"] = units[0] if units == [units[0]] * len(units) else units
    if not (same and wraps == [1 if d[2] else 0 for d in dof_rows]):
        c["wrap"] = wraps[0] if wraps == [wraps[0]] * len(wraps) else wraps
    los = [r["lo"] for r in rows]
    his = [r["hi"] for r in rows]
    ref = _ref(dof_rows, top) if same else None
    packed = None
    if same and los == [float(d[3]) for d in dof_rows] and his == [float(d[4]) for d in dof_rows]:
        c["ranges"] = "sk"
    else:
        packed = staffranges.pack(los, his, top, ref)
    if packed is not None:
        c["r"] = packed
    elif "ranges" not in c:
        c["lo"] = [_short(x) for x in los]
        steps = []
        for i in range(len(rows)):
            s = (his[i] - los[i]) / top
            s = float("%.6g" % s)
            if los[i] + s * top != his[i]:
                steps = None
                break
            steps.append(_short(s))
        if steps is not None:
            c["step"] = steps
        else:
            c["hi"] = [_short(x) for x in his]
    if h.get("max_error_mm") is not None:
        c["e"] = _short(h["max_error_mm"])
        if h.get("max_error_bound") == "measured":
            c["em"] = 1
    if skeleton_code is not None:
        c["sk"] = skeleton_code
    if h.get("source"):
        c["source"] = h["source"]
    if h.get("captured"):
        c["captured"] = h["captured"]
    return c


def _ref(dof_rows, top):
    """The skeleton's reference steps for the "r" ranges, or None without finite dof limits."""
    if dof_rows is None:
        return None
    return staffranges.ref_indices([d[3] for d in dof_rows], [d[4] for d in dof_rows], top)


def _list(c, key, n, where, kind):
    v = c.get(key)
    if not isinstance(v, list):
        v = [v] * n
    if len(v) != n:
        raise FormatError("%s: '%s' has %d values for %d rows" % (where, key, len(v), n))
    for x in v:
        if not isinstance(x, kind) or isinstance(x, bool) and kind is not bool:
            raise FormatError("%s: '%s' holds %r" % (where, key, x))
    return v


def unpack(c, dof_rows=None, where="header"):
    """The expanded header of a compact (version 2) dict; dof_rows from its skeleton ("sk")."""
    if not isinstance(c, dict):
        raise FormatError("%s: not a JSON object" % where)
    v = c.get("version")
    if v not in COMPACT_READ:
        if isinstance(v, int) and not isinstance(v, bool) and v > COMPACT:
            raise FormatError("%s: unknown version %d (this reader knows 1..%d)" % (where, v, COMPACT))
        return check(c, where)
    rows = c.get("rows")
    if isinstance(rows, int) and not isinstance(rows, bool):
        if dof_rows is None or rows != len(dof_rows):
            raise FormatError("%s: %d rows named by the skeleton, which has %s dofs"
                              % (where, rows, "no" if dof_rows is None else len(dof_rows)))
        names = [d[0] for d in dof_rows]
    elif isinstance(rows, list) and rows:
        names = rows
        for x in names:
            if not isinstance(x, str):
                raise FormatError("%s: 'rows' must be names (strings)" % where)
    else:
        raise FormatError("%s: 'rows' must be a non-empty list of names or a count" % where)
    n = len(names)
    same = dof_rows is not None and [d[0] for d in dof_rows] == names
    bits = c.get("bits")
    if bits not in (8, 16):
        raise FormatError("%s: 'bits' must be 8 or 16, not %r" % (where, bits))
    top = (1 << bits) - 1
    if "unit" in c or not same:
        units = _list(c, "unit", n, where, str) if "unit" in c else [""] * n
    else:
        units = [d[1] for d in dof_rows]
    if "wrap" in c or not same:
        wraps = _list(c, "wrap", n, where, int) if "wrap" in c else [0] * n
        for x in wraps:
            if x not in (0, 1):
                raise FormatError("%s: 'wrap' holds %r (0 or 1)" % (where, x))
    else:
        wraps = [d[2] for d in dof_rows]
    num = (int, float)
    if c.get("ranges") == "sk":
        if not same:
            raise FormatError("%s: 'ranges' are the skeleton's, but the rows are not its dofs" % where)
        los = [float(d[3]) for d in dof_rows]
        his = [float(d[4]) for d in dof_rows]
    elif "r" in c:
        los, his = staffranges.unpack(c["r"], n, top, _ref(dof_rows, top) if same else None, where)
    else:
        los = [float(x) for x in _list(c, "lo", n, where, num)]
        if "step" in c:
            steps = [float(x) for x in _list(c, "step", n, where, num)]
            # hi = lo + step * top: the same float operations as pack
            his = [los[i] + steps[i] * top for i in range(n)]
        else:
            his = [float(x) for x in _list(c, "hi", n, where, num)]
    # version 3 leaves out "format" (the PNG text keyword already names it)
    fmt = c.get("format", FORMAT) if v == 3 else c.get("format")
    h = {"format": fmt, "version": VERSION, "fps": c.get("fps"), "bits": bits,
         "frames": c.get("frames", 0),
         "rows": [{"name": names[i], "unit": units[i], "lo": los[i], "hi": his[i], "wrap": bool(wraps[i])}
                  for i in range(n)],
         "skeleton": None, "source": c.get("source", ""), "captured": c.get("captured", "")}
    if not isinstance(h["source"], str) or not isinstance(h["captured"], str):
        raise FormatError("%s: 'source' and 'captured' must be strings" % where)
    if "e" in c:
        h["max_error_mm"] = c["e"]
    if "em" in c:
        if c["em"] != 1 or isinstance(c["em"], bool):
            raise FormatError("%s: 'em' must be 1 (the error budget was measured on the motion), not %r" % (where, c["em"]))
        h["max_error_bound"] = "measured"
    return check(h, where)


def parse(text, where="header"):
    """The JSON object of header text (str or bytes), not yet checked."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except Exception:
            raise FormatError("%s: not UTF-8 text" % where)
    try:
        d = json.loads(text)
    except Exception:
        raise FormatError("%s: not valid JSON" % where)
    if not isinstance(d, dict):
        raise FormatError("%s: not a JSON object" % where)
    return d


def dumps_compact(c):
    """Compact JSON text of a compact dict, keys sorted (no spaces)."""
    return _canon(c)
