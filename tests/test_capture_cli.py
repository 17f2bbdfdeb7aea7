"""`motionstaff capture` end to end: record, truth, convert the container, diff; bad input."""

import json

import numpy as np

from host.cli import main


def test_capture_record_truth_convert_diff(tmp_path, capsys):
    rec, truth, est = (str(tmp_path / n) for n in ("rec.msr", "truth.png", "est.png"))
    raw = str(tmp_path / "raw.jsonl")
    # the simulated human unit with the ideal sensors: this checks record, truth, convert and
    # diff agree (2 deg: the estimator inverting its own simulator); with the default honest
    # sensors the same 3 s score 19.2 deg (the right shoulder's gimbal lock at 3 s, soft tissue)
    from device.capture.config import default_config
    cfg = default_config(body="human")
    cfg["subject"]["noise"] = {"profile": "ideal"}
    conf = tmp_path / "unit.json"
    conf.write_text(json.dumps(cfg))
    assert main(["capture", "--duration", "3", "--record", rec, "--truth", truth,
                 "--raw-log", raw, "--config", str(conf), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["frames"] == 90 and summary["skipped"] == 0
    assert all(s["alive"] for s in summary["sensors"])
    assert main(["convert", rec, est]) == 0
    from host.stafffile import read_staff
    a, b = read_staff(est), read_staff(truth)
    assert a.names == b.names and a.frames == b.frames == 90
    d = (a.values[:, 50:] - b.values[:, 50:] + 180) % 360 - 180
    assert np.sqrt(np.nanmean(d ** 2)) < 2.0
    capsys.readouterr()
    assert main(["diff", est, truth]) in (0, 1)
    # the raw log re-estimated; the status display on stderr once a second
    capsys.readouterr()
    assert main(["capture", "--replay", raw, "--record", str(tmp_path / "again.png"), "--status"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "sensors 0/0" in err[0] and "CALIBRATING" not in err[-1]
    c = read_staff(str(tmp_path / "again.png"))
    assert c.frames == 90


def test_capture_bad_input_is_one_line(tmp_path, capsys):
    p = tmp_path / "unit.json"
    p.write_text('{"format": "motionstaff-unit", "rate_hz": -3}')
    assert main(["capture", "--config", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rate_hz" in err[0]
    assert main(["capture", "--clip", str(tmp_path / "nope.bvh")]) == 2
    assert "nope.bvh" in capsys.readouterr().err
    bad = tmp_path / "bad.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n OFFSET 0 0\n")
    assert main(["capture", "--clip", str(bad), "--duration", "1"]) == 2
    assert "bad.bvh" in capsys.readouterr().err
    junk = tmp_path / "junk.msr"
    junk.write_bytes(b"not a container at all")
    assert main(["convert", str(junk), str(tmp_path / "x.png")]) == 2
    assert "junk.msr" in capsys.readouterr().err
