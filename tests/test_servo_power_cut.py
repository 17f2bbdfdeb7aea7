"""The servos' power cut mid-play: the twins enforce what the hardware does, the player finds it,
says so, sends nothing while it lasts, and sets the robot up again from where it lies.

    pytest tests/test_servo_power_cut.py

Dynamixel (XM430) and Feetech (STS3215) twins behind the real drivers over SimPort (the bytes'
wire time on the twin's clock): no reply while off and for BOOT_S after, the RAM at its
power-up values, the joint limp in MuJoCo. Seeded, no sleeps, no wall clock: the player's clock
is the twin's.
"""

import math
import pathlib
import struct

import pytest
from hypothesis import given, settings, strategies as st

from device.servo import dynamixel as dx
from device.servo import feetech as ft
from device.servo.base import packet_timeout_s
from device.servo.drivers import open_driver
from device.servo.emulate import make_emulator
from device.servo.player import Player
from device.servo.robot import load_robot
from host.physics.simport import SimPort


def _rig(name, body=True, absent=()):
    """(robot, twin or a bare clock, emulator, player, sends [(t_s, cmds)], notes); absent:
    servo ids the bus does not have (a lead off, a wrong id)."""
    robot = load_robot(name)
    ctl = robot.controller
    if body:
        from host.physics.twin import Twin
        tw = Twin(name, seed=3)
    else:
        tw = _Clock()
    kw = {"series": "sts"} if ctl == "feetech" else {}
    emu = make_emulator(ctl, ids=[s.id for s in robot.servos if s.id not in absent], clock=tw.clock,
                        body=tw if body else None, **kw)
    port = SimPort(emu, tw, baud=robot.baud)
    drv = open_driver(ctl, port, clock=port.clock, **dict(robot.options))
    sends = []
    real = drv.send_positions

    def send(cmds):
        sends.append((tw.clock(), list(cmds)))
        return real(cmds)
    drv.send_positions = send
    notes = []
    p = Player(robot, drv, row_names=[s.name for s in robot.servos], clock=tw.clock,
               sleep=tw.advance, notify=notes.append)
    return robot, tw, emu, p, sends, notes


class _Clock:
    """A body-less twin's clock for SimPort: time moves only when the bus waits."""
    time_s = 0.0

    def clock(self):
        return self.time_s

    def advance_to(self, t_s):
        self.time_s = max(self.time_s, t_s)

    def advance(self, d_s):
        self.time_s += max(0.0, d_s)


def _stream(robot, t_s):
    """A motion far from where a limp joint falls: every servo swings +-25 deg about home."""
    return [s.home_deg + 25.0 * math.sin(2.0 * math.pi * 0.5 * t_s + k) for k, s in enumerate(robot.servos)]


def _check_limits_and_velocity(robot, sends, vel_of=None, fresh_at=None):
    """Every command inside the servo's limits and, between two commands, within its velocity
    limit on the player's clock (+1 unit: rounding to controller units); vel_of(t) gives a
    tighter limit (deg/s) at times it applies; from fresh_at on (the power back: the servos
    where they fell, checked apart) a fresh start."""
    last = {}
    for t, cmds in sends:
        if fresh_at is not None and t >= fresh_at:
            last, fresh_at = {}, None
        for s, (sid, u) in zip(robot.servos, cmds):
            assert sid == s.id
            assert min(s.min, s.max) <= u <= max(s.min, s.max), (s.name, u)
            if sid in last:
                t0, u0 = last[sid]
                dt = t - t0
                vmax = s.max_vel_dps if vel_of is None else min(s.max_vel_dps, vel_of(t) or s.max_vel_dps)
                assert abs(u - u0) <= vmax * dt * abs(s.units_per_deg) + 1, (s.name, u0, u, dt)
            last[sid] = (t, u)


@pytest.mark.parametrize("name", ["op3-dynamixel", "so101-feetech"])
def test_a_power_cycle_mid_play_is_found_said_and_the_robot_set_up_again_ramped(name):
    robot, tw, emu, p, sends, notes = _rig(name)
    p.start()
    period = 1.0 / robot.rate_hz
    cut_s, back_s = 1.0, 1.6
    emu.schedule_power_cut(cut_s, back_s)
    restored_at = pre_deg = None
    sent_in_cut = None
    while tw.clock() < 4.0 or (p._recovering and tw.clock() < 12.0):
        tw.advance(period)
        before = tw.servo_deg()
        was, n = p.stats["power_restored"], len(sends)
        p.send_frame(_stream(robot, tw.clock()))
        if p.power_lost and sent_in_cut is None:
            sent_in_cut = p.stats["sent"]
        if was == 0 and p.stats["power_restored"] == 1:
            restored_at, pre_deg = sends[n][0], before      # (its first command's time)
    # found within the probe's period and two read timeouts (plus the frame it waits for)
    timeout_s = packet_timeout_s(12, robot.baud)
    assert p.stats["power_lost"] == 1 and p.power_lost_at is not None
    assert cut_s <= p.power_lost_at <= cut_s + p.probe_s + 2 * timeout_s + period + 1e-9
    assert any("power looks cut" in n for n in notes) and any("answer again" in n for n in notes)
    # nothing sent while it was off (a goal to a rebooted STS would snap it on at full speed)
    assert p.stats["unpowered"] > 0
    cmds_in_cut = [t for t, _ in sends if p.power_lost_at <= t < restored_at]
    assert cmds_in_cut == [] and sent_in_cut is not None
    # set up again once it answers (after its boot), torque on, the stream reached again
    assert p.stats["power_restored"] == 1 and not p.power_lost
    assert back_s + emu.BOOT_S <= restored_at <= back_s + emu.BOOT_S + p.probe_s + 0.1
    torque = dx.TORQUE_ENABLE if robot.controller == "dynamixel" else ft.TORQUE_ENABLE
    assert all(emu.tables[s.id][torque] == 1 for s in robot.servos)
    if robot.controller == "dynamixel":
        assert all(emu.tables[s.id][dx.BUS_WATCHDOG] == 10 for s in robot.servos)   # 0.2 s again
    # the first command after: where each joint lay (limp), not the stream's pose
    after = [(t, c) for t, c in sends if t >= restored_at]
    first = after[0][1]
    far = 0
    for s, (sid, u), lay in zip(robot.servos, first, pre_deg):
        stream_deg = _stream(robot, restored_at)[robot.servos.index(s)]
        assert abs(s.to_deg(u) - lay) < 3.0, (s.name, s.to_deg(u), lay)
        far += abs(stream_deg - lay) > 10.0
    assert far >= 1                     # (the stream was elsewhere: a jump would have shown)
    # ramped at ramp.max_vel_dps from there (for the first gap's time at that velocity and
    # RECOVER_EXTRA_S: the stream swings faster than the ramp); limits everywhere
    ramp_end = p._recover_end
    assert not p._recovering and restored_at + 0.5 <= ramp_end < tw.clock()
    ramp = lambda t: robot.ramp_vel_dps if restored_at <= t < ramp_end else None
    _check_limits_and_velocity(robot, sends, ramp, restored_at)


@pytest.mark.parametrize("name", ["op3-dynamixel", "so101-feetech"])
def test_a_power_cut_that_never_ends_the_player_keeps_asking_and_plays_on(name):
    robot, tw, emu, p, sends, notes = _rig(name, body=False)
    emu.schedule_power_cut(0.5)
    fps = robot.rate_hz
    n = int(3.0 * fps)
    values = [[_stream(robot, k / fps)[i] for k in range(n)] for i in range(len(robot.servos))]
    p.start()
    summary = p.play(values, fps)
    assert summary["power_lost"] == 1 and summary["power_restored"] == 0
    assert summary["power_off_at_end"] is True and summary["unpowered"] > 0
    lost_for = tw.clock() - p.power_lost_at
    # asked all along, once a probe period (each one waits its read timeout)
    assert summary["power_probes"] >= int(lost_for / (p.probe_s + 0.05)) - 1
    assert [t for t, _ in sends if t > p.power_lost_at] == []
    assert sum("power looks cut" in x for x in notes) == 1
    # the end of play's failsafe and settle on a dead bus: no error either
    p.failsafe("torque_off")
    p.settle(timeout_s=0.5)


@pytest.mark.parametrize("name", ["op3-dynamixel", "so101-feetech"])
def test_one_servo_silent_alone_is_not_a_power_cut_and_a_cut_then_is_still_found_and_left(name):
    """A servo the bus does not have (its lead off, a wrong id) while the others answer with
    their torque on: said once, played on (before: "power looks cut", nothing sent for good);
    a real cut after is still found, and the robot set up again without that servo."""
    robot, tw, emu, p, sends, notes = _rig(name, body=False, absent=(robot_first_id(name),))
    p.start()
    period = 1.0 / robot.rate_hz
    while tw.clock() < 1.0:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["power_lost"] == 0 and p.stats["unpowered"] == 0
    assert p.stats["sent"] == p.stats["frames"] and p.stats["servos_silent"] == 1
    assert len(notes) == 1 and "not a power cut" in notes[0]
    emu.schedule_power_cut(1.2, 1.5)
    while tw.clock() < 3.5:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["power_lost"] == 1 and p.stats["power_restored"] == 1 and not p.power_lost
    assert 1.2 <= p.power_lost_at <= 1.2 + 2 * p.probe_s + 0.1
    _check_limits_and_velocity(robot, sends)


def robot_first_id(name):
    return load_robot(name).servos[0].id


def test_an_lx16a_unloaded_before_its_first_move_is_not_a_power_cut_and_a_cut_is(tmp_path):
    """An LX-16A's start loads nothing (its first move does): unloaded at the start and after a
    torque-off failsafe is no power cut (before: "reads torque off: power looks cut" at every
    start and every failsafe, the stream held a probe period); a real cut still is."""
    import json
    root = pathlib.Path(__file__).resolve().parent.parent
    d = json.loads((root / "device" / "servo" / "robots" / "so101-feetech.json").read_text())
    d.update(name="arm-lx16a", controller="lx16a", baud=115200, controller_options={})
    for sv in d["servos"]:
        sv.update(neutral=500, units_per_deg=1 / 0.24, min=100, max=900)
    path = tmp_path / "arm-lx16a.json"
    path.write_text(json.dumps(d))
    robot, tw = load_robot(str(path)), _Clock()
    emu = make_emulator("lx16a", ids=[sv.id for sv in robot.servos], clock=tw.clock)
    drv = open_driver("lx16a", SimPort(emu, tw, baud=robot.baud), clock=tw.clock)
    notes = []
    p = Player(robot, drv, row_names=[sv.name for sv in robot.servos], clock=tw.clock,
               sleep=tw.advance, notify=notes.append)
    p.start()
    for k in range(200):
        tw.advance(0.02)
        if 60 <= k < 100:
            p.poll()                    # no frames: the torque-off failsafe, then frames again
            continue
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["failsafes"] == 1 and notes == []
    assert p.stats["power_lost"] == 0 and p.stats["sent"] == p.stats["frames"] == 160
    emu.schedule_power_cut(tw.clock() + 0.2, tw.clock() + 0.6)
    for k in range(100):
        tw.advance(0.02)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["power_lost"] == 1 and p.stats["power_restored"] == 1 and not p.power_lost


def test_an_sts_that_reboots_between_two_probes_and_takes_a_goal_is_still_found():
    """A brownout shorter than the probe's period, a boot quicker than the twin's 0.5 s: the
    goals after the boot turn the STS's torque on again (at its power-up Goal Speed 0, its
    maximum), so Torque Enable alone reads 1 (before: never found, the servos' own speed cap
    gone for good); the Goal Speed start() set, read with it, says it rebooted."""
    robot, tw, emu, p, sends, notes = _rig("so101-feetech", body=False)
    emu.BOOT_S = 0.0
    p.start()
    period = 1.0 / robot.rate_hz
    cut = None
    while tw.clock() < 2.0:
        tw.advance(period)
        n = p.stats["power_probes"]
        p.send_frame(_stream(robot, tw.clock()))
        if cut is None and tw.clock() > 0.5 and p.stats["power_probes"] > n:
            cut = tw.clock()            # just after a probe: back before the next one
            emu.schedule_power_cut(cut + 0.001, cut + 0.03)
    assert emu.power_cuts == 1
    assert p.stats["power_lost"] == 1 and p.stats["power_restored"] == 1 and not p.power_lost
    assert cut + 0.03 <= p.power_lost_at <= cut + p.probe_s + 0.1
    assert all(emu.tables[sv.id][ft.GOAL_SPEED:ft.GOAL_SPEED + 2] != b"\x00\x00" for sv in robot.servos)
    _check_limits_and_velocity(robot, sends)


def test_a_position_that_does_not_read_after_a_torque_off_starts_where_it_was_sent():
    """Frames again after a torque-off failsafe, one servo's position unread: the limiter starts
    it where it was last sent (before: at home, so the first command sent it home at once)."""
    robot, tw, emu, p, sends, notes = _rig("so101-feetech", body=False)
    p.start()
    period = 1.0 / robot.rate_hz
    while tw.clock() < 1.0:
        tw.advance(period)
        p.send_frame(_stream(robot, tw.clock()))
    last = dict(sends[-1][1])
    k = max(range(len(robot.servos)), key=lambda i: abs(robot.servos[i].to_deg(last[robot.servos[i].id])
                                                      - robot.servos[i].home_deg))
    sv = robot.servos[k]
    assert abs(sv.to_deg(last[sv.id]) - sv.home_deg) > 10.0
    while tw.clock() < 1.5:
        tw.advance(period)
        p.poll()
    assert p.in_failsafe and p.failsafe_action == "torque_off"
    real = p.driver.read_position
    p.driver.read_position = lambda sid: None if sid == sv.id else real(sid)
    n = len(sends)
    tw.advance(period)
    p.send_frame(_stream(robot, tw.clock()))
    first = dict(sends[n][1])
    # (one limited step from there at most: the player's longest step, not the 10+ deg home)
    assert abs(sv.to_deg(first[sv.id]) - sv.to_deg(last[sv.id])) <= sv.max_vel_dps * p.max_dt_s + 0.5
    _check_limits_and_velocity(robot, sends)


def test_an_oserror_from_the_port_is_a_send_error_not_a_power_loss():
    robot, tw, emu, p, sends, notes = _rig("so101-feetech", body=False)
    p.start()
    port = p.driver.port
    real = port.write
    state = {"fail": False}

    def write(b):
        if state["fail"]:
            raise OSError("write timeout")
        return real(b)
    port.write = write
    for i in range(60):
        state["fail"] = 10 <= i < 30
        tw.advance(0.02)
        p.send_frame(_stream(robot, tw.clock()))
    assert p.stats["power_lost"] == 0 and p.stats["send_errors"] >= 20 and notes == []


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["op3-dynamixel", "so101-feetech"]), st.floats(0.0, 1.5),
       st.one_of(st.none(), st.floats(0.0, 1.2)), st.integers(0, 3))
def test_no_command_beyond_limits_or_velocity_at_any_timing_of_the_cut(name, cut_s, for_s, jitter):
    robot, tw, emu, p, sends, notes = _rig(name, body=False)
    emu.schedule_power_cut(cut_s, None if for_s is None else cut_s + for_s)
    p.start()
    period = 1.0 / robot.rate_hz
    k = 0
    while tw.clock() < 3.5:
        k += 1
        tw.advance(period * (1 + (k % (jitter + 1)) * 0.5))     # uneven frame spacing
        p.send_frame(_stream(robot, tw.clock()))
    _check_limits_and_velocity(robot, sends)
    if for_s is not None and cut_s + for_s + emu.BOOT_S + p.probe_s + 0.2 < 3.5:
        assert not p.power_lost and p.stats["power_restored"] == p.stats["power_lost"]


# --- the twins themselves ---------------------------------------------------------------------
def test_dynamixel_twin_silent_off_and_booting_ram_at_defaults_joint_limp():
    from host.physics.twin import Twin
    tw = Twin("op3-dynamixel", seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, [(i, 1) for i in tw.ids]))
    emu.feed(dx.write(1, dx.BUS_WATCHDOG, 1, 10) + dx.write(1, dx.PROFILE_VELOCITY, 4, 200))
    tw.advance(0.2)
    assert tw.bank.on.all() and emu.feed(dx.ping(1))
    emu.power_off()
    assert not tw.bank.on.any()                             # every joint limp at the cut
    assert emu.feed(dx.ping(1)) == b"" and emu.feed(dx.read(1, dx.PRESENT_POSITION, 4)) == b""
    emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1))          # heard by nobody
    tw.advance(0.5)
    emu.power_on()
    t = emu.tables[1]
    # Goal Position: where the joint lay at the boot (the e-manual gives none: assumed)
    goal, present = (struct.unpack_from("<i", t, a)[0] for a in (dx.GOAL_POSITION, dx.PRESENT_POSITION))
    assert goal == present
    tw.advance(emu.BOOT_S - 0.01)
    assert emu.feed(dx.ping(1)) == b""                      # still booting
    emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1))
    tw.advance(0.02)
    rep = emu.feed(dx.read(1, dx.TORQUE_ENABLE, 1))
    assert dx.parse_status(rep)[2] == b"\x00"               # the write during the boot was lost
    assert t[dx.BUS_WATCHDOG] == 0 and t[70] == 0 and struct.unpack_from("<I", t, dx.PROFILE_VELOCITY)[0] == 0
    assert struct.unpack_from("<H", t, 84)[0] == 800
    assert t[11] == 3 and not tw.bank.on.any()              # the EEPROM kept; still limp


def test_feetech_twin_boots_limp_and_a_goal_write_snaps_it_on():
    robot = load_robot("so101-feetech")
    emu = make_emulator("feetech", ids=[s.id for s in robot.servos])
    emu.feed(ft.write(1, ft.TORQUE_ENABLE, b"\x01") + ft.write(1, ft.GOAL_SPEED, ft.word(300)))
    emu.power_off()
    assert emu.feed(ft.ping(1)) == b""
    emu.power_on()                                          # BOOT_S on a clock that stands still
    assert emu.feed(ft.ping(1)) == b""
    emu.boot_until_s = emu.clock()                          # (its boot over)
    t = emu.tables[1]
    assert t[ft.TORQUE_ENABLE] == 0 and t[ft.GOAL_SPEED:ft.GOAL_SPEED + 2] == b"\x00\x00"
    emu.feed(ft.write(1, ft.GOAL_POSITION, ft.word(3000)))
    assert t[ft.TORQUE_ENABLE] == 1 and emu.positions[1] == 3000   # on, at full speed


def test_the_probe_budget_fits_the_line():
    from device.servo.linebudget import POWER_PROBE_S, probe_budget
    op3 = probe_budget(load_robot("op3-dynamixel"))
    assert op3["probe_bytes"] == 26 and op3["probe_every"] == 1 and op3["probe_s"] == POWER_PROBE_S
    assert probe_budget(load_robot("khr17-maestro")) is None      # a PWM servo: nothing to ask


def test_a_maestro_s_servos_jump_unramped_when_their_power_returns_and_nothing_can_tell():
    class Body:                         # the emulator hook's calls, as a twin would get them
        def __init__(self):
            self.goals = []

        def set_goal(self, ch, units, vel=0.0, on=True, acc=0.0, p_gain=None, d_gain=None):
            self.goals.append((ch, units, vel, on, acc))

        def read(self, ch):
            return None
    body = Body()
    emu = make_emulator("maestro", body=body)
    emu.feed(bytes((0x87, 0, 10, 0)) + bytes((0x84, 0, 0x70, 0x2E)))      # speed 10, 6000 qus
    assert body.goals[-1] == (0, 6000, 1000.0, True, 0.0)                  # ramped at 1000 qus/s
    emu.power_off()
    assert body.goals[-1][3] is False                                      # limp
    emu.feed(bytes((0x84, 0, 7000 & 0x7F, 7000 >> 7)))                        # 7000 while off
    assert emu.positions[0] == 7000 and body.goals[-1][3] is False         # taken, not driven
    assert emu.feed(bytes((0x90, 0))) == bytes((7000 & 0xFF, 7000 >> 8))   # the board answers on
    emu.power_on()
    assert body.goals[-1] == (0, 7000, 0.0, True, 0.0)                     # at once: no ramp
    robot = load_robot("khr17-maestro")
    p = Player(robot, open_driver("maestro", _NullPort()), row_names=[s.name for s in robot.servos])
    assert p.probe_s is None                                               # no feedback to ask


class _NullPort:
    def write(self, data):
        return len(data)

    def read(self, n=1):
        return b""


def test_lx16a_twin_silent_off_and_booting_back_unloaded_and_a_move_loads_it():
    from device.servo import lx16a as lx

    class Clock:
        t = 0.0

        def __call__(self):
            return self.t
    clk = Clock()
    emu = make_emulator("lx16a", ids=(1, 2), clock=clk)
    emu.feed(lx.move_time_write(1, 600, 100))
    assert emu.loaded[1] and emu.feed(lx.read(1, lx.LOAD_OR_UNLOAD_READ))[5] == 1
    emu.power_off()
    assert emu.feed(lx.read(1, lx.POS_READ)) == b"" and not emu.loaded[1]
    emu.power_on()
    clk.t += emu.BOOT_S - 0.01
    assert emu.feed(lx.read(1, lx.POS_READ)) == b""           # booting
    clk.t += 0.02
    assert emu.feed(lx.read(1, lx.LOAD_OR_UNLOAD_READ))[5] == 0
    emu.feed(lx.move_time_write(1, 300, 20))
    assert emu.loaded[1] and emu.positions[1] == 300          # loaded by the move: a snap


def test_the_live_robot_end_finds_the_cut_and_says_so_in_its_summary():
    """The follower's LinkBridge drives the same Player: the cut is found, nothing sent while
    it lasts, the robot set up again, and the summary counts both."""
    from device.servo.bridge import LinkBridge
    from protocol import linkheader as lh, packets as pk
    robot, tw, emu, rig_player, sends, notes = _rig("so101-feetech", body=False)
    br = LinkBridge(robot, rig_player.driver, clock=tw.clock)      # (its own Player, same driver)
    enc = pk.Encoder(clock_us=lambda: int(tw.clock() * 1e6))
    names = [s.name for s in robot.servos]
    br.feed(b"".join(enc.header(lh.encode([(n, -90.0, 90.0) for n in names], 8, 50.0))))
    br.player.notify = notes.append
    emu.schedule_power_cut(0.5, 1.0)
    k = 0
    while tw.clock() < 3.0:
        tw.advance(0.02)
        k += 1
        br.feed(enc.frame([128 + int(20 * math.sin(k / 10.0))] * len(names)))
        br.poll()
    s = br.summary()
    assert s["power_lost"] == 1 and s["power_restored"] == 1 and not br.player.power_lost
    lost, back = br.player.power_lost_at, [t for t, _ in sends if t > br.player.power_lost_at][0]
    assert 0.5 <= lost <= 0.5 + br.player.probe_s + 0.08 and back >= 1.0 + emu.BOOT_S
    assert all(emu.tables[i][ft.TORQUE_ENABLE] == 1 for i in emu.tables)
    _check_limits_and_velocity(robot, sends)
