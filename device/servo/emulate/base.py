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

The servos' power (a battery swap with the USB adapter still plugged in, a loose lead, a
brownout: servos at stall sag the battery until they reset) can be cut and restored:
    emu.power_off(); emu.power_on()            # now, on the emulator's clock
    emu.schedule_power_cut(off_at_s, on_at_s)  # on its clock (on_at_s None: it never returns)
    emu.answering()                            # False while off and for BOOT_S after it returns
While off, and for the emulator's BOOT_S after the power returns, the servos answer nothing and
act on nothing (the bytes are lost: an unpowered MCU's UART hears nothing); the power back,
their RAM is at its power-up values (each emulator's _boot: e.g. a Dynamixel's torque off,
Bus Watchdog 0, profiles 0). A body's joint goes limp at the cut (torque off: the motor
driver unpowered) and stays limp until the host turns the torque on again. A cut scheduled on
a body with a clock hook happens at the physics step its time comes; otherwise at the next
bytes fed (or tick()).
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
        self.powered = True       # the servos' supply (power_off / power_on)
        self.boot_until_s = None  # booting after the power returned: silent until this clock
        self.power_cuts = 0
        self.bytes_unpowered = 0  # bytes fed while off or booting (lost)
        self._power_plan = []     # [(off_at_s, on_at_s or None)], on self.clock
        self._power_hooked = False

    BOOT_S = 0.0                  # power back -> answering (each emulator's own figure)
    # the controller is powered apart from its servos (a Maestro on USB): it answers on while
    # they are cut, and only the servos go limp
    BOARD_APART = False

    # --- power ----------------------------------------------------------------------------------
    def answering(self, now_s=None):
        """True when the servos are powered and booted (they hear and answer the bus)."""
        if not self.powered and not self.BOARD_APART:
            return False
        if self.BOARD_APART:
            return True
        now = self.clock() if now_s is None else now_s
        return self.boot_until_s is None or now >= self.boot_until_s

    def power_off(self):
        """The servos' supply cut now: limp, deaf and silent until power_on()."""
        with self.lock:
            self._cut()

    def power_on(self):
        """The supply back now: the servos boot (BOOT_S silent), their RAM at power-up values."""
        with self.lock:
            self._restore(self.clock())

    def schedule_power_cut(self, off_at_s, on_at_s=None):
        """Cut the power at off_at_s on the emulator's clock and restore it at on_at_s (None:
        never). On a body with a clock hook it happens at the physics step its time comes."""
        with self.lock:
            self._power_plan.append((float(off_at_s), None if on_at_s is None else float(on_at_s)))
            self._power_plan.sort(key=lambda c: c[0])
        attach = getattr(self.body, "attach_sensor", None)
        if attach is not None and not self._power_hooked:
            self._power_hooked = True
            attach(self._power_step)

    def _power_step(self, body):
        # after every physics step (the twin's lock held): a cut or return due now; the
        # emulator's lock only tried (a feed in another thread holds it: then at its next step)
        if self._power_plan or (not self.powered and self._on_at_s is not None):
            if self.lock.acquire(False):
                try:
                    self._power_due(self.clock())
                finally:
                    self.lock.release()

    _on_at_s = None

    def _power_due(self, now):
        """Apply the scheduled cuts and returns whose time has come (the lock held)."""
        while True:
            if not self.powered:
                if self._on_at_s is None or now < self._on_at_s:
                    return
                self._restore(self._on_at_s)
            if not self._power_plan or now < self._power_plan[0][0]:
                return
            _, self._on_at_s = self._power_plan.pop(0)
            self._cut()

    def _cut(self):
        if self.powered:
            self.powered = False
            self.power_cuts += 1
            self.boot_until_s = None
            self._lose_power()

    def _restore(self, at_s):
        if not self.powered:
            self.powered = True
            self._on_at_s = None
            self.boot_until_s = at_s + self.BOOT_S
            self._boot()

    def _lose_power(self):
        """The emulator's servos unpowered (limp in the body); each emulator's own."""

    def _limp_all(self, torque_at):
        """Every servo's Torque Enable (at torque_at in its table) 0 and its joint limp: a bus
        servo's _lose_power (the motor driver unpowered)."""
        for s, t in self.tables.items():
            if t[torque_at]:
                self.record(s, None)
            t[torque_at] = 0
            if self.body is not None:
                self._drive(s)

    def _boot(self):
        """The power back: the servos' RAM at its power-up values; each emulator's own."""

    def close(self):
        """The emulator discarded: its hooks leave the body (host/physics/twin.py detach_sensor)."""
        detach = getattr(self.body, "detach_sensor", None)
        if detach is not None and self._power_hooked:
            detach(self._power_step)
            self._power_hooked = False

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
            now = self.clock()
            self._power_due(now)
            if self.answering(now):
                out = self._feed(bytes(data))
            else:
                # unpowered or booting: the bytes are lost, and a packet begun before the cut
                # is gone with the MCU's buffer
                self.bytes_unpowered += len(data)
                self.buf = b""
                out = b""
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
