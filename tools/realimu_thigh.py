"""Whose thigh is wrong on the Neura-Sparse walk, the IMU's or Vicon's (issue 17)? A test from the
unit's other sensors: the knee's acceleration (from the shank's sensor) minus the hip's (from the
pelvis's) is d2/dt2 (R_thigh l), l the hip-to-knee vector in the thigh frame. Least squares with
free lever arms (shank sensor -> knee, pelvis sensor -> hip, l: 9 unknowns), 3 Hz zero-phase
low-pass, rows projected onto the thigh's sagittal plane; the residual (m/s^2) says how well a
thigh orientation explains the pelvis and shank accelerometers. Then a thigh soft-tissue model,
bone = sensor turned about the thigh's y axis by c (hip - knee) (the rigid STA component as a
linear function of the joint angles, Camomilla et al. 2015, J Biomech 48:1333), scanned in c:
the residual (unit data only) against the knee / hip RMS vs Vicon (scoring only).
With --ik: whole-chain IK on the same orientations (each segment's fit traded against the others',
2-dof knee and ankle) against per-joint IK, the hip's share of the EKF's gap over orient + IK.

With --low: each shank's low sensor (above the ankle) in the mid one's place, through the nine
sensors' calibration: its pitch against Vicon's shank and the knee / ankle it gives.

    python tools/realimu_thigh.py [--ik] [--low]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import realimu as B  # noqa: E402
from device.capture.rot import exp_so3, log_so3, skew  # noqa: E402
from tools import realimu_fast as F  # noqa: E402

DT_S = 0.01


class Chain:
    def __init__(self, frames, cal, fc_hz=3.0):
        from scipy.signal import butter, filtfilt
        b, a = butter(2, fc_hz / 50.0)
        self.lp = lambda x: filtfilt(b, a, x, axis=0)
        self.frames, self.cal = frames, cal

    def point(self, name, w0, w1):
        """a0 (F, 3), K (F, 3, 3): a sensor-fixed point r's world acceleration = a0 + K r."""
        fr = self.frames[w0:w1]
        R = self.cal["world_by"][name] @ B.quat_rot([f[name]["quat"] for f in fr])
        f = self.lp(np.array([x[name]["accel"] for x in fr], float))
        w = self.lp(np.array([x[name]["gyro"] for x in fr], float) - self.cal["gyro_bias"][name])
        K = skew(np.gradient(w, DT_S, axis=0)) + skew(w) @ skew(w)
        # a = R f + g ;  a(r) = a + R (alpha x r + w x (w x r))
        return np.einsum("fij,fj->fi", R, f) + np.array([0.0, 0.0, -9.81]), np.einsum("fij,fjk->fik", R, K)

    def residual(self, side, R_thigh, w0, w1):
        pa, pK = self.point("pelvis_imu", w0, w1)
        sa, sK = self.point(side + "_shank_imu", w0, w1)
        m = w1 - w0
        Rdd = np.gradient(np.gradient(self.lp(R_thigh[w0:w1].reshape(m, 9)).reshape(m, 3, 3), DT_S, axis=0), DT_S, axis=0)
        # sa + sK r_s - (pa + pK r_p) = Rdd l
        A = np.concatenate([sK, -pK, -Rdd], axis=2)[10:-10]
        y = -(sa - pa)[10:-10]
        yax = R_thigh[w0:w1][10:-10, :, 1]
        P = np.eye(3)[None] - yax[:, :, None] * yax[:, None, :]
        A = np.einsum("fij,fjk->fik", P, A).reshape(-1, 9)
        y = np.einsum("fij,fj->fi", P, y).reshape(-1)
        x, *_ = np.linalg.lstsq(A, y, rcond=None)
        return float(np.sqrt(np.mean((A @ x - y) ** 2))), x


def heading(A, Bm):
    U, _, Vt = np.linalg.svd(np.einsum("fij,fkj->ik", A, Bm))
    return U @ Vt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ik", action="store_true")
    ap.add_argument("--low", action="store_true", help="the low shank sensors in the mid ones' place")
    a = ap.parse_args()
    from device.capture.functional import walk_onset
    from device.capture.lowerbody import legs_skeleton
    from device.capture.rawlog import JsonlReplay
    log = F.log_path()
    ref_R = B.vicon()
    n = len(ref_R["pelvis"])
    ref = B.joint_angles(ref_R)
    lag = B.time_lag(log, ref_R, n)
    lo, hi = B.FIRST + lag, B.FIRST + lag + n
    frames = JsonlReplay(log).peek(0, hi + 5)
    cfg = B.lower_cfg("ekf", "bno055")
    sk = legs_skeleton()
    cal = F.calibrate(frames, sk, cfg, hinge=cfg["calibration"]["hinge"])
    n_still = int(cfg["calibration"]["still_s"] * 100)
    on = n_still + walk_onset(frames[n_still:])
    fw = (on, on + int(cfg["calibration"]["functional_s"] * 100))
    seg = F.xsens_segments(frames, cal, 0, len(frames))
    ang = B.joint_angles(seg)
    ch = Chain(frames, cal)
    print("functional window %d-%d, scored %d-%d (raw samples)" % (fw + (lo, hi)))
    for s in "lr":
        W = heading(np.concatenate([seg[s + "_shank"][lo:hi], seg[s + "_foot"][lo:hi]]),
                    np.concatenate([ref_R[s + "_shank"], ref_R[s + "_foot"]]))
        Rv = np.array(seg[s + "_thigh"])
        Rv[lo:hi] = np.einsum("ij,fjk->fik", W, ref_R[s + "_thigh"])
        w0 = (max(fw[0], lo), fw[1])
        print("%s chain residual, functional window: IMU thigh %.3f, Vicon thigh %.3f m/s^2; whole trial: %.3f, %.3f"
              % (s, ch.residual(s, seg[s + "_thigh"], *w0)[0], ch.residual(s, Rv, *w0)[0],
                 ch.residual(s, seg[s + "_thigh"], lo, hi)[0], ch.residual(s, Rv, lo, hi)[0]))
        for c in np.round(np.arange(-0.05, 0.31, 0.05), 2):
            d = np.radians(c * (ang["hip_flex_" + s] - ang["knee_flex_" + s]))
            Rt = np.einsum("fij,fjk->fik", seg[s + "_thigh"], exp_so3(np.outer(-d, [0.0, 1.0, 0.0])))
            est = B.joint_angles({k: (Rt if k == s + "_thigh" else v)[lo:hi] for k, v in seg.items()})
            sc = B.score(est, ref)
            r, x = ch.residual(s, Rt, *fw)
            print("  c %+.2f  chain %.3f (|l| %.3f m)  knee %.2f  hip %.2f" % (
                c, r, np.linalg.norm(x[6:]), sc["knee_flex_" + s]["rms"], sc["hip_flex_" + s]["rms"]))
    if a.low:
        low_shank(frames, sk, ref_R, ref, lo, hi)
    if a.ik:
        from device.body.ik import solve_ik
        for label, w in (("whole-chain IK, all alike", None),
                         ("whole-chain IK, shanks and feet 1/3", {k: (1.0 / 3 if k.endswith(("shank", "foot")) else 1.0) for k in B.SEGS})):
            q, Q = sk.home.copy(), []
            for i in range(lo, hi):
                q, _ = solve_ik(sk, orientations={k: seg[k][i] for k in B.SEGS}, q0=q, max_iter=20,
                                orientation_weight=1.0, weights=w)
                Q.append(q.copy())
            R = B.segments_from_q(sk, np.array(Q))
            F.show(label[:10], B.score(B.joint_angles(R), ref))
            # each segment's chain rotation against its sensor's: |log(R_sensor' R_chain)|
            off = {k: np.degrees(np.linalg.norm(log_so3(np.einsum("fji,fjk->fik", seg[k][lo:hi], R[k])), axis=1)).mean()
                   for k in B.SEGS}
            print("   (%s; chain vs sensor, mean deg: %s)" % (label, " ".join("%s %.1f" % kv for kv in off.items())))
        F.show("per-joint", B.score(B.joint_angles({k: v[lo:hi] for k, v in seg.items()}), ref))


def low_shank(frames, sk, ref_R, ref, lo, hi):
    from device.capture.lowerbody import lower_body_config
    cfg = lower_body_config(rate_hz=100.0, low_shank=True)
    cal = F.calibrate(frames, sk, cfg, hinge=cfg["calibration"]["hinge"])
    R = F.xsens_segments(frames, cal, lo, hi)
    for s in "lr":
        n = s + "_shank_low_imu"
        low = cal["world_by"][n] @ B.quat_rot([fr[n]["quat"] for fr in frames[lo:hi]]) @ cal["mounts"][n].T
        for label, Rs in (("mid", R[s + "_shank"]), ("low", low)):
            sc = B.score(B.joint_angles(dict(R, **{s + "_shank": Rs})), ref)
            e, r = F.pitch(Rs), F.pitch(ref_R[s + "_shank"])
            p = np.polyfit(r, e, 1)
            print("%s %s shank: pitch = %.3f x Vicon's, residual sd %.2f deg | knee %.2f ankle %.2f" % (
                s, label, p[0], np.std(e - np.polyval(p, r)), sc["knee_flex_" + s]["rms"], sc["ankle_flex_" + s]["rms"]))


if __name__ == "__main__":
    main()
