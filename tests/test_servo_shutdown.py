"""A Dynamixel that shuts itself down (overload, overheating: Hardware Error Status) mid-play:
the twin keeps its torque off until a REBOOT or a power cycle, the player says so once and
plays the others on; it is not taken for a power cut (before: "power looks cut" and "answer
again" every probe, the whole robot stopped and re-armed over and over).

    pytest tests/test_servo_shutdown.py

The OP3's XM430 twins behind the real driver over SimPort, the MuJoCo twin, the player's clock
the twin's; seeded, no sleeps.
"""

import struct

import pytest

from device.servo import dynamixel as dx
from device.servo.emulate.dynamixel import ACCESS_ERROR, ALERT, HARDWARE_ERROR_STATUS, DynamixelEmulator

pytest.importorskip("mujoco")

from tests.test_servo_power_cut import _check_limits_and_velocity, _rig, _stream  # noqa: E402


def test_the_twin_keeps_a_shut_down_servo_off_until_a_reboot():
    emu = DynamixelEmulator(ids=(1, 2))
    emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1))
    emu.hardware_error(1, 0x20)
    t = emu.tables[1]
    assert t[HARDWARE_ERROR_STATUS] == 0x20 and t[dx.TORQUE_ENABLE] == 0
    # torque on refused, the Alert bit on every status it sends
    sid, err, _, _ = dx.parse_status(emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1)))
    assert sid == 1 and err == ALERT | ACCESS_ERROR and t[dx.TORQUE_ENABLE] == 0
    _, err, params, _ = dx.parse_status(emu.feed(dx.read(1, HARDWARE_ERROR_STATUS, 1)))
    assert err == ALERT and params == b"\x20"
    # the other servo is untouched
    _, err, _, _ = dx.parse_status(emu.feed(dx.write(2, dx.TORQUE_ENABLE, 1, 1)))
    assert err == 0 and emu.tables[2][dx.TORQUE_ENABLE] == 1
    # REBOOT: the status, then deaf for BOOT_S, then RAM at its initial values, the error gone
    now = [0.0]
    emu.clock = lambda: now[0]
    assert dx.parse_status(emu.feed(dx.reboot(1)))[1] == ALERT
    assert emu.feed(dx.read(1, dx.TORQUE_ENABLE, 1)) == b""
    now[0] = emu.BOOT_S + 1e-6
    _, err, params, _ = dx.parse_status(emu.feed(dx.read(1, dx.TORQUE_ENABLE, 7)))
    assert err == 0 and params[0] == 0 and params[HARDWARE_ERROR_STATUS - dx.TORQUE_ENABLE] == 0
    assert dx.parse_status(emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1)))[1] == 0


def test_a_servo_that_shuts_down_mid_play_is_said_once_and_the_rest_play_on():
    robot, tw, emu, p, sends, notes = _rig("op3-dynamixel")
    p.start()
    period = 1.0 / robot.rate_hz
    knee = [s for s in robot.servos if s.name == "r_knee"][0]
    shut_at = 1.0
    sent_at_shut = None
    while tw.clock() < 3.0:
        tw.advance(period)
        if sent_at_shut is None and tw.clock() >= shut_at:
            emu.hardware_error(knee.id, 0x20)
            sent_at_shut = p.stats["sent"]
        p.send_frame(_stream(robot, tw.clock()))
    # found (its torque off, its Hardware Error Status read), said once, not a power cut
    assert p.stats["shutdowns"] == 1 and p.stats["servos_shut_down"] == 1
    assert p.stats["power_lost"] == 0 and p.stats["power_restored"] == 0 and not p.power_lost
    said = [n for n in notes if "shut itself down" in n]
    assert len(said) == 1 and "servo %d" % knee.id in said[0] and "overload" in said[0]
    assert not any("power looks cut" in n for n in notes)
    # the others played on: a command every frame after it, their torque still on
    # (as many a second as before it: the bus's own time, the probes included, paces both)
    assert p.stats["unpowered"] == 0
    assert (p.stats["sent"] - sent_at_shut) / (3.0 - shut_at) >= 0.95 * sent_at_shut / shut_at
    for s in robot.servos:
        assert emu.tables[s.id][dx.TORQUE_ENABLE] == (0 if s.id == knee.id else 1), s.name
    _check_limits_and_velocity(robot, sends)


def test_a_shut_down_servo_rebooted_is_set_up_again_ramped_from_where_it_fell():
    robot, tw, emu, p, sends, notes = _rig("op3-dynamixel")
    p.start()
    period = 1.0 / robot.rate_hz
    knee = [s for s in robot.servos if s.name == "r_knee"][0]
    k = robot.servos.index(knee)
    while tw.clock() < 1.0:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    emu.hardware_error(knee.id, 0x04)
    while tw.clock() < 1.5:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["shutdowns"] == 1
    # the user reboots it (its own REBOOT instruction, as the vendor's tools send it)
    with emu.lock:
        emu._run(knee.id, dx.REBOOT, b"")
    fell_deg = knee.to_deg(struct.unpack_from("<i", emu.tables[knee.id], dx.PRESENT_POSITION)[0])
    first = None
    while tw.clock() < 5.0:
        tw.advance(period)
        n = len(sends)
        was = p.stats["power_restored"]
        p.send_frame(_stream(robot, tw.clock()))
        if was == 0 and p.stats["power_restored"] == 1 and first is None:
            first = knee.to_deg(sends[n][1][k][1])
    # cleared: its torque off then is a loss of its settings, and the set-up turns it on again
    assert p.stats["power_restored"] == 1 and p.stats["servos_shut_down"] == 0
    assert emu.tables[knee.id][dx.TORQUE_ENABLE] == 1
    assert first is not None and abs(first - fell_deg) < 2.0     # from where it lay, ramped
    _check_limits_and_velocity(robot, sends, fresh_at=None if first is None else 1.5)


def test_a_servo_silent_next_to_a_shut_down_one_is_not_taken_for_a_power_cut():
    """A servo that stops answering (its lead off) while the next one has shut itself down:
    the shut-down one's torque off says nothing of the power (before: asked as the 'other'
    servo, its torque off was a power cut: the whole robot stopped and set up again, the
    shutdown said twice); its Hardware Error Status still set says the power is there."""
    robot, tw, emu, p, sends, notes = _rig("op3-dynamixel", body=False)
    p.start()
    period = 1.0 / robot.rate_hz
    lead_off, shut = robot.servos[0].id, robot.servos[1].id
    emu.hardware_error(shut, 0x20)
    while tw.clock() < 1.0:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["shutdowns"] == 1 and p.stats["power_lost"] == 0
    table = emu.tables.pop(lead_off)             # its lead comes off
    while tw.clock() < 2.5:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["power_lost"] == 0 and p.stats["power_restored"] == 0 and not p.power_lost
    assert p.stats["servos_silent"] == 1 and p.stats["shutdowns"] == 1
    assert not any("power looks cut" in n for n in notes)
    emu.tables[lead_off] = table
    _check_limits_and_velocity(robot, sends)


def test_one_of_two_shut_down_servos_rebooted_the_other_is_not_said_again():
    """Two servos shut down, one rebooted (set up again through the power-loss path): the
    other, still shut down, is not found and said a second time."""
    robot, tw, emu, p, sends, notes = _rig("op3-dynamixel", body=False)
    p.start()
    period = 1.0 / robot.rate_hz
    a, b = robot.servos[2].id, robot.servos[5].id
    while tw.clock() < 0.5:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    emu.hardware_error(a, 0x20)
    emu.hardware_error(b, 0x04)
    while tw.clock() < 0.5 + len(robot.servos) * p.probe_s + 0.5:   # every servo probed
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["shutdowns"] == 2 and p.stats["servos_shut_down"] == 2
    with emu.lock:
        emu._run(a, dx.REBOOT, b"")
    rebooted_at = tw.clock()
    while tw.clock() < rebooted_at + 3 * len(robot.servos) * p.probe_s:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["power_restored"] == 1 and not p.power_lost
    assert emu.tables[a][dx.TORQUE_ENABLE] == 1 and emu.tables[b][dx.TORQUE_ENABLE] == 0
    assert p.stats["shutdowns"] == 2 and p.stats["servos_shut_down"] == 1
    assert len([n for n in notes if "servo %d shut itself down" % b in n]) == 1
    _check_limits_and_velocity(robot, sends, fresh_at=rebooted_at)


def test_a_power_cut_while_a_servo_is_shut_down_is_found_and_the_power_cycle_clears_it():
    """A real power cut while a servo is shut down: found (the others do not answer), and
    the power back (its hardware error cleared by the cycle) every servo is on again, the
    shut-down one left out of the count at its next probe."""
    robot, tw, emu, p, sends, notes = _rig("op3-dynamixel", body=False)
    p.start()
    period = 1.0 / robot.rate_hz
    shut = robot.servos[1].id
    emu.hardware_error(shut, 0x20)
    while tw.clock() < 1.0:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["shutdowns"] == 1
    emu.schedule_power_cut(1.2, 1.5)
    while tw.clock() < 1.5 + 2 * len(robot.servos) * p.probe_s:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["power_lost"] == 1 and p.stats["power_restored"] == 1 and not p.power_lost
    assert 1.2 <= p.power_lost_at <= 1.2 + 2 * p.probe_s + 0.1
    assert p.stats["servos_shut_down"] == 0 and p.stats["shutdowns"] == 1
    assert all(emu.tables[s.id][dx.TORQUE_ENABLE] == 1 for s in robot.servos)
    _check_limits_and_velocity(robot, sends, fresh_at=1.2)


def test_a_lost_reply_to_a_shut_down_servo_s_error_read_is_not_a_power_cut():
    """The Hardware Error Status read of a servo shut down loses its reply once (a noisy
    line) and its torque then reads off: it answers, so it is powered, still shut down (before:
    its torque off taken for a power cut, the whole robot stopped and set up again)."""
    robot, tw, emu, p, sends, notes = _rig("op3-dynamixel", body=False)
    p.start()
    period = 1.0 / robot.rate_hz
    emu.hardware_error(robot.servos[1].id, 0x20)
    while tw.clock() < 1.0:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["shutdowns"] == 1
    real, lost = p._hw, []

    def lose_once(sid):
        if not lost:
            lost.append(sid)
            return None
        return real(sid)
    p._hw = lose_once
    while tw.clock() < 1.0 + 2 * len(robot.servos) * p.probe_s:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert lost == [robot.servos[1].id]
    assert p.stats["power_lost"] == 0 and not p.power_lost and p.stats["shutdowns"] == 1
    assert p.stats["servos_shut_down"] == 1
    _check_limits_and_velocity(robot, sends)
