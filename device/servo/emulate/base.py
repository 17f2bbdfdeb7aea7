"""What every emulator shares: a clock, the timeline of commanded positions, the log writer.

    emu = SomeEmulator(); replies = emu.feed(b"...")   # bytes in, reply bytes out
    emu.positions[servo] -> units;  emu.timeline -> [(t_s, servo, units, deg)]

An optional body (a physics twin, or anything with these two methods) stands behind the
servos; the Dynamixel, Feetech and Maestro emulators drive it and report from it:
    body.set_goal(servo_id, position_units, velocity_limit, torque_on, accel_limit=0,
                  p_gain=None, d_gain=None)     # limits in position units/s, units/s^2; 0 = none
    body.read(servo_id) -> (present_position_units, load (-1..1, + the way the units count;
                           None = no sensor), moving)
                           or None (no such servo: the emulator's own registers stand)
Without a body a servo reaches its goal at once (present position = goal).
"""

import json
import threading
import time


class Emulator:
    NAME = "base"
    UNITS = "units"

    def __init__(self, clock=None, deg_per_unit=0.1, centre=1500.0, body=None):
        self.clock = clock or time.monotonic
        self.body = body
        self.t0 = self.clock()
        self.timeline = []
        self.positions = {}
        self.errors = 0
        self.commands = 0
        self.deg_per_unit = deg_per_unit
        self.centre = centre
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.silent = False       # fault injection: stop answering

    def to_deg(self, servo, units):
        return (units - self.centre) * self.deg_per_unit

    def record(self, servo, units):
        t = self.clock() - self.t0
        self.positions[servo] = units
        self.timeline.append((t, servo, units, self.to_deg(servo, units)))
        self.commands += 1

    def body_state(self, servo):
        """(position units, load or None, moving, velocity units/s or None) from the body, or
        None without a body or when the body has no such servo."""
        if self.body is None:
            return None
        r = self.body.read(servo)
        if r is None:
            return None
        vel = getattr(self.body, "velocity_units", None)
        return r[0], r[1], r[2], (vel(servo) if vel is not None else None)

    def feed(self, data):
        with self.lock:
            out = self._feed(bytes(data))
            self.changed.notify_all()
        return b"" if self.silent else out

    def _feed(self, data):
        raise NotImplementedError

    def wait_for(self, predicate, timeout_s=5.0):
        """Block until predicate(self) is true (True) or the timeout passes (False)."""
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self), timeout_s)

    def write_log(self, path):
        rows = list(self.timeline)
        if str(path).endswith(".json"):
            with open(path, "w") as f:
                json.dump({"controller": self.NAME, "units": self.UNITS,
                           "timeline": [{"t_s": round(t, 6), "servo": s, "units": u, "deg": round(d, 4)}
                                        for t, s, u, d in rows]}, f)
        else:
            with open(path, "w") as f:
                f.write("t_s,servo,units,deg\n")
                for t, s, u, d in rows:
                    f.write("%.6f,%s,%s,%.4f\n" % (t, s, u, d))
