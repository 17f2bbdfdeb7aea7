"""`motionstaff follow` outlives its servo bus: the USB adapter to the servos unplugged and
plugged back. The loss is one line on stderr, the bus is tried again every 0.5 s while the loop
goes on (the link still read), and on reopen the servos are set up again (torque, watchdog,
profile) before the next command. Deterministic: an injected clock, no sleeps."""

from device.servo import dynamixel as dx
from device.servo.drivers import open_driver
from device.servo.emulate import make_emulator
from device.servo.robot import load_robot
from device.servo.transport import reopening
from host.follow_loop import FollowLoop
from host.robot_link import open_link_end
from tests.test_follow import Clock, EmuPort, _servo_staff
from tests.test_torque_off_before_ready import _frames

FPS = 30.0


class Bus:
    """The servo bus behind its USB adapter: up, or gone (every use an OSError, as pyserial's
    on an unplugged tty); plugged back, its servos are fresh (torque off, no watchdog, no
    profile: power-cycled with the adapter's hub)."""

    def __init__(self, clock):
        self.clock = clock
        self.up = True
        self.opens = 0
        self.emu = make_emulator("dynamixel", ids=range(1, 21), clock=clock)

    def open(self):
        if not self.up:
            raise OSError("/dev/ttyUSB0: [Errno 2] No such file or directory")
        self.opens += 1
        return _Port(self)


class _Port(EmuPort):
    def __init__(self, bus):
        EmuPort.__init__(self, bus.emu)
        self.bus = bus

    def _check(self):
        if not self.bus.up or self.emu is not self.bus.emu:
            raise OSError("write failed: [Errno 5] Input/output error")

    def write(self, b):
        self._check()
        return EmuPort.write(self, b)

    def read(self, n=1):
        self._check()
        return EmuPort.read(self, n)

    def reset_input_buffer(self):
        self._check()
        EmuPort.reset_input_buffer(self)


class Feed:
    """The link's port: the bytes put there each turn."""

    def __init__(self):
        self.buf = bytearray()

    @property
    def in_waiting(self):
        return len(self.buf)

    def read(self, n):
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def write(self, b):
        return len(b)

    def close(self):
        pass


def test_a_servo_bus_unplugged_and_back_is_reopened_and_its_servos_set_up_again():
    robot = load_robot("op3-dynamixel")
    clock = Clock()
    bus = Bus(clock)
    sp = reopening(bus.open(), bus.open, "/dev/ttyUSB0", clock=clock, drain=False)
    drv = open_driver("dynamixel", sp, clock=clock, **dict(robot.options))
    end = open_link_end(robot, drv, clock=clock, mapping="servo", imu=False)
    feed = Feed()
    lines = []
    loop = FollowLoop(lambda: feed, end, clock=clock, sleep=lambda s: None, servo_port=sp,
                      notify=lines.append)
    frames = _frames(_servo_staff(robot, frames=120, fps=FPS), off_at=None)
    old = bus.emu
    for k, data in enumerate(frames):
        clock.t = k / FPS
        if k == 30:
            bus.up = False                      # unplugged at 1.0 s
        if k == 66:
            bus.up = True                       # plugged back at 2.2 s: fresh servos
            bus.emu = make_emulator("dynamixel", ids=range(1, 21), clock=clock)
        feed.buf += data
        loop.turn()
    st = loop.stats
    # the loop went on: every frame read and acted on (sent, or a send error while gone)
    assert st["turns"] == 120 and end.bridge.counts["frames"] == 120
    assert end.bridge.player.stats["send_errors"] > 0
    # lost once, one line; tried every 0.5 s from the loss (1.0 s): 1.5 and 2.0 failed, 2.5 opened
    assert st["servo_bus_lost"] == 1 and st["servo_bus_reopen_failures"] == 2
    assert st["servo_bus_reopened"] == 1 and bus.opens == 2
    assert len(lines) == 2
    assert lines[0] == "motionstaff follow: servo bus /dev/ttyUSB0 lost; reopening it every 0.5 s"
    assert lines[1].startswith("motionstaff follow: servo bus /dev/ttyUSB0 reopened")
    # the fresh servos were set up again before the next command: torque on, watchdog armed
    # (0.2 s in 20 ms units), the profile velocity the description's; the goals since reached them
    new = bus.emu
    for i in range(1, 21):
        assert new.tables[i][dx.TORQUE_ENABLE] == 1
        assert new.tables[i][dx.BUS_WATCHDOG] == old.tables[i][dx.BUS_WATCHDOG] == 10
        pv = new.tables[i][dx.PROFILE_VELOCITY:dx.PROFILE_VELOCITY + 4]
        assert pv == old.tables[i][dx.PROFILE_VELOCITY:dx.PROFILE_VELOCITY + 4] and any(pv)
        assert new.positions[i] is not None
