"""The emulated OpenCR board's IMU is the firmware's (device/servo/emulate/opencr_imu.py): its
attitude lags and settles as Madgwick's beta 0.1 does, its registers are held between the
200 Hz loop's runs, its gyro has the 3-sample mean and the dead band, its yaw integrates the
gyro, and its accelerometer clips at 2 g. On the twin, the tilt read through the bus is the
board's, not the body's now."""

import math
import struct

import numpy as np
import pytest

from device.servo import dynamixel as dx
from device.servo import opencr
from device.servo.emulate import opencr_imu as fw

DT = 0.002                          # the twin's step (the OP3 model's timestep)


def _run(imu, seconds, rate_dps=(0.0, 0.0, 0.0), up=None, t0=0.0, roll_rate=False):
    """Step the board for `seconds` at DT; with roll_rate the body rolls at rate_dps[0] and
    the accelerometer sees its up vector turn with it."""
    n = int(round(seconds / DT))
    t = t0
    phi = 0.0
    for _ in range(n):
        t += DT
        if roll_rate:
            phi += math.radians(rate_dps[0]) * DT
            up = (0.0, math.sin(phi), math.cos(phi))
        imu.sense(t, [math.radians(v) for v in rate_dps], up, DT)
    return t, phi


def _booted(up=(0.0, 0.0, 1.0), tolerances=False, seed=fw.DEFAULT_SEED):
    """A board powered up still at up and stepped until its port opened (the power-up gyro
    calibration done): (imu, t). tolerances=False: a chip exactly to its nominal figures."""
    imu = fw.BoardImu(up, seed=seed, tolerances=tolerances)
    t = 0.0
    while not imu.answering(t):
        t += DT
        imu.sense(t, [0.0, 0.0, 0.0], up, DT)
    return imu, t


def _regs(imu):
    return struct.unpack("<9h", imu.registers())


def test_a_tilt_the_filter_did_not_start_at_is_reached_at_betas_pace():
    """Powered up level, then held at 20 deg of roll without rotating (the accelerometer
    alone says so): Madgwick's gradient step turns the estimate at most 2 beta rad/s, so half
    a second later the roll read is still under 12 deg; after 4 s it is there to 0.1 deg."""
    imu, t0 = _booted()
    up = (0.0, math.sin(math.radians(20)), math.cos(math.radians(20)))
    t, _ = _run(imu, 0.5, up=up, t0=t0)
    assert 0.0 < _regs(imu)[6] / 10.0 < math.degrees(2 * fw.BETA * 0.5) + 0.5 < 12.0
    _run(imu, 3.5, up=up, t0=t)
    assert _regs(imu)[6] == pytest.approx(200, abs=1)


def test_a_fast_roll_is_followed_from_the_gyro_with_the_chips_lag():
    """The body rolls at 200 deg/s for 1 s: the roll read follows it within 1.5 deg, late by
    the DLPF's and the loop's few ms (more than 0.5 deg at times: a board sampled at the
    request, as the twin was before, is within its 0.1 deg)."""
    imu, t = _booted()
    phi, lags = 0.0, []
    for k in range(500):
        t += DT
        phi += math.radians(200.0) * DT
        imu.sense(t, [math.radians(200.0), 0.0, 0.0], (0.0, math.sin(phi), math.cos(phi)), DT)
        if k > 100:
            lag = math.degrees(phi) - _regs(imu)[6] / 10.0
            lags.append((lag + 180.0) % 360.0 - 180.0)
    assert max(abs(v) for v in lags) < 1.5 and max(lags) > 0.5


def test_the_gyro_registers_are_the_mean_of_three_with_the_dead_band():
    imu, t = _booted()
    # 0.15 deg/s = 2.46 LSB -> 2: inside the dead band; 0.3 deg/s = 4.92 LSB -> 5
    _run(imu, 1.0, rate_dps=(0.15, -0.3, 0.0), up=(0.0, 0.0, 1.0), t0=t)
    assert _regs(imu)[:3] == (0, -5, 0)
    # a step of the rate: the first run after it averages it with two older samples
    imu, t = _booted()
    imu.gyro_f = [100.0, 0.0, 0.0]                       # (the chip's filter already there)
    imu.compute(fw.UPDATE_S)
    imu._pack()
    assert _regs(imu)[0] == math.trunc(1640 / 3.0) == 546


def test_the_registers_are_held_between_the_loops_runs():
    """The loop runs on its own clock: every 5 ms plus the main loop's lateness (0-0.1 ms),
    inside the 2 ms physics steps, not at their ends: 197-200 runs in a second, each gap
    5.0-5.1 ms (the twin's steps made them 4 or 6 ms before), and the registers do not
    change between two runs."""
    imu, t = _booted()
    seen, times = [], []
    runs0 = imu.runs
    for _ in range(500):
        t += DT
        imu.sense(t, [math.radians(90.0), 0.0, 0.0], (0.0, 0.0, 1.0), DT)
        seen.append((imu.runs, imu.registers()))
        if not times or imu.t_last != times[-1]:
            times.append(imu.t_last)
    assert 197 <= imu.runs - runs0 <= 200
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) >= fw.UPDATE_S - 1e-12 and max(gaps) <= fw.UPDATE_S + fw.LOOP_JITTER_S + 1e-12
    # off the physics step's grid: most runs fall inside a step
    assert sum(1 for x in times if abs(x / DT - round(x / DT)) > 1e-6) > 0.9 * len(times)
    for (r0, b0), (r1, b1) in zip(seen, seen[1:]):
        assert r1 > r0 or b1 == b0


def test_yaw_is_the_gyro_integrated_and_drifts_with_it():
    """90 deg about z in 2 s, then still: yaw reads the turn (0.1 % gRes error, lag settled)
    to a degree; roll and pitch stay level."""
    imu, t0 = _booted()
    t, _ = _run(imu, 2.0, rate_dps=(0.0, 0.0, 45.0), up=(0.0, 0.0, 1.0), t0=t0)
    _run(imu, 0.5, up=(0.0, 0.0, 1.0), t0=t)
    r = _regs(imu)
    assert r[8] == pytest.approx(900, abs=10) and abs(r[6]) <= 1 and abs(r[7]) <= 1


def test_the_accelerometer_clips_at_2_g():
    imu, t = _booted()
    _run(imu, 0.2, up=(0.0, 0.0, 3.5), t0=t)
    assert _regs(imu)[5] == 32767


def test_madgwick_angles_of_the_tilt_quaternion_are_the_tilt():
    for roll, pitch in ((20.0, -12.0), (-75.0, 30.0), (170.0, 5.0)):
        r, p = math.radians(roll), math.radians(pitch)
        up = (-math.sin(p), math.cos(p) * math.sin(r), math.cos(p) * math.cos(r))
        a = fw.angles_deg(fw.quat_from_tilt(up))
        assert a[0] == pytest.approx(roll, abs=1e-9) and a[1] == pytest.approx(pitch, abs=1e-9)
        assert a[2] == pytest.approx(0.0, abs=1e-9)


def test_on_the_twin_the_bus_reads_the_boards_attitude_not_the_bodys_now():
    """The OP3 with its torque off tips over: through the bus, the tilt read lags the body's
    (the board's last 5 ms run, the chip's filters, Madgwick) by more than the 0.1 deg of the
    registers while it falls fast, and two reads inside one loop period read the same bytes."""
    pytest.importorskip("mujoco")
    from device.servo.drivers import open_driver
    from device.servo.emulate.dynamixel import DynamixelEmulator
    from host.physics.simport import SimPort
    from host.physics.twin import Twin
    twin = Twin("op3-dynamixel", seed=0)
    emu = DynamixelEmulator(ids=twin.ids, clock=twin.clock, body=twin, imu_id=200)
    port = SimPort(emu, twin, 1000000, opencr.RETURN_DELAY_S)
    imu = opencr.OpenCRImu(open_driver("dynamixel", port))
    board = emu.boards[200]
    assert board.imu is not None
    # held standing (torque on where it is) through the board's power-up, then released
    for sid in twin.ids:
        twin.set_goal(sid, twin.read(sid)[0], 0.0, True)
    assert imu.wait_ready(twin.advance)
    twin.advance(1.0)                                   # (its Madgwick out of level)
    for sid in twin.ids:
        twin.set_goal(sid, twin.read(sid)[0], 0.0, False)
    worst = 0.0
    for _ in range(150):
        twin.advance(0.01)
        true_up, _ = twin.imu()
        tilt_true = math.degrees(math.acos(min(1.0, true_up[2])))
        up, rate, acc = imu.sample()
        tilt_read = math.degrees(math.acos(min(1.0, up[2])))
        worst = max(worst, abs(tilt_true - tilt_read))
    assert twin.tilt_deg() > 45                          # it fell
    assert worst > 1.0
    assert board.imu.runs == pytest.approx((twin.time_s - fw.INIT_S) / (fw.UPDATE_S + fw.LOOP_JITTER_S / 2), abs=20)
    # right after a run, two reads 0.9 ms apart (the next run is at least 4 ms away): the
    # same bytes, though the body moved on
    runs = board.imu.runs
    while board.imu.runs == runs:
        twin.step()
    runs = board.imu.runs
    a = imu.sample()
    b = imu.sample()
    assert board.imu.runs == runs and a == b


def test_a_stub_body_without_a_clock_is_sampled_at_the_read():
    from device.servo.emulate.opencr import OpenCRBoard

    class Stub:
        def imu(self):
            return (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    b = OpenCRBoard(body=Stub())
    assert b.imu is None
    r = dx.parse_status(b.run(200, dx.READ, struct.pack("<HH", 32, 16)))
    assert opencr.decode(r[2])[0] == (0.0, 0.0, 1.0)


def test_the_board_module_is_micropython_shaped():
    """No numpy in the board's firmware model (it is the firmware's arithmetic)."""
    import inspect
    src = inspect.getsource(fw)
    assert "numpy" not in src and "import np" not in src
    assert np is not None


def test_the_live_robot_end_reads_its_imu_on_the_bus():
    """The demo's live OP3 (host/physics/live.py TwinEnd): the bridge reads the OpenCR board on
    the servos' driver, the retargeter's feedback gets nothing else, and every read the reader
    counts is one the emulated board answered, each taking its bytes' time on the line."""
    pytest.importorskip("mujoco")
    from host.formats import read_motion
    from tools.replay_live import replay
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    est = read_motion(os.path.join(here, "data", "live", "131_03_estimate.png"))
    ends = []
    rep = replay(est, max_s=5.0, end_out=ends)
    end = ends[0]
    reads = rep["imu_reads"]
    # (the twin times the read as the robot's computer makes it: host/physics/live.py _Thinking)
    assert getattr(end.retargeter.imu, "source", end.retargeter.imu) == end.bridge._imu
    # (the board answers once its power-up calibration is done: the robot end waited for it)
    assert reads["ok"] == end.emu.boards[200].reads > 2.0 * 100
    assert reads["bad"] == reads["errors"] == reads.get("not_ready", 0) == 0
    # 41 bytes a read (request 14, reply 27) among the line's bytes
    assert end.port.bytes_in >= 27 * reads["ok"]
    # switched on before the link: the robot stood at home through the board's 2.9 s power-up
    # and its standing reference's STAND_READS reads, then every frame played (none waited)
    assert 2.9 < end.boot_s < 2.95 + (opencr.STAND_READS + 2) * 0.023
    assert end.bridge.counts["imu_wait"] == 0 and end.bridge.bus_imu.acc_off is not None


def test_a_bridge_asked_for_a_bus_imu_on_a_robot_without_one_says_so():
    from device.servo.bridge import LinkBridge
    from device.servo.robot import load_robot
    with pytest.raises(ValueError, match="has no known IMU"):
        LinkBridge(load_robot("so101-feetech"), driver=None, bus_imu=True)


def test_a_sample_that_is_not_finite_leaves_the_chip_as_it_was():
    imu, t = _booted()
    t, _ = _run(imu, 0.1, rate_dps=(10.0, 0.0, 0.0), up=(0.0, 0.0, 1.0), t0=t)
    before = _regs(imu)
    nan, inf = float("nan"), float("inf")
    for k in range(10):
        t += DT
        imu.sense(t, [nan, 0.0, inf], [0.0, nan, 1.0], DT)
    r = _regs(imu)
    assert imu.runs > 0 and r[:3] == before[:3] and all(abs(v) < 32767 for v in r[:6])


def test_a_finite_sample_too_big_for_the_filter_leaves_the_chip_as_it_was():
    """1e308 rad/s is finite but inf in deg/s (and 1e308 g minus -1e308 g overflows): the
    filters keep their values and the loop runs on, as for a NaN (a ValueError from round()
    inside the twin's physics step before)."""
    imu, t = _booted()
    t, _ = _run(imu, 0.1, rate_dps=(10.0, 0.0, 0.0), up=(0.0, 0.0, 1.0), t0=t)
    before = _regs(imu)
    runs = imu.runs
    for k in range(10):
        t += DT
        imu.sense(t, [1e308, 0.0, -1e308], [0.0, 1e308, 1.0], DT)
    t += DT
    imu.sense(t, [math.radians(10.0), 0.0, 0.0], [0.0, -1e308, 1.0], DT)
    r = _regs(imu)
    assert imu.runs > runs and r[:3] == before[:3]
    assert all(math.isfinite(v) for v in imu.gyro_f + imu.acc_f)


def test_a_stub_body_that_is_not_finite_leaves_the_registers_as_they_were():
    """A body without attach_sensor sampled at the read: a NaN or inf sample is answered with
    the registers of the last good one (a ValueError out of the emulator's feed before)."""
    from device.servo.emulate.opencr import OpenCRBoard

    class Stub:
        up = (0.0, 0.0, 1.0)

        def imu(self):
            return self.up, (0.0, 0.0, 0.0)
    body = Stub()
    b = OpenCRBoard(body=body)
    good = b.run(200, dx.READ, struct.pack("<HH", 32, 16))
    for bad in ((float("nan"), 0.0, 1.0), (0.0, float("inf"), 1.0), (1e308, 0.0, -1e308)):
        body.up = bad
        r = b.run(200, dx.READ, struct.pack("<HH", 32, 16))
        assert r == good


def test_a_clocked_body_without_an_accelerometer_model_reads_1_g_along_its_up():
    """attach_sensor without specific_force_g: the chip sees 1 g along the body's up vector
    (an AttributeError inside the body's physics step before)."""
    from device.servo.emulate.opencr import OpenCRBoard

    class Clocked:
        time_s, dt_s = 0.0, DT
        up = (0.0, math.sin(math.radians(10)), math.cos(math.radians(10)))

        def imu(self):
            return self.up, (0.0, 0.0, 0.0)

        def attach_sensor(self, fn):
            self.fn = fn
    body = Clocked()
    b = OpenCRBoard(body=body)
    for _ in range(2000):
        body.time_s += DT
        body.fn(body)
    assert b.imu.runs > 700
    up, rate, acc = opencr.decode(b.read(32, 16)[9:25])
    # (this board's chip: its zero-g offset, sensitivity and cross-axis within the spec's bounds)
    assert acc == pytest.approx(body.up, abs=0.15) and up == pytest.approx(body.up, abs=0.1)
    assert acc != pytest.approx(body.up, abs=0.005)


def test_a_board_powered_up_on_a_body_that_is_not_finite_starts_level():
    """A body whose physics blew up before the emulator was made (its up NaN): the board
    starts level and reads level (a ValueError from round(NaN) at construction before)."""
    for up in ((float("nan"), 0.0, 1.0), (0.0, float("inf"), 1.0)):
        imu, t = _booted(up, tolerances=False)
        assert imu.q[0] == pytest.approx(1.0, abs=1e-6)
        r = _regs(imu)
        assert max(abs(r[3]), abs(r[4]), abs(r[5] - 16384)) < 200 and r[6:] == (0, 0, 0)
