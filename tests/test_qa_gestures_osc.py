"""QA of the gesture and live-output features as a user meets them: each test names the
command that went wrong, what it did, and checks the fix."""

import json
import os
import socket

import numpy as np
import pytest

pytest.importorskip("pythonosc")

from device.outputs.osc import MAX_DATAGRAM, OscOutput, _bundle, _message, parse_target, split_bundles  # noqa: E402
from host.cli import main  # noqa: E402
from protocol.errors import FormatError  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bvh")
KICK = os.path.join(DATA, "dataset-1_kick_normal_001.bvh")
WALK = os.path.join(DATA, "131_01.bvh")
need_data = pytest.mark.skipif(not os.path.exists(KICK), reason="../shared/data/bvh is absent")


def _one_line_error(capsys):
    """The stderr of a failed command: one 'motionstaff: ...' line, no traceback."""
    err = capsys.readouterr().err
    assert err.startswith("motionstaff: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _no_dns(monkeypatch):
    """Host names do not resolve (deterministic, no network needed)."""
    def fail(*a, **k):
        raise socket.gaierror(-2, "Name or service not known")
    monkeypatch.setattr(socket, "getaddrinfo", fail)


# --- OSC / VMC output ---------------------------------------------------------------------------

def test_per_row_frames_of_a_large_staff_reach_a_python_osc_receiver(osc_receiver):
    """`stream dataset-1_walk_normal_001.png --osc ... --per-row` (132 rows): the bundle holding
    the /rows announcement was 10.9 kB, over python-osc's 8192-byte receive buffer, so the
    first frame of every second never arrived and /rows never at all."""
    names = ["Joint_%03d.Xrotation" % i for i in range(132)]
    out = OscOutput(names, port=osc_receiver.port, per_row=True, units=["deg"] * 132)
    rng = np.random.default_rng(3)
    frames = rng.uniform(-90, 90, (3, 132))
    for k, v in enumerate(frames):
        out(k, k * 1.0, v)                     # a second apart: every frame announces /rows
    msgs = osc_receiver.wait_count("/motionstaff/frame", 3)
    out.close()
    got = [a for x, a in msgs if x == "/motionstaff/frame"]
    assert sorted(a[0] for a in got) == [0, 1, 2]
    assert [a for x, a in msgs if x == "/motionstaff/rows"][0] == tuple(names)
    assert osc_receiver.wait_for(lambda: osc_receiver.count("/motionstaff/row/Joint_131.Xrotation") == 3, 10)
    for group in split_bundles([_message(a, x) for a, x in out.messages(3, 9.0, frames[0])]):
        assert len(_bundle(group).dgram) <= MAX_DATAGRAM


def test_a_small_frame_still_travels_as_one_bundle():
    out = OscOutput(["a", "b"], port=9, per_row=True)
    built = [_message(a, x) for a, x in out.messages(0, 0.0, [1.0, 2.0])]
    out.close()
    assert len(split_bundles(built)) == 1


def test_unknown_host_names_the_target(monkeypatch, capsys, tmp_path):
    """`stream x --osc host.invalid:9000` said only '[Errno -2] Name or service not known'."""
    _no_dns(monkeypatch)
    with pytest.raises(ValueError, match=r"OSC target host.invalid:9000: host 'host.invalid' not found"):
        OscOutput(["a"], host="host.invalid", port=9000)
    if not os.path.exists(KICK):
        return
    assert main(["stream", KICK, "--vmc", "host.invalid", "--as-fast-as-possible"]) == 2
    assert "VMC target host.invalid:39539: host 'host.invalid' not found" in _one_line_error(capsys)


def test_a_send_error_names_the_target():
    """`stream x --osc 255.255.255.255:9000` said only '[Errno 13] Permission denied'."""
    out = OscOutput(["a"], port=9000)

    class Refusing:
        def send(self, content):
            raise PermissionError(13, "Permission denied")
    out.client = Refusing()
    with pytest.raises(OSError, match=r"^OSC target 127.0.0.1:9000: Permission denied$"):
        out(0, 0.0, [1.0])


def test_targets_and_prefixes():
    """An IPv6 address had no way in ('[::1]:9000' did not resolve); an empty --prefix sent to
    '//frame' (OSC 1.1's path-traversal wildcard) and one with a space to '/a b/frame'."""
    assert parse_target("[::1]:9001") == ("::1", 9001)
    assert parse_target("[::1]", 39539) == ("::1", 39539)
    for bad in ("::1", "[::1", "[::1]9000", "[]:9000"):
        with pytest.raises(ValueError, match="IPv6"):
            parse_target(bad)
    for bad in ("", "/", "/a b", "/a#"):
        with pytest.raises(ValueError, match="OSC prefix"):
            OscOutput(["a"], port=9, prefix=bad)
    out = OscOutput(["a"], port=9, prefix="body2/")
    assert out.prefix == "/body2"
    out.close()


@need_data
def test_stream_bad_prefix_exits_2(capsys):
    assert main(["stream", KICK, "--osc", ":9", "--prefix", ""]) == 2
    assert "OSC prefix ''" in _one_line_error(capsys)


# --- gestures learn -----------------------------------------------------------------------------

@need_data
def test_learn_infinite_or_nan_cut_is_refused(tmp_path, capsys):
    """`gestures learn x kick.bvh@1:inf` ended in an OverflowError traceback; @1:nan said
    'the cut's end must be after its start'."""
    lib = str(tmp_path / "g.json")
    for cut in ("@1:inf", "@1:nan", "@-inf:2"):
        assert main(["gestures", "learn", "x", KICK + cut, "--library", lib]) == 2
        assert "%s: the cut must be @START:END in seconds" % cut in _one_line_error(capsys)


@need_data
def test_learn_same_motion_twice_says_so(tmp_path, capsys):
    """An example given twice, a cut with its whole clip, or an example that is also a negative
    all said 'the examples do not move in rows [...]' (their distance 0 made the threshold 0)."""
    lib = str(tmp_path / "g.json")
    cut = KICK + "@1.6:2.5"

    def err(*argv):
        assert main(["gestures", "learn", "k", *argv, "--library", lib]) == 2
        return _one_line_error(capsys)
    assert "@1.6:2.5 and " in err(cut, cut) and "hold the same motion" in err(cut, KICK)
    assert "a negative holds this very motion" in err(cut, "--negative", KICK)
    assert not os.path.exists(lib)


@need_data
def test_learn_rows_messages(tmp_path, capsys):
    """`--space rows` without --rows said the staffs had no skeleton (they had one); a body
    feature mixed with a staff row was 'no row named' the body feature."""
    lib = str(tmp_path / "g.json")
    assert main(["gestures", "learn", "k", KICK + "@1.6:2.5", "--space", "rows", "--library", lib]) == 2
    assert "--space rows needs --rows" in _one_line_error(capsys)
    assert main(["gestures", "learn", "k", KICK + "@1.6:2.5", "--rows", "r_knee_deg,Hips.Xrotation",
                 "--library", lib]) == 2
    assert "'r_knee_deg' is a body feature and 'Hips.Xrotation' a staff row" in _one_line_error(capsys)


@need_data
def test_learn_into_a_missing_directory_names_the_library(tmp_path, capsys):
    """The error named the temporary file ('nodir/g.json.tmp7298: No such file or directory')."""
    lib = str(tmp_path / "nodir" / "g.json")
    assert main(["gestures", "learn", "k", KICK + "@1.6:2.5", "--library", lib]) == 2
    e = _one_line_error(capsys)
    assert "nodir/g.json: No such file or directory" in e and ".tmp" not in e


def test_unterminated_quote_in_a_command_names_the_command():
    """`--command 'osc:/tv "on'` said only 'No closing quotation'."""
    from host.gestures.actions import parse_command
    for bad in ('osc:/tv "on', "exec:echo 'x"):
        with pytest.raises(FormatError, match=r"command .*: no closing quotation"):
            parse_command(bad)


def test_list_of_an_empty_library_says_so(tmp_path, capsys):
    lib = tmp_path / "g.json"
    lib.write_text(json.dumps({"format": "motionstaff-gestures", "version": 1, "gestures": []}))
    assert main(["gestures", "list", "--library", str(lib)]) == 0
    assert "no gestures" in capsys.readouterr().out


# --- gestures run: commands ---------------------------------------------------------------------

def _match(command):
    from device.gestures.recognizer import Match
    return Match("kick", command, 0.8, 0.1, 0.5, 0, 10, 12, 0.0, 0.33, 0.4)


def test_serial_line_with_braces_goes_out_verbatim():
    """`serial:loop:// {"cmd": "kick"}` (a JSON line) and `serial:loop:// KICK {nme}` ended in
    a KeyError traceback at the first match: str.format ran on the line."""
    from host.gestures.actions import Actions
    act = Actions()
    act.perform(_match('serial:loop:// {"cmd": "{name}", "c": {confidence}} {nme}'))
    assert act.serial_port("loop://").read(64) == b'{"cmd": "kick", "c": 0.800} {nme}\n'
    act.close()


def test_serial_port_failure_names_the_gesture_and_port(tmp_path):
    """A serial: command whose port cannot be opened said '[Errno 2] could not open port ...'."""
    from host.gestures.actions import Actions
    port = str(tmp_path / "nosuchtty")
    act = Actions()
    with pytest.raises(OSError, match=r"gesture 'kick': serial port .*nosuchtty: No such file"):
        act.perform(_match("serial:%s KICK" % port))
    act.close()


def test_osc_command_to_an_unknown_host_names_gesture_and_host(monkeypatch):
    from host.gestures.actions import Actions
    _no_dns(monkeypatch)
    act = Actions()
    with pytest.raises(ValueError, match=r"gesture 'kick': OSC target tv.invalid:9000: host 'tv.invalid' not found"):
        act.perform(_match("osc://tv.invalid:9000/power 1"))
    act.close()


@pytest.mark.skipif(not os.path.exists(WALK), reason="../shared/data/bvh is absent")
def test_run_from_capture_names_the_failing_command(tmp_path, capsys):
    """`gestures run --from-capture` with a command that fails said only 'the recogniser failed
    on 1 frame(s)': the capture loop swallowed the error."""
    lib = str(tmp_path / "w.json")
    rows = "l_hip_flex_deg,r_hip_flex_deg,l_knee_deg,r_knee_deg,l_foot_h_leg,r_foot_h_leg"
    port = str(tmp_path / "nosuchtty")
    assert main(["gestures", "learn", "walk_start", WALK + "@0.6:1.87", "--rows", rows,
                 "--command", "serial:%s GO" % port, "--library", lib]) == 0
    capsys.readouterr()
    assert main(["gestures", "run", "--from-capture", "--seconds", "5", "--library", lib]) == 2
    e = _one_line_error(capsys)
    assert "failed on 1 frame(s)" in e and "gesture 'walk_start': serial port" in e and "nosuchtty" in e


def test_capture_warns_about_failing_outputs(tmp_path, capsys, monkeypatch):
    """`capture --config unit.json` with an OSC output whose sends fail (a broadcast address)
    printed nothing about it unless --json was given."""
    from device.capture.config import default_config
    from device.outputs import osc

    def refuse(self, frame_index, t_s, values, codes=None):
        raise OSError("OSC target %s:%d: Permission denied" % (self.host, self.port))
    monkeypatch.setattr(osc.OscOutput, "__call__", refuse)
    cfg = default_config()
    cfg["outputs"] = [{"kind": "osc", "target": "127.0.0.1:9"}]
    path = tmp_path / "unit.json"
    path.write_text(json.dumps(cfg))
    assert main(["capture", "--config", str(path), "--duration", "0.2"]) == 0
    err = capsys.readouterr().err
    assert "warning: 6 output error(s), the first: OSC target 127.0.0.1:9: Permission denied" in err
