"""EKF options of the lower-body unit chosen on the SIMULATED subject (honest sensors + the thighs'
fitted soft tissue, performing the Neura-Sparse walk), never on the real trial's reference:
one simulated recording, replayed with each option set; mean RMS of the six sagittal angles.

    python tools/realimu_sweep.py [--seeds 1,2,3,4] [--accel 3,5,10] [--orient 0.002,0.003,0.005,0.01]
                                  [--real]     # --real: also the real trial's figures (reported,
                                               # not used to choose)
"""
import argparse
import itertools
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import realimu as B  # noqa: E402


def record(seed, motion):
    from device.capture.config import sim_buses
    from device.capture.loop import CaptureLoop
    from device.capture.lowerbody import legs_skeleton
    from device.capture.rawlog import RawLogWriter
    from device.capture.subject import THIGH_SAG
    from device.capture.unit import build_unit
    cfg = B.lower_cfg("orient", "bno055")
    cfg["buses"] = sim_buses(list(cfg["buses"]))
    cfg["calibration"] = {"still_s": 5.0}
    cfg["subject"] = {"clip": "builtin", "seed": seed, "calib_s": 6.0, "blend_s": 0.5,
                      "noise": dict({"profile": "honest"}, **THIGH_SAG), "outages": []}
    log = os.path.join(tempfile.mkdtemp(prefix="sweep"), "sim.jsonl")
    unit = build_unit(cfg, skeleton=legs_skeleton(), motion=motion)
    loop = CaptureLoop(unit, raw_log=RawLogWriter(log, unit), truth=True)
    loop.run(duration_s=unit.subject.duration_s - 0.1)
    loop.close()
    return log, loop.truth_values()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--accel", default="3,5,10")
    ap.add_argument("--orient", default="0.002,0.003,0.005,0.01")
    ap.add_argument("--real", action="store_true")
    a = ap.parse_args()
    from device.capture.lowerbody import legs_skeleton
    motion = B.ViconMotion(legs_skeleton())
    recs = [record(int(x), motion) for x in a.seeds.split(",")]
    lo = 650
    if a.real:
        rlog = "/tmp/realimu-fast/neura-S02-walk.jsonl"
        if not os.path.exists(rlog):
            os.makedirs(os.path.dirname(rlog), exist_ok=True)
            B.import_trial(rlog)
        ref_R = B.vicon()
        n = len(ref_R["pelvis"])
        ref = B.joint_angles(ref_R)
        rlo = B.FIRST + B.time_lag(rlog, ref_R, n)
    for acc, ori in itertools.product([float(x) for x in a.accel.split(",")],
                                      [float(x) for x in a.orient.split(",")]):
        cfg = B.lower_cfg("ekf", "bno055")
        cfg["estimator_options"] = {"accel_sigma_m_s2": acc, "orient_sigma_rad": ori}
        sq = {}
        for log, truth in recs:
            Q, u = B.run_unit(log, cfg)
            m = min(len(Q), len(truth))
            sc = B.score(B.joint_angles(B.segments_from_q(u.skeleton, Q[lo:m])),
                         B.joint_angles(B.segments_from_q(u.skeleton, truth[lo:m])))
            for k, v in sc.items():
                sq.setdefault(k, []).append(v["rms"] ** 2)
        pooled = {k: float(np.sqrt(np.mean(v))) for k, v in sq.items()}
        line = "accel %5.1f orient %.3f  SIM mean %.2f  " % (acc, ori, np.mean(list(pooled.values())))
        line += " ".join("%s %.2f" % (k.replace("_flex", ""), pooled[k]) for k in sorted(pooled))
        if a.real:
            Q, u = B.run_unit(rlog, cfg)
            rs = B.score(B.joint_angles(B.segments_from_q(u.skeleton, Q[rlo:rlo + n])), ref)
            line += "  | real mean %.2f  knee %.2f / %.2f" % (np.mean([v["rms"] for v in rs.values()]),
                                                             rs["knee_flex_l"]["rms"], rs["knee_flex_r"]["rms"])
        print(line, flush=True)


if __name__ == "__main__":
    main()
