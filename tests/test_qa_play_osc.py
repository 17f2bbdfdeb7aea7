"""QA of `play` (any motion format, OSC/VMC times of skipped frames), live OSC under a full
send buffer, `gestures remove` and placeholders in osc: gesture commands. Each test names
what went wrong and checks the fix."""

import errno
import json
import os
import pathlib
import types

import numpy as np
import pytest

pytest.importorskip("pythonosc")

from device.outputs.osc import OscOutput  # noqa: E402
from host.cli import main  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
DATA = REPO / ".." / "shared" / "data"
HOP = DATA / "bvh" / "131_03.bvh"
KICK = DATA / "bvh" / "dataset-1_kick_normal_001.bvh"
GAIT = DATA / "c3d" / "gait-raw.c3d"
need_bvh = pytest.mark.skipif(not (HOP.exists() and KICK.exists()), reason="../shared/data/bvh is absent")
need_c3d = pytest.mark.skipif(not GAIT.exists(), reason="../shared/data/c3d is absent")


def _one_line_error(capsys):
    """The stderr of a failed command: one 'motionstaff: ...' line, no traceback."""
    err = capsys.readouterr().err
    assert err.startswith("motionstaff: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _quick_robot(tmp_path):
    """khr17-maestro with a quick ramp (the test does not wait for a slow approach)."""
    robot = json.loads((REPO / "device" / "servo" / "robots" / "khr17-maestro.json").read_text())
    robot["ramp"]["max_vel_dps"] = 5000.0
    path = tmp_path / "khr.json"
    path.write_text(json.dumps(robot))
    return str(path)


def _play_json(capsys, *argv):
    rc = main(["play", *argv, "--port", "loop://", "--no-progress", "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out.strip().splitlines()[-1])


# --- 1. play reads every motion format ------------------------------------------------------------

@need_c3d
def test_play_reads_a_c3d_capture(tmp_path, capsys):
    """`play gait.c3d ...` said 'not a PNG file': play read only .png and .bvh."""
    s = _play_json(capsys, str(GAIT), "--robot", _quick_robot(tmp_path), "--to", "0.1")
    assert s["frames"] + s["skipped"] == 6 and s["mapping"] == "human"     # 50 fps: frames 0..5
    assert s["servos_driven"] == 17 and s["send_errors"] == 0


@need_bvh
def test_play_reads_a_csv_staff(tmp_path, capsys):
    from host.formats import read_motion, write_motion
    csv = tmp_path / "hop.csv"
    write_motion(str(csv), read_motion(str(HOP)))
    s = _play_json(capsys, str(csv), "--robot", _quick_robot(tmp_path), "--to", "0.05")
    assert s["frames"] + s["skipped"] == 7 and s["mapping"] == "cmu"       # 120 fps: frames 0..6


def test_play_unreadable_files_are_one_line(tmp_path, capsys):
    """Unknown extensions and damaged files of every format: one line, status 2."""
    cases = {"bad.c3d": "not a readable C3D file", "bad.csv": "bad.csv: line 2",
             "bad.png": "not a PNG file", "bad.bvh": "bad.bvh: ", "bad.txt": "cannot read '.txt' files",
             "none.c3d": "none.c3d: No such file or directory"}
    for name, what in cases.items():
        if name != "none.c3d":
            (tmp_path / name).write_text("a,b\n1,x\n" if name.endswith(".csv") else "garbage")
        assert main(["play", str(tmp_path / name), "--port", "loop://", "--robot", "khr17-maestro",
                     "--no-progress"]) == 2, name
        assert what in _one_line_error(capsys), name


def test_play_help_names_every_format(capsys):
    with pytest.raises(SystemExit):
        main(["play", "--help"])
    out = capsys.readouterr().out
    assert "C3D" in out and "CSV" in out


# --- 2. play --osc/--vmc: the motion's own time of every frame sent --------------------------------

class _VirtualTime:
    """A virtual monotonic clock for the player: sleep() advances it, and so does every
    command the robot is sent (a slow robot: `cost_s` a frame)."""

    def __init__(self, cost_s):
        self.t = 100.0
        self.cost_s = cost_s

    def monotonic(self):
        return self.t

    def sleep(self, d):
        self.t += max(0.0, d)


def _slow_robot(monkeypatch, cost_s):
    from device.servo import maestro, player
    clock = _VirtualTime(cost_s)
    monkeypatch.setattr(player, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    send = maestro.Maestro.send_positions

    def slow_send(self, cmds):
        out = send(self, cmds)
        clock.t += clock.cost_s
        return out
    monkeypatch.setattr(maestro.Maestro, "send_positions", slow_send)
    return clock


def _lockstep(monkeypatch, rx):
    """Each OSC / VMC frame is sent once the previous one has arrived (a loaded machine cannot
    overflow the receiver's socket buffer and drop datagrams)."""
    from device.outputs import osc, vmc
    for cls, address in ((osc.OscOutput, "/motionstaff/frame"), (vmc.VmcOutput, "/VMC/Ext/T")):
        def call(self, frame_index, t_s, values, codes=None, _orig=cls.__call__, _address=address):
            _orig(self, frame_index, t_s, values, codes)
            n = self.frames_sent
            assert rx.wait_for(lambda: rx.count(_address) >= n, 30), (_address, n)
        monkeypatch.setattr(cls, "__call__", call)


@need_bvh
def test_play_streams_source_times_when_it_skips_frames(tmp_path, capsys, monkeypatch, osc_receiver):
    """`play 131_03.bvh --osc --vmc` on a slow robot skipped frames to stay in real time, and
    the streamed times counted the frames sent (k / fps): 1 s of the hop came out as 0.4 s."""
    from host.formats import read_motion
    staff = read_motion(str(HOP))
    rx = osc_receiver
    _slow_robot(monkeypatch, cost_s=2.5 / staff.fps)          # a frame costs 2.5 frame periods
    _lockstep(monkeypatch, rx)
    s = _play_json(capsys, str(HOP), "--robot", _quick_robot(tmp_path), "--from", "2", "--to", "3",
                   "--osc", rx.target, "--vmc", rx.target)
    sent = s["frames"]
    assert s["frames"] + s["skipped"] == 121 and s["skipped"] > 60 and s["stream_dropped"] == 0
    frames = sorted((a for x, a in rx.messages if x == "/motionstaff/frame"), key=lambda a: a[0])
    vmc_t = [a[0] for x, a in rx.messages if x == "/VMC/Ext/T"]
    assert [a[0] for a in frames] == list(range(sent))        # the index counts the frames sent
    times = np.array([a[1] for a in frames])
    src = np.round(times * staff.fps).astype(int)
    np.testing.assert_allclose(times, src / staff.fps, atol=1e-6)       # source frame times
    np.testing.assert_allclose(sorted(vmc_t), times, atol=1e-6)         # VMC: the same times
    assert src[0] == 240 and src[-1] == 360 and (np.diff(src) >= 1).all() and (np.diff(src) > 1).any()
    for a, k in zip(frames, src):                                       # and the frame's own values
        np.testing.assert_allclose(np.array(a[2:]), staff.values[:, k].astype(np.float32), atol=1e-3)


def test_rows_are_announced_every_second_of_motion_time_also_backwards():
    """With play's source times, `play --reverse --osc` would have announced /rows with every
    frame (the old rule re-announced whenever the time went back)."""
    out = OscOutput(["a"], port=9)

    def announced(times):
        return [t for t in times if out.messages(0, t, [1.0])[0][0] == "/motionstaff/rows"]
    fps = 30.0
    assert announced([k / fps for k in range(91)]) == [0.0, 1.0, 2.0, 3.0]            # forwards
    out = OscOutput(["a"], port=9)
    assert announced([k / fps for k in range(90, -1, -1)]) == [3.0, 2.0, 1.0, 0.0]    # --reverse
    out = OscOutput(["a"], port=9)
    looped = [k / fps for k in range(60)] * 3                                          # 2 s, --loop
    assert announced(looped) == [0.0, 1.0] * 3                                         # and restarts
    out.close()


def test_player_reports_the_source_index_of_every_frame_sent():
    from device.servo.base import Driver
    from device.servo.player import Player
    from device.servo.robot import load_robot
    clock = _VirtualTime(cost_s=0.025)

    class Slow(Driver):
        NAME = "slow"

        def send_positions(self, cmds):
            clock.t += clock.cost_s

    robot = load_robot("khr17-maestro")
    names = [sv.map["human"].lstrip("-") for sv in robot.servos]
    rng = np.random.default_rng(7)
    values = rng.uniform(-20, 20, (len(names), 60))
    p = Player(robot, Slow(None), row_names=names, clock=clock.monotonic, sleep=clock.sleep)
    got = []
    s = p.play(values, 100.0, on_frame=lambda k, col: got.append((k, list(col))))
    assert s["skipped"] > 0 and len(got) == s["frames"] and got[-1][0] == 59
    assert all(col == list(values[:, k]) for k, col in got)


# --- 3. a full send buffer drops a datagram, the stream goes on ------------------------------------

class _FullOnce:
    """A stand-in for the client's socket: the first sendto raises `error` (the system's send
    buffer is full), every other call goes to the real socket."""

    def __init__(self, sock, error):
        self.sock = sock
        self.error = error
        self.calls = 0

    def sendto(self, data, address):
        self.calls += 1
        if self.calls == 1:
            raise self.error
        return self.sock.sendto(data, address)

    def close(self):
        self.sock.close()


FULL = [BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"),
        OSError(errno.ENOBUFS, "No buffer space available")]


@pytest.mark.parametrize("error", FULL, ids=["BlockingIOError", "ENOBUFS"])
def test_osc_drops_a_datagram_when_the_send_buffer_is_full(osc_receiver, error):
    """A full send buffer (BlockingIOError from the non-blocking socket) ended the stream with
    'OSC target ...: Resource temporarily unavailable'."""
    out = OscOutput(["a", "b"], port=osc_receiver.port)
    out.client._sock = _FullOnce(out.client._sock, error)
    rng = np.random.default_rng(1)
    frames = rng.uniform(-90, 90, (4, 2))
    for k, v in enumerate(frames):
        out(k, k / 30.0, v)
    msgs = osc_receiver.wait_count("/motionstaff/frame", 3)
    out.close()
    got = sorted(a for x, a in msgs if x == "/motionstaff/frame")
    assert [a[0] for a in got] == [1, 2, 3] and out.dropped == 1
    np.testing.assert_allclose([a[2:] for a in got], frames[1:].astype(np.float32), atol=1e-4)


@need_bvh
def test_vmc_drops_a_datagram_when_the_send_buffer_is_full(osc_receiver):
    from device.outputs.vmc import VmcOutput
    from host.formats import read_motion
    staff = read_motion(str(KICK))
    out = VmcOutput(staff.skeleton, port=osc_receiver.port, row_names=staff.names)
    out.client._sock = _FullOnce(out.client._sock, FULL[0])
    for k in range(3):
        out(k, k / staff.fps, staff.values[:, k])
    msgs = osc_receiver.wait_count("/VMC/Ext/T", 2)
    out.close()
    assert sorted(a[0] for x, a in msgs if x == "/VMC/Ext/T") == pytest.approx([1 / staff.fps, 2 / staff.fps])
    assert out.dropped == 1


def test_other_send_errors_still_end_the_stream_naming_the_target():
    out = OscOutput(["a"], port=9000)
    out.client._sock = _FullOnce(out.client._sock, PermissionError(errno.EACCES, "Permission denied"))
    with pytest.raises(OSError, match=r"^OSC target 127.0.0.1:9000: Permission denied$"):
        out(0, 0.0, [1.0])
    out.close()
    assert out.dropped == 0


@need_bvh
def test_stream_reports_dropped_datagrams(osc_receiver, capsys, monkeypatch):
    from pythonosc import udp_client
    send = udp_client.UDPClient.send
    calls = []

    def full_once(self, content):
        calls.append(1)
        if len(calls) == 1:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return send(self, content)
    monkeypatch.setattr(udp_client.UDPClient, "send", full_once)
    assert main(["stream", str(KICK), "--osc", osc_receiver.target, "--as-fast-as-possible"]) == 0
    out = capsys.readouterr().out
    assert "streamed 358 frames" in out and "1 datagram(s) dropped (send buffer full)" in out


# --- 4. gestures remove ----------------------------------------------------------------------------

def _library(path, names):
    from device.gestures.library import Gesture, save_library
    rng = np.random.default_rng(5)
    save_library(str(path), [Gesture(n, ["a", "b"], [1.0, 1.0], [rng.normal(size=(6, 2))], 0.5,
                                     command="osc:/g %s" % n, space="rows") for n in names])


def test_gestures_remove(tmp_path, capsys, monkeypatch):
    """There was no way to take a gesture out of a library but editing the JSON by hand."""
    from device.gestures import library
    from device.gestures.library import load_library
    lib = tmp_path / "g.json"
    _library(lib, ["kick", "wave", "hop"])
    renames = []
    replace = os.replace
    monkeypatch.setattr(library.os, "replace", lambda a, b: (renames.append((a, b)), replace(a, b)))
    assert main(["gestures", "remove", "wave", "--library", str(lib)]) == 0
    assert "removed 'wave', 2 gesture(s) left" in capsys.readouterr().out
    assert [g.name for g in load_library(str(lib))] == ["kick", "hop"]
    assert len(renames) == 1 and renames[0][1] == str(lib) and renames[0][0].startswith(str(lib) + ".tmp")
    assert sorted(os.listdir(tmp_path)) == ["g.json"]
    assert main(["gestures", "list", "--library", str(lib)]) == 0
    assert "wave" not in capsys.readouterr().out


def test_gestures_remove_unknown_name_or_library_is_one_line(tmp_path, capsys):
    lib = tmp_path / "g.json"
    _library(lib, ["kick"])
    before = lib.read_bytes()
    assert main(["gestures", "remove", "wave", "--library", str(lib)]) == 2
    assert "g.json: no gesture named 'wave' (the library has: kick)" in _one_line_error(capsys)
    assert lib.read_bytes() == before
    assert main(["gestures", "remove", "kick", "--library", str(tmp_path / "none.json")]) == 2
    assert "none.json: No such file or directory" in _one_line_error(capsys)


def test_gestures_remove_write_failure_keeps_the_library(tmp_path, capsys, monkeypatch):
    from device.gestures import library
    lib = tmp_path / "g.json"
    _library(lib, ["kick", "wave"])
    before = lib.read_bytes()

    def refuse(a, b):
        raise PermissionError(errno.EACCES, "Permission denied", a)
    monkeypatch.setattr(library.os, "replace", refuse)
    assert main(["gestures", "remove", "kick", "--library", str(lib)]) == 2
    err = _one_line_error(capsys)
    assert "g.json: Permission denied" in err and ".tmp" not in err
    assert lib.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["g.json"]


# --- 5. placeholders in osc: gesture commands ------------------------------------------------------

def _match(command):
    from device.gestures.recognizer import Match
    return Match("kick", command, 0.8, 0.1, 0.5, 0, 10, 12, 0.0, 0.33, 0.4)


def test_osc_command_fills_placeholders_with_types(osc_receiver):
    """`osc:/game/gesture {name} {confidence}` sent the text '{name}' '{confidence}', while
    serial: and exec: filled them in."""
    from host.gestures.actions import Actions
    act = Actions(osc_target=("127.0.0.1", osc_receiver.port))
    act.perform(_match("osc:/g {name} {confidence} {t_s} at_{t_s} {nme} 3 0.5 x{name} '{\"a\": 1}'"))
    act.perform(_match("osc://127.0.0.1:%d/h {name}" % osc_receiver.port))
    assert osc_receiver.wait_for(lambda: osc_receiver.count("/g") == osc_receiver.count("/h") == 1, 10)
    msgs = list(osc_receiver.messages)
    act.close()
    args = [a for x, a in msgs if x == "/g"][0]
    assert args[0] == "kick" and args[1:3] == pytest.approx((0.8, 0.33))
    assert [type(a) for a in args[:3]] == [str, float, float]
    assert args[3:] == ("at_0.330", "{nme}", 3, 0.5, "xkick", '{"a": 1}')
    assert [a for x, a in msgs if x == "/h"] == [("kick",)]


def test_osc_command_dry_run_shows_filled_arguments():
    from host.gestures.actions import Actions
    act = Actions(dry_run=True)
    kind, what = act.perform(_match("osc:/g {name} {confidence} c={confidence}"))
    assert kind == "osc" and what[2] == ["kick", 0.8, "c=0.800"]
    act.close()
