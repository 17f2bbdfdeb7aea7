"""The playback pipeline: deadline pacing (virtual clock), ramp, failsafe, live send_frame."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from device.servo import dynamixel as dx
from device.servo.base import Driver
from device.servo.dynamixel import Dynamixel
from device.servo.emulate import make_emulator
from device.servo.player import Player
from device.servo.robot import load_robot


class Clock:
    """Virtual time: sleep() advances it; send costs can be injected."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, d):
        assert d >= 0
        self.t += d


class Recorder(Driver):
    NAME = "rec"

    def __init__(self, clock, cost_s=0.0, slow_every=0):
        Driver.__init__(self, None)
        self.clock = clock
        self.sent = []
        self.cost_s = cost_s
        self.slow_every = slow_every
        self.torque = None

    def send_positions(self, cmds):
        self.sent.append((self.clock(), list(cmds)))
        if self.slow_every and len(self.sent) % self.slow_every == 0:
            self.clock.t += self.cost_s

    def torque_off(self, ids):
        self.torque = list(ids)
        return True


class EmuPort:
    """A port object feeding an emulator directly (no pty): write -> feed, read -> replies."""

    def __init__(self, emu):
        self.emu = emu
        self.rx = b""

    def write(self, b):
        self.rx += self.emu.feed(b)
        return len(b)

    def read(self, n):
        out, self.rx = self.rx[:n], self.rx[n:]
        return out

    def reset_input_buffer(self):
        self.rx = b""


def _staff(robot, frames, fps):
    names = [s.map["human"].lstrip("-") for s in robot.servos]
    t = np.arange(frames) / fps
    vals = np.array([[10 * math.sin(2 * math.pi * 0.5 * x) + 20 for x in t] for _ in names])
    return names, vals


def test_deadline_pacing_has_no_drift():
    robot = load_robot("khr17-maestro")
    clk = Clock()
    drv = Recorder(clk)
    names, vals = _staff(robot, 600, 30.0)
    p = Player(robot, drv, row_names=names, clock=clk, sleep=clk.sleep)
    p.start()
    ramp_done = None
    s = p.play(vals, 30.0)
    frames = drv.sent[s["ramp_frames"]:]
    times = np.array([t for t, _ in frames])
    assert len(frames) == 600 and s["skipped"] == 0
    steps = np.diff(times)
    assert np.allclose(steps, 1 / 30.0, atol=1e-9)
    assert abs((times[-1] - times[0]) - 599 / 30.0) < 1e-9


def test_late_frames_are_skipped_not_drifted():
    robot = load_robot("khr17-maestro")
    clk = Clock()
    drv = Recorder(clk, cost_s=0.1, slow_every=50)     # every 50th send stalls 100 ms
    names, vals = _staff(robot, 300, 50.0)
    p = Player(robot, drv, row_names=names, clock=clk, sleep=clk.sleep)
    p.start()
    s = p.play(vals, 50.0, speed=2.0)
    start = drv.sent[s["ramp_frames"]][0]
    assert s["skipped"] > 0 and s["late"] > 0
    assert abs(drv.sent[-1][0] - (start + 299 / 100.0)) < 0.011   # ends on schedule
    assert s["frames"] + s["skipped"] == 300


@pytest.mark.parametrize("reverse", [False, True])
def test_range_reverse_and_loop(reverse):
    robot = load_robot("khr17-maestro")
    clk = Clock()
    drv = Recorder(clk)
    names, vals = _staff(robot, 100, 25.0)
    vals[:, :] = np.arange(100)[None, :] * 0.1
    p = Player(robot, drv, row_names=names, clock=clk, sleep=clk.sleep)
    p.start()
    calls = []
    stop_after = [0]

    def stop():
        stop_after[0] += 1
        return stop_after[0] > 45
    s = p.play(vals, 25.0, loop=True, reverse=reverse, first=10, last=30, stop=stop,
               progress=calls.append)
    assert s["frames"] == 45 and s["passes"] == 2 and len(calls) == 45


def test_ramp_starts_slowly_from_home():
    robot = load_robot("khr17-maestro")
    clk = Clock()
    drv = Recorder(clk)
    names, vals = _staff(robot, 10, 30.0)
    vals[:] = 60.0
    p = Player(robot, drv, row_names=names, clock=clk, sleep=clk.sleep)
    p.start()
    p.ramp_to(list(vals[:, 0]))
    assert p.stats["ramp_frames"] > 10
    knee = [s.name for s in robot.servos].index("l_knee")
    s = robot.servos[knee]
    degs = [s.to_deg(dict(c)[s.id]) for _, c in drv.sent]
    assert max(abs(b - a) for a, b in zip(degs, degs[1:])) <= robot.ramp_vel_dps / robot.rate_hz + 0.05


def test_live_send_frame_and_failsafe_torque_off_on_dynamixel():
    robot = load_robot("op3-dynamixel")
    t = [0.0]
    emu = make_emulator("dynamixel", ids=range(1, 21), clock=lambda: t[0])
    drv = Dynamixel(EmuPort(emu))
    from device.body.human import human_model
    names = human_model().dof_names
    p = Player(robot, drv, row_names=names, clock=lambda: t[0])
    p.start()
    assert p.watchdog and emu.tables[1][dx.BUS_WATCHDOG] == 10     # 0.2 s in 20 ms units
    for k in range(20):
        t[0] += 0.01
        p.send_frame({"l_knee_flex": 30.0, "r_knee_flex": float("nan"), "head_rot": "junk"})
        assert not p.poll()
    assert emu.positions[14] < 2048          # l_knee moved (direction -1), limited per frame
    assert emu.positions[13] == 2048         # NaN: held at home
    t[0] += 0.5
    assert p.poll() and p.stats["failsafes"] == 1
    assert all(v is None for v in emu.positions.values())           # torque off
    emu.tick()
    t[0] += 0.01
    p.send_frame({"l_knee_flex": 30.0})      # the stream resumes: watchdog re-armed
    assert not p.in_failsafe


def test_failsafe_home_and_hold():
    robot = load_robot("khr17-maestro")
    clk = Clock()
    drv = Recorder(clk)
    from device.body.human import human_model
    p = Player(robot, drv, row_names=human_model().dof_names, clock=clk, sleep=clk.sleep)
    p.start()
    for _ in range(50):
        clk.t += 0.02
        p.send_frame({"l_knee_flex": 40.0})
    n = len(drv.sent)
    p.failsafe("hold")
    assert len(drv.sent) == n and drv.torque is None
    p.failsafe("home")
    knee = next(s for s in robot.servos if s.name == "l_knee")
    # home at the ramp velocity in the player's (wall) time: one limited step per poll
    degs = [knee.to_deg(dict(drv.sent[-1][1])[knee.id])]
    for _ in range(200):
        clk.t += 0.02
        p.poll()
        degs.append(knee.to_deg(dict(drv.sent[-1][1])[knee.id]))
    assert dict(drv.sent[-1][1])[knee.id] == knee.to_units(knee.home_deg)
    steps = [abs(b - a) for a, b in zip(degs, degs[1:])]
    assert max(steps) <= robot.ramp_vel_dps * 0.02 + 0.05 and len([x for x in steps if x > 0]) > 3


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["khr17-maestro", "op3-dynamixel", "so101-feetech"]),
       hnp.arrays(np.float64, st.tuples(st.integers(1, 12), st.integers(1, 30)),
                  elements=st.floats(allow_nan=True, allow_infinity=True)),
       st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=30))
def test_arbitrary_staff_never_drives_a_servo_past_its_limits(name, values, times):
    robot = load_robot(name)
    names = [s.map["human"].lstrip("-") for s in robot.servos]
    clk = Clock()
    drv = Recorder(clk)
    p = Player(robot, drv, row_names=names[: values.shape[0]], clock=clk, sleep=clk.sleep)
    p.start()
    last = dict((s.id, s.to_units(s.home_deg)) for s in robot.servos)
    prev_t = None
    for k in range(values.shape[1]):
        t = times[k % len(times)]
        p.send_frame(list(values[:, k]), t)
        dt = 2.0 / robot.rate_hz
        if prev_t is not None and math.isfinite(t) and math.isfinite(prev_t):
            dt = min(dt, max(0.0, t - prev_t)) if t >= prev_t else 0.0
        elif prev_t is not None:
            dt = 0.0
        else:
            dt = p.period_s
        prev_t = t if math.isfinite(t) else prev_t
        for s in robot.servos:
            u = dict(drv.sent[-1][1])[s.id]
            assert s.min <= u <= s.max
            assert abs(u - last[s.id]) <= s.max_vel_dps * dt * s.units_per_deg + 1
            last[s.id] = u


def test_send_frame_binds_to_dict_keys():
    robot = load_robot("khr17-maestro")
    clk = Clock()
    drv = Recorder(clk)
    p = Player(robot, drv, clock=clk)
    p.send_frame({"l_knee_flex": 10.0, "r_knee_flex": 10.0}, 0.0)
    assert len(drv.sent) == 1 and p.robot.mapping_used == "human"
    with pytest.raises(ValueError):
        Player(robot, drv).send_frame([1.0])


def test_native_player_sends_heartbeats_and_failsafe_frame():
    from device.servo.native import Native
    robot = load_robot("khr17-maestro")
    t = [0.0]
    emu = make_emulator("native", clock=lambda: t[0])
    drv = Native(EmuPort(emu), bits=16)
    p = Player(robot, drv, row_names=[s.name for s in robot.servos], clock=lambda: t[0])
    p.start()
    for k in range(10):
        t[0] += 0.02
        p.send_frame([20.0] * 17)
        p.poll()
    assert emu.frames == 10 and emu.state == 1 and emu.errors == 0
    knee = next(s for s in robot.servos if s.name == "l_knee")
    assert abs(emu.positions[knee.id] - knee.to_units(p.limiter.pos[robot.servos.index(knee)])) <= 1
    t[0] += 1.0
    assert p.poll()
    p.failsafe("torque_off")
    assert emu.state == 2 and all(v is None for v in emu.positions.values())
