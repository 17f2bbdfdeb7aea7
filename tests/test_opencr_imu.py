"""The OP3's IMU through the bus (device/servo/opencr.py, device/servo/emulate/opencr.py):
byte-exact request and reply, the decode round trip, a reply that fails (CRC, timeout, a board
that is not there, an error bit) is None, the emulated board serves the twin's tilt within the
board's quantisation and takes its wire time, the line budget with the read, and the commands'
refusal of --imu-feedback on a robot without a known IMU."""

import math
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from device.servo import dynamixel as dx
from device.servo import opencr

from device.servo.emulate.dynamixel import DynamixelEmulator

H = bytes.fromhex
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class _Port:
    """A port whose replies are given: each write queues the next one."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.rx = b""
        self.written = b""

    def write(self, b):
        self.written += bytes(b)
        if self.replies:
            self.rx += self.replies.pop(0)
        return len(b)

    def read(self, n=1):
        out, self.rx = self.rx[:n], self.rx[n:]
        return out

    def reset_input_buffer(self):
        self.rx = b""


class _EmuPort(_Port):
    """A port straight into an emulator (no wire time)."""

    def __init__(self, emu):
        _Port.__init__(self, [])
        self.emu = emu

    def write(self, b):
        self.written += bytes(b)
        self.rx += self.emu.feed(b)
        return len(b)


def _imu(port, **kw):
    return opencr.OpenCRImu(dx.Dynamixel(port), **kw)


def test_the_read_request_is_byte_exact_with_the_crc_of_the_emanual_examples():
    # the driver's CRC on ROBOTIS' e-manual Protocol 2.0 read example (Present Position of id 1)
    # and its status reply (166), then the OpenCR read: id 200, address 32, 16 bytes
    assert dx.read(1, 132, 4) == H("FF FF FD 00 01 07 00 02 84 00 04 00 1D 15")
    assert dx.parse_status(H("FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0"))[:3] == (1, 0, H("A6 00 00 00"))
    assert opencr.request() == H("FF FF FD 00 C8 07 00 02 20 00 10 00 B3 2F")
    sdk = pytest.importorskip("dynamixel_sdk.protocol2_packet_handler")
    pk = opencr.request()
    # the vendor SDK's own CRC routine agrees
    assert sdk.Protocol2PacketHandler().updateCRC(0, list(pk[:-2]), len(pk) - 2) == 0x2FB3


def test_a_reply_is_byte_exact_and_decodes_to_the_torso_frame():
    # pitched 10 deg (up vector +x), rate (0.5, -0.25, 1.0) rad/s, acc (0.1, -0.2, 0.97) g
    up = (math.sin(math.radians(10)), 0.0, math.cos(math.radians(10)))
    regs = opencr.encode(up, (0.5, -0.25, 1.0), (0.1, -0.2, 0.97))
    # board axes: x and y negated (mounted half a turn about z), pitch +100 (0.1 deg)
    assert struct.unpack("<8h", regs) == (-470, 235, 940, -1638, 3277, 15892, 0, 100)
    reply = dx.status(200, 0, regs)
    assert reply == H("FF FF FD 00 C8 14 00 55 00 2A FE EB 00 AC 03 9A F9 CD 0C 14 3E 00 00 64 00 D6 06")
    assert len(reply) == opencr.REPLY_BYTES
    imu = _imu(_Port([reply]))
    got_up, rate, acc = imu.sample()
    assert imu.driver.port.written == opencr.request()
    assert got_up == pytest.approx(up, abs=1e-12)
    assert rate == pytest.approx((470 / 16.4 * math.pi / 180, -235 / 16.4 * math.pi / 180, 940 / 16.4 * math.pi / 180))
    assert acc == (1638 / 16384.0, -3277 / 16384.0, 15892 / 16384.0)
    assert imu.stats["ok"] == 1


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.floats(-80, 80), st.floats(-80, 80), st.lists(st.floats(-30, 30), min_size=3, max_size=3),
       st.lists(st.floats(-1.99, 1.99), min_size=3, max_size=3))
def test_decode_inverts_encode_within_the_board_quantisation(roll_deg, pitch_deg, rate, acc):
    r, p = math.radians(roll_deg), math.radians(pitch_deg)
    up = (-math.sin(p), math.cos(p) * math.sin(r), math.cos(p) * math.cos(r))
    got_up, got_rate, got_acc = opencr.decode(opencr.encode(up, rate, acc))
    # roll and pitch truncated to 0.1 deg: the up vector within 0.1 * sqrt(2) deg
    cos = max(-1.0, min(1.0, sum(a * b for a, b in zip(up, got_up))))
    assert math.degrees(math.acos(cos)) <= 0.1 * math.sqrt(2) + 1e-9
    for k in range(3):
        # half an LSB of rounding, or the |raw| <= 3 dead band
        lsb = 1.0 if abs(rate[k]) > math.radians(3.5 / 16.4) else 3.5
        assert abs(got_rate[k] - rate[k]) <= math.radians(lsb / 16.4) + 1e-12
        assert abs(got_acc[k] - acc[k]) <= 0.5 / 16384 + 1e-12


def test_a_stuffed_reply_is_read_by_its_length():
    # gyro x = -1 and gyro y = 0x00FD put FF FF FD in the parameters: the board stuffs a FD after
    # it, the reply is one byte longer than REPLY_BYTES
    regs = struct.pack("<8h", -1, 0xFD, 0, 0, 0, 16384, 0, 0)
    reply = dx.status(200, 0, regs)
    assert len(reply) == opencr.REPLY_BYTES + 1
    up, rate, acc = _imu(_Port([reply])).sample()
    assert rate[0] == pytest.approx(math.radians(1 / 16.4)) and rate[1] == pytest.approx(math.radians(-253 / 16.4))


def _good():
    return dx.status(200, 0, opencr.encode((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)))


@pytest.mark.parametrize("reply, stat", [
    (_good()[:-1] + bytes([_good()[-1] ^ 1]), "bad"),      # CRC
    (_good()[:-3], "bad"),                                 # cut short: the rest never comes
    (dx.status(201, 0, _good()[9:-2]), "bad"),             # another id
    (dx.status(200, 0, b"\0" * 12), "bad"),                # too short a block
    (dx.status(200, 0x05, b""), "errors"),                 # an error bit (Data Length)
])
def test_a_reply_that_fails_is_none(reply, stat):
    imu = _imu(_Port([reply]))
    assert imu.sample() is None
    assert imu.stats[stat] == 1 and imu.stats["ok"] == 0
    assert _imu(_Port([reply])).read() is None             # what the feedback counts missed


def test_a_board_that_does_not_answer_is_none_and_then_asked_only_now_and_then():
    emu = DynamixelEmulator(ids=range(1, 21))                # the servos, no OpenCR board
    port = _EmuPort(emu)
    imu = _imu(port)
    assert [imu.read() for _ in range(opencr.PROBE_EVERY)] == [None] * opencr.PROBE_EVERY
    assert imu.stats["timeouts"] == opencr.QUIET_LIMIT
    assert imu.stats["skipped"] == opencr.PROBE_EVERY - opencr.QUIET_LIMIT
    assert port.written == opencr.request() * opencr.QUIET_LIMIT
    imu.read()                                              # the probe
    assert imu.stats["reads"] == opencr.QUIET_LIMIT + 1


def test_a_timed_read_carries_the_time_of_its_sample_not_of_the_call():
    """OpenCRImu.timed (the host's tilt filter's input, host/retarget/attitude.py): the clock
    just after the bus read; with every=2 the call between reads gives the last sample with
    its own time (a filter integrating the gyro over the times does not count it twice); a
    read that failed is None and the next good one carries its own time."""
    emu = DynamixelEmulator(ids=(1,), imu_id=200)
    now = [0.0]
    imu = _imu(_EmuPort(emu), every=2)
    out = []
    for k in range(4):
        now[0] = 0.01 * (k + 1)
        out.append(imu.timed(lambda: now[0]))
    assert [s[3] for s in out] == [0.01, 0.01, 0.03, 0.03]
    assert out[0][:3] == ((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))   # up, rate, acc
    assert imu.stats["reads"] == 2
    bad = _imu(_Port([_good()[:-3], _good()]))
    assert bad.timed(lambda: 1.0) is None
    assert bad.timed(lambda: 2.0)[3] == 2.0


def test_the_emulated_board_answers_ping_read_and_its_share_of_a_sync_read():
    emu = DynamixelEmulator(ids=(1, 2), imu_id=200)
    pings = emu.feed(dx.ping(dx.BROADCAST))
    assert pings.count(dx.HEADER) == 3
    assert dx.parse_status(dx.ping(200) and emu.feed(dx.ping(200)))[2] == struct.pack("<HB", 0x7400, 2)
    r = dx.parse_status(emu.feed(opencr.request()))
    assert r[:2] == (200, 0) and opencr.decode(r[2])[0] == (0.0, 0.0, 1.0)   # no body: level
    replies = emu.feed(dx.sync_read(opencr.GYRO_X, opencr.BLOCK, [1, 200]))
    assert replies.count(dx.HEADER) == 2 and dx.parse_status(replies[dx.parse_status(replies)[3]:])[0] == 200
    assert dx.parse_status(emu.feed(dx.read(200, 60, 2)))[1] == 0x05          # past its table


class _NoNoise:
    def normal(self, mu, sigma, n):
        return np.zeros(n)


def test_the_emulator_serves_the_twins_tilt_through_the_bytes_in_wire_time():
    """The twin tipped 20 deg in roll and -12 deg in pitch (its IMU noise off) at power-up: the
    board does not answer while its firmware calibrates the gyro (the read waits out the
    port's timeout on the twin's clock, after its request's bytes); held there (the body's
    state put back before each step) until it answers, the tilt read through the driver's
    bytes has the gyro at rest reading 0 (calibrated at power-up)."""
    pytest.importorskip("mujoco")
    import mujoco
    from device.servo.drivers import open_driver
    from host.physics.simport import SimPort
    from host.physics.twin import Twin
    twin = Twin("op3-dynamixel", seed=0)
    twin._imu_rng = _NoNoise()
    q = np.zeros(4)
    # q = q_roll(20 deg) * q_pitch(-12 deg)
    qr = np.array([math.cos(math.radians(10)), math.sin(math.radians(10)), 0, 0])
    qp = np.array([math.cos(math.radians(-6)), 0, math.sin(math.radians(-6)), 0])
    mujoco.mju_mulQuat(q, qr, qp)
    twin.data.qpos[3:7] = q
    twin.data.qvel[:] = 0
    mujoco.mj_forward(twin.model, twin.data)
    pose = twin.data.qpos.copy()
    true_up = twin.data.xmat[twin.torso_id].reshape(3, 3)[2, :].copy()
    emu = DynamixelEmulator(ids=twin.ids, clock=twin.clock, body=twin, imu_id=200)
    port = SimPort(emu, twin, 1000000, opencr.RETURN_DELAY_S)
    imu = opencr.OpenCRImu(open_driver("dynamixel", port, clock=port.clock))

    def hold(tw):
        # (after every step, the board's sample taken: the pose put back for the next one,
        # through the port's waits too)
        tw.data.qpos[:] = pose
        tw.data.qvel[:] = 0
    twin.attach_sensor(hold)
    assert imu.sample() is None and imu.stats["timeouts"] == 1
    assert port.bus_t_s == pytest.approx(14 * 10 / 1e6, abs=1e-12)   # (the request: no reply)
    # the silent board cost the read the SDK's packet timeout (27 bytes at 1 Mbaud + 2 x 16 ms
    # + 2 ms) after the request's bytes, on the twin's clock: the body moved on meanwhile
    wait_s = 14 * 10 / 1e6 + dx.packet_timeout_s(27, 1e6)
    assert port.clock() == pytest.approx(wait_s, abs=1e-12) and wait_s == pytest.approx(0.03441)
    assert twin.time_s == pytest.approx(round(wait_s / twin.dt_s) * twin.dt_s)
    # (answering, but tipped 20 deg: not a robot standing at home, no standing reference)
    assert not imu.wait_ready(twin.advance, timeout_s=4.0)
    assert imu.stats["stand_refused"] >= 1 and imu.acc_off is None
    up, rate, acc = imu.sample()
    # (posed in the air the body falls within each held step: its accelerometer reads its
    # offsets more than gravity, so the tilt is not checked here; test_opencr_firmware_imu.py)
    assert np.abs(rate).max() == 0.0                       # at rest: inside the dead band
    assert true_up[2] < 0.95


def test_the_op3_frame_with_the_imu_read_fits_its_line():
    from device.servo.linebudget import line_budget
    from device.servo.robot import load_robot
    op3 = load_robot("op3-dynamixel")
    b = line_budget(op3)
    # 114 bytes of sync write + 41 of read at 1 Mbaud, 0.5 ms return delay, in 80 % of 10 ms
    assert (b["bytes"], b["imu_bytes"], b["imu_every"]) == (114, 41, 1)
    assert b["imu_ms"] == pytest.approx(0.91)
    assert line_budget(op3, fps=240)["imu_every"] == 1
    assert line_budget(op3, fps=480)["imu_every"] == 2       # 1.14 + 0.91 > 1.67 ms: every 2nd
    assert "imu_bytes" not in line_budget(load_robot("so101-feetech"))


def test_a_description_names_a_known_board_on_a_free_id():
    from device.servo.robot import Robot, load_robot
    from protocol.errors import FormatError
    raw = dict(load_robot("op3-dynamixel").raw)
    for bad in ({"board": "bno055"}, {"board": "opencr", "id": 5}, "opencr"):
        with pytest.raises(FormatError, match="imu"):
            Robot(dict(raw, imu=bad))
    assert Robot(dict(raw, imu={"board": "opencr"})).imu == {"board": "opencr", "id": 200}


CLIP = os.path.join(REPO, "host", "data", "131_03_short.bvh")


@pytest.mark.parametrize("robot", ["khr17-maestro", "so101-feetech"])
def test_play_imu_feedback_on_a_robot_without_an_imu_is_one_line(robot, capsys):
    from host.cli import main
    assert main(["play", CLIP, "--port", "loop://", "--robot", robot, "--imu-feedback", "--no-progress"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1
    assert "--imu-feedback: robot %s has no known IMU" % robot in cap.err


def test_play_imu_feedback_without_a_balanced_plan_is_one_line(capsys):
    from host.cli import main
    assert main(["play", CLIP, "--port", "loop://", "--robot", "op3-dynamixel", "--imu-feedback",
                 "--no-balance", "--no-progress"]) == 2
    assert "--imu-feedback needs a person's motion retargeted with balance (--no-balance)" in capsys.readouterr().err


def test_play_imu_feedback_reads_the_board_on_the_bus_every_frame(tmp_path, capsys):
    """`motionstaff play --imu-feedback` on an OP3 bus (the emulator behind a pty, with its
    OpenCR board, no body: level and still): every frame sent read the board once, none
    missed."""
    import json
    from device.servo.emulate.pty import PtyServer
    from host.cli import main
    from host.formats import read_motion, write_motion
    from host.staff import Staff
    full = read_motion(CLIP)
    clip = Staff(full.values[:, :12], full.rows, fps=full.fps, bits=full.bits, skeleton=full.skeleton,
                 meta=full.meta)
    src = tmp_path / "clip.bvh"
    write_motion(str(src), clip)
    emu = DynamixelEmulator(ids=range(1, 21), imu_id=200)
    with PtyServer(emu) as srv:
        assert main(["play", str(src), "--port", srv.path, "--robot", "op3-dynamixel", "--imu-feedback",
                     "--speed", "2", "--json", "--no-progress"]) == 0
    rep = json.loads(capsys.readouterr().out)
    fb = rep["feedback"]
    assert fb["imu"] == "bus" and fb["imu_every"] == 1
    # every frame read it once: ok or missed (a reply the pty's wall-clock pacing lost: a few
    # under load, on main too); STAND_READS + 1 more ok: the standing reference before the
    # first, after the one read before stand_by found the robot at home (the emulator's servos
    # are there: its first command)
    before = opencr.STAND_READS + 1
    assert fb["frames"] == rep["frames"] == fb["imu_reads"]["ok"] - before + fb["imu_missed"]
    assert fb["imu_missed"] <= fb["frames"] // 10
    assert emu.boards[200].reads == fb["imu_reads"]["reads"]
    # each frame's good read went through the host's tilt filter of the board's gyro and acc,
    # not its Madgwick (the standing reference's reads before the first frame did not)
    assert fb["tilt"]["updates"] == fb["imu_reads"]["ok"] - before and fb["tilt"]["bad"] == 0


def test_the_vendor_sdk_reads_the_emulated_board(dynamixel_sdk_patient):
    """dynamixel-sdk (ROBOTIS' own client) pings the emulated OpenCR and reads its IMU block
    through a pty: model 0x7400, a level board."""
    sdk = dynamixel_sdk_patient
    from device.servo.emulate.pty import PtyServer
    with PtyServer(DynamixelEmulator(ids=(1,), imu_id=200)) as srv:
        port = sdk.PortHandler(srv.path)
        assert port.openPort() and port.setBaudRate(1000000)
        ph = sdk.PacketHandler(2.0)
        try:
            assert ph.ping(port, 200) == (0x7400, 0, 0)
            data, res, err = ph.readTxRx(port, 200, opencr.GYRO_X, opencr.BLOCK)
        finally:
            port.closePort()
    assert (res, err) == (0, 0)
    assert opencr.decode(bytes(data)) == ((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
