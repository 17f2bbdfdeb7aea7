"""`render`: a moving 3D figure above the staff with a playhead, GIF and MP4, compare side by side,
an outline body; drawn pixels checked in the frames."""

import json
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from device.body.human import human_model
from host.bvh import read_bvh
from host.cli import main
from host.edit import mirror, trim
from host.render import frame_times, render_gif, render_video
from host.render.outline import LEFT, RIGHT, check_outline, default_outline
from host.staff import Row, Staff
from protocol.errors import FormatError


@pytest.fixture(scope="module")
def clip(shared_data):
    return trim(read_bvh(str(shared_data / "bvh" / "131_03.bvh")), 0.0, 3.0)


def gif_frames(path):
    im = Image.open(path)
    out = []
    for i in range(im.n_frames):
        im.seek(i)
        out.append(np.asarray(im.convert("RGB")).astype(int))
    return out


def colour_pixels(rgb, colour, region):
    c = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    sub = rgb[region]
    return int((np.abs(sub - c).sum(axis=2) < 60).sum())


def playhead_x(rgb):
    band = rgb[int(rgb.shape[0] * 0.78):int(rgb.shape[0] * 0.9)]
    red = (band[:, :, 0] > 200) & (band[:, :, 1] < 90) & (band[:, :, 2] < 90)
    cols = np.flatnonzero(red.sum(axis=0) > band.shape[0] * 0.5)
    return float(cols.mean()) if cols.size else None


def test_gif_has_moving_figure_and_playhead(tmp_path, clip):
    out = tmp_path / "walk.gif"
    n = render_gif(clip, str(out), fps=10.0, size_px=(480, 360))
    frames = gif_frames(out)
    assert n == len(frames) == 30
    top = (slice(0, 250), slice(None))
    for f in (frames[0], frames[15], frames[-1]):
        assert colour_pixels(f, LEFT, top) > 40 and colour_pixels(f, RIGHT, top) > 40
    # the body moves: the figure region differs between frames
    assert np.abs(frames[0][top] - frames[15][top]).sum() > 1000
    xs = [playhead_x(f) for f in frames]
    assert None not in xs and all(b > a for a, b in zip(xs, xs[1:]))


def test_compare_side_by_side(tmp_path, clip):
    out = tmp_path / "cmp.gif"
    render_gif(clip, str(out), compare=mirror(clip), fps=5.0, size_px=(640, 360))
    f = gif_frames(out)[5]
    left, right = (slice(0, 250), slice(0, 320)), (slice(0, 250), slice(320, 640))
    for half in (left, right):
        assert colour_pixels(f, LEFT, half) > 20 and colour_pixels(f, RIGHT, half) > 20


def test_speed_and_max_frames(clip):
    assert len(frame_times(clip, 20.0, 1.0, None)) == 60
    assert len(frame_times(clip, 20.0, 2.0, None)) == 30
    assert len(frame_times(clip, 20.0, 0.5, None)) == 120
    k = frame_times(clip, 20.0, 0.5, 50)
    assert len(k) == 50 and k[-1] <= clip.frames - 1 and (np.diff(k) >= 0).all()
    with pytest.raises(FormatError, match="speed"):
        frame_times(clip, 20.0, 0.0, None)


def test_outline_body_human_model(tmp_path):
    sk = human_model()
    t = np.arange(40) / 20.0
    v = np.repeat(sk.home[:, None], 40, axis=1)
    v[sk.dof_index("l_shoulder_abd")] = 80 * np.sin(np.pi * t)
    st = Staff(v, [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs], 20.0, skeleton=sk)
    shapes = [{"link": "chest", "kind": "box", "center": [0, 0, 0.15], "size": [0.2, 0.35, 0.3], "colour": "#00aa00"},
              {"link": "head", "kind": "sphere", "center": [0, 0, 0.1], "radius_m": 0.11, "colour": "#00aa00"}]
    shapes += default_outline(sk)
    check_outline({"format": "motionstaff-outline", "shapes": shapes}, sk)
    out = tmp_path / "h.gif"
    render_gif(st, str(out), fps=10, body=shapes, size_px=(400, 300))
    f = gif_frames(out)[5]
    assert colour_pixels(f, "#00aa00", (slice(0, 220), slice(None))) > 30
    with pytest.raises(FormatError, match="not a link"):
        check_outline({"shapes": [{"link": "wing", "kind": "capsule", "from": [0, 0, 0], "to": [1, 0, 0]}]}, sk)


def test_mp4_or_clear_message(tmp_path, clip, monkeypatch):
    out = tmp_path / "walk.mp4"
    if shutil.which("ffmpeg") and shutil.which("ffprobe"):
        n = render_video(clip, str(out), fps=10.0, size_px=(320, 240))
        probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                                "-show_entries", "stream=nb_read_frames,width,height", "-of", "json", str(out)],
                               capture_output=True, text=True, check=True)
        s = json.loads(probe.stdout)["streams"][0]
        assert int(s["nb_read_frames"]) == n == 30 and (s["width"], s["height"]) == (320, 240)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(FormatError, match="ffmpeg is not installed"):
        render_video(clip, str(tmp_path / "x.mp4"))


def test_cli_render(tmp_path, capsys, shared_data):
    src = str(shared_data / "bvh" / "131_03.bvh")
    out = tmp_path / "w.gif"
    assert main(["render", src, "-o", str(out), "--speed", "4", "--view", "30,20", "--size", "320x240"]) == 0
    assert len(gif_frames(out)) > 10
    for args, word in ((["--view", "x"], "--view"), (["-o", str(tmp_path / "a.avi")], "gif or .mp4"),
                       (["--speed", "0"], "speed")):
        capsys.readouterr()
        argv = ["render", src] + (args if "-o" in args else ["-o", str(out)] + args)
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and word in err
    Staff_no_sk = tmp_path / "nosk.csv"
    Staff_no_sk.write_text("time_s,a\n0,1\n0.1,2\n")
    capsys.readouterr()
    rc = main(["render", str(Staff_no_sk), "-o", str(out)])
    assert rc == 2
