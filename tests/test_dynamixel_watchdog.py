"""The XM430's Bus Watchdog (98) on the twin and through the player, as the e-manual gives it.

    pytest tests/test_dynamixel_watchdog.py

A silent bus trips it at the physics step its timeout ends (the servo stops where it is, not at
its goal); a tripped servo refuses goals until 98 is written 0; the player arms it again after a
host stall between two frames, so the robot does not stay frozen.
"""

import struct

from device.servo import dynamixel as dx
from device.servo.dynamixel import Dynamixel
from device.servo.emulate import make_emulator
from device.servo.player import Player
from host.physics.simport import SimPort
from host.physics.twin import Twin


def _robot():
    tw = Twin("op3-dynamixel", seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    return tw, emu


def test_a_silent_bus_stops_the_servo_where_it_is_at_its_timeout():
    tw, emu = _robot()
    names = [s.name for s in tw.rm.servos]
    k = names.index("l_sho_pitch")
    s = tw.rm.servos[k]
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, [(i, 1) for i in tw.ids]))
    tw.advance(0.3)
    start_deg = tw.servo_deg()[k]
    emu.feed(dx.write(s.id, dx.BUS_WATCHDOG, 1, 5))                     # 0.1 s
    emu.feed(dx.write(s.id, dx.GOAL_POSITION, 4, s.to_units(start_deg + 80.0)))
    seen = []
    for _ in range(40):                                                 # 0.4 s of silence
        tw.advance(0.01)
        seen.append(tw.servo_deg()[k])
    # tripped during the silence, at its timeout: 98 reads -1
    assert s.id in emu.watchdog_tripped and emu.tables[s.id][dx.BUS_WATCHDOG] == 0xFF
    # it trips in the 10 ms after 0.1 s (seen[9]); until then it ran towards the goal
    trip = 9
    assert 5.0 < seen[trip] - start_deg < 30.0
    # and holds there (its overshoot settles back): not on towards the goal 80 deg away
    assert abs(seen[-1] - seen[trip]) < 1.5 and max(seen) - start_deg < 30.0
    # the goal is read-only now: a write is refused with Data Range Error, nothing moves
    rep = emu.feed(dx.write(s.id, dx.GOAL_POSITION, 4, s.to_units(start_deg)))
    assert dx.parse_status(rep)[1] == 0x04
    assert struct.unpack_from("<i", emu.tables[s.id], dx.GOAL_POSITION)[0] == s.to_units(start_deg + 80.0)


def test_the_player_arms_the_watchdog_again_after_a_host_stall():
    tw, emu = _robot()
    from device.servo.robot import load_robot
    robot = load_robot("op3-dynamixel")
    port = SimPort(emu, tw, baud=robot.baud)
    drv = Dynamixel(port)
    names = [s.name for s in robot.servos]
    p = Player(robot, drv, row_names=names, clock=tw.clock, sleep=tw.advance)
    p.start()
    assert p.watchdog and all(emu.tables[i][dx.BUS_WATCHDOG] == 10 for i in tw.ids)   # 0.2 s
    home = [s.home_deg for s in robot.servos]
    for _ in range(10):
        tw.advance(0.02)
        p.send_frame(home)
    # the host stalls 0.3 s between two frames (no poll: the player's own failsafe never ran)
    tw.advance(0.3)
    assert emu.watchdog_tripped == set(tw.ids)
    k = names.index("l_sho_pitch")
    target = list(home)
    target[k] = home[k] + 5.0
    p.send_frame(target)
    # armed again (0, then the timeout) before the goals: they are taken
    assert not emu.watchdog_tripped and emu.tables[robot.servos[k].id][dx.BUS_WATCHDOG] == 10
    sid = robot.servos[k].id
    assert struct.unpack_from("<i", emu.tables[sid], dx.GOAL_POSITION)[0] != robot.servos[k].to_units(home[k])
    assert p.stats["send_errors"] == 0


def _op3_player(tw, emu, robot):
    port = SimPort(emu, tw, baud=robot.baud)
    p = Player(robot, Dynamixel(port), row_names=[s.name for s in robot.servos], clock=tw.clock,
               sleep=tw.advance)
    p.start()
    return p, port


def test_a_failsafe_timeout_past_the_watchdogs_range_still_re_arms(tmp_path):
    """A robot file's 5 s failsafe: the XM430 arms at most 127 x 20 ms = 2.54 s, so a 3 s host
    stall trips it with no failsafe of the player's; the re-arm goes by the timeout armed."""
    import json
    import os
    from device.servo.robot import load_robot
    d = json.load(open(os.path.join(os.path.dirname(__file__), "..", "device", "servo", "robots",
                                    "op3-dynamixel.json")))
    d["failsafe"]["timeout_s"] = 5.0
    path = tmp_path / "op3_5s.json"
    path.write_text(json.dumps(d))
    robot = load_robot(str(path))
    tw, emu = _robot()
    p, _ = _op3_player(tw, emu, robot)
    assert emu.tables[1][dx.BUS_WATCHDOG] == 127 and p.watchdog_s == 2.54
    home = [s.home_deg for s in robot.servos]
    for _ in range(10):
        tw.advance(0.01)
        p.send_frame(home)
    tw.advance(3.0)
    assert emu.watchdog_tripped == set(tw.ids) and not p.poll()
    target = list(home)
    target[0] += 5.0
    tw.advance(0.01)
    p.send_frame(target)
    assert not emu.watchdog_tripped


def test_failed_sends_arm_the_watchdog_again():
    """Writes that fail (a write timeout) while frames keep coming leave the bus silent: the
    servos trip; the first send that goes out again is preceded by a re-arm."""
    from device.servo.robot import load_robot
    robot = load_robot("op3-dynamixel")
    tw, emu = _robot()
    p, port = _op3_player(tw, emu, robot)
    real_write, fail = port.write, [False]

    def write(b):
        if fail[0]:
            raise OSError("write timeout")
        return real_write(b)
    port.write = write
    home = [s.home_deg for s in robot.servos]
    for i in range(60):                         # frames every 10 ms, writes fail 0.1-0.4 s
        fail[0] = 10 <= i < 40
        tw.advance(0.01)
        p.send_frame(home)
        if i == 39:
            assert emu.watchdog_tripped == set(tw.ids)
    assert p.stats["send_errors"] >= 30 and not emu.watchdog_tripped


def test_a_zero_timeout_arms_no_watchdog():
    """set_watchdog(0) turns it off (98 = 0) and says none is armed: the player never re-arms."""
    tw, emu = _robot()
    port = SimPort(emu, tw, baud=1000000)
    drv = Dynamixel(port)
    drv.ids = list(tw.ids)
    assert drv.set_watchdog(0.0) is False and all(emu.tables[i][dx.BUS_WATCHDOG] == 0 for i in tw.ids)
    assert drv.set_watchdog(0.2) == 0.2 and all(emu.tables[i][dx.BUS_WATCHDOG] == 10 for i in tw.ids)
