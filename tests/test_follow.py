"""`motionstaff follow`: the robot end a robot's own computer runs (host/follow_loop.py,
host/robot_link.py), from the unit's own streamer's bytes to the emulated controller's commands;
a lost link is the failsafe at once; bad arguments are one line and exit 2."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from device.servo.drivers import open_driver
from device.servo.emulate import make_emulator
from device.servo.linkstream import LinkStreamer
from device.servo.robot import load_robot
from host.follow_loop import FollowLoop
from host.robot_link import open_link_end, resolve_mapping
from host.staff import Row, Staff

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class EmuPort:
    """A controller emulator as a serial port: what is written is fed, its replies are read."""

    def __init__(self, emu):
        self.emu, self.rx = emu, bytearray()
        self.in_waiting = 0

    def write(self, b):
        self.rx += self.emu.feed(bytes(b)) or b""
        return len(b)

    def read(self, n=1):
        out, self.rx[:] = bytes(self.rx[:n]), self.rx[n:]
        return out

    def flush(self):
        pass

    def reset_input_buffer(self):
        self.rx.clear()

    def close(self):
        pass


class Sink:
    def __init__(self):
        self.data = bytearray()

    def write(self, b):
        self.data += b
        return len(b)

    def flush(self):
        pass

    def read(self, n=0):
        return b""

    in_waiting = 0


class Link:
    """The link's port as the loop sees it: chunks handed out per read, then an error or nothing."""

    def __init__(self, data, chunk=64, fail_after=None):
        self.data, self.chunk, self.fail_after = bytes(data), chunk, fail_after
        self.pos, self.written, self.closed = 0, bytearray(), False

    @property
    def in_waiting(self):
        if self.fail_after is not None and self.pos >= self.fail_after:
            raise OSError("link: device reports readiness to read but returned no data")
        return min(self.chunk, len(self.data) - self.pos)

    def read(self, n):
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def write(self, b):
        self.written += b
        return len(b)

    def close(self):
        self.closed = True


def _servo_staff(robot, frames=40, fps=30.0, beyond_deg=0.0):
    """A staff of the robot's own servo rows swinging around home, the last row driven
    beyond_deg past its servo's upper limit."""
    rows, vals = [], []
    t = np.arange(frames) / fps
    for i, s in enumerate(robot.servos):
        lo, hi = s.to_deg(s.min), s.to_deg(s.max)
        lo, hi = min(lo, hi), max(lo, hi)
        rows.append(Row(s.name, "deg", lo - 40.0, hi + 40.0))
        mid = 0.5 * (lo + hi)
        vals.append(mid + 0.25 * (hi - lo) * np.sin(2 * np.pi * 0.5 * t + i))
    vals[-1] = np.full(frames, max(robot.servos[-1].to_deg(robot.servos[-1].min),
                                   robot.servos[-1].to_deg(robot.servos[-1].max)) + beyond_deg)
    return Staff(np.array(vals), rows, fps=fps, bits=8)


def _stream(staff, clock):
    """The bytes the unit's own streamer (device/servo/linkstream.py) sends for the staff."""
    sink = Sink()
    ls = LinkStreamer(sink, staff.header(), staff.bits, clock=clock, baud=10 ** 9)
    codes, miss = staff.codes()
    for k in range(staff.frames):
        clock.t = k / staff.fps
        ls.frame([None if miss[r, k] else int(codes[r, k]) for r in range(staff.nrows)], clock.t)
    return bytes(sink.data)


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _maestro_end(clock, mapping="servo"):
    robot = load_robot("khr17-maestro")
    emu = make_emulator("maestro", clock=clock)
    drv = open_driver("maestro", EmuPort(emu), **dict(robot.options))
    return robot, emu, open_link_end(robot, drv, clock=clock, mapping=mapping)


def test_follow_drives_the_servos_within_their_limits_from_the_units_stream():
    clock = Clock()
    robot, emu, end = _maestro_end(clock)
    staff = _servo_staff(robot, beyond_deg=30.0)
    data = _stream(staff, Clock())
    link = Link(data)
    loop = FollowLoop(lambda: link, end, clock=clock, sleep=lambda s: None, tick_s=0.005)
    while link.pos < len(data):
        clock.t += 0.005
        loop.turn()
    c = end.bridge.counts
    # (two frames in one 64-byte read, 33 ms apart: both acted on)
    assert c["frames"] == staff.frames and c["superseded"] == 0
    assert end.bridge.counts["headers"] >= 1 and loop.stats["bytes_in"] == len(data)
    lims = dict((s.id, (min(s.min, s.max), max(s.min, s.max))) for s in robot.servos)
    moved = [(ch, u) for _, ch, u, _ in emu.timeline if u]
    assert len(moved) >= staff.frames
    assert all(lims[ch][0] <= u <= lims[ch][1] for ch, u in moved if ch in lims)
    last = robot.servos[-1]
    # the row driven 30 deg past its servo's limit: clamped there, never beyond
    assert max(u for ch, u in moved if ch == last.id) <= max(last.min, last.max)
    assert end.bridge.player.limiter.clamped > 0


def test_a_lost_link_is_the_failsafe_at_once_and_is_reopened():
    clock = Clock()
    robot, emu, end = _maestro_end(clock)
    staff = _servo_staff(robot, frames=90)
    data = _stream(staff, Clock())
    links = [Link(data[:len(data) // 2], fail_after=len(data) // 2)]
    opened = []

    def opener():
        if not links:
            raise OSError("/dev/ttyACM1: No such file or directory")
        opened.append(clock.t)
        return links.pop(0)
    loop = FollowLoop(opener, end, clock=clock, sleep=lambda s: None, tick_s=0.005, reopen_s=0.5)
    while loop.stats["link_errors"] == 0:
        clock.t += 0.005
        loop.turn()
    t_lost = clock.t
    got = end.bridge.counts["frames"]
    assert 0 < got < staff.frames
    # at once, not after the description's 0.5 s timeout
    assert end.bridge.player.in_failsafe and end.bridge.counts["failsafe_engaged"] == 1
    while clock.t < t_lost + 0.49:
        clock.t += 0.005
        loop.turn()
    assert loop.stats["reopen_failures"] == 0 and loop.link.port is None   # not tried before reopen_s
    clock.t += 0.02
    loop.turn()
    assert loop.stats["reopen_failures"] == 1                    # tried once, the port is gone
    links.append(Link(data))                                     # the unit is plugged in again
    while clock.t < t_lost + 1.2:
        clock.t += 0.005
        loop.turn()
    assert loop.stats["reopens"] == 1 and len(opened) == 2
    assert end.bridge.counts["frames"] > got and not end.bridge.player.in_failsafe
    assert end.bridge.counts["failsafe_released"] >= 1


def _person_staff(frames, fps=30.0):
    """The person's rows standing at home (the live retargeter's input), 16-bit as capture sends."""
    from device.body.human import human_model
    sk = human_model()
    rows = [Row(d.name, "deg", d.lo, d.hi, True) for d in sk.dofs]
    home = np.array([float(np.degrees(h)) for h in sk.home])
    return Staff(np.repeat(home[:, None], frames, axis=1), rows, fps=fps, bits=16)


class Counted:
    """A driver proxy counting send_positions calls."""

    def __init__(self, driver):
        self._d, self.sent = driver, 0

    def send_positions(self, cmds):
        self.sent += 1
        return self._d.send_positions(cmds)

    def __getattr__(self, name):
        return getattr(self._d, name)


def test_a_burst_is_its_last_tenth_of_a_second_and_the_failsafe_runs_right_after_it():
    """A read that holds many frames (a link catching up, a reader that stalled): only those
    within STALE_S (0.1 s) of the newest are sent, so the turn costs 4 commands at 30 fps, not one
    per frame (was: 80 commands written in one turn, the bus line and the loop held for all of
    them, 2.6 s of motion already past played), and the failsafe's timeout runs on."""
    clock = Clock()
    robot = load_robot("khr17-maestro")
    emu = make_emulator("maestro", clock=clock)
    drv = Counted(open_driver("maestro", EmuPort(emu), **dict(robot.options)))
    end = open_link_end(robot, drv, clock=clock, mapping="servo")
    staff = _servo_staff(robot, frames=80, beyond_deg=30.0)
    data = _stream(staff, Clock())
    assert len(data) <= 4096
    link = Link(data, chunk=4096)
    loop = FollowLoop(lambda: link, end, clock=clock, sleep=lambda s: None, tick_s=0.005)
    clock.t = 1.0
    loop.turn()
    c = end.bridge.counts
    assert link.pos == len(data) and c["frames"] == 4 and c["superseded"] == staff.frames - 4
    assert drv.sent == 4 and end.bridge.player.limiter.clamped > 0
    clock.t += robot.failsafe_timeout_s + 0.01
    loop.turn()                                 # nothing read: the poll still runs
    assert end.bridge.player.in_failsafe and c["failsafe_engaged"] == 1


def test_a_burst_of_the_persons_frames_is_four_retargets():
    """The OP3 by pose: 26 frames in one read (4 KiB of 16-bit rows) retargeted 4 times, the
    last 0.1 s of them (was: all 26, about 30 ms each on this machine: the balance loop and the
    failsafe held for 0.8 s)."""
    clock = Clock()
    robot = load_robot("op3-dynamixel")
    emu = make_emulator("dynamixel", clock=clock)
    drv = open_driver("dynamixel", EmuPort(emu), **dict(robot.options))
    end = open_link_end(robot, drv, clock=clock, imu=False)
    staff = _person_staff(27)
    data = _stream(staff, Clock())
    pos = 0
    while end.bridge.counts["frames"] == 0:     # the header and the first frame, byte by byte
        end.step(data[pos:pos + 1])
        pos += 1
    assert end.retargeter.frames == 1 and len(data) - pos <= 4096
    clock.t = 0.1
    end.step(data[pos:])                        # the other 26 frames in one read
    c = end.bridge.counts
    assert c["frames"] == 5 and c["superseded"] == 22 and end.retargeter.frames == 5


def test_the_ends_retargeter_is_the_headers():
    """The person's rows, then the servos' own (a staff retargeted beforehand): the end's
    retargeter (its summary's pose error, the demo's TwinEnd.retargeter) is the one in use, none."""
    clock = Clock()
    robot = load_robot("op3-dynamixel")
    emu = make_emulator("dynamixel", clock=clock)
    drv = open_driver("dynamixel", EmuPort(emu), **dict(robot.options))
    end = open_link_end(robot, drv, clock=clock, imu=False)
    end.step(_stream(_person_staff(2), Clock()))
    assert end.retargeter is not None and end.summary()["pose_error_deg"] is not None
    clock.t = 0.1
    end.step(_stream(_servo_staff(robot, frames=2), Clock()))
    assert end.bridge.header["rows"][0]["name"] == robot.servos[0].name
    assert end.retargeter is None and "pose_error_deg" not in end.summary()


class FailingPort(EmuPort):
    """The servo bus's USB adapter: works, then every write an OSError (unplugged, a write
    timeout) while fail is set."""

    fail = False

    def write(self, b):
        if self.fail:
            raise OSError("write failed: [Errno 5] Input/output error")
        return EmuPort.write(self, b)


def test_a_servo_bus_that_fails_as_a_frame_ends_the_failsafe_is_counted_not_the_end():
    """The OP3's Dynamixel bus failing (a write timeout, the U2D2 unplugged) when the frame that
    ends a failsafe re-arms the servos' watchdog: counted as a send error and the loop goes on
    (was: the OSError out of Player.send_frame, LinkBridge.feed and the follow loop: follow
    ended, the robot no longer listening for the link)."""
    clock = Clock()
    robot = load_robot("op3-dynamixel")
    port = FailingPort(make_emulator("dynamixel", clock=clock))
    drv = open_driver("dynamixel", port, **dict(robot.options))
    end = open_link_end(robot, drv, clock=clock, mapping="servo", imu=False)
    data = _stream(_servo_staff(robot, frames=20), Clock())
    pos = 0
    while end.bridge.counts["frames"] < 10:
        end.step(data[pos:pos + 1])
        pos += 1
    assert end.bridge.player.watchdog
    clock.t = 1.0
    end.step(b"")                               # no frame for 1 s: the failsafe
    assert end.bridge.player.in_failsafe
    port.fail = True
    clock.t = 1.01
    end.step(data[pos:])
    pl = end.bridge.player
    assert end.bridge.counts["frames"] > 10 and not pl.in_failsafe and pl.stats["send_errors"] >= 1
    port.fail = False
    clock.t = 1.02
    end.step(b"")
    assert not pl.in_failsafe


def test_a_header_the_retargeter_cannot_use_is_counted_never_raised():
    """LinkBridge with a retargeter: rows it cannot use are an unusable header (its frames move
    nothing); rows it leaves to the row map (None) are played by the row map."""
    from device.servo.bridge import LinkBridge
    from protocol.errors import FormatError
    clock = Clock()
    robot = load_robot("khr17-maestro")
    emu = make_emulator("maestro", clock=clock)
    drv = open_driver("maestro", EmuPort(emu), **dict(robot.options))

    def refuse(names, imu):
        raise FormatError("the live link: no usable segments for khr17-maestro")
    br = LinkBridge(robot, drv, clock=clock, retarget=refuse)
    data = _stream(_servo_staff(robot, frames=10), Clock())
    assert br.feed(data) is not None
    assert br.counts["unusable_headers"] == 1 and br.counts["frames"] == 0
    assert not [u for _, _, u, _ in emu.timeline if u]
    br2 = LinkBridge(robot, drv, clock=clock, retarget=lambda names, imu: None)
    br2.feed(data)
    assert br2.counts["frames"] == 10 and br2.retargeter is None


def test_mapping_choice():
    assert resolve_mapping(load_robot("op3-dynamixel")) == "pose"
    assert resolve_mapping(load_robot("khr17-maestro")) is None
    assert resolve_mapping(load_robot("khr17-maestro"), "human") == "human"
    with pytest.raises(ValueError, match="khr17-maestro: no model"):
        resolve_mapping(load_robot("khr17-maestro"), "pose")


def _cli(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "host.cli", "follow"] + list(args), cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_a_link_and_port_that_are_one_device_by_two_names_are_refused(tmp_path):
    """/dev/serial/by-id/usb-... and /dev/ttyUSB0 are one adapter (was: both opened, the servo
    bus's own bytes read as the link's and the link's replies written onto the servo bus)."""
    by_id = tmp_path / "usb-FTDI_FT232R-if00-port0"
    by_id.symlink_to("/dev/ttyFAKE0")
    r = _cli("--link", str(by_id), "--port", "/dev/ttyFAKE0", "--robot", "khr17-maestro")
    assert r.returncode == 2 and "--link and --port are both /dev/ttyFAKE0" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, needle", [
    (["--link", "/nonexistent/tty", "--port", "loop://", "--robot", "khr17-maestro"], "/nonexistent/tty"),
    (["--link", "loop://", "--port", "loop://", "--robot", "khr17-maestro"], "--link and --port"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "khr17-maestro", "--mapping", "pose"],
     "no model"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "khr17-maestro", "--mapping", "nope"],
     "no such row map"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "nobot"], "nobot"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "khr17-maestro", "--frames", "0"], "--frames"),
    # (was: --baud 0 taken as "the robot's baud rate", --baud -5 a pyserial message)
    (["--link", "loop://", "--port", "loop://?logging=error", "--robot", "khr17-maestro",
      "--baud", "0"], "--baud 0"),
    # (was: pyserial's KeyError traceback, its message's braces unescaped)
    (["--link", "loop://?x", "--port", "loop://", "--robot", "khr17-maestro"],
     "loop://?x: not a port"),
    (["--link", "loop://", "--port", "loop://?logging=x", "--robot", "khr17-maestro"],
     "loop://?logging=x"),
])
def test_bad_arguments_are_one_line_and_exit_2(args, needle):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_service_stop_or_a_hangup_ends_in_the_failsafe_like_ctrl_c(sig):
    """SIGTERM (systemd stopping the robot's service) or SIGHUP (the ssh session gone) is the
    Ctrl-C path: the failsafe, the summary, exit 130 (was: the process killed by the signal, the
    servos holding whatever they were last sent)."""
    import signal
    proc = subprocess.Popen([sys.executable, "-m", "host.cli", "follow", "--link", "loop://",
                             "--port", "loop://?logging=error", "--robot", "khr17-maestro",
                             "--json"],
                            cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = proc.stderr.readline()
        assert "listening on loop://" in ready, ready
        proc.send_signal(getattr(signal, sig))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err)
    assert json.loads(out)["interrupted"] is True and "Traceback" not in err


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs ptys")
def test_cli_follows_a_pty_link_onto_an_emulated_maestro():
    """The command itself, on two ptys: the unit's stream written to the link's, the Maestro
    emulator behind the servos' (device/servo/emulate/pty.py)."""
    import tty
    from device.servo.emulate.pty import PtyServer
    robot = load_robot("khr17-maestro")
    emu = make_emulator("maestro")
    srv = PtyServer(emu).start()
    master, slave = os.openpty()
    tty.setraw(slave)
    proc = None
    try:
        staff = _servo_staff(robot, frames=30)
        data = _stream(staff, Clock())
        proc = subprocess.Popen([sys.executable, "-m", "host.cli", "follow", "--link", os.ttyname(slave),
                                 "--port", srv.path, "--robot", "khr17-maestro", "--frames", "30",
                                 "--json"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # its ready line says the link is open (pyserial flushes what came before the open)
        ready = proc.stderr.readline()
        assert "listening on %s" % os.ttyname(slave) in ready, ready
        os.write(master, data)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()                 # (a run that failed must not leave it on the ptys)
            proc.wait()
        os.close(master)
        os.close(slave)
        srv.stop()
    assert proc.returncode == 0, err
    s = json.loads(out)
    # (the 30 frames written at once: those read with a newer one superseded, never sent)
    assert s["frames"] >= 1 and s["frames"] + s["superseded"] == 30
    assert s["servos_driven"] == len(robot.servos)
    assert s["link_mapping"] is None and s["mapping"] == "servo" and s["link_errors"] == 0
    lims = dict((sv.id, (min(sv.min, sv.max), max(sv.min, sv.max))) for sv in robot.servos)
    moved = [(ch, u) for _, ch, u, _ in emu.timeline if u]
    assert len(moved) >= s["frames"] * len(robot.servos) // 2
    assert all(lims[ch][0] <= u <= lims[ch][1] for ch, u in moved if ch in lims)
