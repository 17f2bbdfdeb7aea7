"""Fast iteration harness for benchmarks/realimu.py (issue 17): calibration + fused-orientation
segments (no estimator), or one estimator run, scored like the benchmark.

    python tools/realimu_fast.py                # Xsens orientations through the unit's calibration
    python tools/realimu_fast.py --diag         # + the knee error decomposition
    python tools/realimu_fast.py --ekf          # + the EKF (one run, ~2 min)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import realimu as B  # noqa: E402

LOG = "/tmp/realimu-fast/neura-S02-walk.jsonl"


def log_path():
    if not os.path.exists(LOG):
        os.makedirs(os.path.dirname(LOG), exist_ok=True)
        B.import_trial(LOG)
    return LOG


def calibrate(frames, sk, cfg, **kw):
    from device.capture.functional import functional_calibration, walk_onset
    rate = cfg["rate_hz"]
    n_still = int(cfg["calibration"]["still_s"] * rate)
    still = frames[:n_still]
    ahead = frames[n_still:]
    on = walk_onset(ahead)
    n_fun = int(round(cfg["calibration"]["functional_s"] * rate))
    sensors = [{"name": s["name"], "link": sk.link_index(s["link"])} for s in cfg["sensors"]]
    return functional_calibration(sk, sensors, still, ahead[on:on + n_fun], **kw)


def xsens_segments(frames, cal, lo, hi):
    out = {}
    for seg in B.SEGS:
        n = seg + "_imu"
        Rs = B.quat_rot([fr[n]["quat"] for fr in frames[lo:hi]])
        out[seg] = cal["world_by"][n] @ Rs @ cal["mounts"][n].T
    return out


def show(name, sc):
    print("%-10s " % name + "  ".join("%s %5.2f/%4.2f" % (k.replace("_flex", ""), sc[k]["rms"], sc[k]["rms_o"])
                                      for k in sorted(sc)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diag", action="store_true")
    ap.add_argument("--ekf", action="store_true")
    ap.add_argument("--hinge", default=None, help="override the config's calibration hinge")
    a = ap.parse_args()
    from device.capture.lowerbody import legs_skeleton
    from device.capture.rawlog import JsonlReplay
    log = log_path()
    src = JsonlReplay(log)
    ref_R = B.vicon()
    n = len(ref_R["pelvis"])
    ref = B.joint_angles(ref_R)
    lag = B.time_lag(log, ref_R, n)
    lo, hi = B.FIRST + lag, B.FIRST + lag + n
    frames = src.peek(0, hi + 5)
    cfg = B.lower_cfg("ekf", "bno055")
    sk = legs_skeleton()
    if a.hinge:
        cfg["calibration"]["hinge"] = a.hinge
    cal = calibrate(frames, sk, cfg, hinge=cfg["calibration"].get("hinge", "seel"))
    R = xsens_segments(frames, cal, lo, hi)
    est = B.joint_angles(R)
    show("xsens", B.score(est, ref))
    if a.diag:
        seg_diag(R, ref_R)
        diag(est, ref, R, ref_R, frames, lo, hi)
    if a.ekf:
        Q, unit = B.run_unit(log, cfg)
        e = B.joint_angles(B.segments_from_q(unit.skeleton, Q[lo:hi]))
        show("ekf", B.score(e, ref))
        for k in ("knee_flex_l", "knee_flex_r", "hip_flex_l", "ankle_flex_r"):
            d = e[k] - ref[k]
            print("  %s per second mean err:" % k, " ".join("%5.1f" % d[i:i + 100].mean() for i in range(0, len(d), 100)))


def diag(est, ref, R, ref_R, frames, lo, hi):
    import csv
    steps = np.genfromtxt(os.path.join(B.DATA, "step-detect", "S02-Trial-Walk-1-revStepDetect.csv"),
                          delimiter=",", names=True)
    print("step-detect columns", steps.dtype.names, len(steps))
    for s in "lr":
        k = "knee_flex_" + s
        e = est[k] - ref[k]
        r = ref[k]
        rate = np.gradient(r) * 100.0
        print("\n%s: mean %.2f std %.2f rms %.2f" % (k, e.mean(), e.std(), np.sqrt(np.mean(e ** 2))))
        # regression e = a + b*flex + c*rate
        A = np.c_[np.ones_like(r), r, rate]
        x, *_ = np.linalg.lstsq(A, e, rcond=None)
        res = e - A @ x
        print("  fit e = %.2f + %.3f*flex + %.4f*rate(deg/s): residual rms %.2f" % (x[0], x[1], x[2], np.sqrt(np.mean(res ** 2))))
        print("  corr(e, flex) %.2f corr(e, rate) %.2f" % (np.corrcoef(e, r)[0, 1], np.corrcoef(e, rate)[0, 1]))
        # lag: best shift of est against ref
        best = min(range(-8, 9), key=lambda L: np.mean((np.roll(est[k], L) - r)[10:-10] ** 2))
        print("  best extra shift %d samples: rms %.2f" % (best, np.sqrt(np.mean((np.roll(est[k], best) - r)[10:-10] ** 2))))
        # scale
        A2 = np.c_[np.ones_like(r), est[k]]
        y, *_ = np.linalg.lstsq(A2, r, rcond=None)
        print("  ref = %.2f + %.3f*est: rms %.2f" % (y[0], y[1], np.sqrt(np.mean((A2 @ y - r) ** 2))))
        # by flexion bins
        for lo_, hi_ in ((-10, 10), (10, 30), (30, 50), (50, 80)):
            m = (r >= lo_) & (r < hi_)
            if m.any():
                print("  flex %3d..%3d: n %3d mean err %6.2f std %5.2f" % (lo_, hi_, m.sum(), e[m].mean(), e[m].std()))
        # stance / swing from step-detect
        col = "stepL" if s == "l" else "stepR"
        if col in steps.dtype.names:
            st = steps[col][:len(e)].astype(bool)
            print("  stance n %d mean %.2f rms %.2f | swing n %d mean %.2f rms %.2f" % (
                st.sum(), e[st].mean(), np.sqrt(np.mean(e[st] ** 2)), (~st).sum(), e[~st].mean(), np.sqrt(np.mean(e[~st] ** 2))))
        # error over time (1 s windows)
        print("  per second mean err:", " ".join("%5.1f" % e[i:i + 100].mean() for i in range(0, len(e), 100)))
        # the other axes of the relative rotation (abduction / rotation), ours vs reference
        from device.capture.rot import log_so3
        Ra, Rb = R[s + "_thigh"], R[s + "_shank"]
        Va, Vb = ref_R[s + "_thigh"], ref_R[s + "_shank"]
        rel_e = np.einsum("fji,fjk->fik", Ra, Rb)
        rel_r = np.einsum("fji,fjk->fik", Va, Vb)
        ve = np.degrees(log_so3(rel_e))
        vr = np.degrees(log_so3(rel_r))
        print("  knee rel rotvec mean ours", np.round(ve.mean(0), 1), "ref", np.round(vr.mean(0), 1))
        print("  knee rel rotvec std  ours", np.round(ve.std(0), 1), "ref", np.round(vr.std(0), 1))
        for seg in ("thigh", "shank"):
            # segment errors: R_ref' R_est in the segment frame
            D = np.einsum("fji,fjk->fik", ref_R[s + "_" + seg], R[s + "_" + seg])
            d = np.degrees(log_so3(D))
            print("  %s seg err (ref' est, seg frame) mean %s std %s" % (seg, np.round(d.mean(0), 1), np.round(d.std(0), 1)))



def pitch(R):
    """A segment's sagittal inclination (deg) from its world-up row: heading-free."""
    return np.degrees(np.arctan2(-R[:, 2, 0], R[:, 2, 2]))


def roll(R):
    return np.degrees(np.arctan2(R[:, 2, 1], R[:, 2, 2]))


def seg_diag(R, ref_R):
    for seg in B.SEGS:
        for nm, f in (("pitch", pitch), ("roll", roll)):
            e, r = f(R[seg]), f(ref_R[seg])
            d = e - r
            A = np.c_[np.ones_like(r), r]
            x, *_ = np.linalg.lstsq(A, e, rcond=None)
            best = min(range(-8, 9), key=lambda L: np.mean((np.roll(e, L) - r)[10:-10] ** 2 if False else (np.roll(e, L) - r - np.mean(np.roll(e, L) - r))[10:-10] ** 2))
            print("%-8s %s err mean %6.2f std %5.2f | est = %.2f + %.3f ref | ref range %.0f..%.0f | best shift %d" % (
                seg, nm, d.mean(), d.std(), x[0], x[1], r.min(), r.max(), best))


if __name__ == "__main__":
    main()
