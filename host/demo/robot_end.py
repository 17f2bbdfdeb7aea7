"""The demo's robot end: the product's robot end as `motionstaff follow` builds it
(host/robot_link.py: LinkBridge, device/servo/bridge.py, a burst acted on by its last 0.1 s) driving the robot's
controller, with a log of every command written (the demo's checks read it; it decides nothing).

    end = open_robot_end(load_robot("khr17-maestro"), maestro_pty_path, clock=lambda: sim[0])
    reply = end.bridge.feed(bytes_from_the_link); end.bridge.poll()
    end.commands      # [(clock_s, frame key (seq, time_us) or None, [(channel, units)], perf_s)]
    end.delivered     # [(frame key, codes)] of every frame the bridge acted on

A physical robot (the `robot` helper's twin) replaces open_driver(...) here and nothing else.

    body = open_twin_end(clock, notes)    # the simulated OP3 on the same line (host/physics),
    body.step(same_bytes); body.sample()  # or None (and notes["robot_twin"] says why)
"""

import time

from device.servo.drivers import open_driver
from host.robot_link import open_link_end


class _Logged:
    """A driver proxy that records every command list whose bytes were written."""

    def __init__(self, driver, end):
        self._d = driver
        self._end = end

    def send_positions(self, cmds):
        self._d.send_positions(cmds)            # OSError propagates: the Player counts it
        e = self._end
        e.commands.append((e.clock(), e.bridge.last_key, [(int(c), int(u)) for c, u in cmds],
                           time.perf_counter()))
        if e.bridge.last_key is not None:
            e.delivered.append((e.bridge.last_key, list(e.bridge.last_codes)))

    def __getattr__(self, name):
        return getattr(self._d, name)


class RobotEnd:
    def __init__(self, robot, port, clock, baud=None, mapping=None):
        self.robot = robot
        self.clock = clock
        self.commands = []
        self.delivered = []             # (key, codes) of every frame acted on
        self.raw_driver = open_driver(robot.controller, port, baud=baud or robot.baud, **dict(robot.options))
        # the robot end `motionstaff follow` runs (host/robot_link.py), on the logged driver
        self.end = open_link_end(robot, _Logged(self.raw_driver, self), clock, mapping=mapping)
        self.bridge = self.end.bridge

    def step(self, data):
        """Bytes that crossed the link -> the bridge; returns its replies (to send back)."""
        return self.end.step(data)

    def close(self):
        self.bridge.close()
        self.raw_driver.close()


def open_robot_end(robot, port, clock, baud=None, mapping=None):
    return RobotEnd(robot, port, clock, baud, mapping)


TWIN_ROBOT = "op3-dynamixel"     # the humanoid with a physics model (khr17-maestro has none)


def open_twin_end(clock, notes, mapping="pose", fps=30.0):
    """The simulated humanoid listening on the demo's link (host.physics.live.TwinEnd): the
    person's rows retargeted live by pose with balance, or copied row for row ("human")."""
    try:
        from host.physics.live import TwinEnd
        return TwinEnd(TWIN_ROBOT, clock, mapping=mapping, fps=fps)
    except (ImportError, ValueError, OSError) as e:
        notes["robot_twin"] = "not simulated: %s" % str(e).splitlines()[0][:160]
        return None
