"""What a real camera's timing costs the unit, and what its timestamps win back (simulation).

    .venv/bin/python benchmarks/camera_latency.py [--seconds 5] [--seeds 1,2,3] [--out docs/benchmarks/camera_latency.txt]

The unit's own path (device/capture: subject twin, 22 BNO055 twins, the camera twin, marker
detection, the estimator) on one clip, in four camera cases:
  IMUs only              no camera;
  camera seen at t       the previous twin: every loop frame renders the body as it is at
                         the frame's time (no camera is like this; the anchor of the change);
  Pi timing, as if now   the camera twin as a Pi camera runs (device/sensors/frameclock.py:
                         free-running 30 fps, 10 ms exposure, 24 ms rolling-shutter readout,
                         handed over a frame period after), its markers taken as seen now;
  Pi timing, stamped     the same frames, each marker's age from the frame's timestamp and
                         its row (the product: device/capture/unit.py _find_markers), the EKF
                         predicting it where it was then (second order at the frame's mean
                         age, first order per row from there); the orientation estimator
                         solving its root against the pose history (each marker where the
                         estimated body was when its row was seen) and holding it.
Variants of the orientation estimator's root measured and not kept (3 s, seeds 1-3, root RMS
cm, ideal / honest sensors): the body as it is now instead of the pose history 1.21 / 1.16 /
2.54 and 1.03 / 2.99 / 5.72 (and a 20 fps camera's markers, up to 130 ms old, rejected for a
misfit on whole stretches); the root carried to now along the velocity of its last fits (least
squares over 8 or 16) 0.26 / 0.17 / 0.35 and 2.52 / 3.18 / 8.09 (two points: 23.6 cm on seed
3; a 20 fps camera: ran away to 54 cm). Kept, held: 0.19 / 0.14 / 0.28 and 1.99 / 2.65 / 7.39.
Scores from 1.6 s on: joint-angle RMS of the rotation dofs (deg) and root position RMS (cm,
where the body's root translates), with ideal IMUs (the camera's effect alone) and with the
honest sensor model (device/capture/subject.py HONEST).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from benchmarks.table_out import emit  # noqa: E402
from device.capture.config import default_config  # noqa: E402
from device.capture.loop import CaptureLoop  # noqa: E402
from device.capture.unit import build_unit  # noqa: E402

CLIP = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bvh", "131_03.bvh")
CASES = ("IMUs only", "camera seen at t", "Pi timing, as if now", "Pi timing, stamped")


def run(case, body, estimator, clip, seconds, sensors="honest", seed=1):
    """(joint RMS deg, root RMS cm or nan, the last frame's marker ages s, frames passed over)."""
    cfg = default_config(body=body, camera=case != "IMUs only", estimator=estimator, seed=seed)
    if sensors != "honest":
        cfg["subject"]["noise"] = {"profile": sensors}
    if clip:
        cfg["subject"]["max_s"] = seconds
    unit = build_unit(cfg, clip_path=clip)
    if case == "camera seen at t":
        unit.camera.timing = None               # the previous twin: renders the body at t
        unit.camera.line_s = 0.0
    if case == "Pi timing, as if now":
        found = unit._find_markers
        unit._find_markers = lambda image, t_s, t_cam: (found(image, t_s, t_cam)[0], {})
    loop = CaptureLoop(unit, truth=True)
    est = []
    loop.outputs.append(lambda k, t, v, c: est.append([np.nan if x is None else x for x in v]))
    loop.run(duration_s=seconds)
    est, truth = np.array(est, float), loop.truth_values()
    sk = unit.skeleton
    start = int(unit.rate_hz * 1.6)
    rot = np.array([d.kind == "rotation" for d in sk.dofs])
    d = (est[start:, rot] - truth[start:, rot] + 180.0) % 360.0 - 180.0
    joint = float(np.sqrt(np.nanmean(d ** 2)))
    tr = [j for j, dof in enumerate(sk.dofs) if dof.kind != "rotation"]
    root = float("nan")
    if tr and np.isfinite(est[start:, tr]).any():
        e = est[start:, tr] - truth[start:, tr]
        root = float(np.sqrt(np.nanmean(e ** 2))) * 100.0 * _metres_per_unit(sk, tr)
    ages = sorted(unit.markers2d_lag_s.values())
    dropped = getattr(unit.camera, "dropped", 0) if unit.camera is not None else 0
    return joint, root, ages, dropped


def _metres_per_unit(sk, tr):
    return float(np.mean([sk.dofs[j].scale for j in tr]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seeds", default="1,2,3", help="the subject's seeds (comma-separated)")
    ap.add_argument("--out", help="also write the table here")
    a = ap.parse_args(argv)
    clip = CLIP if os.path.exists(CLIP) else None
    rows = [("torque-state EKF, human48, %s" % ("131_03.bvh (real CMU clip)" if clip else "synthetic motion"),
             "human", "ekf", clip),
            ("orientation filter + root from markers, human-floating, synthetic motion",
             "human-floating", "orient", None)]
    lines = ["# Camera timing: the camera twin as a Pi camera runs, and the unit's timestamps (SIMULATION)",
             "", "Output of `benchmarks/camera_latency.py --seconds %g --seeds %s`. Every figure is simulation: the" % (a.seconds, a.seeds),
             "subject twin performing the clip, 22 BNO055 twins (ideal, then the honest sensor model), the camera twin.",
             "The camera timing (30 fps free-running, 10 ms exposure, 24 ms readout, handed over one",
             "frame period after the readout) is the twin's default, not a measured Pi camera.", ""]
    seeds = [int(x) for x in a.seeds.split(",")]
    for sensors in ("ideal", "honest"):
        for title, body, estimator, c in rows:
            lines += ["## %s, %s sensors (mean over seeds %s; per seed in brackets)" % (title, sensors, a.seeds), "",
                      "| camera | joint RMS deg | root RMS cm | marker ages at the last frame ms |",
                      "|---|---|---|---|"]
            for case in CASES:
                got = [run(case, body, estimator, c, a.seconds, sensors, seed) for seed in seeds]
                joint = [g[0] for g in got]
                root = [g[1] for g in got]
                ages = sorted(x for g in got for x in g[2])
                age = "%.0f-%.0f" % (1000 * ages[0], 1000 * ages[-1]) if ages else "-"
                fmt = lambda v: "%.2f (%s)" % (np.mean(v), " / ".join("%.2f" % x for x in v))
                lines.append("| %s | %s | %s | %s |" % (case, fmt(joint), "-" if np.isnan(root).all() else fmt(root), age))
            lines.append("")
    emit(lines, a.out, "CPU time irrelevant here: accuracy only")


if __name__ == "__main__":
    main()
