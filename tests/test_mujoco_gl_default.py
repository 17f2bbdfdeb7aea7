"""Whatever host package loads mujoco first, MUJOCO_GL has its headless default by then: the
retargeter's IK loaded mujoco before host.physics had set it, mujoco took GLFW, and the demo's
GIF came out without its robot panel (640 px wide, not 960) in any process that retargeted
first (found as a test-order failure)."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_retargeting_first_still_sets_the_headless_gl():
    env = dict(os.environ)
    env.pop("MUJOCO_GL", None)
    code = "import host.retarget.live, mujoco, os; print(os.environ.get('MUJOCO_GL'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in ("egl", "osmesa")
