"""`motionstaff orient FILE [-o OUT.csv] [--offline] [--json]`: one IMU's orientation from a recording.

    motionstaff orient sensor_data.csv -o orientation.csv        # x-io CSV, the live (causal) filter
    motionstaff orient trial.mat --offline --json                # BROAD .mat, the RTS smoother
    motionstaff orient short_walk.csv --rate 400 --offline       # time stamps that repeat: a fixed rate

The gyro + accelerometer orientation EKF (device/estimate/orientation.py), sample by sample as
a unit runs it live, or with --offline its Rauch-Tung-Striebel smoother over the whole
recording (device/estimate/orientation_smoother.py; every estimate uses past and future
samples, the counterpart of vqf's offlineVQF). The sensor noise comes from the recording's own
leading still seconds (at least 100 samples; the filter's defaults otherwise, and the summary
says which). Inputs: x-io CSV (Time s, gyro deg/s, accelerometer g) and BROAD trials (.mat); a
file with an optical reference (BROAD) also gets the inclination error against it, over every
sample that has a reference.

OUT.csv: t_s, qw, qx, qy, qz (sensor -> Earth, z up), yaw_deg, pitch_deg, roll_deg (ZYX),
bias_x/y/z_rad_s. Yaw is the gyro's (no magnetometer): it starts at 0 and drifts slowly.
"""

import json
import os

import numpy as np

from protocol.errors import FormatError

HELP = "one IMU's orientation from a recording (x-io .csv, BROAD .mat): live filter or --offline smoother"


def add_arguments(p):
    p.add_argument("file", help="recording: x-io .csv or BROAD .mat")
    p.add_argument("-o", "--out", help="write the orientation per sample to this CSV")
    p.add_argument("--offline", action="store_true",
                   help="smooth over the whole recording (uses future samples; not for live use)")
    p.add_argument("--rate", type=float, help="sample rate in Hz, instead of the file's time column "
                   "(for logs whose time stamps repeat or jump)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")


def load(path, rate_hz=None):
    """(t_s (N,), gyro_rad_s (N, 3), acc_m_s2 (N, 3), reference wxyz (N, 4) or None); with
    rate_hz, sample k is at k / rate_hz whatever the file's time column says."""
    from device.capture.rawlog import broad_mat, xio_csv
    if not os.path.exists(path):
        raise FormatError("%s: no such file" % path)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".csv":
        src = xio_csv(path)
    elif ext == ".mat":
        src = broad_mat(path)
    else:
        raise FormatError("%s: orient reads one IMU from an x-io .csv or a BROAD .mat (a raw log of "
                          "a whole unit: motionstaff capture --replay)" % path)
    t, g, a = src.t, src.gyro, src.accel
    if len(t) < 2 or g.shape != (len(t), 3) or a.shape != (len(t), 3):
        raise FormatError("%s: need at least 2 samples of 3 gyro and 3 accelerometer values" % path)
    if rate_hz is not None:
        if not rate_hz > 0:
            raise FormatError("--rate must be > 0 Hz, not %r" % rate_hz)
        t = np.arange(len(t)) / float(rate_hz)
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        k = int(np.flatnonzero(~(np.diff(t) > 0))[0]) + 1 if np.all(np.isfinite(t)) else 0
        raise FormatError("%s: sample times must be finite and increasing (sample %d is not); "
                          "give the sample rate with --rate HZ" % (path, k))
    return t, g, a, getattr(src, "reference_quat", None)


def inclination_error_deg(q_wxyz, ref_wxyz):
    """Angle between the estimated and the reference Earth-up axis (in the sensor frame) per
    sample where the reference is finite: (M,) degrees."""
    from device.estimate.fusion import quat_to_matrix
    ok = np.all(np.isfinite(ref_wxyz), axis=1) & np.all(np.isfinite(q_wxyz), axis=1)
    ue = np.array([quat_to_matrix(q)[2] for q in q_wxyz[ok]])
    ur = np.array([quat_to_matrix(q)[2] for q in ref_wxyz[ok]])
    c = np.sum(ue * ur, axis=1) / np.linalg.norm(ue, axis=1) / np.linalg.norm(ur, axis=1)
    return np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


def estimate(t, gyro, acc, offline=False):
    """(q_wxyz (N, 4), bias_rad_s (N, 3), summary dict) for one recording."""
    from device.estimate.orientation import OrientationEKF, noise_from_rest, still_segment
    from device.estimate.orientation_smoother import smooth_orientation
    dt = np.diff(t)
    dt_s = np.concatenate(([np.median(dt)], dt))       # dt_s[k]: from sample k-1 to k
    n_still = still_segment(gyro, acc, float(np.median(dt)))
    noise = noise_from_rest(gyro[:n_still], acc[:n_still], float(np.median(dt))) if n_still >= 100 else {}
    info = {"samples": int(len(t)), "rate_hz": round(1.0 / float(np.median(dt)), 3),
            "mode": "offline (RTS smoother)" if offline else "causal (live filter)",
            "noise_from_still_s": round(float(t[n_still]) if n_still >= 100 else 0.0, 2),
            "noise": {k: float("%.4g" % v) for k, v in noise.items()} or "filter defaults (no still start)"}
    if offline:
        sm = smooth_orientation(gyro, acc, dt_s, **noise)
        return sm.q_wxyz, sm.bias_rad_s, info
    if not np.all(np.isfinite(gyro)):
        k = int(np.flatnonzero(~np.all(np.isfinite(gyro), axis=1))[0])
        raise FormatError("gyro sample %d is not finite" % k)
    f = OrientationEKF(float(dt_s[0]), **noise)
    q = np.empty((len(t), 4))
    b = np.empty((len(t), 3))
    for k in range(len(t)):
        q[k] = f.step(gyro[k], acc[k], float(dt_s[k]))
        b[k] = f.b
    return q, b, info


def write_csv(path, t, q, b):
    from scipy.spatial.transform import Rotation
    ypr = Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_euler("ZYX", degrees=True)
    data = np.column_stack([t, q, ypr, b])
    head = "t_s,qw,qx,qy,qz,yaw_deg,pitch_deg,roll_deg,bias_x_rad_s,bias_y_rad_s,bias_z_rad_s"
    np.savetxt(path, data, delimiter=",", header=head, comments="", fmt="%.6f")


def run(args):
    t, g, a, ref = load(args.file, args.rate)
    q, b, info = estimate(t, g, a, offline=args.offline)
    info = dict(file=args.file, **info)
    if ref is not None:
        e = inclination_error_deg(q, np.asarray(ref, float))
        info["reference_samples"] = int(len(e))
        info["inclination_rms_deg"] = round(float(np.sqrt(np.mean(e ** 2))), 3) if len(e) else None
    if args.out:
        write_csv(args.out, t, q, b)
        info["out"] = args.out
    if args.json:
        print(json.dumps(info))
        return 0
    print("%s: %d samples at %g Hz, %s; noise from %s" % (
        args.file, info["samples"], info["rate_hz"], info["mode"],
        "the first %.1f still s" % info["noise_from_still_s"] if info["noise_from_still_s"] else "filter defaults"))
    if info.get("inclination_rms_deg") is not None:
        print("  inclination vs the file's reference: %.3f deg RMS over %d samples"
              % (info["inclination_rms_deg"], info["reference_samples"]))
    if args.out:
        print("  wrote %s" % args.out)
    return 0
