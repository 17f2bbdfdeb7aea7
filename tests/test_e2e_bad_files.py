"""Bad files fed to every command that reads files: hand-made (truncated, wrong type, corrupted
header, absurd sizes) and a thousand seeded random mutations of real files (a PNG staff, a BVH,
a recording container, a skeleton JSON, a robot description, a unit configuration). Each call either works or ends with exit status 2 and
one line on stderr: never a traceback, never a hang (an alarm per call), memory bounded
(RLIMIT_AS 2 GiB in the forked child that runs the calls in-process through host.cli.main).
A few subprocess runs check the real exit status and stderr of the installed entry point."""

import json
import os
import resource
import select
import signal
import subprocess
import sys

import numpy as np
import pytest

from tests.test_e2e_bad_files_lib import call_cli, handmade, make_seeds, mutate, verdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLED_BVH = os.path.join(REPO, "host", "data", "131_03_short.bvh")
LIMIT_AS = 2 << 30
N_MUTATIONS = 1000


def _commands(kind, path, out):
    """The commands that read a file of this kind (argv lists); `out` is a scratch prefix."""
    if kind == "skeleton":
        return [["retarget", out["png"], out["mapping"], out["dst"] + ".png", "--target", path]]
    if kind == "robot":
        return [["robots", path]]
    if kind == "config":
        return [["capture", "--config", path, "--duration", "0.1", "--record", out["dst"] + ".msr"]]
    cmds = [["info", path], ["convert", path, out["dst"] + ".csv"], ["diff", path, out["png"]],
            ["edit", path, out["dst"] + ".png", "despike"]]
    return cmds


def _slow_commands(path, out):
    return [["show", path, "-o", out["dst"] + "_show.png"],
            ["render", path, "-o", out["dst"] + ".gif", "--max-frames", "3", "--size", "160x120"],
            ["play", path, "--port", "loop://", "--robot", "khr17-maestro", "--no-progress",
             "--speed", "1000", "--to", "0.2"]]


def _ext(kind):
    return {"png": ".png", "bvh": ".bvh", "msr": ".msr"}.get(kind, ".json")


def _cases(d, seeds, rng):
    """(label, argv) for every call: hand-made files x commands, then the mutations."""
    out = {"dst": os.path.join(d, "out"), "png": seeds["png"], "mapping": seeds["mapping"]}
    cases = []
    for name, path in handmade(d, seeds):
        kind = {".png": "png", ".bvh": "bvh", ".msr": "msr"}[os.path.splitext(name)[1]]
        for argv in _commands(kind, path, out):
            cases.append((name, argv))
        if kind == "png" and name in ("huge.png", "huge_real.png", "wide.png", "bomb.png", "bad_header.png", "truncated.png"):
            cases += [(name, argv) for argv in _slow_commands(path, out)]
    cases.append(("missing file", ["info", os.path.join(d, "nope.png")]))
    cases.append(("a directory", ["convert", d + os.sep, out["dst"] + ".png"]))
    kinds = ["png", "bvh", "msr", "skeleton", "png", "bvh", "msr", "robot", "config"]
    raw = dict((k, open(seeds[k], "rb").read()) for k in kinds)
    for i in range(N_MUTATIONS):
        kind = kinds[i % len(kinds)]
        data = mutate(raw[kind], rng)
        path = os.path.join(d, "m%04d%s" % (i, _ext(kind)))
        with open(path, "wb") as f:
            f.write(data)
        cmds = _commands(kind, path, out)
        argv = cmds[(i // len(kinds)) % len(cmds)]
        if kind == "png" and i % 45 == 0:           # the slow readers now and then
            argv = _slow_commands(path, out)[(i // 45) % 3]
        cases.append(("mutation %d of %s" % (i, kind), argv))
    return cases


def _child(d, wfd):
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))
    rng = np.random.default_rng(2026)
    seeds = make_seeds(d, BUNDLED_BVH)
    bad = []
    counts = {"calls": 0, "ok": 0, "exit2": 0}
    for label, argv in _cases(d, seeds, rng):
        rc, _out, err, exc = call_cli(argv, timeout_s=30.0)
        counts["calls"] += 1
        counts["ok" if rc == 0 and exc is None else "exit2" if rc == 2 else "other"] = \
            counts.get("ok" if rc == 0 and exc is None else "exit2" if rc == 2 else "other", 0) + 1
        v = verdict(rc, err, exc)
        if v is not None:
            bad.append({"case": label, "argv": argv[0], "problem": v})
    with os.fdopen(wfd, "w") as f:
        json.dump({"counts": counts, "bad": bad}, f)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_bad_and_mutated_files_get_one_line_and_exit_2(tmp_path):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            _child(str(tmp_path), w)
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    with os.fdopen(r, "rb") as f:
        while True:
            ready, _, _ = select.select([f], [], [], 600.0)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                pytest.fail("the bad-file run hung")
            chunk = os.read(f.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    os.waitpid(pid, 0)
    res = json.loads(data.decode())
    assert res["counts"]["calls"] >= N_MUTATIONS + 50
    assert res["counts"]["exit2"] >= 300                     # most mutations are really bad
    assert not res["bad"], "%d bad calls, e.g. %s" % (len(res["bad"]), json.dumps(res["bad"][:12], indent=1))


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


@pytest.mark.parametrize("name", ["huge.png", "truncated.png", "png_as.bvh", "huge_json.msr"])
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
