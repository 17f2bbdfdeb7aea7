"""Joint angles from a real person's IMUs (Neura-Sparse S02 walk, nine Xsens MTx) against Vicon.

    python benchmarks/realimu.py                 # tables; docs/benchmarks/realimu.txt
    python benchmarks/realimu.py --json          # one JSON object (knee/hip/ankle RMS per leg, anchors)
    python benchmarks/realimu.py --no-sim        # the real trial only

The data (GPL-3.0) is read where it lies, $MOTIONSTAFF_NEURA or
/work/shared/data/imu-body/neura-sparse-S02 (see its README.md); nothing of it enters the project.

Path: the MT Manager exports -> `import-imu` (host/imu_import.py) -> the raw log -> the unit
(build_unit + CaptureLoop, the lower-body config device/capture/lowerbody.py) with the functional
calibration (device/capture/functional.py: still stance 0-5 s, the first 4 s of walking after
it), exactly as `motionstaff capture --replay LOG --config CONFIG`. The anchors use the same
calibration (mounts and per-sensor headings the unit found) on their own segment orientations.

Reference and scoring, the same for every estimator: segment rotations R (segment -> world, the
model's axes x forward, y left, z up; Vicon's foot frame, z along the foot, is turned into them
by a fixed 90 deg about y) give hip flexion = -th(R_pelvis' R_thigh), knee flexion =
th(R_thigh' R_shank), ankle dorsiflexion = -th(R_shank' R_foot), th(R) = atan2(R[0,2], R[2,2])
(the rotation about the proximal segment's y axis). Estimators' segment rotations come from the
forward kinematics of their joint values. Time: Vicon frame i is raw sample 1119 + i (the
authors' alignment, idx 1120 1-based) plus one lag for all estimators, the integer shift in
-10..10 samples that best correlates the shank and thigh gyro magnitudes with the Vicon
segments' angular speed (the reference's clock against the sensors', no estimate involved).
RMS, max and correlation over all 955 Vicon frames (the walk, the turn and the walk back); no
offset is removed (a unit cannot); "rms-o" removes each angle's mean error, for comparison
with published offset-corrected figures only.

The simulated part: the same unit on the simulated subject performing the trial's Vicon
kinematics with honest sensors, four wearers (seeds 1-4, each its own stance, mounts and soft
tissue), RMS pooled over them (and listed per wearer); the sim / real ratio uses the pooled RMS.
"""

import argparse
import glob
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DATA = os.environ.get("MOTIONSTAFF_NEURA", "/work/shared/data/imu-body/neura-sparse-S02")
MAP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "examples",
                   "neura-sparse-map.json")
FIRST = 1119                     # raw sample of Vicon frame 0
SEGS = ("pelvis", "l_thigh", "r_thigh", "l_shank", "r_shank", "l_foot", "r_foot")
ANGLES = (("hip_flex", "pelvis", "thigh", -1), ("knee_flex", "thigh", "shank", 1),
          ("ankle_flex", "shank", "foot", -1))
VICON_SEG = {"pelvis": "qRPV", "l_thigh": "qLTH", "r_thigh": "qRTH", "l_shank": "qLSK",
             "r_shank": "qRSK", "l_foot": "qLFT", "r_foot": "qRFT"}
FOOT_TO_MODEL = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


def available():
    return os.path.isdir(os.path.join(DATA, "rawimu")) and os.path.isdir(os.path.join(DATA, "vicon"))


def quat_rot(q):
    from device.capture.rot import quat_to_mat
    q = np.asarray(q, float)
    return np.array([quat_to_mat(x / np.linalg.norm(x)) for x in q])


def vicon():
    path = os.path.join(DATA, "vicon", "S02-Trial-Walk-1.csv")
    with open(path) as f:
        head = [ln for ln in f.read().splitlines() if not ln.startswith("//")][0].split(",")
    V = np.genfromtxt(path, delimiter=",", skip_header=6)
    out = {}
    for seg, key in VICON_SEG.items():
        i = head.index(key + "_1")
        R = quat_rot(V[:, i:i + 4])
        out[seg] = R @ FOOT_TO_MODEL if seg.endswith("foot") else R
    return out


def th_y(R):
    return np.degrees(np.arctan2(R[:, 0, 2], R[:, 2, 2]))


def joint_angles(R):
    """{angle_side: (F,) deg} from segment rotations {segment: (F, 3, 3)}."""
    out = {}
    for name, a, b, sign in ANGLES:
        for s in "lr":
            pa = a if a == "pelvis" else s + "_" + a
            Ra, Rb = R[pa], R[s + "_" + b]
            out["%s_%s" % (name, s)] = sign * th_y(np.einsum("fji,fjk->fik", Ra, Rb))
    return out


def import_trial(path):
    from host.imu_import import load_mapping, read_xsens, write_rawlog
    files = sorted(glob.glob(os.path.join(DATA, "rawimu", "*.txt")))
    m = load_mapping(MAP)
    files = [p for p in files if os.path.splitext(p)[0].rsplit("_", 1)[-1] in m["sensors"]]
    write_rawlog(path, read_xsens(files, m))


def time_lag(log_path, ref, n):
    """The integer lag (samples) of the reference against the IMU clock (see the docstring)."""
    from device.capture.rawlog import JsonlReplay
    src = JsonlReplay(log_path)
    frames = src.peek(FIRST - 12, FIRST + n + 12)
    best = None
    for lag in range(-10, 11):
        c = 0.0
        for seg in ("l_thigh", "r_thigh", "l_shank", "r_shank"):
            R = ref[seg]
            w_ref = np.linalg.norm(_rotvec(np.einsum("fji,fjk->fik", R[:-1], R[1:])), axis=1)
            g = np.array([np.linalg.norm(fr[seg + "_imu"]["gyro"]) for fr in frames[12 + lag:12 + lag + n - 1]])
            c += np.corrcoef(g, w_ref)[0, 1]
        if best is None or c > best[0]:
            best = (c, lag)
    return best[1]


def _rotvec(R):
    from device.capture.rot import log_so3
    return log_so3(R)


def run_unit(log_path, cfg):
    """Joint values (F, ndof) of the unit on the raw log, and the unit (its calibration)."""
    from device.capture.loop import CaptureLoop
    from device.capture.rawlog import JsonlReplay
    from device.capture.unit import build_unit
    src = JsonlReplay(log_path)
    unit = build_unit(cfg, replay=src, log_config=False)
    loop = CaptureLoop(unit)
    est = []
    loop.outputs.append(lambda k, t, v, c: est.append([np.nan if x is None else x for x in v]))
    try:
        loop.run(frames=src.frames)
    except EOFError:
        pass
    loop.close()
    return np.array(est), unit


def segments_from_q(sk, Q):
    from device.body.kinematics import forward_kinematics
    Q = np.where(np.isnan(Q), 0.0, Q)
    pose = forward_kinematics(sk, Q)
    return {s: pose.link_rot[:, sk.link_index(s)] for s in SEGS}


def anchor_segments(log_path, cal, kind, lo, hi):
    """Segment rotations of an anchor through the unit's calibration (mounts, headings)."""
    from device.capture.functional import heading_to_home
    from device.capture.rawlog import JsonlReplay
    src = JsonlReplay(log_path)
    frames = src.peek(0, hi)
    out = {}
    n_still = int(5.0 * src.rate_hz)
    for seg in SEGS:
        name = seg + "_imu"
        M = cal["mounts"][name]
        if kind == "xsens":
            Rs = quat_rot([fr[name]["quat"] for fr in frames])
            W = cal["world_by"][name]
        else:
            g = np.array([fr[name]["gyro"] for fr in frames], float)
            a = np.array([fr[name]["accel"] for fr in frames], float)
            Rs = _filter(kind, g, a, 1.0 / src.rate_hz)
            W = heading_to_home(Rs[:n_still], M, np.array([0.0, 0.0, 1.0]))
        out[seg] = W @ Rs[lo:hi] @ M.T
    return out


def _filter(kind, gyro, acc, dt):
    """Per-sensor orientation (sensor -> its filter's world), causal, 6-axis."""
    if kind == "vqf":
        from vqf import VQF
        v = VQF(dt)
        res = v.updateBatch(np.ascontiguousarray(gyro), np.ascontiguousarray(acc))
        return quat_rot(res["quat6D"])
    import imufusion
    ahrs = imufusion.Ahrs()
    ahrs.set_sample_period(dt)
    q = []
    for g, a in zip(gyro, acc):
        ahrs.update_no_magnetometer(np.degrees(g), a / 9.80665)
        q.append(ahrs.get_quaternion())
    return quat_rot(q)


def score(est, ref):
    out = {}
    for k in ref:
        e = est[k] - ref[k]
        ok = np.isfinite(e)
        e = e[ok]
        out[k] = {"rms": float(np.sqrt(np.mean(e ** 2))), "max": float(np.abs(e).max()),
                  "corr": float(np.corrcoef(est[k][ok], ref[k][ok])[0, 1]), "rms_o": float(np.std(e))}
    return out


def lower_cfg(estimator, chip):
    from device.capture.lowerbody import lower_body_config
    return lower_body_config(rate_hz=100.0, estimator=estimator, chip=chip)


RUNS = [("ekf", "ekf", "bno055", "torque-state EKF: gyro + accel + fused orientation"),
        ("orient", "orient", "bno055", "orientation + IK: the fused orientations"),
        ("orient-6axis", "orient", "mpu6050", "orientation + IK: our Mahony filter, gyro + accel"),
        ("ekf-6axis", "ekf", "mpu6050", "torque-state EKF: gyro + accel only")]


def real(out_json):
    ref_R = vicon()
    n = len(ref_R["pelvis"])
    ref = joint_angles(ref_R)
    tmp = tempfile.mkdtemp(prefix="realimu")
    log = os.path.join(tmp, "neura-S02-walk.jsonl")
    import_trial(log)
    lag = time_lag(log, ref_R, n)
    lo, hi = FIRST + lag, FIRST + lag + n
    results = {}
    cal = None
    runs = RUNS
    for key, est, chip, label in runs:
        Q, unit = run_unit(log, lower_cfg(est, chip))
        if key == "ekf":
            cal = unit.calibrated
        R = segments_from_q(unit.skeleton, Q[lo:hi])
        results[key] = (label, score(joint_angles(R), ref))
    anchors = {}
    for key, label in (("xsens", "Xsens on-board orientation (same calibration)"),
                       ("vqf", "VQF 6D per segment (same calibration)"),
                       ("imufusion", "imufusion AHRS per segment (same calibration)")):
        R = anchor_segments(log, cal, key, lo, hi)
        anchors[key] = (label, score(joint_angles(R), ref))
    return {"lag": lag, "results": results, "anchors": anchors, "method": cal["method"]}


class ViconMotion:
    """t -> q of the legs model following the trial's Vicon segments (IK on segment frames and
    the hip-centre midpoint), linearly interpolated at 100 Hz; the simulated subject's motion.
"""

    def __init__(self, sk):
        from device.body.ik import solve_ik
        R = vicon()
        P = vicon_hips()
        self.sk = sk
        n = len(R["pelvis"])
        # the model's world: Vicon's turned so the subject starts facing +y: the 180 deg turn
        # takes root_yaw from +90 to about -90 deg, inside its range
        f = R["pelvis"][0][:, 0]
        yaw = np.arctan2(f[1], f[0]) - np.pi / 2
        c, s = np.cos(-yaw), np.sin(-yaw)
        Wv = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        q = sk.home.copy()
        Q = []
        for i in range(n):
            tgt = {seg: Wv @ R[seg][i] for seg in SEGS}
            q0 = q.copy()
            p = Wv @ (P[i] - P[0])
            for j, name in enumerate(("root_tx", "root_ty", "root_tz")):
                q0[sk.dof_index(name)] = p[j] + (sk.home[sk.dof_index(name)] if name == "root_tz" else 0.0)
            q, _ = solve_ik(sk, orientations=tgt, q0=q0, max_iter=30, orientation_weight=1.0)
            for j, name in enumerate(("root_tx", "root_ty", "root_tz")):
                q[sk.dof_index(name)] = q0[sk.dof_index(name)]
            Q.append(q.copy())
        Q = np.array(Q)
        # the marker frames do not resolve rotation about the shank's long axis (the data's
        # README: up to 20 deg RMS of noise): knee rotation is held at 0, and every dof is
        # low-passed at 6 Hz (zero phase), so the subject moves like a person, not like noise
        from scipy.signal import butter, filtfilt
        b, a = butter(2, 6.0 / 50.0)
        Q = filtfilt(b, a, Q, axis=0)
        for side in "lr":
            Q[:, sk.dof_index(side + "_knee_rot")] = 0.0
        self.Q = Q
        self.duration_s = (n - 1) / 100.0

    def __call__(self, t):
        x = float(np.clip(t * 100.0, 0, len(self.Q) - 1))
        i = min(int(x), len(self.Q) - 2)
        f = x - i
        return self.Q[i] * (1 - f) + self.Q[i + 1] * f


def vicon_hips():
    """Midpoint of the Vicon hip joint centres (LFEP, RFEP), m, per frame."""
    path = os.path.join(DATA, "vicon", "S02-Trial-Walk-1.csv")
    with open(path) as f:
        head = [ln for ln in f.read().splitlines() if not ln.startswith("//")][0].split(",")
    V = np.genfromtxt(path, delimiter=",", skip_header=6)
    a, b = head.index("LFEP_1"), head.index("RFEP_1")
    return 0.5 * (V[:, a:a + 3] + V[:, b:b + 3])


def simulated(seed=1, profile="honest", motion=None):
    """The same unit on the simulated subject performing the trial's Vicon kinematics
    (ViconMotion) with the honest sensor model and the thighs' sagittal soft tissue fitted to
    this trial (device/capture/subject.py THIGH_SAG): 6 s of stance, then the walk, recorded to a raw
    log, replayed like the real trial, scored from 6.5 s (after the blend) against the subject's
    true pose through the same angle definitions."""
    from device.capture.loop import CaptureLoop
    from device.capture.rawlog import RawLogWriter
    from device.capture.subject import THIGH_SAG
    from device.capture.unit import build_unit
    cfg = lower_cfg("orient", "bno055")
    from device.capture.config import sim_buses
    cfg["buses"] = sim_buses(list(cfg["buses"]))         # the same buses, their twins
    cfg["calibration"] = {"still_s": 5.0}        # recording only: the replays calibrate functionally
    cfg["subject"] = {"clip": "builtin", "seed": seed, "calib_s": 6.0, "blend_s": 0.5,
                      "noise": dict({"profile": profile}, **(THIGH_SAG if profile == "honest" else {})),
                      "outages": []}
    tmp = tempfile.mkdtemp(prefix="realimu-sim")
    log = os.path.join(tmp, "sim-walk.jsonl")
    from device.capture.lowerbody import legs_skeleton
    if motion is None:
        motion = ViconMotion(legs_skeleton())
    # the subject performs the real trial's Vicon kinematics: one motion for both figures
    unit = build_unit(cfg, skeleton=legs_skeleton(), motion=motion)
    raw = RawLogWriter(log, unit)
    loop = CaptureLoop(unit, raw_log=raw, truth=True)
    loop.run(duration_s=unit.subject.duration_s - 0.1)
    loop.close()
    truth = loop.truth_values()
    lo = int((6.0 + 0.5) * 100)          # after the stance and the blend into the walk
    ref = joint_angles(segments_from_q(unit.skeleton, truth[lo:]))
    out = {}
    for key, est, chip, label in RUNS[:2]:
        Q, u = run_unit(log, lower_cfg(est, chip))
        n = min(len(Q), len(truth))
        R = segments_from_q(u.skeleton, Q[lo:n])
        out[key] = ("SIM " + label, score(joint_angles(R), {k: v[:n - lo] for k, v in ref.items()}))
    return out


SEEDS = (1, 2, 3, 4)


def simulated_wearers(seeds=SEEDS):
    """simulated() for several wearers (seeds: each draws its own stance, mounts, soft tissue and
    fused offsets): {key: (label, pooled score)} with rms = sqrt(mean rms^2) (every frame of every
    wearer alike), max the largest, corr the mean; and {seed: EKF score} per wearer. One draw's
    stance offsets alone move an angle's RMS by 2-9 deg (docs/estimation.md)."""
    from device.capture.lowerbody import legs_skeleton
    motion = ViconMotion(legs_skeleton())
    runs = [simulated(seed=s, motion=motion) for s in seeds]
    pooled = {}
    for key, (label, _) in runs[0].items():
        sc = {}
        for k in runs[0][key][1]:
            v = [r[key][1][k] for r in runs]
            sc[k] = {"rms": float(np.sqrt(np.mean([x["rms"] ** 2 for x in v]))),
                     "rms_o": float(np.sqrt(np.mean([x["rms_o"] ** 2 for x in v]))),
                     "max": float(max(x["max"] for x in v)), "corr": float(np.mean([x["corr"] for x in v]))}
        pooled[key] = ("%s (%d wearers)" % (label, len(seeds)), sc)
    return pooled, {s: r["ekf"][1] for s, r in zip(seeds, runs)}


def seed_lines(per_seed):
    out = ["## SIMULATED, each wearer (seed): torque-state EKF RMS", ""]
    for seed, sc in per_seed.items():
        out.append("seed %d  " % seed + "  ".join("%s %5.2f" % (k, sc[k]["rms"]) for k in sorted(sc)))
    return out


def table(title, rows):
    lines = ["## %s" % title, "",
             "%-72s %-11s %7s %7s %7s %6s %7s" % ("estimator", "angle", "rms", "rms-o", "max", "corr", ""),
             ]
    for label, sc in rows:
        for k in sorted(sc):
            s = sc[k]
            lines.append("%-72s %-13s %5.2f %7.2f %7.1f %6.3f" % (label[:72], k, s["rms"], s["rms_o"], s["max"], s["corr"]))
    return lines


def gap_lines(res):
    """The goals, checked, and the simulated / real ratio per angle (orientation + IK and EKF)."""
    out = ["## Goals and the gap between simulated and real", ""]
    ekf, ik = res["results"]["ekf"][1], res["results"]["orient"][1]
    for k in sorted(ekf):
        goal = 4.0 if k.startswith("knee") else 5.0
        line = "%-13s EKF %5.2f (goal <= %.0f: %s)  orient+IK %5.2f (EKF %s)" % (
            k, ekf[k]["rms"], goal, "met" if ekf[k]["rms"] <= goal else "NOT met", ik[k]["rms"],
            "at or below" if ekf[k]["rms"] <= ik[k]["rms"] else "ABOVE")
        if "sim" in res:
            se = res["sim"]["ekf"][1][k]["rms"]
            r = se / ekf[k]["rms"]
            line += "  sim/real EKF %.2f (%s)" % (r, "within 1.5x" if 1 / 1.5 <= r <= 1.5 else "OUTSIDE 1.5x")
        out.append(line)
    return out


def summary_json(res):
    def keys(sc):
        out = {}
        for name in ("knee_flex", "hip_flex", "ankle_flex"):
            out[name + "_rms_deg"] = {s: round(sc["%s_%s" % (name, "lr"[i])]["rms"], 3)
                                      for i, s in enumerate(("left", "right"))}
        return out
    d = keys(res["results"]["ekf"][1])
    d["estimator"] = "ekf (lower-body unit, functional calibration)"
    d["lag_samples"] = res["lag"]
    d["others"] = {k: keys(v[1]) for k, v in res["results"].items() if k != "ekf"}
    d["anchors"] = {k: keys(v[1]) for k, v in res["anchors"].items()}
    if "sim" in res:
        d["sim"] = {k: keys(v[1]) for k, v in res["sim"].items()}
        d["sim_wearers"] = list(res["sim_seeds"])
    return d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object (the tables still go to --out)")
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--out", help="write the tables here (default docs/benchmarks/realimu.txt, "
                                   "not with --no-sim: a partial run keeps the docs page)")
    args = ap.parse_args(argv)
    if args.out is None and not args.no_sim:
        args.out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "docs", "benchmarks", "realimu.txt")
    if not available():
        print("realimu: the Neura-Sparse trial is not at %s (set MOTIONSTAFF_NEURA)" % DATA, file=sys.stderr)
        return 2
    res = real(args.json)
    if not args.no_sim:
        res["sim"], res["sim_seeds"] = simulated_wearers()
    lines = ["# Real IMUs: Neura-Sparse S02 walk (9.55 s scored), joint angles vs Vicon (deg)", "",
             "REAL recording. Calibration: functional (still stance + first 4 s of walking, hinge %s), unit data only." % lower_cfg("ekf", "bno055")["calibration"]["hinge"],
             "Reference lag: %+d samples (gyro vs Vicon angular speed)." % res["lag"],
             "Calibration per sensor: " + "; ".join("%s %s" % kv for kv in sorted(res["method"].items())), ""]
    lines += table("Ours (the unit's path: import-imu -> raw log -> capture --replay)", list(res["results"].values()))
    lines += [""] + table("Anchors (same run, same calibration)", list(res["anchors"].values()))
    if "sim" in res:
        lines += [""] + table("SIMULATED subject, honest sensors (same unit, same calibration path), "
                              "pooled over %d wearers" % len(res["sim_seeds"]), list(res["sim"].values()))
        lines += [""] + seed_lines(res["sim_seeds"])
    lines += [""] + gap_lines(res)
    text = "\n".join(lines) + "\n"
    print(json.dumps(summary_json(res)) if args.json else text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
