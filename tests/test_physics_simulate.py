"""`motionstaff simulate`: a staff through the real driver and emulator into the OP3 twin."""

import json
import math
import os

import numpy as np
import pytest

import host.physics  # noqa: F401  (MUJOCO_GL before mujoco loads)

pytest.importorskip("mujoco")

from device.servo.robot import load_robot as load_description
from host.cli import main
from host.formats import read_motion, write_motion
from host.physics.simulate import run_simulation, simulate_staff
from host.staff import Row, Staff

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = [s.name for s in load_description("op3-dynamixel").servos]


def servo_staff(moves, seconds=1.0, fps=50):
    """A staff of the OP3's own rows: {servo: (amplitude deg, Hz, offset deg)}."""
    t = np.arange(int(seconds * fps)) / fps
    vals = np.zeros((len(NAMES), len(t)))
    for name, (amp, hz, off) in moves.items():
        vals[NAMES.index(name)] = off + amp * np.sin(2 * math.pi * hz * t)
    return Staff(vals, [Row(n, "deg", -180.0, 180.0, True) for n in NAMES], fps=fps, bits=16)


ARMS = {"l_sho_pitch": (30.0, 1.0, 0.0), "r_sho_pitch": (30.0, 1.0, 0.0), "l_el": (-20.0, 1.0, -30.0)}


def test_simulate_json_fields_on_a_short_staff(tmp_path, capsys):
    p = tmp_path / "arms.png"
    write_motion(str(p), servo_staff(ARMS))
    assert main(["simulate", str(p), "--robot", "op3-dynamixel", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    for k in ("frames", "duration_s", "fell", "fall_time_s", "self_collision_frames", "tracking_rms_deg",
              "pose_error_deg", "torque_saturated_frac", "foot_slip_mm", "retimed", "infeasible"):
        assert k in rep
    assert rep["frames"] == 50 and rep["duration_s"] == 1.0
    assert rep["fell"] is False and rep["fall_time_s"] is None
    assert rep["self_collision_frames"] == 0
    assert 0.0 < rep["tracking_rms_deg"] < 4.0          # a real servo lags: never exactly 0
    assert 0.0 <= rep["torque_saturated_frac"] < 0.05
    assert rep["foot_slip_mm"] < 5.0
    assert rep["retimed"] == 1.0 and rep["infeasible"] == [] and rep["pose_error_deg"] is None
    assert rep["mapping"] == "servo" and rep["servos_driven"] == 20


def test_row_copy_of_hip_and_knee_pitch_falls():
    """The issue's case: +-20 deg hip and knee pitch at 1 Hz, joint for joint, tips OP3 over."""
    st = servo_staff({"l_hip_pitch": (20.0, 1.0, 0.0), "r_hip_pitch": (-20.0, 1.0, 0.0),
                      "l_knee": (-20.0, 1.0, -20.0), "r_knee": (20.0, 1.0, 20.0)}, seconds=2.0)
    rep = simulate_staff(st, "op3-dynamixel", settle_s=0.2)
    assert rep["fell"] is True and 0.1 < rep["fall_time_s"] < 2.0


def test_simulation_is_deterministic_and_seeded():
    st = servo_staff(ARMS, seconds=0.6)
    a = run_simulation(st, "op3-dynamixel", seed=5, settle_s=0.0, record=True)
    b = run_simulation(st, "op3-dynamixel", seed=5, settle_s=0.0, record=True)
    c = run_simulation(st, "op3-dynamixel", seed=6, settle_s=0.0, record=True)
    assert np.array_equal(np.array(a.qpos), np.array(b.qpos))
    assert not np.array_equal(np.array(a.qpos), np.array(c.qpos))
    drop = ("wall_s", "realtime_factor", "cpu_realtime_factor")
    assert {k: v for k, v in a.report.items() if k not in drop} == \
        {k: v for k, v in b.report.items() if k not in drop}


def short_clip(frames):
    full = read_motion(os.path.join(REPO, "host", "data", "131_03_short.bvh"))
    return Staff(full.values[:, :frames], full.rows, fps=full.fps, bits=full.bits, skeleton=full.skeleton,
                 meta=full.meta)


def test_render_and_record_and_compare(tmp_path, capsys):
    st = short_clip(12)
    src = tmp_path / "clip.bvh"
    write_motion(str(src), st)
    gif, rec = tmp_path / "robot.gif", tmp_path / "run.json"
    assert main(["simulate", str(src), "--robot", "op3-dynamixel", "--json", "-o", str(gif), "--compare",
                 "--record", str(rec), "--size", "96x72"]) == 0
    rep = json.loads(capsys.readouterr().out)
    from PIL import Image
    im = Image.open(gif)
    assert im.size == (192, 72) and rep["rendered_frames"] >= 5
    from host.physics.recording import read_recording
    doc, achieved = read_recording(str(rec))
    assert doc["frames"] == len(doc["times_s"]) == rep["frames"]
    assert achieved.names == NAMES
    # motionstaff view CLIP --robot-run run.json: served beside the person (stops at once here)
    import argparse
    import threading
    from host.commands import view
    stop = threading.Event()
    stop.set()
    args = argparse.Namespace(staffs=[str(src)], port=0, no_browser=True, robot=None, robot_run=str(rec))
    assert view.run(args, stop_event=stop) == 0
    capsys.readouterr()
    bad = tmp_path / "not_a_run.json"
    bad.write_text("{}")
    assert main(["view", str(src), "--robot-run", str(bad), "--no-browser"]) == 2
    assert "not a simulation recording" in capsys.readouterr().err


def test_bad_input_is_one_line(tmp_path, capsys, monkeypatch):
    p = tmp_path / "arms.png"
    write_motion(str(p), servo_staff(ARMS, seconds=0.2))
    assert main(["simulate", str(p), "--robot", "khr17-maestro"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "khr17-maestro has no physics model" in err[0]
    assert main(["simulate", str(p), "--robot", "op3-dynamixel", "-o", str(tmp_path / "x.avi")]) == 2
    assert "must end in .gif or .mp4" in capsys.readouterr().err
    # a model file that fails to load
    bad = tmp_path / "models" / "so101"
    bad.mkdir(parents=True)
    (bad / "so101_new_calib.xml").write_text("<mujoco><worldbody><body>")
    monkeypatch.setenv("MOTIONSTAFF_ROBOT_MODELS", str(tmp_path / "models"))
    assert main(["simulate", str(p), "--robot", "so101-feetech"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "so101_new_calib.xml does not load" in err[0]
    monkeypatch.setenv("MOTIONSTAFF_ROBOT_MODELS", str(tmp_path / "none"))
    assert main(["simulate", str(p), "--robot", "so101-feetech"]) == 2
    err = capsys.readouterr().err
    assert "model file" in err and "is missing" in err


def test_viewer_serves_the_simulated_robot_beside_the_person():
    import urllib.request
    from host.physics.recording import recording_staff, robot_body_json
    from host.view import Viewer
    st = short_clip(9)
    sim = run_simulation(st, "op3-dynamixel", settle_s=0.0, record=True)
    doc = robot_body_json(sim)
    # (the pose retargeting plays its own frames: a lead-in from home, the robot's rate, retimed)
    assert len(doc["segments"]) == doc["frames"] * doc["shapes"] * 6 and doc["frames"] == sim.staff.frames
    with Viewer([st], names=["clip"], extra=[(doc["name"], doc, recording_staff(doc))]) as v:
        bodies = json.loads(urllib.request.urlopen(v.url + "bodies.json").read())
        assert [b["name"] for b in bodies] == ["clip", "op3-dynamixel (simulated)"]
        served = json.loads(urllib.request.urlopen(v.url + "body/1.json").read())
        assert served["segments"] == doc["segments"]
        assert urllib.request.urlopen(v.url + "staff/1.png").read()[:4] == b"\x89PNG"


def test_so101_through_the_feetech_emulator():
    from host.physics.models import model_path
    if not os.path.isfile(model_path("so101")):
        pytest.skip("SO-101 model (../shared/data/robots/so101) is absent")
    names = [s.name for s in load_description("so101-feetech").servos]
    t = np.arange(40) / 50.0
    vals = np.zeros((len(names), len(t)))
    vals[names.index("shoulder_lift")] = 30 * np.sin(2 * math.pi * t)
    vals[names.index("elbow_flex")] = -20 * np.sin(2 * math.pi * t)
    st = Staff(vals, [Row(n, "deg", -180.0, 180.0, True) for n in names], fps=50, bits=16)
    rep = simulate_staff(st, "so101-feetech", settle_s=0.2)
    assert rep["fell"] is False and rep["foot_slip_mm"] is None
    assert rep["servos_driven"] == 6 and 0.0 < rep["tracking_rms_deg"] < 6.0


def test_no_offscreen_gl_is_one_line(monkeypatch):
    import subprocess
    import sys
    from host.physics import render
    monkeypatch.delitem(sys.modules, "mujoco")          # as in a fresh `simulate -o` process
    monkeypatch.setenv("_MOTIONSTAFF_GL_DEFAULT", "1")
    monkeypatch.setenv("MUJOCO_GL", "egl")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 1, "", "RuntimeError: cannot initialize %s\n" % k["env"]["MUJOCO_GL"]))
    with pytest.raises(OSError) as e:
        render.pick_gl()
    msg = str(e.value)
    assert "\n" not in msg and "egl: RuntimeError" in msg and "osmesa: RuntimeError" in msg
