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
    assert len(twin.sensors) == 2
    twin.advance(0.4)                                       # (past the chip's 0.325 s set-up)
    runs = emu.boards[200].imu.runs
    emu.close()
    assert len(twin.sensors) == 1
    twin.advance(0.02)
    assert emu.boards[200].imu.runs == runs                # no longer stepped
    assert other.boards[200].imu.runs > runs               # the other still is
    emu.close()                                             # twice: a no-op
    twin.detach_sensor(lambda t: None)                      # one never attached: a no-op
    assert len(twin.sensors) == 1
