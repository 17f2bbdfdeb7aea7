"""Raw sensor logs (`--raw-log FILE`) and `replay:` sensor sources, including real recordings.

    from device.capture.rawlog import RawLogWriter, open_replay
    log = RawLogWriter("raw.jsonl", unit)          # the capture loop calls log.write(k, t_s, readings)
    src = open_replay("replay:raw.jsonl")          # src.read(t_s) -> the same readings, frame by frame
    src = open_replay("replay:sensor_data.csv")    # x-io CSV: Time (s), gyro deg/s, accel g[, mag uT]
    src = open_replay("replay:02_undisturbed_slow_rotation_B.mat")   # BROAD (scipy.io.loadmat)

A raw log is JSON Lines: a header line {"format": "motionstaff-rawlog", "version": 1, "rate_hz",
"config", "skeleton"}, then one line per frame {"k", "t", "r": {name: [gx, gy, gz, ax, ay, az,
(qw, qx, qy, qz)] | null}, "s": {name: [[gx, gy, gz, ax, ay, az], ...]}, "m": {name: [mx, my, mz]}}
in rad/s, m/s^2, uT ("s": the FIFO samples of gyro/accel chips since the previous frame; "m":
the magnetometer of MPU-9250s, absent in older logs, which replay without it). Replaying it through build_unit(..., replay=src)
reruns calibration and estimation with other settings. Recordings at another rate are resampled
to the loop's: the gyro is averaged over each frame (the same rotation, to first order), the
accelerometer is the last sample.
"""

import json

import numpy as np

from protocol.errors import FormatError

G = 9.80665
# a reading beyond this (rad/s, m/s^2) no chip gives (MPU-6050: 35 rad/s, 157 m/s^2; MTw 160 m/s^2):
# replayed, like a non-finite one or a quaternion far from unit norm, as a lost reading (null)
READING_MAX = 1e4


class RawLogWriter:
    def __init__(self, path, unit):
        self.f = open(path, "w")
        head = {"format": "motionstaff-rawlog", "version": 1, "rate_hz": unit.rate_hz,
                "config": unit.cfg, "sensors": unit.specs, "skeleton": unit.skeleton.to_dict()}
        self.f.write(json.dumps(head, separators=(",", ":")) + "\n")

    def write(self, k, t_s, readings):
        r = {}
        fifo = {}
        mag = {}
        for name, v in readings.items():
            if v is None:
                r[name] = None
            else:
                row = list(v["gyro"]) + list(v["accel"])
                if v.get("quat") is not None:
                    row += list(v["quat"])
                r[name] = [round(float(x), 7) for x in row]
                if v.get("samples"):
                    fifo[name] = [[round(float(x), 7) for x in tuple(g) + tuple(a)] for g, a in v["samples"]]
                if v.get("mag") is not None:
                    mag[name] = [round(float(x), 5) for x in v["mag"]]
        d = {"k": k, "t": round(t_s, 6), "r": r}
        if fifo:
            d["s"] = fifo
        if mag:
            d["m"] = mag
        self.f.write(json.dumps(d, separators=(",", ":")) + "\n")
        self.f.flush()

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None


class JsonlReplay:
    """Frames of a raw log, in order (read() ignores t_s: one frame per call)."""

    def __init__(self, path):
        self.path = path
        with open(path) as f:
            first = f.readline()
            try:
                self.head = json.loads(first)
            except ValueError:
                raise FormatError("%s: not a motionstaff raw log" % path)
            if not isinstance(self.head, dict) or self.head.get("format") != "motionstaff-rawlog":
                raise FormatError("%s: not a motionstaff raw log" % path)
            self.lines = f.readlines()
        # a power cut mid-write leaves a partial last line (the writer flushes each whole one):
        # what it cut is lost, every whole frame before it replays
        self.cut = False
        if self.lines and not self.lines[-1].endswith("\n"):
            try:
                json.loads(self.lines[-1])
            except ValueError:
                self.lines.pop()
                self.cut = True
        self.rate_hz = self.head["rate_hz"]
        self.k = 0
        # every frame checked before the run starts (a bad line is named, nothing is recorded)
        for i in range(len(self.lines)):
            self.k = i
            self.read()
        self.k = 0

    @property
    def frames(self):
        return len(self.lines)

    def peek(self, start, stop):
        """Frames start..stop-1 without consuming them (a functional calibration reads the
        first strides ahead; device/capture/functional.py)."""
        k = self.k
        out = []
        try:
            for i in range(max(0, start), min(stop, len(self.lines))):
                self.k = i
                out.append(self.read())
        finally:
            self.k = k
        return out

    def read(self, t_s=None):
        if self.k >= len(self.lines):
            raise EOFError("%s: end of the raw log" % self.path)
        try:
            d = json.loads(self.lines[self.k])
        except ValueError:
            raise FormatError("%s: line %d is not JSON" % (self.path, self.k + 2))
        self.k += 1
        at = "%s: line %d" % (self.path, self.k + 1)
        try:
            return self._frame(d)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
            raise FormatError("%s: not a raw log frame (%s)" % (at, e))

    def _frame(self, d):
        if not isinstance(d, dict) or not isinstance(d.get("r"), dict):
            raise ValueError("'r' must be an object {name: reading}")
        if not isinstance(d.get("m", {}), dict) or not isinstance(d.get("s", {}), dict):
            raise ValueError("'m' and 's' must be objects {name: ...}")
        out = {}
        for name, row in d["r"].items():
            if row is None or not _possible(name, row, (6, 10)):
                out[name] = None
            else:
                out[name] = {"gyro": tuple(row[0:3]), "accel": tuple(row[3:6]),
                             "quat": tuple(row[6:10]) if len(row) >= 10 else None}
        for name, rows in d.get("s", {}).items():
            if not isinstance(rows, list):
                raise ValueError("'s' of %s must be a list of samples" % name)
            if out.get(name) is not None:
                if not all(_possible(name, x, (6,)) for x in rows):
                    out[name] = None
                    continue
                out[name]["samples"] = [(tuple(x[0:3]), tuple(x[3:6])) for x in rows]
        for name, m in d.get("m", {}).items():
            if m is None:
                continue                        # no magnetometer reading this frame
            if (not isinstance(m, list) or len(m) != 3 or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) for x in m)):
                raise ValueError("'m' of %s must be 3 finite numbers (uT), got %s" % (name, json.dumps(m)[:60]))
            if out.get(name) is not None:
                out[name]["mag"] = tuple(float(x) for x in m)
        return out


def _possible(name, row, lengths):
    """False for a reading no chip gives (non-finite, beyond READING_MAX, a quaternion far from
    unit norm); ValueError for one that is not a reading at all."""
    if (not isinstance(row, list) or len(row) not in lengths
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row)):
        raise ValueError("the reading of %s must be %s numbers, got %s"
                         % (name, " or ".join(str(n) for n in lengths), json.dumps(row)[:60]))
    if not all(np.isfinite(x) and abs(x) <= READING_MAX for x in row):
        return False
    if len(row) == 10 and not 0.5 < sum(x * x for x in row[6:10]) < 1.5:
        return False
    return True


class ArrayReplay:
    """A single sensor's recording (times, gyro rad/s, accel m/s^2) resampled to the loop rate."""

    def __init__(self, name, t_s, gyro_rad_s, accel_m_s2, rate_hz, path=""):
        self.name = name
        self.t = np.asarray(t_s, float) - float(t_s[0])
        self.gyro = np.asarray(gyro_rad_s, float)
        self.accel = np.asarray(accel_m_s2, float)
        self.rate_hz = rate_hz
        self.path = path
        self.k = 0
        self._i = 0

    @property
    def frames(self):
        return int(self.t[-1] * self.rate_hz)

    def read(self, t_s=None):
        t_end = (self.k + 1) / self.rate_hz
        if t_end > self.t[-1]:
            raise EOFError("%s: end of the recording" % self.path)
        j = int(np.searchsorted(self.t, t_end, side="right"))
        i = self._i
        if j <= i:
            j = i + 1
        g = self.gyro[i:j].mean(0)
        a = self.accel[j - 1]
        self._i = j
        self.k += 1
        return {self.name: {"gyro": tuple(g), "accel": tuple(a), "quat": None}}


def xio_csv(path, name="imu", rate_hz=100.0):
    """x-io CSV (Fusion / Gait-Tracking): Time (s), Gyroscope deg/s x3, Accelerometer g x3, ..."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")            # an empty file: the shape check says so
            data = np.genfromtxt(path, delimiter=",", skip_header=1)
    except ValueError as e:
        raise FormatError("%s: not an x-io CSV (%s)" % (path, e))
    if data.ndim != 2 or data.shape[1] < 7:
        raise FormatError("%s: expected Time, 3 gyro, 3 accel columns" % path)
    return ArrayReplay(name, data[:, 0], np.radians(data[:, 1:4]), data[:, 4:7] * G, rate_hz, path)


def broad_mat(path, name="imu", rate_hz=None):
    """A BROAD benchmark trial (imu_gyr rad/s, imu_acc m/s^2, opt_quat reference); .reference."""
    import scipy.io
    try:
        m = scipy.io.loadmat(path)
    except OSError:
        raise
    except Exception as e:                 # scipy's MatReadError, ValueError, ... on a bad file
        raise FormatError("%s: not a MATLAB file (%s)" % (path, e))
    missing = [k for k in ("sampling_rate", "imu_gyr", "imu_acc", "opt_quat") if k not in m]
    if missing:
        raise FormatError("%s: not a BROAD trial (no %s)" % (path, ", ".join(missing)))
    fs = float(np.ravel(m["sampling_rate"])[0])
    n = m["imu_gyr"].shape[0]
    src = ArrayReplay(name, np.arange(n) / fs, m["imu_gyr"], m["imu_acc"], rate_hz or fs, path)
    src.reference_quat = m["opt_quat"]
    src.sample_rate_hz = fs
    return src


def open_replay(url, rate_hz=None, name="imu"):
    """A replay source for "replay:FILE" (.jsonl raw log, .csv x-io, .mat BROAD)."""
    path = url[len("replay:"):] if url.startswith("replay:") else url
    if path.endswith(".csv"):
        return xio_csv(path, name, rate_hz or 100.0)
    if path.endswith(".mat"):
        return broad_mat(path, name, rate_hz)
    return JsonlReplay(path)


def single_imu_config(rate_hz, name="imu"):
    """A unit config for one IMU on a free-floating body (orientation rows yaw, pitch, roll)."""
    return {"format": "motionstaff-unit", "version": 1, "rate_hz": float(rate_hz), "bits": 16,
            "body": "single-imu", "estimator": "orient", "subject": None,
            "calibration": {"still_s": 0.5}, "buses": {"main": "sim-i2c://"},
            "sensors": [{"name": name, "chip": "mpu6050", "bus": "main", "addr": 0x68,
                         "link": "body"}], "outputs": []}


def single_imu_skeleton():
    from device.body.skeleton import Dof, Feature, Link, Skeleton
    links = [Link("body", -1, (0, 0, 0), 0.1)]
    dofs = [Dof("yaw", 0, "rotation", (0, 0, 1), -180, 180),
            Dof("pitch", 0, "rotation", (0, 1, 0), -90, 90),
            Dof("roll", 0, "rotation", (1, 0, 0), -180, 180)]
    return Skeleton(links, dofs, [Feature("imu", 0, "imu", (0, 0, 0))], name="single-imu",
                    gravity=(0.0, 0.0, -9.81))
