"""The receiver's configuration (/receiver.json on the board), checked; host-made by `deploy`.

    cfg = config.load("/receiver.json")          # or config.check(dict)
    cfg["servos"][0]["pin"], cfg["failsafe"]["timeout_ms"]

{"format": "motionstaff-receiver", "version": 1,
 "uart": {"id": 0, "baud": 115200, "tx": 0, "rx": 1},
 "failsafe": {"timeout_ms": 500, "action": "hold" | "release" | "home"},
 "heartbeat_ms": 1000,                       # unsolicited heartbeats (0: only replies)
 "servos": [{"name", "pin", "row": "l_knee_flex" | 3, "scale": 1.0, "offset_deg": 0.0,
             "neutral_us", "direction": 1 | -1, "us_per_deg", "min_us", "max_us",
             "home_deg": 0.0, "max_vel_dps": 180.0}]}
The host turns a robot description (device/servo/robot.py) into this; see host/commands/deploy.py.
"""

import json

from protocol.errors import FormatError

FORMAT = "motionstaff-receiver"
ACTIONS = ("hold", "release", "home")


def _num(d, key, where, default=None, lo=None, hi=None):
    v = d.get(key, default)
    if v is None:
        raise FormatError("%s: '%s' is missing" % (where, key))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        raise FormatError("%s: '%s' must be a number" % (where, key))
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise FormatError("%s: '%s' = %r is outside [%r, %r]" % (where, key, v, lo, hi))
    return v


def _int(d, key, where, default=None, lo=None, hi=None):
    # a pin, a UART id or baud: 2.5 is no pin (int() would have made it GP2)
    v = _num(d, key, where, default, lo, hi)
    if v != int(v):
        raise FormatError("%s: '%s' = %r must be a whole number" % (where, key, v))
    return int(v)


def check(d, where="receiver.json"):
    """Raise FormatError naming the first bad field; fill defaults; return d."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise FormatError("%s: 'format' must be %r" % (where, FORMAT))
    if d.get("version") != 1:
        raise FormatError("%s: unknown version %r" % (where, d.get("version")))
    u = d.setdefault("uart", {})
    for k, v, lo in (("id", 0, 0), ("baud", 115200, 300), ("tx", 0, 0), ("rx", 1, 0)):
        u[k] = _int(u, k, where + ": uart", v, lo, 10000000)
    fs = d.setdefault("failsafe", {})
    fs["timeout_ms"] = int(_num(fs, "timeout_ms", where + ": failsafe", 500, 20, 600000))
    fs.setdefault("action", "hold")
    if fs["action"] not in ACTIONS:
        raise FormatError("%s: failsafe 'action' must be one of %s" % (where, ", ".join(ACTIONS)))
    d["heartbeat_ms"] = int(_num(d, "heartbeat_ms", where, 1000, 0, 3600000))
    servos = d.get("servos")
    if not isinstance(servos, list) or not servos:
        raise FormatError("%s: 'servos' must be a non-empty list" % where)
    pins = {}
    for i in range(len(servos)):
        s = servos[i]
        at = "%s: servos[%d]" % (where, i)
        if not isinstance(s, dict):
            raise FormatError("%s: not an object" % at)
        pin = _int(s, "pin", at, None, 0, 47)
        if pin in pins:
            raise FormatError("%s: pin %d already drives servos[%d]" % (at, pin, pins[pin]))
        pins[pin] = i
        row = s.get("row")
        if row is not None and not isinstance(row, str) and (isinstance(row, bool) or not isinstance(row, int)):
            raise FormatError("%s: 'row' must be a row name or index" % at)
        _num(s, "neutral_us", at, None, 100, 5000)
        _num(s, "us_per_deg", at, None, 0.001, 1000)
        if s.get("direction", 1) not in (1, -1):
            raise FormatError("%s: 'direction' must be 1 or -1" % at)
        lo = _num(s, "min_us", at, None, 100, 5000)
        hi = _num(s, "max_us", at, None, 100, 5000)
        if not lo < hi:
            raise FormatError("%s: 'min_us' must be below 'max_us'" % at)
        _num(s, "scale", at, 1.0, -100, 100)
        _num(s, "offset_deg", at, 0.0, -3600, 3600)
        _num(s, "home_deg", at, 0.0, -3600, 3600)
        _num(s, "max_vel_dps", at, 180.0, 0.01, 100000)
    return d


def load(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        raise FormatError("%s: cannot be read" % path)
    try:
        d = json.loads(text)
    except ValueError:
        raise FormatError("%s: not valid JSON" % path)
    return check(d, path)
