"""`motionstaff calibrate`: walk through the poses each IMU's calibration needs, write the result.

    motionstaff calibrate --chip mpu9250 --out cal.json --yes      # the simulated unit, no waiting
    motionstaff calibrate --config unit.json --sensor l_thigh_imu --out cal.json   # a Pi, one sensor
    # then "sensor_calibration": "cal.json" in unit.json: `capture` applies it to every reading

The unit is built as `capture` builds it (no --config: the simulated unit, one IMU per link of
the human model, --chip like capture's); each sensor is read through the same driver and
SensorSlot. MPU-6050/6500: gyro bias (held still, +Z up) and the accelerometer's six faces;
MPU-9250: also the magnetometer turned in all directions (hard/soft iron); BNO055: its own
CALIB_STAT (it calibrates itself) and, once fully calibrated, its 22-byte calibration profile,
which `capture` writes back after each init() (the chip's reset loses it). On a terminal each pose waits for Enter; with --yes or a
stdin that is not a terminal it does not wait (the simulated unit turns its chips itself).
Every problem is one line naming the sensor, exit status 2. See device/capture/calibration.py.
"""

import json
import os
import sys

HELP = "guided IMU calibration (gyro bias, accelerometer faces, magnetometer) into a calibration JSON"


def add_arguments(p):
    p.add_argument("--config", help="unit configuration JSON (default: the simulated unit)")
    p.add_argument("--sensor", default="all", help="sensor name from the config, or 'all' (default)")
    p.add_argument("--out", default="calibration.json",
                   help="calibration JSON to write (default calibration.json); other sensors' "
                        "entries already in it are kept")
    p.add_argument("--yes", action="store_true", help="do not wait for Enter at each pose")
    p.add_argument("--chip", choices=("bno055", "mpu6050", "mpu9250"), help="simulated IMU chip")
    p.add_argument("--seed", type=int, help="simulated unit's seed")
    p.add_argument("--still-s", type=float, default=2.0, help="seconds held still for the gyro bias (2)")
    p.add_argument("--face-s", type=float, default=1.0, help="seconds per accelerometer face (1)")
    p.add_argument("--rotate-s", type=float, default=20.0,
                   help="seconds of turning for the magnetometer / the BNO055's wait (20)")
    p.add_argument("--rate", type=float, default=100.0, help="samples per second (100)")
    p.add_argument("--json", action="store_true", help="print the written document as JSON")


MAX_SECONDS = 3600.0      # --still-s, --face-s, --rotate-s
MIN_RATE_HZ, MAX_RATE_HZ = 1.0, 1000.0     # the MPU's FIFO runs at most 1 kHz
MIN_MAG_SAMPLES = 9       # sensorcal.fit_magnetometer's minimum


def _config(args):
    from device.capture.config import default_config, load_config
    if args.config:
        if args.chip:
            raise ValueError("--chip chooses the simulated unit's IMUs: with --config the chips are "
                             "the config's (%s)" % args.config)
        cfg = load_config(args.config)
    else:
        # capture's default unit runs the human model (the EKF retargets the clip onto it): the
        # same sensors, without retargeting a clip that calibration does not need
        cfg = default_config(body="human", chip=args.chip or "bno055")
    if cfg.get("subject") is not None and args.seed is not None:
        cfg["subject"]["seed"] = args.seed
    if cfg.get("sensors") == []:
        raise ValueError("%s: 'sensors' is empty: no sensor to calibrate" % args.config)
    if cfg.get("replay"):
        raise ValueError("calibrate needs the unit's sensors, not a replay ('replay' in %s)" % args.config)
    cfg = dict(cfg, sensor_calibration=None)     # calibrate raw readings, never corrected ones
    return cfg


def _check_out(path):
    """Fail before any pose is held: the directory must exist and be writable; an existing file
    must be a calibration (its other sensors are kept)."""
    from device.capture.calibration import read_calibration
    if not path:
        raise ValueError("--out needs a file name")
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory (--out needs a file name)", path)
    if os.path.exists(path) and not os.path.isfile(path):
        # /dev/null, a FIFO, a device: the atomic rename at the end would replace it
        raise ValueError("%s: not a regular file (--out needs a calibration file)" % path)
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise FileNotFoundError(2, "No such directory for --out", path)
    if not os.access(d, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise PermissionError(13, "Permission denied (--out)", path)
    # really try: os.access says yes to root on a read-only mount, /proc or /sys
    probe = os.path.realpath(path) + ".tmp"
    existed = os.path.exists(probe)
    with open(probe, "a"):
        pass
    if not existed:
        os.remove(probe)
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return read_calibration(path)["sensors"]
    return {}


def run(args):
    from device.capture.calibration import Calibrator, save_calibration
    from device.capture.unit import build_unit
    from device.capture.calibration import check_for_unit, load_calibration
    for opt in ("still_s", "face_s", "rotate_s", "rate"):
        v = getattr(args, opt)
        hi = MAX_RATE_HZ if opt == "rate" else MAX_SECONDS
        if not 0 < v <= hi:              # also NaN and inf
            raise ValueError("--%s must be > 0 and at most %g, got %s" % (opt.replace("_", "-"), hi, v))
    if args.rate < MIN_RATE_HZ:
        raise ValueError("--rate must be at least %g samples/s, got %s" % (MIN_RATE_HZ, args.rate))
    cfg = _config(args)
    kept = _check_out(args.out)
    unit = build_unit(cfg)
    try:
        names = [s.name for s in unit.slots]
        if args.sensor != "all":
            if args.sensor not in names:
                raise ValueError("sensor %s: not in the unit's configuration (sensors: %s)"
                                 % (args.sensor, ", ".join(names)))
            names = [args.sensor]
        # the entries kept from --out must fit this unit too (capture refuses them otherwise)
        others = {k: v for k, v in kept.items() if k not in names}     # those calibrated now are replaced
        check_for_unit(load_calibration({"format": "motionstaff-imu-calibration", "sensors": others}),
                       unit.specs, args.out)
        chips = {s["name"]: s["chip"] for s in unit.specs}
        n_mag = args.rotate_s * args.rate
        if any(chips[n] == "mpu9250" for n in names) and n_mag < MIN_MAG_SAMPLES:
            raise ValueError("--rotate-s %g at --rate %g gives %d magnetometer samples (the fit needs %d): "
                             "turn it longer" % (args.rotate_s, args.rate, int(n_mag), MIN_MAG_SAMPLES))
        wait = not args.yes and sys.stdin is not None and sys.stdin.isatty()
        say = lambda text: print(text, file=sys.stderr if args.json else sys.stdout, flush=True)

        def prompt(text):
            if wait:
                input(text + " ")
            else:
                say(text.replace(", press Enter", "").replace(" (press Enter to start)", ""))

        cal = Calibrator(unit, prompt=prompt, say=say, still_s=args.still_s, face_s=args.face_s,
                         rotate_s=args.rotate_s, rate_hz=args.rate)
        sim = " (simulated)" if unit.subject is not None else ""
        say("calibrating %d sensor(s)%s: %s" % (len(names), sim, ", ".join(names)))
        entries = {}
        for name in names:
            e = cal.run(name)
            entries[name] = e
            if e["chip"] == "bno055":
                st = e["calib_stat"]
                say("%s: BNO055 calibrates itself; CALIB_STAT %s" % (name, "  ".join(
                    "%s %d/3 %s" % (k, v, "calibrated" if v == 3 else "NOT calibrated")
                    for k, v in st.items())))
                old = kept.get(name) or {}
                if min(st.values()) < 3 and old.get("profile") is not None:
                    # a check that did not reach 3/3/3/3 must not throw away a profile saved before
                    e["profile"] = old["profile"]
                    if "profile_fields" in old:
                        e["profile_fields"] = old["profile_fields"]
                    e["profile_date"] = old.get("profile_date", old.get("date"))
                    say("%s: not fully calibrated this time; kept the calibration profile saved %s "
                        "(capture restores it); keep moving it and run again for a new one"
                        % (name, e["profile_date"] or "before"))
                elif min(st.values()) < 3:
                    say("%s: keep moving it (still, six positions, figure 8) and run again to check; "
                        "no calibration profile saved" % name)
                else:
                    say("%s: calibration profile saved (22 bytes, %s); capture restores it after init"
                        % (name, " ".join("%s %d" % (k, v) for k, v in e["profile_fields"].items())))
    finally:
        unit.close()
    kept.update(entries)
    doc = save_calibration(args.out, kept)
    say("wrote %s (%d sensor(s)); name it in the unit config: \"sensor_calibration\": %s"
        % (args.out, len(entries), json.dumps(args.out)))
    if args.json:
        print(json.dumps(doc))
    return 0
