"""`motionstaff play --osc/--vmc`: every frame sent to the robot also arrives over OSC and VMC
at a python-osc receiver on 127.0.0.1."""

import json
import pathlib

import pytest

pytest.importorskip("pythonosc")
from host.cli import main  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
CLIP = REPO / ".." / "shared" / "data" / "bvh" / "dataset-1_kick_normal_001.bvh"


@pytest.mark.skipif(not CLIP.exists(), reason="Bandai-Namco kick clip not found in ../shared/data/bvh")
def test_play_streams_osc_and_vmc(tmp_path, capsys, osc_receiver):
    robot = json.loads((REPO / "device" / "servo" / "robots" / "khr17-maestro.json").read_text())
    robot["ramp"]["max_vel_dps"] = 5000.0            # a quick ramp keeps the test short
    rp = tmp_path / "khr.json"
    rp.write_text(json.dumps(robot))
    rx = osc_receiver
    rc = main(["play", str(CLIP), "--port", "loop://", "--robot", str(rp), "--from", "1", "--to", "1.3",
               "--no-progress", "--json", "--osc", rx.target, "--vmc", rx.target])
    out = capsys.readouterr().out
    assert rc == 0, out
    s = json.loads(out.strip().splitlines()[-1])
    sent = s["frames"]
    assert sent >= 1 and s["frames"] + s["skipped"] == 10
    ok = rx.wait_for(lambda: rx.count("/motionstaff/frame") >= sent and rx.count("/VMC/Ext/T") >= sent,
                     timeout=60)
    assert ok, (sent, rx.count("/motionstaff/frame"), rx.count("/VMC/Ext/T"))
    got = rx.messages
    frames = sorted((a for x, a in got if x == "/motionstaff/frame"), key=lambda a: a[0])
    assert [a[0] for a in frames] == list(range(sent))          # frame indices count frames sent
    rows = [a for x, a in got if x == "/motionstaff/rows"][0]
    assert len(frames[0]) == 2 + len(rows)
    assert any(x == "/VMC/Ext/Bone/Pos" and a[0] == "LeftUpperLeg" for x, a in got)


def test_play_bad_osc_target_exits_2(capsys):
    if not CLIP.exists():
        pytest.skip("clip not found")
    assert main(["play", str(CLIP), "--port", "loop://", "--robot", "khr17-maestro",
                 "--osc", "127.0.0.1:notaport"]) == 2
    assert capsys.readouterr().err.startswith("motionstaff:")
