"""Drivers against the emulators: over a real pseudo-terminal (serial) or the simulated I2C bus."""

import os
import struct

import pytest
import serial

from device.servo import dynamixel as dx, feetech as ft, lx16a as lx, maestro as ma
from device.servo.drivers import open_driver, CONTROLLERS, driver_class
from device.servo.emulate import make_emulator
from device.servo.emulate.pty import PtyServer
from device.servo.emulate.pca9685 import SimPCA9685Bus
from device.servo.pca9685 import PCA9685

SERIAL = ["maestro", "ssc32", "lx16a", "dynamixel", "feetech", "feetech-scs", "native"]


@pytest.fixture
def served(request):
    name = request.param
    emu = make_emulator(name)
    srv = PtyServer(emu).start()
    drv = open_driver(name, srv.path)
    yield name, emu, drv, srv
    drv.close()
    srv.stop()


def _pos(name, i):
    # (a Maestro as it ships clamps to 992-2000 us = 3968-8000 qus)
    return {"lx16a": 100 * i, "feetech-scs": 300 + 10 * i, "maestro": 4000 + 100 * i}.get(name, 1000 + 100 * i)


@pytest.mark.parametrize("served", SERIAL, indirect=True)
def test_driver_to_emulator_over_pty(served):
    name, emu, drv, srv = served
    servos = [(i, {"min": 500, "max": 2500}) for i in range(1, 7)]
    drv.start(servos)
    want = dict((i, _pos(name, i)) for i in range(1, 7))
    for k in range(5):
        drv.send_positions(sorted(want.items()))
    assert emu.wait_for(lambda e: len([r for r in e.timeline if r[1] == 6]) == 5, 5.0), emu.timeline
    assert all(emu.positions.get(i) == v for i, v in want.items()), emu.positions
    assert emu.errors == 0
    assert drv.stats["frames"] == 5 and drv.stats["bytes"] > 0
    read = getattr(drv, "read_position", None) or getattr(drv, "get_position", None)
    if read is not None:
        assert read(3) == want[3]
    t = [row for row in emu.timeline if row[1] == 3]
    assert len(t) == 5 and all(r[2] == want[3] for r in t)
    assert drv.torque_off([i for i, _ in servos])


def test_every_controller_has_an_emulator():
    from device.servo.emulate import EMULATORS
    assert set(CONTROLLERS) <= set(EMULATORS)
    with pytest.raises(ValueError, match="known"):
        driver_class("nope")
    with pytest.raises(ValueError, match="known"):
        make_emulator("nope")


def test_maestro_emulator_details():
    emu = make_emulator("maestro", crc=True, home={0: 0})
    assert emu.feed(ma.set_target(0, 6000, crc=True)) == b""
    assert emu.positions[0] == 6000
    emu.feed(ma.set_target(0, 7000))                # no CRC byte: the next command byte is eaten
    emu.feed(ma.set_target(1, 7000, crc=False) + b"\x00")
    assert emu.feed(ma.get_errors(crc=True)) != b"\x00\x00"
    emu2 = make_emulator("maestro", device=12)
    emu2.feed(ma.set_target(2, 5000, device=13))    # another device's packet is ignored
    emu2.feed(ma.set_multiple_targets(0, [4000, 6000, 8000], device=12))
    assert emu2.positions == {0: 4000, 1: 6000, 2: 8000}
    assert emu2.feed(ma.get_position(2)) == struct.pack("<H", 8000)
    assert emu2.feed(ma.get_errors()) == b"\x00\x00"


def test_maestro_daisy_chain_splits_channels_across_boards():
    a, b = make_emulator("maestro", device=12), make_emulator("maestro", device=13)
    m = ma.Maestro(None, boards=[12, 13])
    cmds = [(c, 4000 + 10 * c) for c in range(48)]
    wire = m.encode_positions(cmds)                 # one line: both boards hear every byte
    a.feed(wire)
    b.feed(wire)
    assert a.positions == {c: 4000 + 10 * c for c in range(24)}
    assert b.positions == {c - 24: 4000 + 10 * c for c in range(24, 48)}
    # a run of consecutive channels never crosses a board: 23 and 24 are two packets
    assert m.encode_positions([(23, 6000), (24, 6000)]) == (
        ma.set_target(23, 6000, device=12) + ma.set_target(0, 6000, device=13))
    with pytest.raises(ValueError, match="channel 48"):
        m.encode_positions([(48, 6000)])
    with pytest.raises(ValueError, match="channel 24"):
        ma.Maestro(None).encode_positions([(24, 6000)])
    with pytest.raises(ValueError, match="boards"):
        ma.Maestro(None, boards=[200])


class _SharedLine:
    """One TTL line with several emulated boards on it: each hears every byte; replies queue."""

    def __init__(self, *emus):
        self.emus, self.rx = emus, b""

    def write(self, data):
        for e in self.emus:
            self.rx += e.feed(data) or b""
        return len(data)

    def read(self, n):
        out, self.rx = self.rx[:n], self.rx[n:]
        return out


def test_maestro_daisy_chain_asks_every_board():
    a, b = make_emulator("maestro", device=12), make_emulator("maestro", device=13)
    m = ma.Maestro(_SharedLine(a, b), boards=[12, 13])
    assert m.get_errors() == 0
    m.send_positions([(3, 5000), (30, 7000)])
    assert m.get_position(30) == 7000 and m.get_position(3) == 5000
    assert m.get_moving_state() is False
    m.go_home()


def test_a_port_that_never_drains_is_an_oserror():
    import queue

    class Stuck:
        def write(self, data):
            raise queue.Full()

    drv = ma.Maestro(Stuck())
    with pytest.raises(OSError, match="write timed out"):
        drv.send_positions([(0, 6000)])
    assert drv.stats["errors"] == 1


def test_maestro_serial_timeout_goes_home():
    t = [0.0]
    emu = make_emulator("maestro", serial_timeout_s=0.5, home={0: 6000, 1: 0}, clock=lambda: t[0])
    emu.feed(ma.set_multiple_targets(0, [7000, 7000]))
    t[0] = 0.4
    emu.tick()
    assert emu.positions == {0: 7000, 1: 7000}
    t[0] = 0.6
    emu.tick()
    assert emu.positions == {0: 6000, 1: 0}
    assert struct.unpack("<H", emu.feed(ma.get_errors()))[0] & (1 << 5)


def test_ssc32_emulator_parses_like_the_board():
    emu = make_emulator("ssc32")
    emu.feed(b"#5 P1600 #10 P750 T2500 \r")             # spaces ignored
    assert emu.positions == {5: 1600, 10: 750}
    emu.feed(b"#5P1500T1000\x1b")                       # ESC cancels the line
    emu.feed(b"#3H#4L\r")                               # digital outputs: no servo change
    assert emu.positions == {5: 1600, 10: 750}
    emu.feed(b"#5P1500\n")                              # LF alone does not execute
    assert emu.positions[5] == 1600
    assert emu.feed(b"\rQP5 QP10\r") == bytes((150, 75))
    assert emu.feed(b"Q\r") == b"."


def test_lx16a_group_move_and_echo():
    emu = make_emulator("lx16a", ids=(1, 2, 3))
    emu.feed(lx.group_move({1: 100, 2: 500, 3: 900}, 800))
    assert emu.positions == {}
    emu.feed(lx.move_start())
    assert emu.positions == {1: 100, 2: 500, 3: 900}
    assert emu.feed(lx.read(1, lx.POS_READ)) == lx.packet(1, lx.POS_READ, struct.pack("<h", 100))
    assert emu.feed(lx.read(lx.BROADCAST, lx.POS_READ)) == b""       # no reply to broadcast


def test_lx16a_driver_discards_echo():
    emu = make_emulator("lx16a", ids=(1, 2), echo=True)
    with PtyServer(emu) as srv:
        drv = open_driver("lx16a", srv.path, echo=True)
        drv.send_positions([(1, 500), (2, 600)])
        assert drv.read_position(2) == 600
        assert drv.stats["errors"] == 0
        drv.close()


def test_dynamixel_watchdog_and_torque():
    t = [0.0]
    emu = make_emulator("dynamixel", ids=(1, 2), clock=lambda: t[0])
    emu.feed(dx.write(1, dx.GOAL_POSITION, 4, 100))          # torque off: goal ignored
    assert 1 not in emu.positions or emu.positions[1] != 100
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, {1: 1, 2: 1}) + dx.sync_write(dx.BUS_WATCHDOG, 1, {1: 5, 2: 5}))
    emu.feed(dx.sync_write(dx.GOAL_POSITION, 4, {1: 1000, 2: 3000}))
    assert emu.positions == {1: 1000, 2: 3000}
    t[0] = 0.09
    emu.tick()
    assert not emu.watchdog_tripped
    t[0] = 0.2
    emu.tick()
    assert emu.watchdog_tripped == {1, 2}
    assert emu.tables[1][dx.BUS_WATCHDOG] == 0xFF              # 98 reads -1 (Bus Watchdog Error)
    emu.feed(dx.sync_write(dx.GOAL_POSITION, 4, {1: 2000}))   # Goal values read-only
    assert emu.positions[1] == 1000
    # a unicast goal write is answered with Data Range Error (e-manual, Bus Watchdog (98))
    rep = emu.feed(dx.write(1, dx.GOAL_POSITION, 4, 2000))
    assert dx.parse_status(rep)[1] == 0x04 and emu.positions[1] == 1000
    # arming it again (non-zero) does not clear the error: only 0 does
    rep = emu.feed(dx.write(1, dx.BUS_WATCHDOG, 1, 5))
    assert dx.parse_status(rep)[1] == 0x04 and emu.tables[1][dx.BUS_WATCHDOG] == 0xFF
    emu.feed(dx.sync_write(dx.BUS_WATCHDOG, 1, {1: 5}) + dx.sync_write(dx.GOAL_POSITION, 4, {1: 2000}))
    assert emu.positions[1] == 1000
    emu.feed(dx.sync_write(dx.BUS_WATCHDOG, 1, {1: 0}) + dx.sync_write(dx.BUS_WATCHDOG, 1, {1: 5})
             + dx.sync_write(dx.GOAL_POSITION, 4, {1: 2000}))
    assert emu.positions[1] == 2000 and emu.tables[1][dx.BUS_WATCHDOG] == 5
    assert emu.watchdog_tripped == {2}
    # any packet on the bus (here a ping of another id) keeps an armed watchdog fed
    for k in range(10):
        t[0] += 0.05
        emu.feed(dx.ping(7))
        emu.tick()
    assert emu.watchdog_tripped == {2}
    t[0] += 0.11
    emu.feed(dx.ping(7))                                      # the silence before it tripped id 1
    assert emu.watchdog_tripped == {1, 2}
    emu.feed(dx.write(dx.BROADCAST, dx.TORQUE_ENABLE, 1, 0))
    assert emu.positions == {1: None, 2: None}
    r = emu.feed(dx.sync_read(dx.PRESENT_POSITION, 4, [1, 2]))
    first = dx.parse_status(r)
    assert first[0] == 1 and struct.unpack("<i", first[2])[0] == 2000
    assert dx.parse_status(r[first[3]:])[0] == 2


def test_dynamixel_stuffed_value_round_trips():
    emu = make_emulator("dynamixel", ids=(1,))
    # extended position mode (4): no Min/Max Position Limit, so the stuffed value is a goal
    emu.feed(dx.write(1, 11, 1, 4))
    emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1) + dx.write(1, dx.GOAL_POSITION, 4, 0x00FDFFFF))
    assert emu.positions[1] == 0x00FDFFFF


def test_feetech_sign_magnitude_and_reg_write():
    emu = make_emulator("feetech", ids=(1, 2))
    emu.feed(ft.write(1, ft.GOAL_POSITION, ft.word(-100)))
    assert emu.positions[1] == -100
    emu.feed(ft.reg_write(2, 41, ft.pos_ex(1024, 1000, 20)))
    assert 2 not in emu.positions
    emu.feed(ft.action())
    assert emu.positions[2] == 1024
    r = ft.parse_status(emu.feed(ft.read(1, 62, 2)))
    assert r[2] == bytes((120, 35))
    scs = make_emulator("feetech-scs", ids=(1,))
    scs.feed(ft.write(1, 42, ft.scs_pos(500, 0, 1000)))
    assert scs.positions[1] == 500


def test_pca9685_register_model():
    bus = SimPCA9685Bus()
    pca = PCA9685(bus, osc_hz=25000000, sleep_us=lambda us: None)
    pca.init(50)
    assert pca.read_register(0xFE) == 121 and pca.read_register(0x00) == 0xA0
    pca.send_positions([(0, 1500), (1, 1000), (2, 2000), (5, 0)])
    assert abs(bus.pulse_us(0x40, 0) - 1500) < 5 and abs(bus.pulse_us(0x40, 1) - 1000) < 5
    assert bus.pulse_us(0x40, 5) is None
    assert len([x for x in bus.log if "R40" not in x]) == 4 + 2   # init (4) + run 0..2 + channel 5
    bus.writeto_mem(0x40, 0x00, b"\x00")           # wake without AI
    bus.writeto_mem(0x40, 0xFE, b"\x20")           # PRE_SCALE ignored while awake
    assert pca.read_register(0xFE) == 121
    pca.init(50)                                   # AI back on
    pca.all_off()
    assert all(bus.pulse_us(0x40, ch) is None for ch in range(16))
    with pytest.raises(OSError):
        PCA9685(bus, address=0x41).init(50)


def test_pca9685_two_boards():
    bus = SimPCA9685Bus(addresses=(0x40, 0x41))
    pca = PCA9685(bus, sleep_us=lambda us: None)
    pca.start([(0, None), (20, None)])
    pca.send_positions([(14, 1500), (15, 1500), (16, 1500), (20, 1200), (999, 1500)])
    assert abs(bus.pulse_us(0x41, 0) - 1500) < 5 and abs(bus.pulse_us(0x41, 4) - 1200) < 5
    assert abs(bus.pulse_us(0x40, 15) - 1500) < 5
    pca.all_off()
    assert bus.pulse_us(0x41, 0) is None and bus.pulse_us(0x40, 14) is None


def test_pca9685_oscillator_calibration():
    fast = SimPCA9685Bus(osc_hz=26500000)
    pca = PCA9685(fast, osc_hz=26500000, sleep_us=lambda us: None)
    pca.init(50)
    pca.send_positions([(0, 1500)])
    assert abs(fast.pulse_us(0x40, 0) - 1500) < 6
    wrong = PCA9685(SimPCA9685Bus(osc_hz=26500000), osc_hz=25000000, sleep_us=lambda us: None)
    wrong.init(50)
    wrong.send_positions([(0, 1500)])
    assert abs(wrong.bus.pulse_us(0x40, 0) - 1500) > 40    # uncalibrated boards are off by %


def test_emulator_log_files(tmp_path):
    emu = make_emulator("ssc32")
    emu.feed(b"#1P1600#2P1400\r")
    emu.write_log(str(tmp_path / "t.csv"))
    emu.write_log(str(tmp_path / "t.json"))
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0] == "t_s,servo,units,deg" and len(lines) == 3
    assert lines[1].split(",")[1:] == ["1", "1600", "9.0000"]
    import json
    assert json.loads((tmp_path / "t.json").read_text())["timeline"][1]["units"] == 1400


def test_maestro_command_byte_aborts_a_partial_packet():
    emu = make_emulator("maestro")
    emu.feed(bytes.fromhex("84 00 70") + bytes.fromhex("84 01 70 2E"))   # the first lost a byte
    assert emu.positions == {1: 6000} and emu.errors == 1
    emu.feed(bytes.fromhex("9F 03 00 20 1F 70") + bytes.fromhex("9F 02 03 00 00 70 2E"))
    assert emu.positions == {1: 6000, 3: 0, 4: 6000} and emu.errors == 2
    emu.feed(bytes.fromhex("9F 02 00 20"))
    emu.feed(bytes.fromhex("1F 70 2E"))                                    # split across reads
    assert emu.positions[0] == 4000 and emu.positions[1] == 6000


def test_maestro_bad_board_options_are_clear_errors():
    """QA: boards=12 (not a list) raised TypeError, boards=["x"] int()'s message, channels=0 a
    ZeroDivisionError, an unknown controller option a TypeError: all tracebacks in `play`."""
    from device.servo.drivers import open_driver
    for bad in (12, ["x"], [], [200], [True], [12.5]):
        with pytest.raises(ValueError, match="maestro boards"):
            ma.Maestro(None, boards=bad)
    for bad in (0, -1, 2.5, None):
        with pytest.raises(ValueError, match="maestro channels"):
            ma.Maestro(None, boards=[12], channels=bad)
    with pytest.raises(ValueError, match="unknown controller option 'bards'.*boards"):
        open_driver("maestro", "loop://", bards=[12])
    assert open_driver("maestro", "loop://", boards=[12, 13]).boards == [12, 13]
    assert ma.Maestro(None, boards=(12, 13), channels=12).encode_positions([(12, 6000)]) == \
        ma.set_target(0, 6000, device=13)


def test_maestro_clamps_targets_to_its_channel_limits():
    """A Maestro as it ships cuts targets to 992-2000 us; one set up for the robot passes them."""
    from device.servo.maestro import Maestro, maestro_limits
    from device.servo.robot import load_robot
    robot = load_robot("khr17-maestro")
    drv = Maestro(None)                              # its bytes only (encode_positions)
    wide = [(s.id, s.min) for s in robot.servos if s.min < 3968]
    assert wide                                      # the KHR's servos go below 992 us
    shipped = make_emulator("maestro")
    shipped.feed(drv.encode_positions(wide))
    assert all(shipped.positions[c] == 3968 for c, _ in wide) and shipped.clamped == len(wide)
    shipped.feed(bytes((0x84, 0, 0, 0)))             # 0 is "off", never clamped
    assert shipped.positions[0] == 0
    set_up = make_emulator("maestro", limits_qus=maestro_limits(robot.servos))
    set_up.feed(drv.encode_positions([(s.id, s.max) for s in robot.servos]))
    assert all(set_up.positions[s.id] == s.max for s in robot.servos) and set_up.clamped == 0
    set_up.feed(bytes((0x84, 1, 0x7F, 0x7F)))        # past the robot's own max: cut to it
    one = [s for s in robot.servos if s.id == 1][0]
    assert set_up.positions[1] == one.max and set_up.clamped == 1
