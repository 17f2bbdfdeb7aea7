"""The user-facing bugs of issue 15, tried as a new user would: capture writes only recordings
convert/info read back (the header checked first; a BVH root's home inside its range), bad
output paths refused before any work, C3D import progress and fit report, plain progress in a
log, `motionstaff --version`, the compiled blob scan equal to the numpy one."""

import io
import os

import numpy as np
import pytest

from host.cli import main


def _bvh(path, y0=300.0, frames=40):
    """A two-joint BVH whose root stands 3 m up (home 0 would be outside its range)."""
    lines = ["HIERARCHY", "ROOT Hips", "{", "  OFFSET 0 0 0",
             "  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation",
             "  JOINT Chest", "  {", "    OFFSET 0 50 0", "    CHANNELS 3 Zrotation Xrotation Yrotation",
             "    JOINT Head", "    {", "      OFFSET 0 40 0", "      CHANNELS 3 Zrotation Xrotation Yrotation",
             "      End Site", "      {", "        OFFSET 0 30 0", "      }", "    }",
             "  }", "  JOINT LegL", "  {", "    OFFSET 10 -90 0", "    CHANNELS 3 Zrotation Xrotation Yrotation",
             "    End Site", "    {", "      OFFSET 0 -80 0", "    }", "  }", "}",
             "MOTION", "Frames: %d" % frames, "Frame Time: 0.0333333"]
    for k in range(frames):
        a = 10 * np.sin(k / 6.0)
        lines.append(" ".join("%.4f" % v for v in [0, y0 + k * 0.5, 0, 0, 0, a, a, 0, 0, 0, a, 0, a, 0, 0]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def test_capture_orient_on_a_clip_writes_recordings_convert_and_info_read(tmp_path, capsys):
    bvh = str(tmp_path / "up.bvh")
    _bvh(bvh)
    rec, truth = str(tmp_path / "r.msr"), str(tmp_path / "t.png")
    assert main(["capture", "--clip", bvh, "--estimator", "orient", "--duration", "1.2",
                 "--record", rec, "--truth", truth]) == 0
    capsys.readouterr()
    assert main(["info", rec]) == 0 and main(["info", truth]) == 0
    assert main(["convert", rec, str(tmp_path / "r.png")]) == 0
    out = capsys.readouterr()
    assert "outside" not in out.err


def test_a_header_convert_would_refuse_is_refused_before_recording(tmp_path):
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    from protocol.errors import FormatError
    cfg = default_config(body="human", estimator="orient")
    cfg["subject"]["max_s"] = 1.0
    unit = build_unit(cfg)
    d = next(d for d in unit.skeleton.dofs if d.kind == "rotation")
    d.home = d.hi + 5.0                            # a skeleton that fails its own check
    rec = tmp_path / "bad.msr"
    with pytest.raises(FormatError, match="home"):
        CaptureLoop(unit, record=str(rec))
    assert not rec.exists()


@pytest.mark.parametrize("argv, what", [
    (["capture", "--record", "{d}/missing/r.msr"], "No such directory for --record"),
    (["capture", "--truth", "{d}/missing/t.png"], "No such directory for --truth"),
    (["capture", "--raw-log", "{d}/missing/raw.jsonl"], "No such directory for --raw-log"),
    (["capture", "--record", "{d}"], "Is a directory"),
    (["capture", "--record", "{d}/old.msr"], "never replaces"),
    (["capture", "--record-dir", "{d}/old.msr"], "Not a directory"),
    (["capture", "--sync-s", "0"], "--sync-s"),
    (["emulate", "maestro", "--log", "{d}/missing/x.csv"], "No such directory for --log"),
])
def test_bad_output_paths_are_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, what):
    import device.capture.unit
    import device.servo.emulate

    def work(*a, **k):
        raise RuntimeError("work started before the output paths were checked")
    monkeypatch.setattr(device.capture.unit, "build_unit", work)
    monkeypatch.setattr(device.servo.emulate, "make_emulator", work)
    old = tmp_path / "old.msr"
    old.write_bytes(b"an earlier recording")
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("motionstaff: ") and what in err and "\n" not in err
    assert old.read_bytes() == b"an earlier recording"


def test_record_dir_names_a_new_recording_each_time(tmp_path, capsys):
    d = str(tmp_path / "recs")
    for _ in range(2):
        assert main(["capture", "--body", "humanoid18", "--chip", "mpu6050", "--estimator", "orient",
                     "--duration", "0.5", "--record-dir", d]) == 0
    names = sorted(os.listdir(d))
    assert len(names) == 2 and names[0].startswith("rec-000001-") and names[1].startswith("rec-000002-")
    assert "recording to %s/rec-000002-" % d in capsys.readouterr().err
    from protocol import container
    assert all(container.read(os.path.join(d, n)).nframes == 15 for n in names)


def test_capture_refuses_a_config_whose_bus_does_not_fit(tmp_path, capsys):
    import json
    from device.capture.config import default_config
    cfg = default_config(body="human")
    cfg["buses"] = {"i2c-1": "sim-i2c://1?hz=100000"}
    from device.body.human import human_model
    from device.capture.config import place_sensors
    cfg["sensors"] = place_sensors(human_model(), bus="i2c-1")
    p = tmp_path / "unit.json"
    p.write_text(json.dumps(cfg))
    rec = tmp_path / "r.msr"
    assert main(["capture", "--config", str(p), "--record", str(rec)]) == 2
    err = capsys.readouterr().err.strip()
    assert "bus i2c-1: 22 BNO055 x 20 B" in err and "at 100 kHz" in err and "> 33.3 ms frame" in err
    assert "\n" not in err and not rec.exists()


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("motionstaff ") and out.split()[1][0].isdigit()


def test_progress_is_plain_lines_in_a_log_and_quiet_when_asked():
    from host.progress import PlainProgress, progress
    log = io.StringIO()
    bar = progress(total=1000, desc="job", unit="frame", file=log)
    assert isinstance(bar, PlainProgress)
    for _ in range(1000):
        bar.update(1)
    bar.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 10 and "\r" not in log.getvalue()
    assert lines[-1].startswith("job: 1000/1000 frame (100%)")
    quiet = io.StringIO()
    bar = progress(total=10, file=quiet, quiet=True)
    for _ in range(10):
        bar.update(1)
    assert quiet.getvalue() == ""


def test_c3d_import_reports_its_fit(tmp_path, capsys):
    pytest.importorskip("ezc3d")
    from device.body.human import human_model
    from device.body.kinematics import forward_kinematics
    from host.c3d import read_c3d, write_markers_c3d
    sk = human_model(floating=True)
    names = [f.name for f in sk.features if f.kind == "marker"][:12]
    idx = [sk.feature_names.index(n) for n in names]
    F = 8
    pos = np.zeros((F, len(names), 3))
    for k in range(F):
        q = sk.home.copy()
        q[sk.dof_index("root_tx")] = 0.01 * k
        pos[k] = forward_kinematics(sk, q).feature_pos_m[idx]
    pos[3, 0] = np.nan                             # one marker occluded in one frame
    path = str(tmp_path / "m.c3d")
    write_markers_c3d(path, names, pos, 50.0)
    st = read_c3d(path)
    err = capsys.readouterr().err
    assert "12 of 12 markers matched" in err and "8 of 8 frames solved" in err
    fit = st.meta["fit"]
    assert fit["matched"] == names and len(fit["rms_mm"]) == 12
    assert max(fit["rms_mm"]) < 20.0                # the model's own markers: a close fit
    for n in names:
        assert ("  %s " % n) in err                 # a line per marker
    assert "IK: 8/8 frame (100%)" in err            # plain progress (stderr is not a terminal)


def test_compiled_blob_scan_matches_numpy():
    from device.sensors.markers import detect_blobs
    from device.body.dynamics_numba import available
    if not available():
        pytest.skip("numba not available")
    rng = np.random.default_rng(3)
    for trial in range(6):
        img = rng.normal(60, 20, (120, 160)).clip(0, 255)
        for _ in range(25):                        # blobs, some touching, some at the edges
            u, v, r = rng.uniform(-3, 163), rng.uniform(-3, 123), rng.uniform(0.8, 4.0)
            yy, xx = np.mgrid[0:120, 0:160]
            img += 250 * np.exp(-((xx - u) ** 2 + (yy - v) ** 2) / (2 * r * r))
        img = img.clip(0, 255).astype(np.uint8)
        a = detect_blobs(img, compiled=True)
        b = detect_blobs(img, compiled=False)
        assert len(a) == len(b) > 5
        assert np.allclose(np.array(a), np.array(b), rtol=0, atol=1e-9)
