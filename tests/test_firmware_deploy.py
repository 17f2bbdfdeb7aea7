"""`motionstaff deploy`: what goes to a board, the receiver.json made from a robot, dry run."""

import json
import os
import subprocess

import pytest

from host import cli
from host.commands import deploy
from protocol.errors import FormatError

ROBOT = {"format": "motionstaff-robot", "version": 1, "name": "tinyarm", "controller": "native",
         "failsafe": {"timeout_s": 0.4, "action": "torque_off"},
         "servos": [{"name": "shoulder", "id": 2, "neutral": 1500, "direction": -1,
                     "units_per_deg": 10.0, "min": 800, "max": 2200, "max_vel_dps": 240,
                     "map": {"human": "r_shoulder_flex"}},
                    {"name": "elbow", "id": 3, "neutral": 1450, "units_per_deg": 9.5,
                     "min": 900, "max": 2100,
                     "map": {"human": {"row": "r_elbow_flex", "scale": 0.5, "offset_deg": 10}}}]}


def test_dry_run_lists_receiver_files(capsys):
    assert cli.main(["deploy", "--port", "/dev/ttyACM9", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run" in out
    for dest in (":/lib/device/firmware/receiver.mpy", ":/lib/device/firmware/link.mpy",
                 ":/lib/protocol/packets.mpy", ":/lib/protocol/crc.mpy", ":/main.py"):
        assert dest in out
    # nothing the receiver does not import
    assert "ekf_q" not in out and "staffcodec" not in out and "device/servo" not in out


def test_dry_run_core(capsys):
    assert cli.main(["deploy", "--port", "COM3", "--core", "--dry-run", "--no-compile"]) == 0
    out = capsys.readouterr().out
    assert ":/lib/protocol/packets.py" in out and ":/lib/protocol/staffcodec.py" in out
    # the fixed-point EKF allocates per step on the rp2 port (long ints): not deployed
    assert "ekf_q" not in out and "fxp" not in out
    assert ":/main.py" not in out and "firmware" not in out


def test_plan_files_are_all_micropython_safe():
    from tools import check_micropython as cm

    for receiver in (True, False):
        srcs = [s for s, _, _ in deploy.plan(receiver)]
        assert set(srcs) <= set(cm.part_files())


def test_receiver_config_from_robot(tmp_path):
    p = tmp_path / "tinyarm.json"
    p.write_text(json.dumps(ROBOT))
    cfg = deploy.receiver_config(str(p), pins="16,17")
    a, b = cfg["servos"]
    assert (a["pin"], a["row"], a["direction"], a["min_us"], a["max_us"]) == (16, "r_shoulder_flex", -1, 800, 2200)
    assert (b["row"], b["scale"], b["offset_deg"], b["us_per_deg"]) == ("r_elbow_flex", 0.5, 10.0, 9.5)
    assert cfg["failsafe"] == {"timeout_ms": 400, "action": "release"}
    with pytest.raises(FormatError, match="pins"):
        deploy.receiver_config(str(p), pins="1")
    with pytest.raises(FormatError, match="mapping"):
        deploy.receiver_config(str(p), mapping="nope")
    bad = dict(ROBOT, controller="dynamixel")
    p.write_text(json.dumps(bad))
    with pytest.raises(FormatError, match="PWM"):
        deploy.receiver_config(str(p))


def test_deploy_compiles_and_calls_mpremote(tmp_path, monkeypatch, capsys):
    p = tmp_path / "tinyarm.json"
    p.write_text(json.dumps(ROBOT))
    seen = {}

    def fake_run(cmd, *a, **kw):
        seen["cmd"] = list(cmd)
        # the copied files exist while mpremote runs: .mpy files compiled by mpy-cross
        srcs = [cmd[i + 1] for i in range(len(cmd)) if cmd[i] == "cp"]
        seen["mpy"] = [s for s in srcs if s.endswith(".mpy") and open(s, "rb").read(1) == b"M"]
        seen["cfg"] = json.load(open([s for s in srcs if s.endswith("receiver.json")][0]))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(deploy.subprocess, "run", fake_run)
    monkeypatch.setattr(deploy, "_mpremote", lambda: ["mpremote"])
    assert cli.main(["deploy", "--port", "/dev/ttyACM0", "--robot", str(p)]) == 0
    cmd = seen["cmd"]
    assert cmd[:3] == ["mpremote", "connect", "/dev/ttyACM0"] and cmd[-1] == "reset"
    assert ":/main.py" in cmd and ":/receiver.json" in cmd
    assert len(seen["mpy"]) == len(deploy.plan(True)) - 1
    assert seen["cfg"]["servos"][0]["row"] == "r_shoulder_flex"
    assert "deployed" in capsys.readouterr().out


def test_mpremote_failure_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(deploy.subprocess, "run",
                        lambda cmd, *a, **k: subprocess.CompletedProcess(cmd, 1))
    monkeypatch.setattr(deploy, "_mpremote", lambda: ["mpremote"])
    assert cli.main(["deploy", "--port", "/dev/nope", "--core"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("motionstaff: mpremote failed") and len(err.strip().splitlines()) == 1


def test_bad_config_file(tmp_path, capsys):
    p = tmp_path / "receiver.json"
    p.write_text("{}")
    assert cli.main(["deploy", "--port", "X", "--config", str(p), "--dry-run"]) == 2
    assert "receiver.json" in capsys.readouterr().err
