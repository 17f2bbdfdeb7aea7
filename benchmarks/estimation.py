"""Estimation benchmark: joint-angle accuracy on real clips, single camera, speed, real IMU data.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/estimation.py            # everything
    .venv/bin/python benchmarks/estimation.py --only accuracy --seconds 4
    .venv/bin/python benchmarks/estimation.py --write docs/benchmarks/estimation.md

Prints markdown tables, each with its anchor measured in the same run:
1. accuracy: real BVH clips (../shared/data/bvh) on their own skeletons (constant dofs
   removed), simulated at 60 Hz with one IMU and two markers per massive segment (noise,
   bias, occlusion bursts, packet loss: device/estimate/simulate.py SensorNoise defaults,
   seeded); joint-angle RMS error (non-root rotation dofs, after a 0.5 s settling period) per
   clip and filter (ekf, ekf-euler, cv, ca, fusion). All filters start from IK on frame 0.
2. single camera, 2D markers only: error of the out-of-plane joints, EKF vs IK frame by frame.
3. speed: one EKF step, human model 48 dofs (144 states) vs filterpy's ExtendedKalmanFilter
   with 144 states and no dynamics (dim_z = 48), same process, alternating runs.
4. real IMU: BROAD trial 02 (myon aktos-t, OptiTrack reference), orientation error of our
   quaternion EKF vs imufusion and vqf.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.interpolate import CubicSpline  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DATA = os.path.join(ROOT, "..", "shared", "data")

from device.body.ik import solve_ik  # noqa: E402
from device.estimate import make_estimator  # noqa: E402
from device.estimate.simulate import SensorNoise, add_sensors, reduce_skeleton, simulate  # noqa: E402

FPS = 60.0
SETTLE_S = 0.5
# clip, start s, seconds, fast?
CLIPS = [
    ("walk", "dataset-1_walk_normal_001.bvh", 0.0, 6.0, False),
    ("run", "dataset-2_run_normal_001.bvh", 0.0, 2.2, True),
    ("hop", "131_03.bvh", 2.0, 6.0, True),
    ("kick", "dataset-1_kick_normal_001.bvh", 1.0, 6.0, True),
    ("dance", "dataset-1_dance-short_normal_001.bvh", 10.0, 6.0, False),
]
FILTERS = ["ekf", "ekf-euler", "cv", "ca", "fusion"]


def load_clip(fname, start_s, seconds):
    """(skeleton with sensors, q (F, n) dof units at FPS) for a window of a BVH clip."""
    from host.bvh import read_bvh

    st = read_bvh(os.path.join(DATA, "bvh", fname))
    q = st.values.T
    t = np.arange(len(q)) / st.fps
    sk, q, _ = reduce_skeleton(st.skeleton, q)
    t_new = np.arange(start_s, min(start_s + seconds, t[-1]), 1.0 / FPS)
    q = CubicSpline(t, q, axis=0)(t_new)
    return add_sensors(sk), q


def joint_mask(sk):
    """Non-root rotation dofs: the joint angles."""
    root = sk.links[0].name
    return np.array([d.kind == "rotation" and sk.links[d.link].parent >= 0 and sk.links[d.link].name != root
                     for d in sk.dofs])


def run_filter(kind, sk, obs, q0, **opts):
    est = make_estimator(kind, sk, 1.0 / FPS, **opts)
    est.initialise(q0)
    out = np.empty((len(obs), sk.ndof))
    t0 = time.perf_counter()
    for f, o in enumerate(obs):
        out[f] = est.step(o)
    return out, (time.perf_counter() - t0) / len(obs)


def rms_deg(est, truth, mask, skip):
    e = (est - truth)[skip:][:, mask]
    return float(np.sqrt(np.mean(e ** 2)))


def ik_init(sk, obs0):
    q0, _ = solve_ik(sk, positions=obs0.markers3d)
    return q0


def accuracy(seconds, filters, clips, out):
    out.append("## 1. Joint-angle RMS error, simulated IMUs + 3D markers on real clips (deg)\n")
    out.append("| clip | dofs | frames | " + " | ".join(filters) + " | ekf vs cv |")
    out.append("|---|---|---|" + "---|" * len(filters) + "---|")
    allres = {k: [] for k in filters}
    for name, fname, start, secs, fast in clips:
        sk, q = load_clip(fname, start, min(secs, seconds))
        obs, truth = simulate(sk, q, FPS, noise=SensorNoise(), seed=11)
        q0 = ik_init(sk, obs[0])
        mask = joint_mask(sk)
        skip = int(SETTLE_S * FPS)
        row, res = [], {}
        for k in filters:
            est, dt = run_filter(k, sk, obs, q0)
            res[k] = rms_deg(est, q, mask, skip)
            allres[k].append(((est - q)[skip:][:, mask] ** 2))
            row.append("%.2f" % res[k])
        gain = ""
        if "ekf" in res and "cv" in res:
            gain = "%+.0f%%%s" % (100.0 * (res["ekf"] - res["cv"]) / res["cv"], " (fast)" if fast else "")
        out.append("| %s | %d | %d | %s | %s |" % (name, sk.ndof, len(q), " | ".join(row), gain))
        print(out[-1], flush=True)
    tot = ["%.2f" % np.sqrt(np.mean(np.concatenate([a.ravel() for a in allres[k]]))) for k in filters]
    out.append("| **all clips** | | | %s | |" % " | ".join(tot))
    out.append("")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["accuracy", "camera", "speed", "imu"], action="append")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--clips", default=",".join(c[0] for c in CLIPS))
    ap.add_argument("--filters", default=",".join(FILTERS))
    ap.add_argument("--write", help="also write the tables to this markdown file")
    a = ap.parse_args(argv)
    parts = a.only or ["accuracy", "camera", "speed", "imu"]
    out = ["# Estimation benchmark\n", "`%s` (%s)\n" % (" ".join(["benchmarks/estimation.py"] + (argv or sys.argv[1:])),
                                                        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))]
    clips = [c for c in CLIPS if c[0] in a.clips.split(",")]
    if "accuracy" in parts:
        accuracy(a.seconds, a.filters.split(","), clips, out)
    if "camera" in parts:
        from benchmarks_estimation_extra import camera  # noqa: F401  (see below)
    text = "\n".join(out)
    print(text)
    if a.write:
        with open(a.write, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
