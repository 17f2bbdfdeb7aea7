"""The unit's configuration: one JSON document describes sensors, buses, skeleton, placement, outputs.

    from device.capture.config import default_config, load_config
    cfg = default_config()                       # the simulated unit: CMU clip (on the human model), EKF
    cfg = default_config(body="human", chip="mpu6050", rate_hz=100)
    cfg = load_config("unit.json")               # FormatError naming the bad field

    {"format": "motionstaff-unit", "version": 1, "rate_hz": 30, "bits": 8,
     "body": "clip" | "human" | "human-floating" | "humanoid18" | "path/to/skeleton.json",
     "estimator": "ekf" | "orient" | ...,        # default "ekf" (the torque-state EKF); make_estimator()
                                                 # names, or "orient" (segment orientations, no dynamics)
     "blas_threads": 1,                          # OpenBLAS threads with a model estimator (0: leave it)
     "estimator_options": {},                    # make_estimator(**options), e.g. {"armature": 0.05}
     "fused_orientation": true,                  # BNO055 orientations to the EKF (obs.orient)
     "subject": {"clip": "builtin" | "walk.bvh", "seed": 1, "noise": {...}, "outages": [...],
                 "max_s": null | seconds retargeted} | null,   # ekf + body "clip": the human model
                                                               # performs the clip (capture/retarget.py)
     "calibration": {"still_s": 1.0},         # the still pose at the start of a capture
     "sensor_calibration": null | "cal.json",   # per-sensor corrections from `motionstaff calibrate`
     "buses": {"i2c-1": "sim-i2c://1?hz=400000", ...},   # name -> URL (i2c://1?hz=400000 on a
                                                 # Pi; hz: the clock config.txt set, default 100 kHz)
     "sensors": [{"name": "l_thigh_imu", "chip": "bno055" | "mpu6050" | "mpu9250",
                  "bus": "main", "addr": 40, "mux": {"addr": 112, "channel": 0} | null,
                  "link": "l_thigh", "position": [x, y, z], "mount_rpy_deg": [r, p, y],
                  "sim": {...} | absent}],      # simulated chip errors (device/capture/unit.py)
     "camera": null | {"url": "sim-cam://", "calibration": {...} | "camera.json"},
     "replay": null | "replay:raw.jsonl",       # sensors from a raw log / x-io CSV / BROAD .mat
     "sync_s": 1.0,                             # the recording is synced to the medium every
                                                 # sync_s of frames: the most a power cut loses
     "outputs": [{"kind": "packets", "url": "loop://"}, ...]}

subject null means real hardware. The sensor list of default_config() places one IMU on every
link that has rotation dofs, spread in link order over the five I2C controllers of a Raspberry Pi
4 (PI4_BUSES: i2c-1, i2c-3, i2c-4, i2c-5, i2c-6, docs/pi.md) at 400 kHz; two BNO055s (0x28/0x29)
per bus or per TCA9548A channel (multiplexers 0x70.. when a bus has more than two). Every bus's
reads must fit the frame period (device/capture/busbudget.py checks it before capturing).
"""

import json
import os

from protocol.errors import FormatError

FORMAT = "motionstaff-unit"
CHIPS = ("bno055", "mpu6050", "mpu9250")
_ADDR = {"bno055": (0x28, 0x29), "mpu6050": (0x68, 0x69), "mpu9250": (0x68, 0x69)}
# the Raspberry Pi 4's I2C controllers with their default pins (dtoverlay=i2c3 ..., docs/pi.md)
PI4_BUSES = ("i2c-1", "i2c-3", "i2c-4", "i2c-5", "i2c-6")
DEFAULT_BUS_HZ = 400000          # fast mode: BNO055 (datasheet 4.6), MPU-6050/9250, TCA9548A
BUILTIN_CLIP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                            "cmu_131_01_30fps.bvh")


def default_config(body="clip", chip="bno055", rate_hz=30.0, clip="builtin", seed=1,
                   estimator="ekf", camera=False):
    cfg = {"format": FORMAT, "version": 1, "rate_hz": float(rate_hz), "bits": 8, "body": body,
           "estimator": estimator,
           "subject": {"clip": clip, "seed": seed, "calib_s": 1.0, "blend_s": 0.5, "noise": {},
                       "outages": []},
           "calibration": {"still_s": 1.0},
           "buses": sim_buses(),
           "sensors": None,          # filled from the skeleton by place_sensors()
           "chip": chip,
           "camera": {"url": "sim-cam://", "calibration": None} if camera else None,
           "outputs": []}
    return check(cfg)


def sim_buses(names=PI4_BUSES, hz=DEFAULT_BUS_HZ):
    """{name: "sim-i2c://N?hz=..."}: the twins of a Pi's buses ("i2c-3" -> sim-i2c://3)."""
    return {n: "sim-i2c://%s?hz=%d" % (n.split("-")[-1], hz) for n in names}


def place_sensors(skeleton, chip="bno055", bus=None, buses=None):
    """One IMU per link with rotation dofs (and the root), in link order spread over `buses`
    (contiguous, as even as they go; `bus`: all on that one), each bus's beyond two behind
    TCA9548A multiplexers (two per channel, one for MPU-9250s, whose AK8963 answers at 0x0C)."""
    names = [bus] if bus is not None else list(buses or PI4_BUSES)
    addrs = _ADDR[chip]
    per_ch = 1 if chip == "mpu9250" else 2
    links = []
    for i, ln in enumerate(skeleton.links):
        rot = [j for j in ln.dofs if skeleton.dofs[j].kind == "rotation"]
        if rot or ln.parent < 0:
            links.append(i)
    nb = len(names)
    counts = [len(links) // nb + (1 if b < len(links) % nb else 0) for b in range(nb)]
    out = []
    at = 0
    for b, name in enumerate(names):
        n = counts[b]
        if n > 8 * 8 * per_ch:
            raise ValueError("%d IMUs do not fit behind 8 multiplexers on bus %s" % (n, name))
        for k in range(n):
            i = links[at]
            at += 1
            ln = skeleton.links[i]
            # where the skeleton already has an IMU feature on this link, the sensor sits there
            pos = [0.0, 0.0, 0.0]
            for f in skeleton.features:
                if f.kind == "imu" and f.link == i:
                    pos = [float(x) for x in f.position]
                    break
            mux = None
            if n > per_ch:
                mux = {"addr": 0x70 + k // (per_ch * 8), "channel": (k // per_ch) % 8}
            out.append({"name": ln.name + "_imu", "chip": chip, "bus": name, "addr": addrs[k % per_ch],
                        "mux": mux, "link": ln.name, "position": pos, "mount_rpy_deg": [0.0, 0.0, 0.0]})
    return out


# addresses a chip also answers on its bus: the MPU-9250's magnetometer (AK8963, bypass mode)
_IMPLIED = {"mpu9250": (0x0C,)}


def _check_addresses(sensors, where):
    # per bus: a chip wired directly answers whatever multiplexer channel is enabled, so its
    # address must be unique among every chip of the bus and the multiplexers' own addresses;
    # a chip behind a channel must be unique on that channel and not a multiplexer's address
    by_bus = {}
    for s in sensors:
        by_bus.setdefault(s["bus"], []).append(s)
    for bus, ss in by_bus.items():
        muxes = set(s["mux"]["addr"] for s in ss if s.get("mux"))
        direct = {}
        behind = {}
        seats = []
        for s in ss:
            seats.append((s, s["addr"]))
            for extra in _IMPLIED.get(s["chip"], ()):
                seats.append((s, extra))
        for s, a in seats:
            if a in muxes:
                raise FormatError("%s: sensor %r on bus %s: address 0x%02x is a multiplexer's"
                                  % (where, s["name"], bus, a))
            mux = s.get("mux")
            seat = direct if not mux else behind.setdefault((mux["addr"], mux["channel"]), {})
            other = seat.get(a) or direct.get(a) or (None if mux else _behind_at(behind, a))
            if other is not None:
                raise FormatError("%s: sensors %r and %r answer the same address 0x%02x on bus %s"
                                  % (where, other, s["name"], a, bus))
            seat[a] = s["name"]


def _behind_at(behind, a):
    for seat in behind.values():
        if a in seat:
            return seat[a]
    return None


def _need(cfg, key, kinds, where):
    if key not in cfg:
        raise FormatError("%s: '%s' is missing" % (where, key))
    if not isinstance(cfg[key], kinds):
        raise FormatError("%s: '%s' has the wrong type" % (where, key))
    return cfg[key]


def check(cfg, where="unit config"):
    if not isinstance(cfg, dict):
        raise FormatError("%s: not a JSON object" % where)
    if cfg.get("format") != FORMAT:
        raise FormatError("%s: 'format' must be %r" % (where, FORMAT))
    rate = _need(cfg, "rate_hz", (int, float), where)
    if not 0 < rate <= 1000:
        raise FormatError("%s: 'rate_hz' must be in (0, 1000]" % where)
    if cfg.get("bits", 8) not in (8, 16):
        raise FormatError("%s: 'bits' must be 8 or 16" % where)
    sync = cfg.get("sync_s", 1.0)
    if isinstance(sync, bool) or not isinstance(sync, (int, float)) or not 0 < sync <= 3600:
        raise FormatError("%s: 'sync_s' must be seconds in (0, 3600]" % where)
    if cfg.get("chip", "bno055") not in CHIPS:
        raise FormatError("%s: 'chip' must be one of %s" % (where, ", ".join(CHIPS)))
    _need(cfg, "body", str, where)
    buses = _need(cfg, "buses", dict, where)
    from device.hal import split_url
    from device.hal.i2c_sim import parse_hz
    wires = {}
    for name, url in buses.items():
        try:
            scheme, rest = split_url(str(url))
            bus_no = parse_hz(rest)[0]
        except ValueError as e:
            raise FormatError("%s: buses %r: %s" % (where, name, e))
        # two names for one controller are one set of wires: never budgeted (or read) in parallel
        key = (scheme, bus_no)
        if key in wires:
            raise FormatError("%s: buses %r and %r are the same I2C bus (%s://%s)"
                              % (where, wires[key], name, scheme, bus_no))
        wires[key] = name
    sensors = cfg.get("sensors")
    if sensors is not None:
        if not isinstance(sensors, list):
            raise FormatError("%s: 'sensors' must be a list" % where)
        names = set()
        for i, s in enumerate(sensors):
            at = "%s: sensors[%d]" % (where, i)
            if not isinstance(s, dict):
                raise FormatError("%s: not an object" % at)
            for key in ("name", "chip", "bus", "addr", "link"):
                if key not in s:
                    raise FormatError("%s: '%s' is missing" % (at, key))
            if s["chip"] not in CHIPS:
                raise FormatError("%s: chip %r is not one of %s" % (at, s["chip"], ", ".join(CHIPS)))
            if s["bus"] not in buses:
                raise FormatError("%s: bus %r is not in 'buses'" % (at, s["bus"]))
            if not isinstance(s["addr"], int) or not 0x08 <= s["addr"] <= 0x77:
                raise FormatError("%s: 'addr' must be a 7-bit I2C address" % at)
            if s["name"] in names:
                raise FormatError("%s: name %r repeats" % (at, s["name"]))
            names.add(s["name"])
            mux = s.get("mux")
            if mux is not None and (not isinstance(mux, dict) or not 0 <= mux.get("channel", -1) <= 7
                                    or not 0x70 <= mux.get("addr", 0) <= 0x77):
                raise FormatError("%s: 'mux' needs addr 0x70..0x77 and channel 0..7" % at)
            if s.get("sim") is not None and not isinstance(s["sim"], dict):
                raise FormatError("%s: 'sim' must be an object" % at)
        _check_addresses(sensors, where)
    scal = cfg.get("sensor_calibration")
    if scal is not None and not isinstance(scal, (str, dict)):
        raise FormatError("%s: 'sensor_calibration' must be a file name (or an inline object)" % where)
    outs = cfg.get("outputs", [])
    if not isinstance(outs, list):
        raise FormatError("%s: 'outputs' must be a list" % where)
    return cfg


def load_config(path):
    try:
        with open(path) as f:
            cfg = json.load(f)
    except ValueError as e:
        raise FormatError("%s: not valid JSON (%s)" % (path, e))
    return check(cfg, path)
