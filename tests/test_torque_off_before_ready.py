"""A torque-off frame (every value missing: the sender's failsafe) that comes on the link before
the robot's bus IMU is ready: the robot goes limp as asked, and stands up again when good frames
come (was: limp until restart; the sequence is in the test)."""

from device.servo import dynamixel as dx
from device.servo.bridge import LinkBridge
from device.servo.drivers import open_driver
from device.servo.emulate import make_emulator
from device.servo.linkstream import LinkStreamer
from device.servo.opencr import STAND_READS
from device.servo.robot import load_robot
from tests.test_follow import Clock, EmuPort, Sink, _servo_staff

BOARD_UP_S = 1.0


class LateBoard(EmuPort):
    """The OP3's bus with its OpenCR board silent until BOARD_UP_S (its power-up calibration)."""

    def __init__(self, emu, clock):
        EmuPort.__init__(self, emu)
        self.clock = clock

    def write(self, b):
        if b[4] == 200 and self.clock() < BOARD_UP_S:
            return len(b)                       # the board does not answer yet
        return EmuPort.write(self, b)


def _frames(staff, off_at):
    """The unit's bytes for each frame of staff (its header first), frame off_at sent with
    every value missing (the sender's torque off)."""
    sink = Sink()
    clock = Clock()
    ls = LinkStreamer(sink, staff.header(), staff.bits, clock=clock, baud=10 ** 9)
    codes, miss = staff.codes()
    out = []
    for k in range(staff.frames):
        clock.t = k / staff.fps
        n = len(sink.data)
        col = [None] * staff.nrows if k == off_at else \
            [None if miss[r, k] else int(codes[r, k]) for r in range(staff.nrows)]
        ls.frame(col, clock.t)
        out.append(bytes(sink.data[n:]))
    return out


def test_a_torque_off_before_the_imu_is_ready_does_not_leave_the_robot_limp():
    robot = load_robot("op3-dynamixel")
    clock = Clock()
    emu = make_emulator("dynamixel", ids=range(1, 21), clock=clock, imu_id=200)
    drv = open_driver("dynamixel", LateBoard(emu, clock), **dict(robot.options))
    br = LinkBridge(robot, drv, clock=clock, bus_imu=True, mapping="servo")
    # the sequence: the link before the board is up (power_up not run, or run out: follow goes
    # on standing at home); frame 3 is the sender's torque off; then good frames at 30 fps
    frames = _frames(_servo_staff(robot, frames=90, fps=30.0), off_at=3)
    for k, data in enumerate(frames):
        clock.t = k / 30.0
        br.feed(data)
        br.poll()
        if k == 3:
            assert br.player.in_failsafe and br.counts["torque_off"] == 1
            assert all(emu.tables[i][dx.TORQUE_ENABLE] == 0 for i in range(1, 21))   # limp, as asked
    # the good frames after it stood the robot up (torque on, home), the board answered at
    # 1.0 s, its standing reference was taken at home, and the frames play from then
    assert br.bus_imu.ready
    assert all(emu.tables[i][dx.TORQUE_ENABLE] == 1 for i in range(1, 21))
    assert not br.player.in_failsafe and br.counts["frames"] > 0
    # ready within a frame of the board's STAND_READS reads at one a frame after it answered
    assert br.counts["imu_wait"] <= BOARD_UP_S * 30 + STAND_READS + 2
    assert all(emu.positions[i] is not None for i in range(1, 21))
