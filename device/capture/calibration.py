"""Guided IMU calibration (gyro bias, accelerometer six faces, magnetometer hard/soft iron) and its
file, which the unit applies to every reading (`"sensor_calibration": "cal.json"` in the config).

    from device.capture.calibration import Calibrator, load_calibration, save_calibration, apply_reading
    cal = Calibrator(unit, prompt=input_or_not, say=print)       # unit: device.capture.unit.Unit
    entry = cal.run("l_thigh_imu")          # walks through the poses, reads the unit's own sensor
    save_calibration("cal.json", {"l_thigh_imu": entry})
    table = load_calibration("cal.json")    # {name: entry}; FormatError naming the file and sensor
    reading = apply_reading(table["l_thigh_imu"], reading)      # a normalised reading, corrected

Per chip (the sensor is read through the unit's SensorSlot and driver, as `capture` reads it):
  MPU-6050/6500   gyro bias: mean gyro held still (+Z up) for still_s; accelerometer: the six faces
                  (+X, -X, +Y, -Y, +Z, -Z up), each held still for face_s, fitted by
                  sensorcal.fit_accelerometer (per-axis bias and scale)
  MPU-9250        the same, then the magnetometer (AK8963) turned slowly through all directions for
                  rotate_s, fitted by sensorcal.fit_magnetometer (hard iron o, soft iron W)
  BNO055          calibrates itself from the motion asked for: held still (gyro; up to still_s),
                  still in up to six positions (accel; BNO_POSE_S each), a slow figure 8 (mag and
                  system; up to rotate_s), CALIB_STAT polled meanwhile until each step's level
                  is 3; the levels are reported; its entry carries no corrections. Once all four are
                  3 the chip's 22-byte calibration profile (datasheet 3.6.4, read in CONFIG mode) is
                  stored: "profile" (44 hex digits, what the unit writes back after every init())
                  and "profile_fields" (the eleven int16 fields, for reading; they must agree)
A window is still when the peak-to-peak spread of every gyro axis is below STILL_GYRO_DPS and of
every accelerometer axis below STILL_ACCEL_M_S2; otherwise CalibrationError names the sensor.

Corrections (sensor axes, SI units): gyro - bias; accel_scale * (accel - accel_bias);
mag_soft_iron @ (mag - mag_hard_iron). A sensor without an entry passes through unchanged.

On the simulated unit a SimBench stands in for the person: it turns each simulated chip to the
face asked for (or tumbles it) by rebinding the twin's truth()/mag_truth() hooks; the subject's
gyro/accel biases and noise levels stay, and the twins' own error parameters (accel scale, hard
and soft iron, device/sensors/*_sim.py) apply on top, as they do during capture. Real backends
are read unchanged.
"""

import json
import os
import re
import time

import numpy as np

from device.capture import sensorcal
from protocol.errors import FormatError

FORMAT = "motionstaff-imu-calibration"
STILL_GYRO_DPS = 2.0          # peak-to-peak per axis over a still window
STILL_ACCEL_M_S2 = 0.5
FACE_MIN_G = 0.7              # the face asked for must carry at least this share of gravity
AXES = ("X", "Y", "Z")
BNO_POSE_S = 2.0              # a BNO055 position held still (the chip counts it after about 1 s)
FACES = (("+X", 0, 1), ("-X", 0, -1), ("+Y", 1, 1), ("-Y", 1, -1), ("+Z", 2, 1), ("-Z", 2, -1))
DEG = np.pi / 180.0


class CalibrationError(ValueError):
    """One line: 'sensor NAME: problem'."""


def _err(name, msg):
    return CalibrationError("sensor %s: %s" % (name, msg))


# -- the file --------------------------------------------------------------------------------
_VEC = {"gyro_bias_rad_s": 3, "accel_bias_m_s2": 3, "accel_scale": 3, "mag_hard_iron_ut": 3}
CHIPS = ("bno055", "mpu6050", "mpu9250")
# what a correction may be (beyond any chip's data-sheet tolerance: a value outside is a broken
# or hand-edited file, refused at load rather than applied to every reading)
LIMITS = {"gyro_bias_rad_s": 0.5,        # 28.6 deg/s (MPU-6050 ZRO tolerance +-20 deg/s)
          "accel_bias_m_s2": 3.0,        # 0.3 g (MPU-6050 zero-g offset +-80 / +-150 mg)
          "mag_hard_iron_ut": 4912.0}    # the AK8963's whole range
SOFT_IRON_SV = (0.2, 5.0)                # singular values of mag_soft_iron (the fit gives ~1)
_MPU_KEYS = ("gyro_bias_rad_s", "accel_bias_m_s2", "accel_scale", "mag_hard_iron_ut", "mag_soft_iron")
_MAG_KEYS = ("mag_hard_iron_ut", "mag_soft_iron")


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and bool(np.isfinite(x))


def check_entry(name, e, where):
    """The entry's corrections as numpy arrays; FormatError naming the file and the sensor."""
    at = "%s: sensor %s" % (where, name)
    if not isinstance(e, dict):
        raise FormatError("%s: not an object" % at)
    chip = e.get("chip")
    if chip is not None and chip not in CHIPS:
        raise FormatError("%s: 'chip' must be one of %s, got %r" % (at, ", ".join(CHIPS), chip))
    if chip == "bno055":
        extra = [k for k in _MPU_KEYS if k in e]
        if extra:
            raise FormatError("%s: a BNO055 calibrates itself, its entry carries no corrections (%s)"
                              % (at, ", ".join(extra)))
    if chip == "mpu6050":
        extra = [k for k in _MAG_KEYS if k in e]
        if extra:
            raise FormatError("%s: an MPU-6050 has no magnetometer (%s)" % (at, ", ".join(extra)))
    out = {"chip": chip}
    for key, n in _VEC.items():
        if key in e:
            v = e[key]
            if not isinstance(v, list) or len(v) != n or not all(_num(x) for x in v):
                raise FormatError("%s: '%s' must be %d finite numbers" % (at, key, n))
            out[key] = np.array(v, float)
            lim = LIMITS.get(key)
            if lim is not None and np.any(np.abs(out[key]) > lim):
                raise FormatError("%s: '%s' is out of range (%s; at most %g in magnitude)" % (at, key, v, lim))
    if "accel_scale" in out and np.any(np.abs(out["accel_scale"] - 1.0) > 0.5):
        raise FormatError("%s: 'accel_scale' is far from 1 (%s)" % (at, e["accel_scale"]))
    if ("accel_scale" in out) != ("accel_bias_m_s2" in out):
        raise FormatError("%s: 'accel_bias_m_s2' and 'accel_scale' go together" % at)
    if "mag_soft_iron" in e:
        W = e["mag_soft_iron"]
        ok = isinstance(W, list) and len(W) == 3 and all(
            isinstance(r, list) and len(r) == 3 and all(_num(x) for x in r) for r in W)
        if not ok:
            raise FormatError("%s: 'mag_soft_iron' must be a 3 x 3 matrix" % at)
        out["mag_soft_iron"] = np.array(W, float)
        if "mag_hard_iron_ut" not in out:
            raise FormatError("%s: 'mag_soft_iron' needs 'mag_hard_iron_ut'" % at)
        sv = np.linalg.svd(out["mag_soft_iron"], compute_uv=False)
        if not (SOFT_IRON_SV[0] <= sv.min() and sv.max() <= SOFT_IRON_SV[1]) or np.linalg.det(out["mag_soft_iron"]) <= 0:
            raise FormatError("%s: 'mag_soft_iron' is not a soft-iron correction (singular values (%s), "
                              "determinant %.3g; need %g..%g and a positive determinant)"
                              % (at, ", ".join("%.3g" % x for x in sv), np.linalg.det(out["mag_soft_iron"]),
                                 SOFT_IRON_SV[0], SOFT_IRON_SV[1]))
    elif "mag_hard_iron_ut" in out:
        out["mag_soft_iron"] = np.eye(3)
    if "profile" in e or "profile_fields" in e:
        out["profile"] = _check_profile(e, at)
    return out


def check_for_unit(table, specs, where="calibration"):
    """A loaded table {name: corrections} against the unit's sensor specs: every entry names one of
    its sensors and fits that sensor's chip (an MPU entry on a BNO055 would correct the chip's
    own calibrated readings; a BNO055 profile on an MPU would be silently unused); FormatError
    naming the file and the sensor."""
    chips = {s["name"]: s["chip"] for s in specs}
    for name, c in table.items():
        at = "%s: sensor %s" % (where, name)
        if name not in chips:
            raise FormatError("%s: not in the unit's configuration (sensors: %s): fix the name or "
                              "remove the entry" % (at, ", ".join(chips) or "none"))
        chip = chips[name]
        if c.get("chip") is not None and c["chip"] != chip:
            raise FormatError("%s: the entry is for chip %s, but the sensor's chip is %s: calibrate it again"
                              % (at, c["chip"], chip))
        if chip == "bno055":
            extra = [k for k in _MPU_KEYS if k in c]
            if extra:
                raise FormatError("%s: a BNO055 calibrates itself, its entry carries no corrections (%s)"
                                  % (at, ", ".join(extra)))
        else:
            if "profile" in c:
                raise FormatError("%s: 'profile' is a BNO055 calibration profile, but the sensor's chip is %s"
                                  % (at, chip))
            if chip != "mpu9250" and any(k in c for k in _MAG_KEYS):
                raise FormatError("%s: magnetometer corrections, but the sensor's chip is %s (no magnetometer)"
                                  % (at, chip))
    return table


def _check_profile(e, at):
    """A BNO055 entry's 22-byte calibration profile: "profile" as 44 hex digits (or a list of 22
    ints 0..255); "profile_fields", if present, must be its decoding."""
    from device.sensors.bno055 import PROFILE_LEN, as_profile, decode_offsets
    if e.get("chip") not in (None, "bno055"):
        raise FormatError("%s: 'profile' is a BNO055 calibration profile, but the chip is %s" % (at, e.get("chip")))
    p = e.get("profile")
    b = None
    if isinstance(p, str) and len(p) == 2 * PROFILE_LEN:
        try:
            b = bytes.fromhex(p)
        except ValueError:
            b = None
    elif isinstance(p, list) and len(p) == PROFILE_LEN and all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 255 for x in p):
        b = bytes(p)
    if b is None:
        got = ("%d characters" % len(p)) if isinstance(p, str) else \
            ("%d items" % len(p)) if isinstance(p, list) else ("missing" if p is None else type(p).__name__)
        raise FormatError("%s: 'profile' must be the BNO055's %d-byte calibration profile as %d hex digits "
                          "(or a list of %d bytes), got %s" % (at, PROFILE_LEN, 2 * PROFILE_LEN, PROFILE_LEN, got))
    f = e.get("profile_fields")
    if f is not None:
        try:
            agree = as_profile(f) == b
        except ValueError:
            agree = False
        if not agree:
            raise FormatError("%s: 'profile_fields' do not decode 'profile' (%s): 'profile' is what is "
                              "written back" % (at, decode_offsets(b)))
    return b


def check_calibration(doc, where="calibration"):
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError("%s: not an IMU calibration file ('format' must be %r)" % (where, FORMAT))
    if doc.get("version", 1) != 1 or isinstance(doc.get("version"), bool):
        raise FormatError("%s: calibration file version %r is not supported (1)" % (where, doc.get("version")))
    sensors = doc.get("sensors")
    if not isinstance(sensors, dict):
        raise FormatError("%s: 'sensors' must be an object {name: entry}" % where)
    return {name: check_entry(name, e, where) for name, e in sensors.items()}


def read_calibration(path):
    """The document as written (dict); FormatError naming the file."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise FormatError("%s: not valid JSON (%s)" % (path, e))
    check_calibration(doc, path)
    return doc


def load_calibration(src):
    """{sensor name: corrections} from a path or an inline document."""
    if isinstance(src, dict):
        return check_calibration(src)
    return check_calibration(read_calibration(src), src)


def save_calibration(path, entries, created=None):
    """Write {name: entry} (json-able entries) atomically: a temporary file, then a rename."""
    doc = {"format": FORMAT, "version": 1,
           "created": created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "sensors": entries}
    check_calibration(doc, path)
    text = json.dumps(doc, indent=1)
    # vectors and matrix rows on one line each
    text = re.sub(r"\[\s*([-+0-9.eE]+(?:,\s*[-+0-9.eE]+)*)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    path = os.path.realpath(path)      # a symlink's target is replaced, not the link
    if os.path.exists(path) and not os.path.isfile(path):
        raise FormatError("%s: not a regular file (a calibration is written by a rename over it)" % path)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return doc


def apply_reading(c, r):
    """A normalised reading {"gyro", "accel", ...} with the corrections of entry c applied."""
    if r is None or c is None:
        return r
    out = dict(r)
    gb = c.get("gyro_bias_rad_s")
    ab, s = c.get("accel_bias_m_s2"), c.get("accel_scale")
    if gb is not None:
        out["gyro"] = tuple((np.asarray(r["gyro"], float) - gb).tolist())
    if ab is not None:
        out["accel"] = tuple((s * (np.asarray(r["accel"], float) - ab)).tolist())
    if "mag_hard_iron_ut" in c and r.get("mag") is not None:
        out["mag"] = tuple(sensorcal.apply(r["mag"], c["mag_hard_iron_ut"], c["mag_soft_iron"]).tolist())
    if r.get("samples") and (gb is not None or ab is not None):
        g = np.array([x[0] for x in r["samples"]], float)
        a = np.array([x[1] for x in r["samples"]], float)
        if gb is not None:
            g = g - gb
        if ab is not None:
            a = s * (a - ab)
        out["samples"] = [(tuple(gi), tuple(ai)) for gi, ai in zip(g.tolist(), a.tolist())]
    return out


# -- the simulated bench ---------------------------------------------------------------------
def _face_rot(axis, sign, up):
    """A rotation (sensor -> world) that points the sensor's sign * axis along up."""
    a = np.zeros(3)
    a[axis] = sign
    v = np.cross(a, up)
    c = float(a @ up)
    if np.linalg.norm(v) < 1e-12:
        if c > 0:
            return np.eye(3)
        p = np.zeros(3)
        p[(axis + 1) % 3] = 1.0                 # half a turn about a perpendicular axis
        return 2.0 * np.outer(p, p) - np.eye(3)
    from device.capture.rot import skew
    K = skew(v)
    return np.eye(3) + K + K @ K / (1.0 + c)


class SimBench:
    """The simulated subject's chips on a bench: hold(name, R) still, or tumble(name) through all
    directions (sensor -> world R(t)). Time advances only by tick(dt) (no wall clock)."""

    def __init__(self, subject):
        self.subject = subject
        self.t = 0.0
        # the bench's time runs on the chips' buses too (they keep their times on the bus clock)
        self._bus_t0 = [(b, b.now_s()) for b in getattr(subject, "buses", ())]
        self.up = -subject.g / np.linalg.norm(subject.g)
        self.field_ut = np.asarray(subject.field_ut, float)
        self._pose = {}

    def tick(self, dt):
        """dt passes, after the time the buses have taken (a driver's reset wait is time too)."""
        for b, t0 in self._bus_t0:
            self.t = max(self.t, b.now_s() - t0)
        self.t += dt
        for b, t0 in self._bus_t0:
            b.advance_to(t0 + self.t)

    def _rec(self, name):
        return self.subject.sensors[self.subject.index[name]]

    def _bind(self, name):
        rec = self._rec(name)
        chip = rec["chip_obj"]
        if chip is None:
            return
        chip.truth = (lambda n=name: self._truth(n)) if rec["chip"] != "bno055" else \
            (lambda n=name: self._truth_dict(n))
        if hasattr(chip, "mag_truth"):
            chip.mag_truth = lambda n=name: self._mag(n)

    def hold(self, name, R):
        """Hold the sensor still with orientation R (sensor -> world)."""
        R = np.asarray(R, float)
        self._pose[name] = lambda t: R
        self._bind(name)

    def face(self, name, axis, sign):
        self.hold(name, _face_rot(axis, sign, self.up))

    def turn(self, name, R_of_t):
        """Move the sensor along R_of_t(t_s) (bench time)."""
        self._pose[name] = R_of_t
        self._bind(name)

    def tumble(self, name, period_s=20.0):
        """Turn slowly through all directions: 7 turns about the vertical within one about a
        horizontal axis every period_s (the field's direction in the sensor sweeps the sphere)."""
        from device.capture.rot import exp_so3
        up = self.up
        h = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        h = h - up * (h @ up)
        h /= np.linalg.norm(h)
        w = 2 * np.pi / period_s
        self.turn(name, lambda t: exp_so3(up * 7 * w * t) @ exp_so3(h * (w * t + 0.3)))

    def _state(self, name):
        rec = self._rec(name)
        n = self.subject.noise
        rng = self.subject.rng
        fn = self._pose.get(name)
        if fn is None:
            return None
        R = fn(self.t)
        h = 1e-3
        from device.capture.rot import log_so3
        w = log_so3(R.T @ fn(self.t + h)) / h
        g = w + rec["gyro_bias"] + rng.normal(size=3) * np.radians(n["gyro_noise_dps"])
        a = R.T @ (self.up * sensorcal.G) + rec["accel_bias"] + rng.normal(size=3) * n["accel_noise_m_s2"]
        m = R.T @ self.field_ut + rng.normal(size=3) * n["mag_noise_ut"]
        return R, g, a, m

    def _truth(self, name):
        _, g, a, _ = self._state(name)
        return tuple(g), tuple(a), 25.0

    def _mag(self, name):
        return tuple(self._state(name)[3])

    def _truth_dict(self, name):
        from device.capture.rot import mat_to_quat
        R, g, a, m = self._state(name)
        return {"gyro_rad_s": tuple(g), "accel_m_s2": tuple(a), "mag_ut": tuple(m),
                "quat_wxyz": tuple(mat_to_quat(R)), "temp_c": 25.0}


# -- the procedure ---------------------------------------------------------------------------
class Calibrator:
    """Calibrate the unit's sensors one by one. prompt(text) waits for the person (or not);
    say(text) reports progress. On a simulated unit (unit.subject) the SimBench turns the chips;
    otherwise samples are paced by the wall clock at rate_hz."""

    def __init__(self, unit, prompt=None, say=None, still_s=2.0, face_s=1.0, rotate_s=20.0,
                 rate_hz=100.0, sleep=time.sleep, clock=time.monotonic):
        self.unit = unit
        self.prompt = prompt or (lambda text: None)
        self.say = say or (lambda text: None)
        self.still_s, self.face_s, self.rotate_s = float(still_s), float(face_s), float(rotate_s)
        self.rate_hz = float(rate_hz)
        self.slots = {s.name: s for s in unit.slots}
        self.specs = {s["name"]: s for s in unit.specs}
        self.bench = None
        if unit.subject is not None:
            unit.subject.advance(0.0)           # outages scheduled from t = 0 take effect
            self.bench = SimBench(unit.subject)
        self._sleep, self._clock = sleep, clock
        self._next = None

    # time: the bench's virtual clock, or the wall clock on real sensors
    def _tick(self):
        dt = 1.0 / self.rate_hz
        if self.bench is not None:
            self.bench.tick(dt)
            return
        now = self._clock()
        if self._next is None or now > self._next + 0.5:
            self._next = now
        if self._next > now:
            self._sleep(self._next - now)
        self._next += dt

    def _where(self, name):
        s = self.specs[name]
        mux = s.get("mux")
        return "0x%02x%s on bus %s" % (s["addr"], (" (mux 0x%02x channel %d)" % (mux["addr"], mux["channel"]))
                                       if mux else "", s["bus"])

    def _start(self, name):
        slot = self.slots[name]
        if not slot.start():
            raise _err(name, "no answer at %s (%s): is it plugged in?" % (self._where(name), slot.last_error))
        self._next = None
        return slot

    def _collect(self, name, seconds):
        from device.capture.unit import normalise
        slot = self.slots[name]
        chip = self.specs[name]["chip"]
        n = max(3, int(round(seconds * self.rate_hz)))
        g, a, m = [], [], []
        missing = 0
        for _ in range(n):
            self._tick()
            r = normalise(chip, slot.sample())
            if r is None:
                missing += 1
                if missing > max(3, n // 20):
                    raise _err(name, "stopped answering at %s (%s)" % (self._where(name), slot.last_error))
                continue
            g.append(r["gyro"])
            a.append(r["accel"])
            if r.get("mag") is not None:
                m.append(r["mag"])
        return np.array(g, float), np.array(a, float), np.array(m, float).reshape(-1, 3)

    def _pose(self, name, face):
        if self.bench is not None:
            if face == "tumble":
                self.bench.tumble(name, period_s=max(self.rotate_s, 1e-3))
            else:
                _, axis, sign = [f for f in FACES if f[0] == face][0]
                self.bench.face(name, axis, sign)

    def _still(self, name, g, a, what):
        gs = float(np.ptp(g, axis=0).max()) / DEG
        acs = float(np.ptp(a, axis=0).max())
        if gs > STILL_GYRO_DPS or acs > STILL_ACCEL_M_S2:
            raise _err(name, "moved during %s (gyro spread %.2f deg/s, limit %.1f; accel spread "
                       "%.2f m/s^2, limit %.1f): hold it still and run again"
                       % (what, gs, STILL_GYRO_DPS, acs, STILL_ACCEL_M_S2))
        return gs, acs

    def run(self, name):
        if name not in self.slots:
            raise _err(name, "not in the unit's configuration (sensors: %s)" % ", ".join(self.slots))
        chip = self.specs[name]["chip"]
        if chip == "bno055":
            return self._bno055(name)
        return self._mpu(name, chip)

    def _retry(self, name, slot, fn, what):
        """fn() with the slot's retries on a transfer error, as SensorSlot does."""
        for attempt in range(slot.retries + 1):
            try:
                return fn()
            except OSError as e:
                if attempt == slot.retries:
                    raise _err(name, "%s failed at %s (%s)" % (what, self._where(name), e))

    def _watch(self, name, slot, done, seconds):
        """Poll CALIB_STAT at rate_hz for up to seconds, until done(levels); the last levels."""
        stat = None
        for _ in range(max(1, int(round(seconds * self.rate_hz)))):
            self._tick()
            stat = self._retry(name, slot, slot.driver.calibration, "CALIB_STAT read")
            if done(stat):
                break
        return stat

    def _levels(self, name, stat):
        self.say("%s: CALIB_STAT gyro %d/3, accel %d/3, mag %d/3, system %d/3"
                 % (name, stat[1], stat[2], stat[3], stat[0]))

    def _bno055(self, name):
        """The chip calibrates itself from the motion it sees (datasheet 3.10; Bosch's application
        note): held still (gyro), several still positions (accel), a slow figure 8 (mag; system
        follows). Each step is asked for and CALIB_STAT polled until its level is 3 or the step's
        time is up (still_s, BNO_POSE_S a position, rotate_s)."""
        slot = self._start(name)
        self.say("%s (BNO055, calibrates itself): hold it still, then in six positions, then move it "
                 "in a slow figure 8" % name)
        self._pose(name, "+Z")
        self.prompt("hold %s still for %g s, press Enter" % (name, self.still_s))
        stat = self._watch(name, slot, lambda s: s[1] == 3, self.still_s)
        self._levels(name, stat)
        for face, _axis, _sign in FACES:
            if stat[2] == 3:
                break
            self._pose(name, face)
            self.prompt("hold %s still with %s up for %g s, press Enter" % (name, face, BNO_POSE_S))
            stat = self._watch(name, slot, lambda s: s[2] == 3, BNO_POSE_S)
        self._levels(name, stat)
        self._pose(name, "tumble")
        self.prompt("move %s in a slow figure 8, turning it through all directions, for up to %g s "
                    "(press Enter to start)" % (name, self.rotate_s))
        stat = self._watch(name, slot, lambda s: min(s) == 3, self.rotate_s)
        self._levels(name, stat)
        keys = ("system", "gyro", "accel", "mag")
        entry = {"chip": "bno055", "date": _now(), "calib_stat": dict(zip(keys, stat)),
                 "calibrated": {k: v == 3 for k, v in zip(keys, stat)}}
        if min(stat) == 3:
            # fully calibrated: keep the chip's profile (CONFIG mode and back, datasheet 3.10)
            from device.sensors.bno055 import decode_offsets
            b = self._retry(name, slot, slot.driver.read_offsets, "calibration profile read")
            entry["profile"] = b.hex()
            entry["profile_fields"] = decode_offsets(b)
        return entry

    def _mpu(self, name, chip):
        self._start(name)
        # 1. gyro bias, held still
        self._pose(name, "+Z")
        self.prompt("place %s flat and still (+Z up) for %g s, press Enter" % (name, self.still_s))
        g, a, _ = self._collect(name, self.still_s)
        gs, acs = self._still(name, g, a, "the still phase")
        bias = g.mean(0)
        self.say("%s: gyro bias %s deg/s (spread %.2f deg/s over %d samples)"
                 % (name, _fmt(bias / DEG, 3), gs, len(g)))
        entry = {"chip": chip, "date": _now(), "samples_hz": self.rate_hz,
                 "gyro_bias_rad_s": _list(bias), "gyro_samples": len(g)}
        # 2. the six faces
        means, sem = [], []
        for face, axis, sign in FACES:
            self._pose(name, face)
            self.prompt("place %s with %s up, press Enter" % (name, face))
            g, a, _ = self._collect(name, self.face_s)
            self._still(name, g, a, "the %s-up pose" % face)
            mean = a.mean(0)
            k = int(np.argmax(np.abs(mean)))
            if sign * mean[axis] < FACE_MIN_G * sensorcal.G:
                raise _err(name, "asked for %s up, but gravity is along %s%s (%s m/s^2): place it "
                           "and run again" % (face, "+" if mean[k] > 0 else "-", AXES[k], _fmt(mean, 2)))
            means.append(mean)
            sem.append(a.std(0) / np.sqrt(len(a)))
        means = np.array(means)
        sem = float(np.sqrt(np.mean(np.square(sem))))
        ab, s = sensorcal.fit_accelerometer(means)
        res = float(np.sqrt(np.mean((np.linalg.norm(s * (means - ab), axis=1) - sensorcal.G) ** 2)))
        before = float(np.sqrt(np.mean((np.linalg.norm(means, axis=1) - sensorcal.G) ** 2)))
        # six faces fit the six parameters exactly (residual ~0): the faces' own noise is the
        # uncertainty of the fit
        self.say("%s: accel bias %s m/s^2, scale %s; |g| error %.4f -> %.4f m/s^2 (RMS over 6 faces; "
                 "face noise %.4f m/s^2)" % (name, _fmt(ab, 4), _fmt(s, 5), before, res, sem))
        entry.update({"accel_bias_m_s2": _list(ab), "accel_scale": _list(s),
                      "accel_face_means_m_s2": [_list(x) for x in means], "accel_face_noise_m_s2": sem,
                      "accel_residual_m_s2": res, "accel_residual_before_m_s2": before})
        # 3. the magnetometer (MPU-9250's AK8963)
        if chip == "mpu9250":
            self._pose(name, "tumble")
            self.prompt("rotate %s slowly in all directions for %g s (press Enter to start)" % (name, self.rotate_s))
            _, _, m = self._collect(name, self.rotate_s)
            if len(m):
                keep = np.concatenate([[True], np.any(np.diff(m, axis=0) != 0, axis=1)])
                m = m[keep]                      # a 100 Hz chip read faster repeats its last sample
            if len(m) < 9:
                raise _err(name, "the magnetometer gave %d samples in %g s (need 9): is the AK8963 "
                           "reachable through the MPU-9250's bypass?" % (len(m), self.rotate_s))
            o, W = sensorcal.fit_magnetometer(m)
            n_cal = np.linalg.norm(sensorcal.apply(m, o, W), axis=1)
            n_raw = np.linalg.norm(m, axis=1)
            res = float(np.sqrt(np.mean((n_cal - np.median(n_cal)) ** 2)))
            res0 = float(np.sqrt(np.mean((n_raw - np.median(n_raw)) ** 2)))
            kind = "sphere" if np.array_equal(W, np.eye(3)) else "ellipsoid"
            self.say("%s: mag hard iron %s uT, soft iron %s fit; |field| %.1f uT, spread %.2f -> %.2f uT RMS%s"
                     % (name, _fmt(o, 2), kind, float(np.median(n_cal)), res0, res,
                        "" if kind == "ellipsoid" else " (too few directions: hard iron only, turn it more)"))
            entry.update({"mag_hard_iron_ut": _list(o), "mag_soft_iron": [_list(r) for r in W],
                          "mag_fit": kind, "mag_field_ut": float(np.median(n_cal)), "mag_samples": len(m),
                          "mag_residual_ut": res, "mag_residual_before_ut": res0})
        return entry


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _list(v):
    return [float(x) for x in np.asarray(v, float).ravel()]


def _fmt(v, nd):
    return "(" + ", ".join("%.*f" % (nd, x) for x in np.asarray(v, float).ravel()) + ")"
