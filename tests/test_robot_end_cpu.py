"""The robot's computer takes its time on the twin's clock (host/physics/live.py _Thinking), and
the bridge leaves the retargeter's bookkeeping until a frame's bytes are out.

    pytest tests/test_robot_end_cpu.py
"""

import pytest

from host.physics import live


class _Twin:
    def __init__(self):
        self.time_s = 0.0
        self.dt_s = 0.002

    def advance_to(self, t_s):
        # whole physics steps, as host/physics/twin.py (round to the step)
        n = int(round(t_s / self.dt_s))
        self.time_s = max(self.time_s, n * self.dt_s)


class _Retargeter:
    def __init__(self, twin):
        self.twin = twin
        self.read_at = []
        self._pending = None
        self.imu = lambda: self.read_at.append(twin.time_s)

    def step(self, values, t_s):
        self.imu()
        self._pending = values
        return values

    def tick(self, now_s):
        self.imu()
        return [0.0]

    def idle(self):
        self._pending = None


def test_a_step_reads_its_imu_after_the_plan_and_its_bytes_leave_after_the_feedback():
    tw = _Twin()
    r = live._Thinking(_Retargeter(tw), tw)
    r.step([1.0], 0.0)
    # the IMU is read once the plan's CPU time has passed (the sample is that late)
    assert r.read_at == [pytest.approx(live.PLAN_CPU_S, abs=tw.dt_s)]
    # and the frame's bytes go out after the feedback's: the body moved on meanwhile
    assert tw.time_s == pytest.approx(live.PLAN_CPU_S + live.STEP_AFTER_CPU_S, abs=tw.dt_s)
    t = tw.time_s
    r.idle()                                    # the bookkeeping after the send: its time too
    assert tw.time_s == pytest.approx(t + live.IDLE_CPU_S, abs=tw.dt_s)
    t = tw.time_s
    r.idle()                                    # nothing pending: no time
    assert tw.time_s == t
    r.tick(0.1)
    assert tw.time_s == pytest.approx(t + live.TICK_CPU_S, abs=tw.dt_s)


def test_costs_under_a_physics_step_add_up_and_are_never_lost():
    tw = _Twin()
    r = live._Thinking(_Retargeter(tw), tw)
    for k in range(20):                         # 20 ticks of 1 ms: 20 ms, not 0 (rounding)
        r.tick(k * 0.01)
    assert tw.time_s == pytest.approx(20 * live.TICK_CPU_S, abs=tw.dt_s)


def test_the_bridge_runs_idle_after_the_frames_send():
    from device.servo.bridge import LinkBridge
    from device.servo.robot import load_robot
    from protocol import packets as pk
    order = []

    class Drv:
        def start(self, servos):
            pass

        def set_watchdog(self, s):
            return False

        def send_positions(self, cmds):
            order.append("send")

        def torque_off(self, ids):
            return True

    class R:
        servo_names = None

        def __init__(self, names):
            self.servo_names = names

        def step(self, values, t_s):
            order.append("step")
            return values

        def idle(self):
            order.append("idle")

    import numpy as np
    from host.staff import Row, Staff
    robot = load_robot("khr17-maestro")
    names = [s.name for s in robot.servos]
    t = [0.0]
    b = LinkBridge(robot, Drv(), clock=lambda: t[0], retarget=lambda n, imu: R(n))
    staff = Staff(np.zeros((len(names), 1)), [Row(n, "deg", -90, 90, True) for n in names], fps=30, bits=8)
    enc = pk.Encoder(clock_us=lambda: int(t[0] * 1e6))
    data = b"".join(enc.header(staff.header()))
    data += enc.frame([128] * len(names), 8)
    b.feed(data)
    assert order[-3:] == ["step", "send", "idle"]


def test_a_retargeter_with_only_step_is_timed_and_left_alone():
    """tick and idle are optional (the bridge's contract): without them, no time, no error."""
    class StepOnly:
        servo_names = ["a"]

        def step(self, values, t_s):
            return values

    tw = _Twin()
    r = live._Thinking(StepOnly(), tw)
    assert r.step([1.0], 0.0) == [1.0]
    t = tw.time_s
    assert r.tick(0.1) is None and r.idle() is None and tw.time_s == t
