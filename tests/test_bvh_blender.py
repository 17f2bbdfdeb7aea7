"""Blender imports the BVH we export, and places every joint where our kinematics does.

Runs Blender's own BVH importer (Debian package `blender`) headless; skipped only where Blender
is not installed.
"""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from device.body.kinematics import forward_kinematics
from device.body.skeleton import LENGTH_UNITS
from host.bvh import read_bvh, write_bvh

BLENDER = shutil.which("blender")
SCRIPT = Path(__file__).parent / "blender" / "import_bvh.py"


@pytest.mark.skipif(BLENDER is None, reason="Blender is not installed (Debian package 'blender')")
@pytest.mark.parametrize("name", ["131_03.bvh", "dataset-1_kick_normal_001.bvh"])
def test_blender_imports_our_export(shared_data, tmp_path, name):
    st = read_bvh(shared_data / "bvh" / name).quantised()
    out = tmp_path / name
    write_bvh(out, st)
    frames = [1, st.frames // 2, st.frames]
    r = subprocess.run([BLENDER, "-b", "--factory-startup", "--python", str(SCRIPT), "--",
                        str(out)] + [str(f) for f in frames],
                       capture_output=True, text=True, timeout=240)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("MOTIONSTAFF ")]
    assert line, r.stdout[-2000:] + r.stderr[-2000:]
    got = json.loads(line[0][len("MOTIONSTAFF "):])
    joints = [n for n in st.skeleton.link_names if not n.endswith("_End")]
    assert got["bones"] == len(joints)
    assert got["frame_end"] >= st.frames        # Blender counts one past the last frame
    per_unit = 1.0 / LENGTH_UNITS[st.rows[0].unit]
    for f in frames:
        pose = forward_kinematics(st.skeleton, st.values[:, f - 1]).link_pos_m * per_unit
        for bone, head in got["frames"][str(f)].items():
            x, y, z = pose[st.skeleton.link_index(bone)]
            # Blender's import turns BVH's Y-up into Z-up: (x, y, z) -> (x, -z, y)
            np.testing.assert_allclose(head, [x, -z, y], atol=2e-3 * max(1.0, per_unit / 100))
