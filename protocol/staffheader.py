"""The staff header: what a receiver needs to read a staff's codes (rows, ranges, rate, depth).

    from protocol import staffheader
    h = staffheader.make(rows=[{"name": "knee", "unit": "deg", "lo": -10.0, "hi": 150.0}],
                         fps=30.0, bits=8)
    text = staffheader.dumps(h); staffheader.loads(text) == h

The same JSON sits in the PNG staff file (text chunk keyword KEYWORD), in the recording
container and in the serial header packet. check() raises FormatError naming the bad field.
"""

import json

from protocol.errors import FormatError

FORMAT = "motionstaff"
VERSION = 1
KEYWORD = "motionstaff"
UNITS = ("deg", "rad", "m", "cm", "mm", "in", "cmu", "")


def make(rows, fps=30.0, bits=8, frames=0, skeleton=None, source="", captured=""):
    """A header dict with every field present."""
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
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except Exception:
            raise FormatError("%s: not UTF-8 text" % where)
    try:
        h = json.loads(text)
    except Exception:
        raise FormatError("%s: not valid JSON" % where)
    return check(h, where)
