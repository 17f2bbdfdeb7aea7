"""The robot end of the live link, built once for every robot end: the product's LinkBridge with,
on a robot that has a model, the live pose retargeter (balance, the robot's own bus IMU fed back).

    from host.robot_link import open_link_end
    end = open_link_end(load_robot("op3-dynamixel"), driver, clock=time.monotonic)
    reply = end.step(bytes_from_the_link)     # decode, act on frames, poll: bytes to send back
    end.mapping                               # "pose" or the row map used ("human", "cmu", ...)
    end.retargeter                            # host.retarget.live.LiveRetargeter once a header came
    end.summary()                             # the bridge's counts (+ "mapping", "bus_imu")

mapping "auto" (the default) is "pose" for a robot the pose retargeting knows (its description
says "retarget": "pose" and host/retarget/robotmodel.py has its model: every built-in humanoid
and arm with one), else the description's best row map; "pose" asks for it (ValueError if the
robot has no model); any other name is that row map of the description ("human", "cmu"), None
its best match. With "pose" the person's rows of each header are retargeted frame by frame; a
header whose rows are the servos' own names is played as is (a staff retargeted beforehand);
one the retargeter cannot use (no usable segments) is counted as unusable and its frames never
move a servo. imu (pose only): the robot's bus IMU, where its description names one and the
driver is the bus it is on (the OP3's OpenCR board on the Dynamixel line), is read at the
balance loop's rate and fed back to the standing ankles.

`motionstaff follow` (the robot's own computer, host/commands/follow.py) and the demo's
simulated OP3 (host/physics/live.py TwinEnd) both build their robot end here.
"""

from device.servo.bridge import LinkBridge

STALE_S = 0.1       # a frame this much older than the newest one read with it: superseded


def pose_capable(robot):
    """True if the pose retargeting has a model of this robot (and its description asks for it)."""
    from host.retarget.robotmodel import SPECS
    return robot.raw.get("retarget") == "pose" and robot.name in SPECS


def resolve_mapping(robot, mapping="auto"):
    """"pose" or a row-map name (None: the description's best match); ValueError naming the
    robot for "pose" on a robot without a model."""
    if mapping == "auto":
        return "pose" if pose_capable(robot) else None
    if mapping == "pose" and not pose_capable(robot):
        raise ValueError("robot %s: no model to retarget by pose onto (give a row map: --mapping)"
                         % robot.name)
    return mapping


class LinkEnd:
    def __init__(self, robot, driver, clock, mapping="auto", imu=True, fps=30.0):
        self.robot = robot
        self.mapping = resolve_mapping(robot, mapping)
        retarget = None
        if self.mapping == "pose":
            from host.retarget.live import LiveRetargeter
            servos = set(s.name for s in robot.servos)

            def retarget(names, bus_imu):
                if servos & set(names):
                    return None                 # the servos' own rows: played as they are
                # FormatError (no usable segments): the bridge counts the header as unusable
                return LiveRetargeter(robot.name, names, fps=fps, imu=bus_imu)
        from host.retarget.live import TICK_S
        self.bus_imu = bool(imu and self.mapping == "pose" and getattr(robot, "imu", None)
                            and robot.controller == "dynamixel")
        self.bridge = LinkBridge(robot, driver, clock=clock,
                                 mapping=None if self.mapping == "pose" else self.mapping,
                                 retarget=retarget, bus_imu=self.bus_imu, imu_hz=1.0 / TICK_S,
                                 stale_s=STALE_S)

    @property
    def retargeter(self):
        """The retargeter of the header held (None: a row map's, an unusable one's, none yet)."""
        return self.bridge.retargeter

    def power_up(self, sleep):
        """Switched on before the link: torque on at home, standing until the robot's bus IMU
        answers and its standing reference is taken (LinkBridge.power_up; sleep(s) lets the
        robot's time pass). True when ready."""
        return self.bridge.power_up(sleep)

    def step(self, data):
        """The bytes that crossed the link (may be empty) -> the bridge, then its poll (failsafe,
        the balance loop between frames); returns the bytes to send back on the link."""
        reply = self.bridge.feed(data) if data else b""
        self.bridge.poll()
        return reply

    def close(self):
        """The robot's failsafe, and a home move run to its end."""
        self.bridge.close()
        pl = self.bridge.player
        if pl is not None:
            pl.settle()

    def summary(self):
        out = self.bridge.summary()
        out["link_mapping"] = self.mapping
        out["bus_imu"] = self.bus_imu
        if self.retargeter is not None:
            e = self.retargeter.pose_error_deg()
            out["pose_error_deg"] = None if e is None else round(e, 3)
            out["infeasible"] = list(self.retargeter.infeasible)
        return out


def open_link_end(robot, driver, clock, mapping="auto", imu=True, fps=30.0):
    return LinkEnd(robot, driver, clock, mapping, imu, fps)

