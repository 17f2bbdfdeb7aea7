"""`motionstaff robots`, `emulate` (a real subprocess on a pty) and `play` end to end."""

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from host.cli import main

REPO = pathlib.Path(__file__).resolve().parents[1]
CLIP = REPO / ".." / "shared" / "data" / "bvh" / "131_01.bvh"


def test_robots_lists_builtins(capsys):
    assert main(["robots"]) == 0
    out = capsys.readouterr().out
    assert "khr17-maestro" in out and "op3-dynamixel" in out
    assert main(["robots", "op3-dynamixel", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["controller"] == "dynamixel"


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    assert main(["robots", "no-such-robot"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("motionstaff: no-such-robot") and err.count("\n") == 1
    bad = tmp_path / "r.json"
    bad.write_text('{"format": "motionstaff-robot", "version": 1, "controller": "maestro", "servos": [{}]}')
    assert main(["play", str(CLIP), "--port", "loop://", "--robot", str(bad)]) == 2
    assert "servos[0]" in capsys.readouterr().err
    assert main(["play", str(tmp_path / "none.bvh"), "--port", "loop://", "--robot", "khr17-maestro"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["play", str(CLIP), "--port", "loop://", "--robot", "khr17-maestro", "--controller", "x"]) == 2


def _emulator(controller, log, *more):
    p = subprocess.Popen([sys.executable, "-m", "host.cli", "emulate", controller, "--log", str(log)] + list(more),
                         cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    path = p.stdout.readline().strip()
    assert path.startswith("/dev/"), p.stderr.read()
    return p, path


@pytest.mark.skipif(not CLIP.exists(), reason="CMU clip not found at ../shared/data/bvh/131_01.bvh")
def test_play_bvh_on_emulated_dynamixel(tmp_path, capsys):
    robot = json.loads((REPO / "device" / "servo" / "robots" / "op3-dynamixel.json").read_text())
    robot["ramp"]["max_vel_dps"] = 2000.0            # a quick ramp keeps the test short
    rp = tmp_path / "op3.json"
    rp.write_text(json.dumps(robot))
    log = tmp_path / "timeline.csv"
    proc, path = _emulator("dynamixel", log)
    try:
        rc = main(["play", str(CLIP), "--port", path, "--robot", str(rp), "--from", "1", "--to", "1.5",
                   "--speed", "2", "--no-progress", "--json", "--mapping", "cmu"])
        out = capsys.readouterr().out
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert rc == 0, out
    s = json.loads(out.strip().splitlines()[-1])
    assert s["frames"] + s["skipped"] == 61 and s["mapping"] == "cmu" and s["servos_driven"] == 20
    assert s["send_errors"] == 0 and s["failsafe"] == "torque_off"
    assert proc.returncode == 0 and "commands" in err
    rows = log.read_text().splitlines()
    assert rows[0] == "t_s,servo,units,deg" and len(rows) > 20 * 50
    knee = [r.split(",") for r in rows[1:] if r.split(",")[1] == "13"]
    units = [int(r[2]) for r in knee if r[2] not in ("None", "")]
    assert all(0 <= u <= 4095 for u in units)


@pytest.mark.skipif(not CLIP.exists(), reason="CMU clip not found at ../shared/data/bvh/131_01.bvh")
def test_play_through_a_power_cut_of_the_emulated_dynamixels(tmp_path, capsys):
    """`motionstaff play` on a real pty whose servos lose their power 1.5 s in, back 1 s later:
    the summary says it was lost and restored, and the emulator heard no goal while it was off
    (margins of seconds either side: the cut is on the emulator's clock, play starts after it)."""
    robot = json.loads((REPO / "device" / "servo" / "robots" / "op3-dynamixel.json").read_text())
    robot["ramp"]["max_vel_dps"] = 2000.0
    rp = tmp_path / "op3.json"
    rp.write_text(json.dumps(robot))
    proc, path = _emulator("dynamixel", tmp_path / "t.csv", "--power-cut", "1.5:1.0")
    try:
        rc = main(["play", str(CLIP), "--port", path, "--robot", str(rp), "--from", "1", "--to", "6",
                   "--no-progress", "--json", "--mapping", "cmu"])
        out = capsys.readouterr()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert rc == 0, out
    s = json.loads(out.out.strip().splitlines()[-1])
    assert s["power_lost"] == 1 and s["power_restored"] == 1 and not s["power_off_at_end"], s
    assert "power looks cut" in out.err and "answer again" in out.err
    assert "1 power cut(s)" in err
    assert main(["emulate", "dynamixel", "--power-cut", "soon"]) == 2


def test_emulate_json_log_on_sigterm(tmp_path):
    log = tmp_path / "t.json"
    proc, path = _emulator("ssc32", log)
    import serial
    with serial.serial_for_url(path, baudrate=115200, timeout=1) as port:
        port.write(b"#1P1600#2P1400T100\r")
        port.write(b"QP1\r")
        assert port.read(1) == bytes((160,))
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=20)
    d = json.loads(log.read_text())
    assert [e["units"] for e in d["timeline"]] == [1600, 1400]


@pytest.mark.skipif(not CLIP.exists(), reason="CMU clip not found at ../shared/data/bvh/131_01.bvh")
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ctrl_c_leaves_robot_in_failsafe(tmp_path, sig):
    """Ctrl-C, and SIGTERM (a service stopped: host/interrupts.py) alike."""
    from device.servo.emulate import make_emulator
    from device.servo.emulate.pty import PtyServer
    emu = make_emulator("dynamixel", ids=range(1, 21))
    with PtyServer(emu) as srv:
        p = subprocess.Popen([sys.executable, "-m", "host.cli", "play", str(CLIP), "--port", srv.path,
                              "--robot", "op3-dynamixel", "--loop", "--no-progress", "--mapping", "cmu"],
                             cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             # (Ctrl-C's default, whatever the test runner's worker inherited)
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        started = False
        try:
            # (generous timeouts: on 2 loaded cores the player's start took over a minute once)
            started = emu.wait_for(lambda e: e.commands > 20 * 40, 180.0)
        finally:
            p.send_signal(getattr(signal, sig))
            try:
                out, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                raise AssertionError("play did not exit after SIGINT (started %s, %d commands): %s / %s"
                                     % (started, emu.commands, out[-500:], err[-2000:]))
        assert started, (emu.commands, out[-500:], err[-2000:])
        assert p.returncode == 130, err
        assert "interrupted" in out and "failsafe: torque_off" in out
        assert emu.wait_for(lambda e: all(v is None for v in e.positions.values()), 5.0)


def test_play_bad_controller_options_exit_2_with_one_line(tmp_path, capsys):
    """QA: a robot file's controller_options with boards out of range, not a list, channels 0,
    an unknown option, or not an object at all: one line, exit 2, no traceback."""
    base = json.loads((REPO / "device" / "servo" / "robots" / "khr17-maestro.json").read_text())
    if not CLIP.exists():
        pytest.skip("CMU clip not found at ../shared/data/bvh/131_01.bvh")
    clip = CLIP
    for opts, what in (({"boards": [200]}, "maestro boards"), ({"boards": 12}, "maestro boards"),
                       ({"boards": ["x"]}, "maestro boards"), ({"boards": [12], "channels": 0}, "channels"),
                       ({"bards": [12]}, "unknown controller option 'bards'"),
                       ([12], "'controller_options' must be an object")):
        d = dict(base, controller_options=opts)
        f = tmp_path / "r.json"
        f.write_text(json.dumps(d))
        assert main(["play", str(clip), "--port", "loop://", "--robot", str(f), "--no-progress", "--to", "0.05"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("motionstaff: ") and what in err and err.count("\n") == 1, (opts, err)


def test_emulate_power_cut_the_pico_has_no_model_and_an_empty_value_is_bad(monkeypatch):
    """--power-cut with the pico (no cut model) is the one-line error, not a cut ignored while
    it serves; an empty value is a bad value, not none given."""
    from host.commands import emulate
    monkeypatch.setattr(emulate, "_run_pico", lambda args: 0)      # (never serves here)
    assert main(["emulate", "pico", "--power-cut", "1"]) == 2
    assert main(["emulate", "dynamixel", "--power-cut", ""]) == 2
