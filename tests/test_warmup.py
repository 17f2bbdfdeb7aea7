"""The unit's compiled kernels are ready before its first frame (device/capture/warmup.py).

In a fresh process (numba's kernels are per process) building the default unit loads every
kernel the capture loop calls, so none compiles inside a frame: before, the frame where
calibration ends took 0.5 s (numba setting itself up) and the first branch recovery ~30 ms.
"""

import json
import os
import subprocess
import sys

import pytest

from device.body import dynamics_numba

pytestmark = pytest.mark.skipif(not dynamics_numba.available(), reason="numba not installed (or MOTIONSTAFF_NUMBA=0)")

PROBE = r"""
import json
from device.capture.config import default_config
from device.capture.unit import build_unit
from device.body import dynamics_numba, ik_batch_numba
from device.estimate import camera_numba, imu_numba, orient_numba
from device.sensors import markers
kernels = {"dynamics": dynamics_numba._terms, "imu": imu_numba._rows, "ik": ik_batch_numba._iterate,
           "markers": markers._scan, "kinematics": dynamics_numba._kin, "camera": camera_numba._rows,
           "radii": camera_numba._radii,
           "orient": orient_numba._rows}
before = {k: len(f.signatures) for k, f in kernels.items()}
unit = build_unit(default_config(body="human", camera=True))
after = {k: len(f.signatures) for k, f in kernels.items()}
print(json.dumps({"before": before, "after": after, "estimator": unit.estimator is None}))
"""


def test_building_the_unit_loads_every_kernel_of_the_loop():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(v == 0 for v in r["before"].values()), r          # a fresh process: none yet
    assert all(v >= 1 for v in r["after"].values()), r           # all ready before a frame
    assert r["estimator"]                                        # the unit's own: not built yet
