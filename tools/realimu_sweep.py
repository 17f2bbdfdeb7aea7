"""EKF options of the lower-body unit chosen on the SIMULATED subject (honest sensors + the thighs'
fitted soft tissue, performing the Neura-Sparse walk), never on the real trial's reference:
one simulated recording, replayed with each option set; mean RMS of the six sagittal angles.

    python tools/realimu_sweep.py [--seed 1] [--real]     # --real: also print the real trial's
                                                           # figures (reported, not used to choose)
"""
import argparse
import itertools
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import realimu as B  # noqa: E402


def record(seed):
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
    unit = build_unit(cfg, skeleton=legs_skeleton(), motion=B.ViconMotion(legs_skeleton()))
    loop = CaptureLoop(unit, raw_log=RawLogWriter(log, unit), truth=True)
    loop.run(duration_s=unit.subject.duration_s - 0.1)
    loop.close()
    return log, loop.truth_values()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--real", action="store_true")
    a = ap.parse_args()
    log, truth = record(a.seed)
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
    for acc, ori in itertools.product((3.0, 5.0, 10.0), (0.002, 0.003, 0.005, 0.01)):
        cfg = B.lower_cfg("ekf", "bno055")
        cfg["estimator_options"] = {"accel_sigma_m_s2": acc, "orient_sigma_rad": ori}
        Q, u = B.run_unit(log, cfg)
        m = min(len(Q), len(truth))
        sc = B.score(B.joint_angles(B.segments_from_q(u.skeleton, Q[lo:m])),
                     B.joint_angles(B.segments_from_q(u.skeleton, truth[lo:m])))
        line = "accel %5.1f orient %.3f  SIM mean %.2f" % (acc, ori, np.mean([v["rms"] for v in sc.values()]))
        if a.real:
            Q, u = B.run_unit(rlog, cfg)
            rs = B.score(B.joint_angles(B.segments_from_q(u.skeleton, Q[rlo:rlo + n])), ref)
            line += "  | real mean %.2f  knee %.2f / %.2f" % (np.mean([v["rms"] for v in rs.values()]),
                                                             rs["knee_flex_l"]["rms"], rs["knee_flex_r"]["rms"])
        print(line, flush=True)


if __name__ == "__main__":
    main()
