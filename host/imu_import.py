"""Real IMU recordings into the unit's raw log (docs/rawlog.md): Xsens MT Manager exports, generic CSV.

    from host.imu_import import load_mapping, read_xsens, read_csv, write_rawlog
    m = load_mapping("neura.json")     # {"format": "motionstaff-imu-map", "sensors": {id: segment}}
    rec = read_xsens(["rawimu/S02-...-000_00B40B91.txt", ...], m)    # or read_csv("walk.csv", m)
    write_rawlog("walk.jsonl", rec)    # then: motionstaff capture --replay walk.jsonl --config unit.json

A recording is {"rate_hz", "names" [sensor names], "frames": F, "gyro" {name: (F, 3) rad/s},
"accel" {name: (F, 3) m/s^2}, "quat" {name: (F, 4) wxyz | None}, "mag" {name: (F, 3) | None},
"valid" {name: (F,) bool}, "config", "source"}. A frame whose packet a sensor lost (a gap in the
Xsens packet counter, a missing CSV time step) is null for that sensor in the log: the unit
sees a stale sensor exactly as it would live; nothing is interpolated.

Mapping file: {"format": "motionstaff-imu-map", "version": 1, "body": "human-legs",
"sensors": {"00B40B91": "pelvis", "00B40C44": {"link": "l_shank", "name": "l_shank_low_imu"}}}:
a sensor id (Xsens: the device id in the file name, ..._00B40B91.txt; CSV: the sensor column)
to a segment (a link of the body; the log's sensor is link + "_imu") or {"link", "name"}.
Every recording's sensor must be in the mapping, or it is named and nothing is written.
Xsens magnetometer readings are normalised (1 = the field where the MT was calibrated):
"mag_ut_per_unit" (default 50) turns them into uT.
"""

import json
import os
import re

import numpy as np

from protocol.errors import FormatError

MAP_FORMAT = "motionstaff-imu-map"
XSENS_COLUMNS = ("PacketCounter", "Acc_X", "Acc_Y", "Acc_Z", "Gyr_X", "Gyr_Y", "Gyr_Z")
CSV_REQUIRED = ("time_s", "sensor", "gyro_x_rad_s", "gyro_y_rad_s", "gyro_z_rad_s",
                "accel_x_m_s2", "accel_y_m_s2", "accel_z_m_s2")
CSV_MAG = ("mag_x_ut", "mag_y_ut", "mag_z_ut")
CSV_QUAT = ("quat_w", "quat_x", "quat_y", "quat_z")
COUNTER_WRAP = 65536


def _no_repeats(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise FormatError("%r named twice" % k)
        d[k] = v
    return d


def load_mapping(path):
    try:
        with open(path) as f:
            m = json.load(f, object_pairs_hook=_no_repeats)
    except FormatError as e:
        raise FormatError("%s: %s (a sensor once, one segment each)" % (path, e))
    except ValueError as e:
        raise FormatError("%s: not valid JSON (%s)" % (path, e))
    if not isinstance(m, dict) or m.get("format") != MAP_FORMAT:
        raise FormatError("%s: not a sensor mapping ('format' must be %r)" % (path, MAP_FORMAT))
    if not isinstance(m.get("sensors"), dict) or not m["sensors"]:
        raise FormatError("%s: 'sensors' must be an object {sensor id: segment}" % path)
    from device.capture.lowerbody import legs_skeleton
    links = set(legs_skeleton().link_names)
    out = {}
    for sid, v in m["sensors"].items():
        e = {"link": v} if isinstance(v, str) else v
        if not isinstance(e, dict) or not isinstance(e.get("link"), str) or e["link"] not in links:
            raise FormatError("%s: sensor %s: segment %r is not a link of the body" % (path, sid, v))
        name = e.get("name", e["link"] + "_imu")
        if not isinstance(name, str) or not name:
            raise FormatError("%s: sensor %s: name %r is not a sensor name" % (path, sid, name))
        out[str(sid)] = {"link": e["link"], "name": name}
    names = [e["name"] for e in out.values()]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise FormatError("%s: two sensors map to the same name %s (%s; give one a {\"link\", \"name\"})"
                          % (path, dup, " and ".join(k for k, e in out.items() if e["name"] == dup)))
    mag = m.get("mag_ut_per_unit", 50.0)
    if not isinstance(mag, (int, float)) or isinstance(mag, bool) or not 0 < mag < 1e4:
        raise FormatError("%s: mag_ut_per_unit %r is not a positive number" % (path, mag))
    return {"sensors": out, "body": m.get("body", "human-legs"),
            "mag_ut_per_unit": float(mag), "path": path}


def _mapped(mapping, sid, path):
    e = mapping["sensors"].get(sid)
    if e is None:
        raise FormatError("%s: sensor %s is not in the mapping %s" % (path, sid, mapping.get("path", "")))
    return e


def _read_xsens_file(path):
    """(rate_hz, header columns, rows (N, C) float) of one MT Manager export."""
    rate = None
    head = None
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    k = 0
    for k, line in enumerate(lines):
        if line.startswith("//"):
            mt = re.search(r"Update Rate:\s*([0-9]+(?:\.[0-9]*)?)\s*Hz", line)
            if mt:
                rate = float(mt.group(1))
            continue
        head = [c.strip() for c in line.split(",")]
        break
    if head is None or any(c not in head for c in XSENS_COLUMNS):
        raise FormatError("%s: not an Xsens MT Manager export (no PacketCounter, Acc_*, Gyr_* header)" % path)
    if rate is None:
        raise FormatError("%s: no '// Update Rate: ...Hz' line" % path)
    if not 0 < rate <= 10000:
        raise FormatError("%s: Update Rate %g Hz is not a sample rate (0 < rate <= 10000)" % (path, rate))
    rows = []
    for n, line in enumerate(lines[k + 1:], k + 2):
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != len(head):
            raise FormatError("%s: line %d has %d columns, the header %d" % (path, n, len(cells), len(head)))
        try:
            row = [float(c) if c.strip() else np.nan for c in cells]
        except ValueError:
            raise FormatError("%s: line %d: not a number" % (path, n))
        if any(c.strip() and not np.isfinite(v) for c, v in zip(cells, row)):
            raise FormatError("%s: line %d: a value is inf or nan (an empty cell is a lost value)" % (path, n))
        rows.append(row)
    if not rows:
        raise FormatError("%s: no samples" % path)
    return rate, head, np.array(rows, float)


def read_xsens(paths, mapping, max_gap_s=0.5):
    """MT Manager exports (one file per sensor, id at the end of the name) -> a recording.
    Lost packets (PacketCounter gaps) become null frames of that sensor; a gap longer than
    max_gap_s is refused (the file named, with the counter where it starts)."""
    files = []
    for p in paths:
        sid = os.path.splitext(os.path.basename(p))[0].rsplit("_", 1)[-1]
        files.append((p, sid))
    for p, sid in files:
        _mapped(mapping, sid, p)                # every file named in the mapping, before reading
    seen = {}
    for p, sid in files:
        if sid in seen:
            raise FormatError("%s: sensor %s repeats (also %s)" % (p, sid, seen[sid]))
        seen[sid] = p
    data = []
    lost = {}
    for p, sid in files:
        rate, head, a = _read_xsens_file(p)
        col = {c: i for i, c in enumerate(head)}
        if np.isnan(a[:, col["PacketCounter"]]).any():
            raise FormatError("%s: a sample without a PacketCounter" % p)
        # packet counters wrap at 2^16: unwrap, then each step must be 1 (a gap: lost packets)
        c = a[:, col["PacketCounter"]].astype(np.int64)
        d = np.diff(c) % COUNTER_WRAP
        if (d == 0).any():
            raise FormatError("%s: PacketCounter %d repeats" % (p, c[1:][d == 0][0]))
        if data:
            # the station's counters run together: place this file's first counter next to
            # the first file's, across the wrap (65535 then 0 is one step, not 65535 back)
            c0 = data[0][5][0] + ((int(c[0]) - data[0][5][0] + COUNTER_WRAP // 2) % COUNTER_WRAP
                                  - COUNTER_WRAP // 2)
        else:
            c0 = int(c[0])
        cu = np.concatenate([[c0], c0 + np.cumsum(d)])
        big = np.nonzero(d - 1 > max_gap_s * rate)[0]
        if len(big):
            i = big[0]
            raise FormatError("%s: %d packets lost after PacketCounter %d (%.2f s > max_gap_s %.2f)"
                              % (p, d[i] - 1, c[i], (d[i] - 1) / rate, max_gap_s))
        if (d > 1).any():
            i = np.nonzero(d > 1)[0][0]
            lost[p] = (int((d - 1).sum()), int(c[i]))
        data.append((p, sid, rate, col, a, cu))
    rates = {r for _, _, r, _, _, _ in data}
    if len(rates) > 1:
        p0, p1 = data[0][0], next(x[0] for x in data if x[2] != data[0][2])
        raise FormatError("%s: update rate %g Hz, but %s has %g Hz (mismatched rates)"
                          % (p1, [x[2] for x in data if x[0] == p1][0], p0, data[0][2]))
    rate = rates.pop()
    start = min(x[5][0] for x in data)
    stop = max(x[5][-1] for x in data)
    for p, _, _, _, _, cu in data:
        # a file starting (or ending) far from the others: another trial, or lost for too long
        late = max(cu[0] - start, stop - cu[-1]) - 1
        if late > max_gap_s * rate:
            raise FormatError("%s: PacketCounter %d..%d leaves %d packets of the other files' %d..%d "
                              "without it (%.2f s > max_gap_s %.2f: another trial?)"
                              % (p, cu[0] % COUNTER_WRAP, cu[-1] % COUNTER_WRAP, late,
                                 start % COUNTER_WRAP, stop % COUNTER_WRAP, late / rate, max_gap_s))
    # counters of one Awinda station run together: frame = counter - first counter of all
    frames = int(max(x[5][-1] for x in data) - start + 1)
    rec = _empty(rate, frames)
    gaps = {}
    for p, sid, _, col, a, cu in data:
        e = _mapped(mapping, sid, p)
        name = e["name"]
        idx = (cu - start).astype(int)
        if frames - len(idx):
            gaps[name] = frames - len(idx)
        g = np.full((frames, 3), np.nan)
        g[idx] = a[:, [col["Gyr_X"], col["Gyr_Y"], col["Gyr_Z"]]]
        f = np.full((frames, 3), np.nan)
        f[idx] = a[:, [col["Acc_X"], col["Acc_Y"], col["Acc_Z"]]]
        valid = np.zeros(frames, bool)
        valid[idx] = np.isfinite(g[idx]).all(1) & np.isfinite(f[idx]).all(1)
        quat = mag = None
        if all(("Quat_q%d" % i) in col for i in range(4)):
            quat = np.full((frames, 4), np.nan)
            quat[idx] = a[:, [col["Quat_q%d" % i] for i in range(4)]]
        if all(("Mag_" + x) in col for x in "XYZ"):
            mag = np.full((frames, 3), np.nan)
            mag[idx] = a[:, [col["Mag_" + x] for x in "XYZ"]] * mapping["mag_ut_per_unit"]
        _add(rec, name, e["link"], g, f, quat, mag, valid)
    rec["gaps"] = gaps
    rec["lost"] = lost              # file -> (packets lost, counter before the first gap)
    rec["source"] = [os.path.basename(p) for p, _ in files]
    return rec


def read_csv(path, mapping, rate_tol=0.01, max_gap_s=0.5):
    """The generic CSV (docs/rawlog.md): a header naming CSV_REQUIRED (+ optional CSV_MAG,
    CSV_QUAT) columns, one row per sensor sample; every sensor at the same rate. A sensor's
    time step (or its start/end against the others) longer than max_gap_s is refused."""
    with open(path, encoding="utf-8", errors="replace") as f:
        head = [c.strip() for c in f.readline().split(",")]
        body = f.read().splitlines()
    missing = [c for c in CSV_REQUIRED if c not in head]
    if missing:
        raise FormatError("%s: not a motionstaff IMU CSV (no column %s)" % (path, ", ".join(missing)))
    col = {c: i for i, c in enumerate(head)}
    per = {}
    for n, line in enumerate(body, 2):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(head):
            raise FormatError("%s: line %d has %d columns, the header %d" % (path, n, len(cells), len(head)))
        try:
            vals = [float(cells[i]) if cells[i] else np.nan for i in range(len(head)) if i != col["sensor"]]
        except ValueError:
            raise FormatError("%s: line %d: not a number" % (path, n))
        if any(np.isinf(v) for v in vals) or any(c.lower() == "nan" for c in cells):
            raise FormatError("%s: line %d: a value is inf or nan (an empty cell is a lost value)" % (path, n))
        per.setdefault(cells[col["sensor"]], []).append(vals)
    if not per:
        raise FormatError("%s: no samples" % path)
    for sid in per:
        _mapped(mapping, sid, path)
    num = [c for c in head if c != "sensor"]
    ci = {c: i for i, c in enumerate(num)}
    dts = {}
    for sid, rows in per.items():
        t = np.array(rows)[:, ci["time_s"]]
        if len(t) < 2 or not np.isfinite(t).all() or not (np.diff(t) > 0).all():
            raise FormatError("%s: sensor %s: time_s must increase (at least 2 samples)" % (path, sid))
        dts[sid] = float(np.median(np.diff(t)))
    ref = min(dts.values())
    for sid, dt in dts.items():
        if abs(dt - ref) > rate_tol * ref:
            raise FormatError("%s: sensor %s runs at %.4g Hz, another at %.4g Hz (mismatched rates)"
                              % (path, sid, 1.0 / dt, 1.0 / ref))
    rate = 1.0 / ref
    t0 = min(np.array(r)[0, ci["time_s"]] for r in per.values())
    t1 = max(np.array(r)[-1, ci["time_s"]] for r in per.values())
    for sid, rows in per.items():
        t = np.concatenate([[t0], np.array(rows)[:, ci["time_s"]], [t1]])
        i = int(np.argmax(np.diff(t)))
        if t[i + 1] - t[i] > max_gap_s + 0.5 / rate:
            raise FormatError("%s: sensor %s: no sample from time_s %.6g to %.6g (%.3g s > max_gap_s %.2f)"
                              % (path, sid, t[i], t[i + 1], t[i + 1] - t[i], max_gap_s))
    frames = int(round((t1 - t0) * rate)) + 1
    rec = _empty(rate, frames)
    rec["gaps"] = {}
    for sid, rows in per.items():
        a = np.array(rows)
        e = _mapped(mapping, sid, path)
        k = np.round((a[:, ci["time_s"]] - t0) * rate).astype(int)
        if len(np.unique(k)) != len(k):
            raise FormatError("%s: sensor %s: two samples in one frame (times off the %g Hz grid)"
                              % (path, sid, rate))
        g = np.full((frames, 3), np.nan)
        g[k] = a[:, [ci[c] for c in CSV_REQUIRED[2:5]]]
        f = np.full((frames, 3), np.nan)
        f[k] = a[:, [ci[c] for c in CSV_REQUIRED[5:8]]]
        valid = np.zeros(frames, bool)
        valid[k] = np.isfinite(g[k]).all(1) & np.isfinite(f[k]).all(1)
        quat = mag = None
        if all(c in ci for c in CSV_QUAT):
            quat = np.full((frames, 4), np.nan)
            quat[k] = a[:, [ci[c] for c in CSV_QUAT]]
        if all(c in ci for c in CSV_MAG):
            mag = np.full((frames, 3), np.nan)
            mag[k] = a[:, [ci[c] for c in CSV_MAG]]
        if frames - len(k):
            rec["gaps"][e["name"]] = frames - len(k)
        _add(rec, e["name"], e["link"], g, f, quat, mag, valid)
    rec["source"] = [os.path.basename(path)]
    return rec


def _empty(rate, frames):
    return {"rate_hz": float(rate), "frames": int(frames), "names": [], "links": {}, "gyro": {},
            "accel": {}, "quat": {}, "mag": {}, "valid": {}}


def _add(rec, name, link, g, f, quat, mag, valid):
    rec["names"].append(name)
    rec["links"][name] = link
    rec["gyro"][name], rec["accel"][name] = g, f
    rec["quat"][name], rec["mag"][name], rec["valid"][name] = quat, mag, valid


def unit_config(rec):
    """The lower-body unit config with the recording's sensors (fused chips where it has quaternions)."""
    from device.capture.lowerbody import lower_body_config
    cfg = lower_body_config(rate_hz=rec["rate_hz"], low_shank=True)
    by = {s["name"]: s for s in cfg["sensors"]}
    sensors = []
    for k, n in enumerate(rec["names"]):
        s = dict(by.get(n) or {"name": n, "bus": "main", "link": rec["links"][n],
                               "position": [0.0, 0.0, 0.0], "mount_rpy_deg": [0.0, 0.0, 0.0]})
        s["chip"] = "bno055" if rec["quat"][n] is not None else "mpu6050"
        s["addr"] = (0x28, 0x29)[k % 2] if s["chip"] == "bno055" else (0x68, 0x69)[k % 2]
        s["mux"] = {"addr": 0x70, "channel": k // 2}
        s["device"] = "imported"
        sensors.append(s)
    cfg["sensors"] = sensors
    return cfg


def write_rawlog(path, rec, cfg=None):
    """The recording as a raw log (every check has passed: the file is written whole or not at all)."""
    from device.capture.lowerbody import legs_skeleton
    from device.capture.config import check
    cfg = check(cfg or unit_config(rec))
    have = {s["name"] for s in cfg["sensors"]}
    extra = [n for n in rec["names"] if n not in have]
    if extra:
        raise FormatError("%s: sensor %s is not in the unit config" % (path, extra[0]))
    head = {"format": "motionstaff-rawlog", "version": 1, "rate_hz": rec["rate_hz"], "config": cfg,
            "sensors": cfg["sensors"], "skeleton": legs_skeleton().to_dict(),
            "source": rec.get("source", []), "gaps": rec.get("gaps", {})}
    tmp = path + ".part"
    try:
        with open(tmp, "w") as f:
            f.write(json.dumps(head, separators=(",", ":")) + "\n")
            for k in range(rec["frames"]):
                r, m = {}, {}
                for n in rec["names"]:
                    if not rec["valid"][n][k]:
                        r[n] = None
                        continue
                    row = list(rec["gyro"][n][k]) + list(rec["accel"][n][k])
                    q = rec["quat"][n]
                    if q is not None and np.isfinite(q[k]).all():
                        row += list(q[k])
                    r[n] = [round(float(x), 7) for x in row]
                    mg = rec["mag"][n]
                    if mg is not None and np.isfinite(mg[k]).all():
                        m[n] = [round(float(x), 5) for x in mg[k]]
                d = {"k": k, "t": round(k / rec["rate_hz"], 6), "r": r}
                if m:
                    d["m"] = m
                f.write(json.dumps(d, separators=(",", ":")) + "\n")
    except BaseException:
        # (a full disk, an interrupt: no partial log is left behind)
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.replace(tmp, path)
