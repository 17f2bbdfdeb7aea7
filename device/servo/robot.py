"""Robot descriptions: which staff row drives which servo, and each servo's calibration.

    from device.servo.robot import load_robot, builtin_names
    robot = load_robot("khr17-maestro")          # a built-in name, or a path to a JSON file
    robot.servos[0].to_units(30.0)               # joint degrees -> controller units (int)
    robot.row_map(["l_knee_flex", ...])          # -> [(servo index, row index, scale, offset_deg)]

JSON (docs/robots.md has a worked example): format "motionstaff-robot", version 1, name,
controller, baud, rate_hz, failsafe {timeout_s, action hold|home|torque_off, watchdog},
ramp {max_vel_dps, from home|current}, servos [{name, id, neutral, direction, units_per_deg,
min, max, home_deg, max_vel_dps, max_acc_dps2, map {mapping name: row | "-row" |
{row, scale, offset_deg}}}], optional imu {board "opencr", id} (the robot's own IMU on its bus:
device/servo/opencr.py). Every number is checked; FormatError names file and field. A
robot whose frame of commands does not fit its controller's line at rate_hz (bytes x 10 bits /
baud over 80 % of the period, device/servo/linebudget.py) is refused with the rate that fits.
"""

import json
import math
import os

from protocol.errors import FormatError

FORMAT = "motionstaff-robot"
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "robots")
ACTIONS = ("hold", "home", "torque_off")


def builtin_names():
    return sorted(f[:-5] for f in os.listdir(HERE) if f.endswith(".json"))


def _num(d, key, where, default=None, lo=None, hi=None):
    v = d.get(key, default)
    if v is None:
        raise FormatError("%s: '%s' is missing" % (where, key))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise FormatError("%s: '%s' must be a finite number, not %r" % (where, key, v))
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise FormatError("%s: '%s' = %r is outside [%r, %r]" % (where, key, v, lo, hi))
    return float(v)


class Servo:
    """One servo: id (channel or bus id) and calibration; angles are joint degrees."""

    def __init__(self, d, where):
        if not isinstance(d, dict):
            raise FormatError("%s: not an object" % where)
        self.name = d.get("name")
        if not isinstance(self.name, str) or not self.name:
            raise FormatError("%s: 'name' must be a non-empty string" % where)
        where = "%s (%s)" % (where, self.name)
        self.id = int(_num(d, "id", where, lo=0, hi=253))
        self.neutral = _num(d, "neutral", where)
        self.direction = _num(d, "direction", where, 1)
        if self.direction not in (1.0, -1.0):
            raise FormatError("%s: 'direction' must be 1 or -1" % where)
        self.units_per_deg = _num(d, "units_per_deg", where, lo=1e-6, hi=1e6)
        self.min = int(_num(d, "min", where))
        self.max = int(_num(d, "max", where))
        if not self.min < self.max:
            raise FormatError("%s: 'min' (%d) must be below 'max' (%d)" % (where, self.min, self.max))
        a = self.to_deg(self.min)
        b = self.to_deg(self.max)
        self.lo_deg = min(a, b)
        self.hi_deg = max(a, b)
        self.home_deg = _num(d, "home_deg", where, 0.0, self.lo_deg, self.hi_deg)
        self.max_vel_dps = _num(d, "max_vel_dps", where, 180.0, 1e-3, 1e5)
        self.max_acc_dps2 = _num(d, "max_acc_dps2", where, 0.0, 0.0, 1e7)   # 0 = no limit
        self.map = d.get("map", {})
        if not isinstance(self.map, dict):
            raise FormatError("%s: 'map' must be an object" % where)
        self.extra = d

    def get(self, key, default=None):
        return self.extra.get(key, default)

    def to_units(self, deg):
        u = int(math.floor(self.neutral + self.direction * self.units_per_deg * deg + 0.5))
        return self.min if u < self.min else self.max if u > self.max else u

    def to_deg(self, units):
        return (units - self.neutral) / (self.direction * self.units_per_deg)


class Robot:
    def __init__(self, d, where="robot"):
        if not isinstance(d, dict):
            raise FormatError("%s: not a JSON object" % where)
        if d.get("format") != FORMAT:
            raise FormatError("%s: 'format' must be %r" % (where, FORMAT))
        if d.get("version") != 1:
            raise FormatError("%s: unknown version %r (this reader knows 1)" % (where, d.get("version")))
        self.name = str(d.get("name", ""))
        self.controller = d.get("controller")
        if not isinstance(self.controller, str):
            raise FormatError("%s: 'controller' must be a string" % where)
        self.baud = int(_num(d, "baud", where, 0, 0, 1e8)) or None
        self.options = d.get("controller_options", {})
        if not isinstance(self.options, dict):
            raise FormatError("%s: 'controller_options' must be an object, e.g. {\"boards\": [12, 13]}" % where)
        self.rate_hz = _num(d, "rate_hz", where, 50.0, 1.0, 1000.0)
        fs = d.get("failsafe", {})
        if not isinstance(fs, dict):
            raise FormatError("%s: 'failsafe' must be an object" % where)
        self.failsafe_timeout_s = _num(fs, "timeout_s", where + ": failsafe", 0.5, 0.02, 60.0)
        self.failsafe_action = fs.get("action", "hold")
        if self.failsafe_action not in ACTIONS:
            raise FormatError("%s: failsafe 'action' must be one of %s" % (where, ", ".join(ACTIONS)))
        self.use_watchdog = bool(fs.get("watchdog", True))
        ramp = d.get("ramp", {})
        self.ramp_vel_dps = _num(ramp, "max_vel_dps", where + ": ramp", 45.0, 0.1, 1e4)
        self.ramp_from = ramp.get("from", "home")
        if self.ramp_from not in ("home", "current"):
            raise FormatError("%s: ramp 'from' must be home or current" % where)
        servos = d.get("servos")
        if not isinstance(servos, list) or not servos:
            raise FormatError("%s: 'servos' must be a non-empty list" % where)
        self.servos = [Servo(s, "%s: servos[%d]" % (where, i)) for i, s in enumerate(servos)]
        seen = {}
        for s in self.servos:
            if s.id in seen:
                raise FormatError("%s: servo %s repeats id %d of %s" % (where, s.name, s.id, seen[s.id]))
            seen[s.id] = s.name
        self.imu = _imu(d.get("imu"), seen, where)
        self.description = d.get("description", "")
        self.raw = d
        # one frame of commands must fit the controller's line at rate_hz (checked before any
        # port is opened: device/servo/linebudget.py)
        from device.servo.linebudget import check_line
        check_line(self, where)

    def mappings(self):
        names = set()
        for s in self.servos:
            names.update(s.map)
        return sorted(names)

    def row_map(self, row_names, mapping=None):
        """[(servo index, row index, scale, offset_deg)] for the staff rows; the mapping whose
        rows the staff has most of is chosen unless one is named. Servo names map to themselves."""
        index = dict((n, i) for i, n in enumerate(row_names))
        options = [mapping] if mapping else self.mappings() + ["servo"]
        best = None
        for m in options:
            out = []
            for si, s in enumerate(self.servos):
                spec = s.name if m == "servo" else s.map.get(m)
                if spec is None:
                    continue
                row, scale, off = _spec(spec, s.name)
                if row in index:
                    out.append((si, index[row], scale, off))
            if best is None or len(out) > len(best[1]):
                best = (m, out)
        if mapping and mapping not in self.mappings() + ["servo"]:
            raise ValueError("robot %s has no mapping %r (it has: %s)" % (self.name, mapping,
                                                                          ", ".join(self.mappings())))
        if not best or not best[1]:
            raise ValueError("robot %s: no staff row drives any servo (mappings: %s)"
                             % (self.name, ", ".join(self.mappings())))
        self.mapping_used = best[0]
        return best[1]


IMU_BOARDS = ("opencr",)


def _imu(spec, servo_ids, where):
    """The robot's own IMU on its bus ({"board": "opencr", "id": 200}: device/servo/opencr.py)
    or None (none known: no closed-loop balance from it)."""
    if spec is None:
        return None
    if not isinstance(spec, dict) or spec.get("board") not in IMU_BOARDS:
        raise FormatError("%s: 'imu' must be {\"board\": %s, \"id\": N}"
                          % (where, " or ".join('"%s"' % b for b in IMU_BOARDS)))
    sid = int(_num(spec, "id", where + ": imu", 200, 0, 252))
    if sid in servo_ids:
        raise FormatError("%s: imu id %d is servo %s's" % (where, sid, servo_ids[sid]))
    return {"board": spec["board"], "id": sid}


def _spec(spec, name):
    if isinstance(spec, str):
        if spec.startswith("-"):
            return spec[1:], -1.0, 0.0
        return spec, 1.0, 0.0
    if isinstance(spec, dict) and isinstance(spec.get("row"), str):
        return spec["row"], float(spec.get("scale", 1.0)), float(spec.get("offset_deg", 0.0))
    raise FormatError("servo %s: a map entry must be a row name or {row, scale, offset_deg}" % name)


def load_robot(name_or_path):
    """A Robot from a built-in name or a JSON file path."""
    p = name_or_path
    if not os.path.exists(p) and os.sep not in p and not p.endswith(".json"):
        if p not in builtin_names():
            raise FormatError("%s: not a file and not a built-in robot (built-ins: %s)"
                              % (p, ", ".join(builtin_names())))
        p = os.path.join(HERE, p + ".json")
    try:
        with open(p) as f:
            text = f.read()
    except UnicodeDecodeError:
        raise FormatError("%s: not UTF-8 text" % name_or_path)
    try:
        d = json.loads(text)
    except ValueError as e:
        raise FormatError("%s: not valid JSON (%s)" % (name_or_path, str(e).splitlines()[0]))
    return Robot(d, name_or_path)
