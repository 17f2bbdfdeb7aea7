"""The OpenCR twin is at least as hard as a real board: each board's MPU-9250 has its own
zero-g offset, sensitivity and cross-axis error within the product spec's tolerances (seeded),
its gyro's zero-rate output is what the firmware's power-up calibration leaves, the board does
not answer while it calibrates, the host refuses a reading of nothing, and a closed emulator's
board leaves the twin."""

import math
import struct

import pytest

from device.servo import dynamixel as dx
from device.servo import opencr
from device.servo.emulate import opencr_imu as fw

DT = 0.002


def test_each_seed_draws_a_chip_within_the_datasheets_bounds_and_not_a_perfect_one():
    seen = set()
    for seed in range(50):
        imu = fw.BoardImu(seed=seed)
        for k in range(3):
            assert abs(imu.acc_b[k]) <= fw.ACC_ZERO_G_TOL_G[k]
            assert abs(imu.gyro_b[k]) <= fw.GYRO_ZRO_TOL_DPS
            for m in (imu.acc_m, imu.gyro_m):
                for j in range(3):
                    tol = fw.SENS_TOL if j == k else fw.CROSS_TOL
                    assert abs(m[k][j] - (1.0 if j == k else 0.0)) <= tol
        seen.add(tuple(imu.acc_b))
    assert len(seen) == 50
    # the default board (seed 200, its bus id) is not a perfect chip: its zero-g offset tilts
    # the accelerometer's gravity by more than a degree, and it is the same every time
    a = fw.BoardImu()
    b = fw.BoardImu(seed=fw.DEFAULT_SEED)
    assert a.acc_b == b.acc_b and a.acc_m == b.acc_m
    f = fw._affine(a.acc_m, a.acc_b, [0.0, 0.0, 1.0])
    tilt = math.degrees(math.acos(f[2] / math.sqrt(sum(v * v for v in f))))
    assert tilt > 1.0 and max(abs(v) for v in a.acc_b) > 0.01


def test_the_board_is_silent_through_its_power_up_calibration_then_answers():
    """IMU.begin() runs in setup() before dxlOpenPort: 0.325 s of the chip's set-up and 512
    gyro calibration runs at 200 Hz (2.88-2.94 s): no reply before; after it, the gyro reads
    the chip's zero-rate output less the calibration's floor(mean), inside the dead band."""
    from device.servo.emulate.opencr import OpenCRBoard

    class Clocked:
        time_s, dt_s = 0.0, DT

        def imu(self):
            return (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)

        def attach_sensor(self, fn):
            self.fn = fn
    body = Clocked()
    board = OpenCRBoard(body=body)
    assert max(abs(v) for v in board.imu.gyro_b) > 0.5        # 8 LSB or more of ZRO on a k
    req = struct.pack("<HH", 32, 16)
    silent_until = None
    for _ in range(1600):
        body.time_s += DT
        body.fn(body)
        r = board.run(200, dx.READ, req)
        if r == b"":
            silent_until = body.time_s
        assert (r == b"") == (not board.imu.answering(body.time_s))
    assert fw.INIT_S + 511 * fw.UPDATE_S <= silent_until < fw.INIT_S + 511 * (fw.UPDATE_S + fw.LOOP_JITTER_S)
    assert board.run(200, dx.PING, b"") != b""
    gyro = struct.unpack("<3h", dx.parse_status(board.run(200, dx.READ, req))[2][:6])
    assert gyro == (0, 0, 0)                                  # calibrated away
    # what was calibrated away: the chip's ZRO in LSB (floor of the 512 samples' mean)
    zro = [round(v * opencr.GYRO_LSB_PER_DPS) for v in board.imu.gyro_b]
    assert [abs(z - g) <= 1 for z, g in zip(zro, board.imu.gyro_zero)] == [True] * 3
    # an uncalibrated chip would read its ZRO: more than the dead band on some axis
    assert max(abs(z) for z in zro) > opencr.GYRO_DEADBAND_LSB


def test_a_reading_of_nothing_is_refused_by_the_reader_and_the_estimator():
    """A block whose accelerometer reads 0, 0, 0 (the firmware's table before its loop wrote
    it) is not level: the reader gives None (not_ready), and the host's tilt filter gives no
    estimate from a zero accelerometer at its start (the board's "level" is not taken)."""
    from device.servo.emulate.dynamixel import DynamixelEmulator
    from device.servo.drivers import open_driver
    from host.physics.simport import SimPort
    from host.retarget.attitude import TiltEstimator

    class Blank:                    # a stub body whose board's registers are all zeros
        def imu(self):
            return (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)

        def specific_force_g(self):
            return (0.0, 0.0, 0.0)

    class Still:                    # SimPort's clock hook: nothing to step
        time_s = 0.0

        def advance_to(self, t_s):
            pass

    emu = DynamixelEmulator(ids=(1,), body=Blank(), imu_id=200)
    imu = opencr.OpenCRImu(open_driver("dynamixel", SimPort(emu, Still(), 1000000)))
    assert imu.sample() is None and imu.stats["not_ready"] == 1 and imu.stats["ok"] == 0
    assert not imu.ready
    est = TiltEstimator()
    assert est.update(0.0, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)) is None
    assert est.e is None
    # a start from a board still level in its Madgwick on a body tilted 20 deg: the
    # accelerometer's 1 g says the tilt
    up = (0.0, math.sin(math.radians(20)), math.cos(math.radians(20)))
    got = est.update(0.01, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), up)
    assert got == pytest.approx(up, abs=1e-9)


def test_a_closed_emulators_board_leaves_the_twin():
    pytest.importorskip("mujoco")
    from device.servo.emulate.dynamixel import DynamixelEmulator
    from host.physics.twin import Twin
    twin = Twin("op3-dynamixel", seed=0)
    emu = DynamixelEmulator(ids=twin.ids, clock=twin.clock, body=twin, imu_id=200)
    other = DynamixelEmulator(ids=twin.ids, clock=twin.clock, body=twin, imu_id=200)
    assert len(twin.sensors) == 4                           # each: its board and its servos' watchdog
    twin.advance(0.4)                                       # (past the chip's 0.325 s set-up)
    runs = emu.boards[200].imu.runs
    emu.close()
    assert len(twin.sensors) == 2 and all(getattr(f, "__self__", None) in (other, other.boards[200])
                                          for f in twin.sensors)
    twin.advance(0.02)
    assert emu.boards[200].imu.runs == runs                # no longer stepped
    assert other.boards[200].imu.runs > runs               # the other still is
    emu.close()                                             # twice: a no-op
    twin.detach_sensor(lambda t: None)                      # one never attached: a no-op
    assert len(twin.sensors) == 2


def test_the_robot_end_takes_a_standing_reference_off_the_chips_offsets():
    """A board with seed 200's chip on a torso standing upright and still: the robot end waits
    for it (silent 2.9 s), takes STAND_READS still reads, and from then read() gives 1 g along
    the torso's up to the noise (2.5 mg), where the raw register acc is its zero-g offset and
    sensitivity off; a read with the gyro past STILL_RAD_S starts the reference again."""
    from device.servo.emulate.dynamixel import DynamixelEmulator
    from device.servo.drivers import open_driver
    from host.physics.simport import SimPort

    class Clocked:                  # a still, upright torso stepped on SimPort's clock
        time_s, dt_s = 0.0, DT
        hooks = []

        def imu(self):
            return (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)

        def attach_sensor(self, fn):
            self.hooks.append(fn)      # the board's loop and the servos' watchdog

        def advance_to(self, t_s):
            while self.time_s < t_s - 1e-12:
                self.time_s += DT
                for fn in self.hooks:
                    fn(self)

        def advance(self, s):
            self.advance_to(self.time_s + s)
    body = Clocked()
    emu = DynamixelEmulator(ids=(1,), clock=lambda: body.time_s, body=body, imu_id=200)
    port = SimPort(emu, body, 1000000)
    imu = opencr.OpenCRImu(open_driver("dynamixel", port, clock=port.clock))
    stands = []
    assert imu.wait_ready(body.advance, stand=lambda: stands.append(port.clock()) or True)
    # while the board is silent each read waits the SDK's packet timeout after its request
    # (34.41 ms: longer than the 0.02 s cycle), so the robot stands by once a read, each
    # cycle that long (the stub's 2 ms steps round the request's and the wait's ends up), as
    # a robot on the hardware would (a 0.1 s port timeout gave 0.12 s); once it answers, a
    # cycle every 0.02 s. (The first read after the calibration is not still: the 3-sample
    # mean still holds two uncalibrated samples, as in the firmware)
    silent_s = 14 * 10 / 1e6 + dx.packet_timeout_s(27, 1e6)
    gaps = [b - a for a, b in zip(stands, stands[1:])]
    quiet = [g for g in gaps if g > 0.03]
    assert gaps[:len(quiet)] == quiet                        # silent first, then answering
    assert all(silent_s - 1e-9 <= g <= silent_s + 2 * DT + 1e-9 for g in quiet)
    assert all(g <= 0.02 + DT + 1e-9 for g in gaps[len(quiet):])
    assert 2.85 / (silent_s + 2 * DT) <= len(quiet) <= 2.95 / silent_s + 1  # stood at home all the while
    assert 2.85 < body.time_s <= 2.95 + silent_s + (opencr.STAND_READS + 1) * (0.02 + DT) + 1e-6
    raw = imu.sample()[2]
    assert max(abs(raw[k] - opencr.STAND_UP[k]) for k in range(3)) > 0.02
    up, rate, acc = imu.read(acc=True)
    assert max(abs(acc[k] - opencr.STAND_UP[k]) for k in range(3)) < 0.012
    # a read that moved (the gyro past STILL_RAD_S) during the reference: started again
    imu2 = opencr.OpenCRImu(None)
    still = ((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    moved = ((0.0, 0.0, 1.0), (0.2, 0.0, 0.0), (0.0, 0.0, 1.0))
    for s in [still] * (opencr.STAND_READS - 1) + [moved] + [still] * (opencr.STAND_READS - 1):
        imu2._standing(s)
    assert not imu2.ready
    imu2._standing(still)
    assert imu2.ready and imu2.acc_off == (0.0, 0.0, 0.0)


def test_a_stream_that_comes_before_the_board_is_up_waits_standing(monkeypatch):
    """The live robot end not switched on before its link (power_up skipped): the bridge
    holds home, torque on, frame by frame (imu_wait, one probe of the board each) until the
    board answers and the standing reference is taken, then plays; the OP3 twin stays up."""
    pytest.importorskip("mujoco")
    import os
    from device.servo.bridge import LinkBridge
    from host.formats import read_motion
    from tools.replay_live import replay
    monkeypatch.setattr(LinkBridge, "power_up", lambda self, sleep: True)
    here = os.path.dirname(os.path.abspath(__file__))
    est = read_motion(os.path.join(here, "data", "live", "131_03_estimate.png"))
    ends = []
    rep = replay(est, max_s=4.5, end_out=ends)
    c = ends[0].bridge.counts
    # 2.9 s silent, then STAND_READS reads at one a frame (30 fps)
    assert 2.9 * 30 - 1 <= c["imu_wait"] <= (2.95 + opencr.STAND_READS / 30.0) * 30 + 2
    # (one failsafe: the stream's end, the replay polls on after its last frame; as with
    # power_up)
    assert c["frames"] > 20 and c["failsafe_engaged"] == 1 and not rep["fell"]
    assert ends[0].boot_s == 0.0
    # one probe a feed while the board is silent, each waiting the SDK's packet timeout: the
    # robot end misses its turns meanwhile (the replay's 4 a frame, 8.3 ms each: 4 a probe at
    # least), and the frames that came in the wait are one feed after it, one probe
    silent_s = 14 * 10 / 1e6 + dx.packet_timeout_s(27, 1e6)
    t = ends[0].bridge.bus_imu.stats["timeouts"]
    assert 2.85 / (silent_s + 2 / 120.0) <= t <= 2.95 / silent_s + 1
    assert ends[0].blocked_steps >= 4 * t


def test_a_standing_reference_far_from_home_is_refused_not_baked_in():
    """A robot lying on its back (gravity along the torso's x), held tilted 10 deg in the air,
    or a board whose own up is 15 deg off: still reads, but no chip within its spec reads so
    at home: refused (stand_refused), never ready, read() not "corrected" to upright; a chip at
    the bound (119 mg x, y, 1 g + 119 mg z) is taken."""
    import math as m
    still = (0.0, 0.0, 0.0)
    t10 = m.radians(10.0)
    t15 = m.radians(15.0)
    cases = [((1.0, 0.0, 0.0), (1.0, 0.0, 0.0)),                          # lying on its back
             ((0.0, m.sin(t10), m.cos(t10)), (0.0, m.sin(t10), m.cos(t10))),   # held tilted
             ((m.sin(t15), 0.0, m.cos(t15)), (0.0, 0.0, 1.0))]            # the board's up only
    for up, acc in cases:
        imu = opencr.OpenCRImu(None)
        for _ in range(3 * opencr.STAND_READS):
            imu._standing((up, still, acc))
        assert not imu.ready and imu.acc_off is None and imu.stats["stand_refused"] == 3
        assert imu.corrected((up, still, acc)) == (up, still, acc)
    imu = opencr.OpenCRImu(None)
    worst = (0.119, -0.119, 1.119)
    for _ in range(opencr.STAND_READS):
        imu._standing(((0.0, 0.0, 1.0), still, worst))
    assert imu.ready and "stand_refused" not in imu.stats
    assert max(abs(a - b) for a, b in zip(imu.acc_off, (0.119, -0.119, 0.119))) < 1e-12


class _LeanThenHome:
    """A driver whose board answers at once (the host restarted, the robot already on), its
    torso leaning 5 deg (a crouch the robot was left in: within the reference's bound) and
    moving slowly, under the gyro's still threshold, while the robot ramps home; upright
    at home after."""

    def __init__(self):
        self.stats = {"timeouts": 0}
        self.home = False

    def flush_input(self):
        pass

    def write(self, b):
        pass

    def read_status(self, sid, n):
        t = 0.0 if self.home else math.radians(5.0)
        up = (math.sin(t), 0.0, math.cos(t))
        rate = (0.0, 0.0 if self.home else 0.02, 0.0)
        return b"x", (sid, 0, opencr.encode(up, rate, up))


def test_the_standing_reference_is_taken_at_home_not_on_the_way_there():
    """wait_ready takes the reference only from reads after stand() said the robot is at home
    (Player.stand_by: the limiter at home): not from a lean on the way (it would be "upright"
    for ever after, inside the bound); a board sampled while not standing (play's feedback
    reads after a wait_ready that gave up: the robot moving) never takes one."""
    drv = _LeanThenHome()
    imu = opencr.OpenCRImu(drv)
    calls = []

    def stand():
        calls.append(1)
        drv.home = len(calls) > 2 * opencr.STAND_READS       # ramping home for 50 cycles
        return drv.home
    assert imu.wait_ready(lambda s: None, stand=stand)
    # (the 51st stand() is the first at home: the 25 reads after it are the reference's)
    assert len(calls) == 3 * opencr.STAND_READS
    assert max(abs(v) for v in imu.acc_off) < 0.002          # the encode's rounding only
    moving = opencr.OpenCRImu(_LeanThenHome())
    assert not moving.wait_ready(lambda s: None, timeout_s=0.1, stand=lambda: False)
    for _ in range(3 * opencr.STAND_READS):
        moving.sample()
    assert not moving.ready and moving.acc_off is None
