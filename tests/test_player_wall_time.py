"""The limiter's guarantee in the time commands are sent: arbitrary streams, arbitrary timing.

A fake clock advances by arbitrary steps (0 = a burst of frames at once, long gaps, ...) while
the Player gets arbitrary frames (NaN, inf, absurd values), polls and failsafes (home included);
every command the driver sees stays inside the servo's limits and moves no faster than its
velocity limit measured on the clock between two commands.
"""

import math

from hypothesis import given, settings, strategies as st

from device.servo.player import Player
from device.servo.robot import load_robot


class _Clock:
    t = 0.0

    def __call__(self):
        return self.t


class _Rec:
    def __init__(self, clock):
        self.clock = clock
        self.sent = []
        self.stats = {"frames": 0, "commands": 0, "bytes": 0, "errors": 0, "timeouts": 0}

    def start(self, servos):
        pass

    def send_positions(self, cmds):
        self.sent.append((self.clock(), dict(cmds)))

    def torque_off(self, ids):
        return True

    def set_watchdog(self, t):
        return False


values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none(),
                   st.floats(-1e6, 1e6))
events = st.lists(st.tuples(st.sampled_from(["frame", "frame", "frame", "poll", "home", "hold"]),
                            st.sampled_from([0.0, 0.0, 1e-4, 0.005, 0.0333, 0.1, 0.7, 3.0]),
                            st.lists(values, min_size=0, max_size=20)),
                  min_size=1, max_size=80)


def _check(robot, drv):
    """Every command sent within limits and the velocity limit on the send clock; returns how
    many commands were checked."""
    last = dict((s.id, (None, s.to_units(s.home_deg))) for s in robot.servos)
    t_prev = None
    for t, cmds in drv.sent:
        dt = 0.0 if t_prev is None else t - t_prev
        for s in robot.servos:
            u = cmds[s.id]
            assert min(s.min, s.max) <= u <= max(s.min, s.max)
            if t_prev is not None:
                du = abs(u - last[s.id][1])
                # velocity limit on the clock (+1 unit: rounding to controller units)
                assert du <= s.max_vel_dps * dt * abs(s.units_per_deg) + 1, (s.name, du, dt)
            last[s.id] = (t, u)
        t_prev = t
    return len(drv.sent)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(["khr17-maestro", "op3-dynamixel", "so101-feetech"]), events)
def test_never_beyond_limits_never_faster_than_the_velocity_limit_in_send_time(name, evs):
    robot = load_robot(name)
    clk = _Clock()
    drv = _Rec(clk)
    names = [s.map["human"].lstrip("-") for s in robot.servos]
    p = Player(robot, drv, row_names=names, clock=clk, sleep=lambda d: None)
    p.start()
    for kind, dt, vals in evs:
        clk.t += dt
        if kind == "frame":
            p.send_frame(vals, t_s=clk.t * 7.0)        # media time deliberately unrelated
        elif kind == "poll":
            p.poll()
        else:
            p.failsafe(kind)
    clk.t += 1.0
    p.send_frame([s.home_deg for s in robot.servos], t_s=clk.t * 7.0)   # a frame always commands
    assert drv.sent and _check(robot, drv) == len(drv.sent)
    assert all(min(s.min, s.max) <= c[s.id] <= max(s.min, s.max) for _, c in drv.sent for s in robot.servos)


def _started(name="khr17-maestro"):
    robot = load_robot(name)
    clk = _Clock()
    drv = _Rec(clk)
    names = [s.map["human"].lstrip("-") for s in robot.servos]
    p = Player(robot, drv, row_names=names, clock=clk)
    p.start()
    return robot, clk, drv, names, p


def test_a_burst_of_frames_at_one_instant_does_not_move():
    robot, clk, drv, names, p = _started()
    for k in range(30):            # 30 frames whose media times are a second apart, sent at once
        p.send_frame([90.0] * len(names), t_s=float(k))
    assert all(c == drv.sent[0][1] for _, c in drv.sent)
    assert drv.sent[0][1] == dict((s.id, s.to_units(s.home_deg)) for s in robot.servos)


def test_home_takes_its_wall_time():
    robot, clk, drv, names, p = _started()
    for k in range(200):
        clk.t += 0.02
        p.send_frame([40.0] * len(names))
    far = max(abs(p.limiter.pos[i] - s.home_deg) for i, s in enumerate(robot.servos))
    p.failsafe("home")
    n0 = len(drv.sent)
    t0 = clk.t
    while not p.limiter.at([s.home_deg for s in robot.servos], 0.01):
        clk.t += 0.01
        p.poll()
    assert clk.t - t0 >= far / robot.ramp_vel_dps - 0.02
    assert len(drv.sent) - n0 >= int(far / robot.ramp_vel_dps / 0.01) - 1
    _check(robot, drv)
    assert math.isfinite(far) and far > 10


def test_settle_runs_the_home_move_to_its_end_on_the_clock():
    robot, clk, drv, names, p = _started()
    for k in range(100):
        clk.t += 0.02
        p.send_frame([40.0] * len(names))
    p._sleep = lambda d: setattr(clk, "t", clk.t + d)     # a sleep that advances the fake clock
    p.failsafe("home")
    p.settle()
    assert p.limiter.at([s.home_deg for s in robot.servos], 0.01)
    _check(robot, drv)


def test_update_between_frames_is_limited_and_leaves_the_failsafe_alone():
    """Player.update (a robot's own balance loop between frames): through the same limiter, no
    frame (the failsafe's timeout runs on), nothing sent while the failsafe is engaged."""
    robot = load_robot("op3-dynamixel")
    clock = _Clock()
    drv = _Rec(clock)
    names = [s.name for s in robot.servos]
    p = Player(robot, drv, row_names=names, mapping="servo", clock=clock, sleep=lambda d: None)
    p.start()
    assert p.update([0.0] * len(names)) is not None        # (the ramp's pose)
    p.send_frame([s.home_deg for s in robot.servos], 0.0)
    frames = p.stats["frames"]
    for k in range(1, 40):
        clock.t = 0.01 * k
        p.update([1e6] * len(names))                        # absurd: the limiter bounds it
        p.poll()
    assert p.stats["frames"] == frames and p.in_failsafe   # 0.39 s of updates fed no timeout
    n = len(drv.sent)
    assert p.update([0.0] * len(names)) is None and len(drv.sent) == n
    _check(robot, drv)
