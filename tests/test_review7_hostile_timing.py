"""Review 7: the player, the bridge's tick and the live balance under hostile timing and input.

Interleavings of send_frame / update / poll / failsafe (hold, home, torque off) with clock
steps of every size, backwards included: every command stays inside the limits and within the
velocity limit on the clock between two commands (none at all when the clock steps back),
nothing is sent while a hold or torque-off failsafe is engaged, and a poll after the timeout's
worth of forward clock time without a frame always finds the failsafe engaged. The bridge's
balance tick survives a retargeter that raises (the loop, and its failsafe, go on)."""

from hypothesis import given, settings, strategies as st

from device.servo.bridge import LinkBridge
from device.servo.player import Player
from device.servo.robot import load_robot
from tests.test_player_wall_time import _Clock, _Rec

values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none(), st.floats(-1e6, 1e6))
events = st.lists(st.tuples(st.sampled_from(["frame", "frame", "update", "update", "poll", "poll",
                                             "home", "hold", "torque_off"]),
                            st.sampled_from([0.0, 0.0, 1e-3, 0.005, 0.0333, 0.1, 0.7, 3.0,
                                             -1e-3, -0.1, -5.0]),
                            st.lists(values, min_size=0, max_size=20)),
                  min_size=1, max_size=80)


def test_torque_off_stays_off_through_a_later_home_failsafe():
    # was: a home failsafe (stream timeout) then the sender's torque off (an all-missing frame)
    # left the home move running: each poll sent positions again, reviving PWM servos; and
    # the bridge's close() (the default action, home) after a torque off did the same
    robot, clk, drv, p = _player("khr17-maestro")
    for k in range(50):
        clk.t += 0.02
        p.send_frame([40.0] * len(p.row_names))
    p.failsafe("home")
    p.failsafe("torque_off")
    n = len(drv.sent)
    for k in range(50):
        clk.t += 0.02
        p.poll()
    p.failsafe("home")
    clk.t += 0.02
    p.poll()
    assert len(drv.sent) == n and p.failsafe_action == "torque_off"
    p.send_frame([40.0] * len(p.row_names))             # only a frame brings it back
    assert len(drv.sent) == n + 1 and not p.in_failsafe


def _player(name):
    robot = load_robot(name)
    clk = _Clock()
    clk.t = 100.0
    drv = _Rec(clk)
    names = [s.map["human"].lstrip("-") for s in robot.servos]
    p = Player(robot, drv, row_names=names, clock=clk, sleep=lambda d: None)
    p.start()
    return robot, clk, drv, p


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["khr17-maestro", "op3-dynamixel", "so101-feetech"]), events)
def test_interleavings_with_a_clock_that_steps_back(name, evs):
    robot, clk, drv, p = _player(name)
    last = dict((s.id, s.to_units(s.home_deg)) for s in robot.servos)
    t_prev = None
    fwd = 0.0                   # the clock's forward steps summed (a step back: no time)
    since = 0.0                 # forward clock time since the last frame
    for kind, dt, vals in evs:
        clk.t += dt
        fwd += max(dt, 0.0)
        since += max(dt, 0.0)
        n = len(drv.sent)
        quiet = p.in_failsafe and p.failsafe_action in ("hold", "torque_off")
        if kind == "frame":
            p.send_frame(vals)
            since = 0.0
        elif kind == "update":
            p.update(vals)
        elif kind == "poll":
            p.poll()
            if since > robot.failsafe_timeout_s + 1e-9:
                assert p.in_failsafe, (since, robot.failsafe_timeout_s)
        else:
            p.failsafe(kind)
        if quiet and kind in ("update", "poll"):
            assert len(drv.sent) == n            # nothing revives a hold / torque-off failsafe
        for t, cmds in drv.sent[n:]:
            t = fwd                 # (every event reads the clock: the command's forward time)
            step = 0.0 if t_prev is None else t - t_prev
            for s in robot.servos:
                u = cmds[s.id]
                assert min(s.min, s.max) <= u <= max(s.min, s.max)
                if t_prev is not None:
                    # the velocity limit on the clock (+1: rounding to controller units)
                    assert abs(u - last[s.id]) <= s.max_vel_dps * step * abs(s.units_per_deg) + 1
                last[s.id] = u
            t_prev = t


def test_failsafe_fires_on_time_after_the_clock_steps_back():
    # was: the timeout counted from the last frame's clock reading, so a clock set back 5 s
    # held the failsafe off for 5 s more than its timeout
    robot, clk, drv, p = _player("op3-dynamixel")
    p.send_frame([0.0] * len(p.row_names))
    clk.t -= 5.0
    assert p.poll() is False
    clk.t += robot.failsafe_timeout_s + 0.01
    assert p.poll() is True


class _Ticker:
    def __init__(self, make):
        self.make = make
        self.calls = 0

    def tick(self, now_s):
        self.calls += 1
        return self.make()


def _bridge(make):
    robot = load_robot("op3-dynamixel")
    clk = _Clock()
    drv = _Rec(clk)
    br = LinkBridge(robot, drv, clock=clk)
    br.player = Player(robot, drv, row_names=[s.name for s in robot.servos], mapping="servo",
                       clock=clk, sleep=lambda d: None)
    br.player.start()
    br.retargeter = _Ticker(make)
    return robot, clk, drv, br


def _boom():
    raise FloatingPointError("solver blew up")


def test_a_tick_that_raises_does_not_stop_the_loop_or_the_failsafe():
    robot, clk, drv, br = _bridge(_boom)
    br.player.send_frame([s.home_deg for s in robot.servos])
    for k in range(1, 200):
        clk.t = 0.001 * k                     # 1 kHz polls
        br.poll()
    assert br.counts["tick_errors"] == br.retargeter.calls > 0
    clk.t += robot.failsafe_timeout_s
    assert br.poll() is True and br.counts["failsafe_engaged"] == 1


def test_ticks_of_garbage_at_1khz_stay_limited_and_stop_in_the_failsafe():
    n = len(load_robot("op3-dynamixel").servos)
    seq = iter([[float("nan")] * n, [1e9] * n, [-1e9] * n, [float("inf")] * n] * 1000)
    robot, clk, drv, br = _bridge(lambda: next(seq))
    br.player.send_frame([s.home_deg for s in robot.servos])
    for k in range(1, 400):
        clk.t = 0.001 * k
        br.poll()
    calls = br.retargeter.calls
    assert br.player.in_failsafe and calls < 399           # engaged inside the 0.4 s
    sent = len(drv.sent)
    for k in range(400, 500):
        clk.t = 0.001 * k
        br.poll()
    assert br.retargeter.calls == calls and len(drv.sent) == sent
    prev = None
    for t, cmds in drv.sent:
        for s in robot.servos:
            assert min(s.min, s.max) <= cmds[s.id] <= max(s.min, s.max)
            if prev is not None:
                du = abs(cmds[s.id] - prev[1][s.id])
                assert du <= s.max_vel_dps * max(t - prev[0], 0.0) * abs(s.units_per_deg) + 1
        prev = (t, cmds)


class _BadStep(_Ticker):
    def step(self, values, t_s):
        raise FloatingPointError("degenerate pose")


class _Packet:
    def __init__(self, codes, seq):
        self.codes, self.seq, self.time_us = codes, seq, seq * 33333

    def frame(self):
        return 8, list(self.codes)


def test_a_frame_the_retargeter_cannot_take_is_dropped_and_the_failsafe_still_runs():
    # was: the exception left LinkBridge.feed, and the loop calling it died with the servos
    # holding their last command
    robot, clk, drv, br = _bridge(lambda: None)
    br.retargeter = _BadStep(lambda: None)
    n = len(robot.servos)
    br.header = {"bits": 8}
    br.los, br.his = [-90.0] * n, [90.0] * n
    for k in range(5):
        clk.t = 0.02 * k
        br._frame(_Packet([128] * n, k), bytearray())
    assert br.counts["retarget_errors"] == 5 and br.counts["frames"] == 0
    clk.t += robot.failsafe_timeout_s + 0.05
    assert br.poll() is True and br.counts["failsafe_engaged"] == 1
