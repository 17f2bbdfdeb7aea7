"""Faults on the link: corruption, dropped/inserted bytes, truncation, a port that disappears
and comes back, a controller that stops answering. Nothing crashes, nothing corrupted is acted
on, the failsafe engages, errors are counted."""

import random

import pytest

from protocol import packets as pk
from device.servo import dynamixel as dx
from device.servo.drivers import open_driver
from device.servo.emulate import make_emulator
from device.servo.emulate.pty import PtyServer
from device.servo.native import Native
from device.servo.player import Player
from device.servo.robot import load_robot
from device.servo.transport import ReconnectingPort


class Sink:
    def __init__(self):
        self.data = b""

    def write(self, b):
        self.data += b
        return len(b)


def _damage(rng, data, rate):
    out = bytearray()
    for b in data:
        r = rng.random()
        if r < rate / 4:
            out.append(rng.randrange(256))                 # corrupted
        elif r < rate / 2:
            pass                                           # dropped
        elif r < 3 * rate / 4:
            out += bytes((b, rng.randrange(256)))          # garbage inserted
        elif r < rate and b == 0:
            out.append(0x55)                               # delimiter lost
        else:
            out.append(b)
    return bytes(out)


@pytest.mark.parametrize("seed", range(4))
def test_native_receiver_never_acts_on_a_corrupted_frame(seed):
    rng = random.Random(seed)
    servos = [(i, {"min": 1000, "max": 2000}) for i in range(12)]
    sink = Sink()
    drv = Native(sink, bits=16)
    drv.start(servos)
    header = sink.data
    sent = set()
    for k in range(300):
        cmds = [(i, rng.randrange(1000, 2001)) for i in range(12)]
        drv.send_positions(cmds)
        sent.update(cmds)
    stream = sink.data[len(header):]
    emu = make_emulator("native")
    emu.feed(header)
    for i in range(0, len(stream), 997):
        emu.feed(_damage(rng, stream[i:i + 997], 0.02))
    acted = [(s, u) for _, s, u, _ in emu.timeline]
    assert acted and all(a in sent or a[1] is None for a in acted)
    assert emu.decoder.dropped() > 0 and emu.errors >= emu.decoder.dropped()
    # one clean frame after the damage is delivered (resynchronised within one packet)
    before = emu.frames
    emu.feed(b"\x00" + drv.encode_positions([(i, 1500) for i in range(12)]))
    # (a valid frame still waiting for its delimiter is completed by the 0x00 too)
    assert before + 1 <= emu.frames <= before + 2 and emu.positions[0] == 1500


def test_truncated_native_packets_are_dropped():
    sink = Sink()
    drv = Native(sink, bits=8)
    drv.start([(0, {"min": 1000, "max": 2000})])
    emu = make_emulator("native")
    emu.feed(sink.data)
    w = drv.encode_positions([(0, 1234)])
    emu.feed(w[:-5] + b"\x00")
    assert emu.frames == 0 and emu.decoder.dropped() == 1
    emu.feed(w)
    assert emu.frames == 1


def test_dynamixel_emulator_ignores_corrupted_packets():
    rng = random.Random(7)
    emu = make_emulator("dynamixel", ids=(1, 2, 3))
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, {1: 1, 2: 1, 3: 1}))
    sent = set()
    stream = b""
    for k in range(400):
        t = dict((i, rng.randrange(0, 4096)) for i in (1, 2, 3))
        sent.update(t.items())
        stream += dx.sync_write(dx.GOAL_POSITION, 4, t)
    emu.feed(_damage(rng, stream, 0.01))
    assert emu.errors > 0
    assert all((s, u) in sent for _, s, u, _ in emu.timeline[3:] if u is not None)


def test_port_disappears_and_comes_back():
    robot = load_robot("op3-dynamixel")
    emu = make_emulator("dynamixel", ids=range(1, 21))
    srv = PtyServer(emu).start()
    t = [0.0]
    port = ReconnectingPort(lambda: srv.path, baud=1000000, retry_s=0.1, clock=lambda: t[0])
    drv = open_driver("dynamixel", port)
    from device.body.human import human_model
    p = Player(robot, drv, row_names=human_model().dof_names, clock=lambda: t[0])
    p.start()
    t[0] += 0.02                                       # the limiter moves in the player's time
    p.send_frame({"l_knee_flex": 5.0}, 0.01)
    assert emu.wait_for(lambda e: e.positions.get(14) is not None and e.positions[14] < 2048, 5.0)
    srv.disconnect()                                   # unplugged
    for k in range(5):
        t[0] += 0.02
        p.send_frame({"l_knee_flex": 10.0}, 0.02 + 0.02 * k)   # must not raise
    assert p.stats["send_errors"] >= 1 and port.disconnects == 1
    t[0] += 0.5
    assert p.poll()                                    # failsafe engaged (its send may fail too)
    srv.reconnect()                                    # plugged back in (a new pty path)
    seen = len(emu.timeline)
    t[0] += 0.2
    p.send_frame({"l_knee_flex": 10.0}, 1.0)
    assert port.reconnects == 1 and not p.in_failsafe
    assert emu.wait_for(lambda e: len(e.timeline) > seen, 5.0)
    drv.close()
    srv.stop()


def test_controller_stops_answering():
    emu = make_emulator("dynamixel", ids=(1, 2))
    with PtyServer(emu) as srv:
        drv = open_driver("dynamixel", srv.path, timeout_s=0.05)
        drv.ids = [1, 2]
        assert drv.read_position(1) == 2048
        emu.silent = True
        assert drv.read_position(1) is None
        assert drv.stats["timeouts"] >= 1 and drv.stats["errors"] >= 1
        robot = load_robot("op3-dynamixel")
        p = Player(robot, drv, row_names=["l_knee_flex"])
        p.start()                         # ramp "from current": no answers -> starts from home
        assert p.limiter.pos[13] == robot.servos[13].home_deg
        drv.close()


def test_maestro_garbage_counts_errors_and_recovers():
    emu = make_emulator("maestro")
    emu.feed(bytes(range(0, 0x80)) + b"\xEE\x01\x02")
    assert emu.errors > 0 and emu.positions == {}
    emu.feed(bytes.fromhex("84 00 70 2E"))
    assert emu.positions == {0: 6000}
