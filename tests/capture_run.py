"""Shared by the capture tests: run the simulated unit and score its estimate against the truth.

    rms_deg, unit, loop = run_and_score(default_config(), clip_path, seconds=4.0)
    d, unit = root_errors(default_config(body="human-floating", camera=True, estimator="orient"), 3.0)
"""

import numpy as np

from device.capture.loop import CaptureLoop
from device.capture.unit import build_unit


def run_and_score(cfg, clip=None, seconds=4.0):
    """Joint-angle RMS (deg) of the rotation rows, from 1.6 s on (after calibration and the
    blend-in), angle differences wrapped to [-180, 180)."""
    if cfg.get("subject") is not None:
        # these scores measure the estimator inverting the subject: the ideal sensors unless a
        # test asks for the honest ones (device/capture/subject.py HONEST is the default)
        cfg["subject"]["noise"] = dict({"profile": "ideal"}, **(cfg["subject"].get("noise") or {}))
    unit = build_unit(cfg, clip_path=clip)
    loop = CaptureLoop(unit, truth=True)
    est = []
    loop.outputs.append(lambda k, t, v, c: est.append([np.nan if x is None else x for x in v]))
    loop.run(duration_s=seconds)
    est, truth = np.array(est), loop.truth_values()
    rot = np.array([d.kind == "rotation" for d in unit.skeleton.dofs])
    start = int(unit.rate_hz * 1.6)
    d = (est[start:, rot] - truth[start:, rot] + 180.0) % 360.0 - 180.0
    return float(np.sqrt(np.mean(d ** 2))), unit, loop


def root_errors(cfg, seconds, start=40):
    """(root translation errors (frames, 3) in dof units from frame start on, unit): the unit
    run as configured (its own sensor model), the estimate against the truth."""
    unit = build_unit(cfg)
    loop = CaptureLoop(unit, truth=True)
    est = []
    loop.outputs.append(lambda k, t, v, c: est.append([np.nan if x is None else x for x in v]))
    loop.run(duration_s=seconds)
    est, truth = np.array(est), loop.truth_values()
    tr = [unit.skeleton.dof_index(n) for n in ("root_tx", "root_ty", "root_tz")]
    return est[start:, tr] - truth[start:, tr], unit
