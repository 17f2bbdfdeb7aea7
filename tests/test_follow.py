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
    assert end.bridge.counts["frames"] == staff.frames
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
    assert loop.stats["reopen_failures"] == 0 and loop.link is None   # not tried before reopen_s
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


@pytest.mark.parametrize("args, needle", [
    (["--link", "/nonexistent/tty", "--port", "loop://", "--robot", "khr17-maestro"], "/nonexistent/tty"),
    (["--link", "loop://", "--port", "loop://", "--robot", "khr17-maestro"], "--link and --port"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "khr17-maestro", "--mapping", "pose"],
     "no model"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "khr17-maestro", "--mapping", "nope"],
     "no such row map"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "nobot"], "nobot"),
    (["--link", "loop://", "--port", "/dev/null", "--robot", "khr17-maestro", "--frames", "0"], "--frames"),
])
def test_bad_arguments_are_one_line_and_exit_2(args, needle):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


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
        os.close(master)
        os.close(slave)
        srv.stop()
    assert proc.returncode == 0, err
    s = json.loads(out)
    assert s["frames"] == 30 and s["servos_driven"] == len(robot.servos)
    assert s["link_mapping"] is None and s["mapping"] == "servo" and s["link_errors"] == 0
    lims = dict((sv.id, (min(sv.min, sv.max), max(sv.min, sv.max))) for sv in robot.servos)
    moved = [(ch, u) for _, ch, u, _ in emu.timeline if u]
    assert len(moved) >= 30 * len(robot.servos) // 2
    assert all(lims[ch][0] <= u <= lims[ch][1] for ch, u in moved if ch in lims)
