"""Bad files fed to every command that reads files (convert, info, diff, show, edit, render,
play, retarget, robots, capture --config): hand-made (truncated, wrong type, corrupted header,
absurd sizes such as a PNG claiming 100000 x 100000) and a thousand seeded random mutations of
real files (a PNG staff, a BVH, a recording container, a skeleton JSON, a robot description, a
unit configuration). Each call either works or exits 2 with one line on stderr: never a
traceback, never a hang (an alarm per call), memory bounded (RLIMIT_AS 2 GiB in the forked
child that runs the calls in-process through host.cli.main: tools/badfiles.py). A few
subprocess runs check the real exit status and stderr of the entry point."""

import json
import os
import resource
import subprocess
import sys

import pytest

from tools import robust
from tools.badfiles import BUNDLED_BVH, handmade, make_seeds

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_bad_and_mutated_files_get_one_line_and_exit_2(tmp_path):
    res = robust.bad_files(str(tmp_path), n_mutations=1000, timeout_s=600)
    assert res is not None, "the bad-file run hung"
    c = res["counts"]
    assert c["calls"] >= 1000 + 50 and c["other"] == 0, c
    assert c["exit2"] >= 300, c                           # most mutations are really bad
    assert not res["bad"], "%d bad calls, e.g. %s" % (len(res["bad"]), json.dumps(res["bad"][:12], indent=1))


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (robust.LIMIT_AS, robust.LIMIT_AS))


@pytest.mark.parametrize("name", ["huge_real.png", "truncated.png", "png_as.bvh", "huge_json.msr"])
def test_subprocess_exit_status_and_one_line(tmp_path, name):
    seeds = make_seeds(str(tmp_path), BUNDLED_BVH)
    path = dict(handmade(str(tmp_path), seeds))[name]
    p = subprocess.run([sys.executable, "-m", "host.cli", "info", path], capture_output=True,
                       text=True, timeout=120, cwd=REPO, preexec_fn=_limit,
                       env=dict(os.environ, PYTHONPATH=REPO))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr[-500:]
    assert len(lines) == 1 and lines[0].startswith("motionstaff: ") and name in lines[0], lines
    assert "Traceback" not in p.stderr
