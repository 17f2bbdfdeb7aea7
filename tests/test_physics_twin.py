"""The physics twin behind the controller emulators: servo limits, torque off, a real SDK client."""

import math
import struct

import numpy as np
import pytest

import host.physics  # noqa: F401  (MUJOCO_GL before mujoco loads)

pytest.importorskip("mujoco")

from device.servo import dynamixel as dx
from device.servo import feetech as ft
from device.servo.emulate import make_emulator
from host.physics.twin import Twin


@pytest.fixture(scope="module")
def op3():
    from host.physics.models import load_robot
    return load_robot("op3-dynamixel")


def _servo(tw, name):
    return tw.rm.servos[tw.rm.servo_names.index(name)]


def _all_on_at_home(tw, emu):
    emu.feed(dx.sync_write(dx.GOAL_POSITION, 4, [(s.id, s.to_units(s.home_deg)) for s in tw.rm.servos]))
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, [(s.id, 1) for s in tw.rm.servos]))


def test_step_response_bounded_by_no_load_speed_and_stall_torque(op3):
    tw = Twin(op3, seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    _all_on_at_home(tw, emu)
    pan = _servo(tw, "head_pan")                 # a vertical axis: no gravity on it
    k = tw.rm.servo_names.index("head_pan")
    emu.feed(dx.write(pan.id, dx.GOAL_POSITION, 4, pan.to_units(60.0)))
    angles, taus, sat = [], [], []
    for _ in range(400):                         # 0.8 s
        tw.step()
        angles.append(tw.servo_deg()[k])
        taus.append(tw.bank.tau[k])
        sat.append(bool(tw.bank.saturated[k]))
    slope_dps = np.diff(angles) / tw.dt_s
    no_load_dps = math.degrees(tw.spec.no_load_rad_s)
    assert slope_dps.max() <= no_load_dps        # the torque-speed line: 0 N m at no-load speed
    assert slope_dps.max() > 0.5 * no_load_dps
    assert max(abs(t) for t in taus) == pytest.approx(tw.spec.stall_nm)    # saturates at stall
    assert all(sat[:20]) and not sat[-1]          # full duty while far, not when there
    assert abs(angles[-1] - 60.0) < 1.5          # and gets there
    assert angles[10] < 10.0                      # not an ideal servo: 20 ms in it is still near 0
    # Present Position over the bus is the simulated joint
    reply = dx.parse_status(emu.feed(dx.read(pan.id, dx.PRESENT_POSITION, 4)))
    assert struct.unpack("<i", reply[2])[0] == pan.to_units(angles[-1]) or \
        abs(struct.unpack("<i", reply[2])[0] - pan.to_units(angles[-1])) <= 1


def test_profile_velocity_register_limits_the_slope(op3):
    tw = Twin(op3, seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    _all_on_at_home(tw, emu)
    pan = _servo(tw, "head_pan")
    k = tw.rm.servo_names.index("head_pan")
    # Profile Velocity 22 x 0.229 rev/min = 30.2 deg/s
    emu.feed(dx.write(pan.id, dx.PROFILE_VELOCITY, 4, 22))
    emu.feed(dx.write(pan.id, dx.GOAL_POSITION, 4, pan.to_units(60.0)))
    tw.advance(1.0)
    limit_dps = 22 * 0.229 * 6.0
    assert abs(tw.servo_deg()[k]) <= limit_dps * 1.0 + 1.0
    assert abs(tw.servo_deg()[k]) >= limit_dps * 1.0 - 3.0


def test_torque_off_releases_the_joint(op3):
    tw = Twin(op3, seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    _all_on_at_home(tw, emu)
    k = tw.rm.servo_names.index("r_sho_roll")
    tw.advance(0.3)
    held = tw.servo_deg()[k]
    assert abs(held) < 3.0                        # on: holds the arm out against gravity
    elbow_z = tw.data.xpos[tw.model.body("r_el_link").id][2]
    emu.feed(dx.write(_servo(tw, "r_sho_roll").id, dx.TORQUE_ENABLE, 1, 0))
    tw.advance(0.7)
    assert abs(tw.servo_deg()[k] - held) > 8.0    # off: it falls (gear damping only)
    assert tw.data.xpos[tw.model.body("r_el_link").id][2] < elbow_z - 0.01
    assert tw.bank.tau[k] == 0.0


def test_op3_stands_still_on_the_zero_pose(op3):
    tw = Twin(op3, seed=3)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    _all_on_at_home(tw, emu)
    tw.advance(2.0)
    assert tw.torso_height_m() > 0.95 * op3.standing_height_m
    assert tw.tilt_deg() < 5.0
    assert tw.contacts() == (0, {"l": True, "r": True})


def test_deterministic_and_seeded(op3):
    def run(seed):
        tw = Twin(op3, seed=seed)
        emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
        _all_on_at_home(tw, emu)
        for i in range(25):
            a = 20.0 * math.sin(2 * math.pi * i / 25)
            emu.feed(dx.sync_write(dx.GOAL_POSITION, 4, [(s.id, s.to_units(a)) for s in tw.rm.servos
                                                          if "sho" in s.name]))
            tw.advance(0.02)
        return tw.data.qpos.copy()
    a, b, c = run(1), run(1), run(2)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dynamixel_sdk_reads_the_twins_present_position(op3, dynamixel_sdk_patient):
    sdk = dynamixel_sdk_patient
    from device.servo.emulate.pty import PtyServer
    tw = Twin(op3, seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    pan = _servo(tw, "head_pan")
    with PtyServer(emu) as srv:
        port = sdk.PortHandler(srv.path)
        assert port.openPort() and port.setBaudRate(1000000)
        ph = sdk.PacketHandler(2.0)
        for s in tw.rm.servos:
            assert ph.write4ByteTxRx(port, s.id, dx.GOAL_POSITION, s.to_units(0.0))[0] == sdk.COMM_SUCCESS
            assert ph.write1ByteTxRx(port, s.id, dx.TORQUE_ENABLE, 1)[0] == sdk.COMM_SUCCESS
        goal = pan.to_units(45.0)
        ph.write4ByteTxRx(port, pan.id, dx.GOAL_POSITION, goal)
        before, res, err = ph.read4ByteTxRx(port, pan.id, dx.PRESENT_POSITION)
        assert res == sdk.COMM_SUCCESS and abs(before - pan.to_units(0.0)) <= 2    # not there yet
        tw.advance(1.0)                           # simulated time, stepped here
        after, res, err = ph.read4ByteTxRx(port, pan.id, dx.PRESENT_POSITION)
        assert res == sdk.COMM_SUCCESS
        assert after == tw.read(pan.id)[0]        # the simulated joint, to the unit
        assert abs(after - goal) <= 20
        moving, res, _ = ph.read1ByteTxRx(port, pan.id, 122)
        assert res == sdk.COMM_SUCCESS and moving == 0
        port.closePort()


class FakeBody:
    """A host-agnostic body: what the emulators hand it, and fixed readings."""

    def __init__(self):
        self.goals = {}

    def set_goal(self, sid, units, vel, on, acc=0.0, p_gain=None, d_gain=None):
        self.goals[sid] = (units, vel, on, acc, p_gain, d_gain)

    def read(self, sid):
        return (1000 + sid, -0.5, True) if sid in self.goals else None


def test_feetech_and_maestro_hooks_convert_registers():
    body = FakeBody()
    emu = make_emulator("feetech", ids=(1, 2), body=body)
    emu.feed(ft.write(1, ft.TORQUE_ENABLE, b"\x01"))
    emu.feed(ft.write(1, ft.ACCELERATION, bytes((50,)) + ft.word(2500) + ft.word(0) + ft.word(400)))
    units, vel, on, acc, p, d = body.goals[1]
    assert (units, vel, on, acc, p, d) == (2500, 400.0, True, 5000.0, 32, 32)
    reply = emu.feed(ft.read(1, ft.PRESENT_POSITION, 2))
    assert ft.unword(reply[5:7]) == 1001           # from the body, not the goal
    reply = emu.feed(ft.read(1, 60, 2))
    assert struct.unpack("<H", reply[5:7])[0] == (1 << 10) | 500     # -50 %: sign bit 10
    m = make_emulator("maestro", body=body)
    m.feed(bytes((0x87, 3, 10, 0)))                 # speed 10 = 1000 qus/s
    m.feed(bytes((0x84, 3, 0x70, 0x2E)))            # 6000 qus
    assert body.goals[3][:3] == (6000, 1000.0, True)
    assert m.feed(bytes((0x90, 3))) == bytes(((1003) & 0xFF, 1003 >> 8))   # its ramped output
    m.feed(bytes((0x84, 3, 0, 0)))                  # 0 = pulses off
    assert body.goals[3][2] is False


def test_emulate_physics_serves_the_simulated_op3(dynamixel_sdk_patient):
    """`motionstaff emulate dynamixel --physics op3-dynamixel`: a real SDK client over the pty
    moves the simulated head and reads its Present Position back (real-time paced twin)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    sdk = dynamixel_sdk_patient
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-m", "host.cli", "emulate", "dynamixel", "--physics",
                             "op3-dynamixel"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        path = proc.stdout.readline().strip()
        port = sdk.PortHandler(path)
        assert port.openPort() and port.setBaudRate(1000000)
        ph = sdk.PacketHandler(2.0)
        from device.servo.robot import load_robot
        pan = [s for s in load_robot("op3-dynamixel").servos if s.name == "head_pan"][0]
        assert ph.write1ByteTxRx(port, pan.id, dx.TORQUE_ENABLE, 1)[0] == sdk.COMM_SUCCESS
        goal = pan.to_units(-40.0)
        assert ph.write4ByteTxRx(port, pan.id, dx.GOAL_POSITION, goal)[0] == sdk.COMM_SUCCESS
        seen = []
        deadline = time.monotonic() + 20.0           # a bound, not a synchronisation
        while time.monotonic() < deadline:
            pos, res, _ = ph.read4ByteTxRx(port, pan.id, dx.PRESENT_POSITION)
            assert res == sdk.COMM_SUCCESS
            seen.append(pos)
            if abs(pos - goal) <= 20:
                break
        assert abs(seen[-1] - goal) <= 20 and len(set(seen)) > 2    # it moved there, in steps
        port.closePort()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "commands" in err


def test_emulate_physics_bad_robot_is_one_line(capsys):
    from host.cli import main
    assert main(["emulate", "maestro", "--physics", "khr17-maestro"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "khr17-maestro has no physics model" in err[0]
    assert main(["emulate", "feetech", "--physics", "op3-dynamixel"]) == 2
    assert "dynamixel controller, not feetech" in capsys.readouterr().err


class _Clock:                       # SimPort's twin: a clock that advances when asked
    time_s = 0.0

    def advance_to(self, t):
        self.time_s = max(self.time_s, t)


class _Echo:                        # a device that answers "?" with 10 bytes
    def feed(self, b):
        return b"\x00" * 10 if b.startswith(b"?") else b""


def test_simport_charges_wire_time_and_return_delay():
    from host.physics.simport import SimPort

    c = _Clock()
    port = SimPort(_Echo(), c, 1000000, reply_delay_s=0.0005)
    port.write(b"x" * 100)                          # 100 bytes x 10 bits at 1 Mbps = 1 ms
    assert c.time_s == pytest.approx(0.001)
    port.write(b"?" * 10)                           # 0.1 ms on the wire, then 0.5 ms return delay
    assert port.read(10) == b"\x00" * 10
    assert c.time_s == pytest.approx(0.001 + 0.0001 + 0.0005 + 0.0001)


def test_simport_reads_as_pyserial_blocks_on_the_twins_clock():
    """read(n) returns as soon as n bytes are in (each at the end of its wire time, after the
    return delay), else after the port's timeout with what came; timeout 0 returns at once;
    None waits for bytes that are coming and refuses to wait for ever; a reply still on the
    wire survives a flush and is read when it arrives."""
    from host.physics.simport import SimPort

    c = _Clock()
    port = SimPort(_Echo(), c, 1000000, reply_delay_s=0.0005, timeout=0.03)
    assert port.read(1) == b"" and c.time_s == pytest.approx(0.03)       # nothing: the timeout
    port.write(b"?")                                   # request ends 0.03001, reply from 0.03051
    assert port.in_waiting == 0
    port.timeout = 0
    assert port.read(10) == b"" and c.time_s == pytest.approx(0.03001)  # at once, nothing yet
    port.timeout = 0.000525                            # 2 of the 10 bytes are in by then
    assert port.read(10) == b"\x00" * 2 and c.time_s == pytest.approx(0.030535)
    port.reset_input_buffer()                          # (the 8 still on the wire are kept)
    port.timeout = 0.03
    assert port.read(4) == b"\x00" * 4 and c.time_s == pytest.approx(0.03051 + 0.00006)
    port.timeout = None
    assert port.read(4) == b"\x00" * 4 and c.time_s == pytest.approx(0.03051 + 0.0001)
    with pytest.raises(RuntimeError, match="for ever"):
        port.read(3)                                   # none are coming
    port.write(b"?")
    c.advance_to(0.04)
    assert port.in_waiting == 10
    port.reset_input_buffer()                          # arrived: dropped
    assert port.in_waiting == 0 and port.rx == b""
    assert port.bytes_in == 10 and port.bus_t_s == pytest.approx(0.03061 + 0.00001 + 0.0005 + 0.0001)


def test_simport_usb_frames_hold_requests_and_replies():
    """usb_s: a request goes out at the next USB frame, a reply's bytes reach the reader at the
    next frame after they are in (1 ms: full-speed USB; 16 ms: an FTDI at its default latency)."""
    from host.physics.simport import USB_S, SimPort

    c = _Clock()
    c.time_s = 0.0003
    port = SimPort(_Echo(), c, 1000000, reply_delay_s=0.0005, usb_s=0.001)
    port.write(b"?")                                   # out at 0.001, on the wire to 0.00101
    assert c.time_s == pytest.approx(0.00101)
    # the reply is in at 0.00101 + 0.0005 + 10 bytes x 10 us = 0.00161: the reader has it at 0.002
    assert port.read(10) == b"\x00" * 10 and c.time_s == pytest.approx(0.002)
    ftdi = SimPort(_Echo(), _Clock(), 1000000, usb_s=0.016)
    ftdi.write(b"?")
    assert ftdi.read(10) == b"\x00" * 10 and ftdi.twin.time_s == pytest.approx(0.016)
    # the twin's robots: the OP3's OpenCR, the SO-101's bus board, a Maestro: USB at 1 ms
    assert USB_S["dynamixel"] == USB_S["feetech"] == USB_S["maestro"] == 0.001


def test_simport_a_byte_in_on_a_usb_frame_is_read_in_it():
    """A reply whose last byte is in 0.5 ns after a USB frame: read at the next frame, whole
    (one tolerance for the frame grid and the bytes' arrival: never a short read at once)."""
    from host.physics.simport import SimPort

    c = _Clock()
    port = SimPort(_Echo(), c, 115200, usb_s=0.001, timeout=0.05)
    port._rx.append([0.003 + 5e-10 - 4 * port.byte_s, b"ABCD"])
    port.t_s = 0.0025
    assert port.read(4) == b"ABCD" and port.clock() == pytest.approx(0.004)


def test_backlash_delays_torque_after_a_reversal():
    import math as m
    from host.physics.servo import SPECS, ServoBank
    bank = ServoBank(SPECS["xm430-w350"], 1)
    q, qd = np.zeros(1), np.zeros(1)
    bank.set_goal(0, m.radians(2.0), torque_on=True)
    taus = [float(bank.torque(q, qd, 0.002)[0]) for _ in range(20)]
    assert taus[0] == 0.0 and taus[-1] > 0.0             # the lash is taken up first
    assert bank.gap[0] == pytest.approx(m.radians(0.25) / 2)
    bank.set_goal(0, m.radians(-2.0), torque_on=True)    # reverse: the gap opens on the other side
    taus = [float(bank.torque(q, qd, 0.002)[0]) for _ in range(20)]
    assert taus[0] == 0.0 and taus[-1] < 0.0
    assert bank.gap[0] == pytest.approx(-m.radians(0.25) / 2)
