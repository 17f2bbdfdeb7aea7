"""The receiver firmware survives any input and its failsafe always engages (CPython run of
device/firmware/receiver.py on the board stand-in; the wasm MicroPython tests run the same code)."""

import pytest

from device.firmware.receiver import Receiver
from device.servo.emulate.board import Board
from device.servo.emulate.native import TICKS_MAX, NativeEmulator, default_config
from device.servo.native import Native
from protocol import linkheader as lh, packets as pk
from tools import linkfuzz


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzzed_packets_never_stop_it_and_failsafe_always_engages(seed):
    r = linkfuzz.fuzz(packets=2500, seed=seed)
    assert r["exits"] == 0 and r["errors"] == 0
    assert r["failsafe_late"] == 0 and r["stops"] >= 20
    assert r["pulse_out_of_limits"] == 0 and r["too_fast"] == 0
    # the fuzz did reach every path
    assert r["headers"] > 0 and r["wrong_rows"] > 0 and r["bad_headers"] > 0 and r["dropped"] > 0
    assert r["frames_used"] > 100 and r["released"] > 0 and r["never_headed_failsafes"] > 0


def _rx(action="hold"):
    board = Board()
    rx = Receiver(linkfuzz.config(action), board, uart=board.UART(0))
    return board, rx


def _feed(board, rx, data, now):
    for i in range(0, len(data), 512):
        board.uart.inject(data[i:i + 512])
        rx.poll(now)


def test_spliced_header_and_wrong_row_count_keep_the_old_mapping():
    board, rx = _rx()
    enc = pk.Encoder(clock_us=lambda: 0)
    a = lh.encode([("r%d" % i, -90.0, 90.0) for i in range(14)], 8, 30.0)
    b = lh.encode([("r%d" % i, -30.0, 30.0) for i in range(14)], 8, 30.0)
    _feed(board, rx, b"".join(enc.header(a, part_bytes=40)), 0)
    assert rx.header_id == lh.header_id(a)
    pa, pb = enc.header(a, part_bytes=40), enc.header(b, part_bytes=40)
    _feed(board, rx, b"".join(pb[:2] + pa[2:]), 10)                    # spliced: never joins
    assert rx.header_id == lh.header_id(a) and rx.counters()["bad_headers"] >= 1
    _feed(board, rx, enc.frame([255] * 13), 20)                         # 13 rows for a 14-row header
    _feed(board, rx, enc.frame([255] * 14, 16), 30)                     # 16-bit for an 8-bit header
    c = rx.counters()
    assert c["wrong_rows"] == 2 and c["requests"] >= 1 and rx.bank.active is False
    assert all(p.duty_ns() == 0 for p in board.pwms)                    # nothing was driven
    replies = pk.Decoder().feed(board.uart.take_tx())
    assert any(p.name == "REQUEST" and p.fields["header_id"] == lh.header_id(a) for p in replies)


def test_torque_off_releases_even_when_the_receiver_holds_another_header():
    # the sender restarted with another header (6 servos) and sends torque off at once; the
    # receiver still holds the 14-row header: torque off must stop the pulses all the same
    # (it was dropped as wrong_rows, and with action=hold the servos stayed powered forever)
    board, rx = _rx("hold")
    enc = pk.Encoder(clock_us=lambda: 0)
    a = lh.encode([("r%d" % i, -90.0, 90.0) for i in range(14)], 8, 30.0)
    _feed(board, rx, b"".join(enc.header(a)), 0)
    for k in range(10):
        _feed(board, rx, enc.frame([128 + k] * 14), 10 + 10 * k)
    assert any(p.duty_ns() > 0 for p in board.pwms)
    _feed(board, rx, enc.frame([None] * 6), 120)
    assert all(p.duty_ns() == 0 for p in board.pwms)
    assert rx.state == pk.STATE_FAILSAFE and rx.counters()["released"] == 1


@pytest.mark.parametrize("action", ["hold", "home", "release"])
def test_failsafe_engages_without_ever_getting_a_header(action):
    board, rx = _rx(action)
    for now in range(0, 400, 10):
        _feed(board, rx, b"\x13\x37\x00garbage\x00", now)
    c = rx.counters()
    assert rx.state == pk.STATE_FAILSAFE and c["failsafes"] == 1 and c["errors"] == 0
    assert all(p.duty_ns() == 0 for p in board.pwms)                    # never powered


def test_torque_off_from_the_unit_stops_the_pulses_on_the_firmware():
    t = [0.0]
    emu = NativeEmulator(clock=lambda: t[0])
    port = _Port(emu)
    drv = Native(port, bits=16, clock=lambda: t[0])
    drv.start([(i, {"min": 1000, "max": 2000}) for i in range(6)])
    for k in range(20):
        t[0] += 0.02
        drv.send_positions([(i, 1200 + 10 * k) for i in range(6)])
    assert all(p > 0 for p in emu.pulses_ns()[:6])
    t[0] += 0.02
    assert drv.torque_off(list(range(6)))
    assert emu.pulses_ns()[:6] == [0] * 6                             # PWM duty 0: servos limp
    assert emu.receiver.state == pk.STATE_FAILSAFE and emu.positions[0] is None


def test_home_failsafe_moves_at_the_velocity_limit_in_wall_time():
    board, rx = _rx("home")
    enc = pk.Encoder(clock_us=lambda: 0)
    _feed(board, rx, b"".join(enc.header(lh.encode([("r%d" % i, -90.0, 90.0) for i in range(14)], 8, 30.0))), 0)
    now = 0
    for k in range(100):                       # drive to +60 deg: 2100 us clamp
        now += 20
        _feed(board, rx, enc.frame([255] * 14), now)
    start = board.pwms[0].duty_ns()
    assert start == 2100000
    pulses = []
    while now < 3000:
        now += 10
        rx.poll(now)
        pulses.append(board.pwms[0].duty_ns())
    # 300 deg/s * 10 us/deg = 3 us per ms: 600 us home in 200 ms after the 200 ms timeout
    steps = [abs(b - a) for a, b in zip([start] + pulses, pulses)]
    assert max(steps) <= 3000 * 10 and pulses[-1] == 1500000
    assert sum(1 for s in steps if s > 0) >= 600 // 30


class _Port:
    """A port straight into the emulator (the firmware) and back."""

    def __init__(self, emu):
        self.emu = emu
        self.rx = b""

    def write(self, b):
        self.rx += self.emu.feed(bytes(b))
        return len(b)

    def read(self, n):
        out, self.rx = self.rx[:n], self.rx[n:]
        return out


def test_a_receiver_that_browns_out_gets_the_native_header_back():
    t = [0.0]
    port = _Port(NativeEmulator(clock=lambda: t[0]))
    drv = Native(port, bits=16, clock=lambda: t[0])
    drv.start([(i, {"min": 1000, "max": 2000}) for i in range(6)])
    for k in range(10):
        t[0] += 0.02
        drv.send_positions([(i, 1500) for i in range(6)])
    port.emu = NativeEmulator(clock=lambda: t[0])        # rebooted: no header
    for k in range(10):
        t[0] += 0.02
        drv.send_positions([(i, 1600) for i in range(6)])
    r = port.emu.receiver
    assert r.header_id == drv.link.header_id and r.counters()["requests"] >= 1
    assert port.emu.positions[0] == 1600 and drv.link.counts()["header_requests"] >= 1


def test_the_twin_board_clock_counts_whole_milliseconds_like_ticks_ms():
    """The CPython twin's ticks_ms on a clock stepped in ms (k / 1000 s) is k, for every k: the
    truncated product of binary fractions gave k - 1 at 0.7 % of steps, so the firmware's ramp
    ticked with dt = 0 and then 2 ms and jumped where the Pico ramps (the 10^4 fuzz of the
    emulated RP2040 saw 4 of 12 pins differ, benchmarks/pico_section.py fuzz seed 12)."""
    t = [0.0]
    emu = NativeEmulator(clock=lambda: t[0])
    emu.t0 = 0.0
    wrong = 0
    for k in range(200000):
        t[0] = k / 1000.0
        wrong += emu.now_ms() != k
    assert wrong == 0


def _ramp_and_silence(ticks_at_start):
    """The twin driven by the Native driver: a velocity-limited ramp (1 us/ms), then 1 s of
    silence (failsafe after 500 ms); the pulses and state after every 20 ms."""
    t = [0.0]
    emu = NativeEmulator(clock=lambda: t[0], config=default_config(6, max_vel_dps=1000.0))
    emu.t0 = -ticks_at_start / 1000.0
    drv = Native(_Port(emu), bits=16, clock=lambda: t[0])
    drv.start([(i, {"min": 1000, "max": 2000}) for i in range(6)])
    out = []
    for k in range(40):
        t[0] += 0.02
        drv.send_positions([(i, 1200 if k < 5 else 1800) for i in range(6)])
        out.append((emu.pulses_ns()[:6], emu.receiver.state))
    for k in range(50):
        t[0] += 0.02
        emu.poll()
        out.append((emu.pulses_ns()[:6], emu.receiver.state))
    return out, emu.now_ms()


def test_twin_ticks_wrap_like_the_picos_and_the_firmware_does_not_notice():
    """The Pico's ticks_ms wraps at 2^30 ms (12.4 days up); the twin's never did, and the
    firmware's CPython ticks_diff was a - b: a receiver up 12.4 days froze its ramp (dt < 0)
    and never failed safe. Across the wrap the twin now does exactly what it does from 0."""
    plain, _ = _ramp_and_silence(0)
    wrapped, end_ms = _ramp_and_silence(TICKS_MAX + 1 - 300)
    assert end_ms < 2000                              # it did wrap (about 1.5 s after it)
    assert wrapped == plain
    assert plain[-1][1] == pk.STATE_FAILSAFE and plain[10][0] != plain[30][0]   # it ramps, it fails safe



def test_a_header_with_more_rows_than_the_receiver_holds_is_refused_and_counted():
    # 64 rows is the receiver's frame size (FrameReader nrows_max): a 65-row header's frames
    # could never be played; it is refused, counted, and the header held before stays
    board, rx = _rx()
    enc = pk.Encoder(clock_us=lambda: 0)
    a = lh.encode([("r%d" % i, -90.0, 90.0) for i in range(14)], 8, 30.0)
    big = lh.encode([("r%d" % i, -90.0, 90.0) for i in range(65)], 8, 30.0)
    _feed(board, rx, b"".join(enc.header(a)), 0)
    _feed(board, rx, b"".join(enc.header(big)), 10)
    c = rx.counters()
    assert c["too_many_rows"] == 1 and c["headers"] == 1 and rx.header_id == lh.header_id(a)
    _feed(board, rx, enc.frame([100] * 14), 20)
    assert rx.state == pk.STATE_STREAMING
