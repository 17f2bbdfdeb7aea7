"""The receiver firmware on the real MicroPython rp2 port, booted on an emulated RP2040 (rp2040js).

The board's filesystem is what `deploy --receiver` writes (tools/mpy/pico.py); /main.py starts
the receiver; link bytes go into UART0 at 115200 baud in emulated time; pulses are GPIO edge
times in emulated ns. One boot per failsafe action (module fixtures), each a timeline of
segments checked separately: calibration and limits, corrupted and truncated frames, the
failsafe, a heartbeat request, a new header, recovery, and a velocity-limited ramp.
"""

import random

import pytest

from protocol import packets as pk
from tools.mpy import pico

PINS = (2, 3, 4, 5)
LO_US, HI_US = 700, 2300
TIMEOUT_MS = 100
PERIOD_NS = 20000000       # 50 Hz servo PWM
TICK_NS = 500              # the PWM counter's step at 50 Hz is ~305 ns: equal to the microsecond
T0 = 0.35                  # s: the receiver is up (boot + imports take ~0.25 s of emulated time)
FRAME_S = 0.05


def _cfg(action, vel=(100000.0,) * 4, home_deg=0.0):
    return {"format": "motionstaff-receiver", "version": 1,
            "failsafe": {"timeout_ms": TIMEOUT_MS, "action": action}, "heartbeat_ms": 0,
            "servos": [{"name": "s%d" % i, "pin": p, "row": "r%d" % i, "neutral_us": 1500,
                        "direction": -1 if i == 1 else 1, "us_per_deg": 10.0, "min_us": LO_US,
                        "max_us": HI_US, "max_vel_dps": vel[i], "home_deg": home_deg,
                        "offset_deg": 5.0 if i == 2 else 0.0} for i, p in enumerate(PINS)]}


def _header(lo=-100.0, hi=100.0, bits=8):
    return {"format": "motionstaff", "version": 1, "fps": 20.0, "bits": bits, "frames": 0,
            "rows": [{"name": "r%d" % i, "unit": "deg", "lo": lo, "hi": hi, "wrap": False}
                     for i in range(len(PINS))],
            "skeleton": None, "source": "", "captured": ""}


def expected_ns(i, code, lo=-100.0, hi=100.0, bits=8):
    """The calibration in CPython floats, clamped: what a code asks servo i for."""
    deg = lo + code * (hi - lo) / ((1 << bits) - 1) + (5.0 if i == 2 else 0.0)
    us = 1500 + (-1 if i == 1 else 1) * 10.0 * deg
    return min(max(us, LO_US), HI_US) * 1000.0


def width_at(res, pin, t_s):
    """The pulse width (ns) in effect on pin at time t_s (None before the first pulse)."""
    w = None
    for t, p, width in res["pulses"]:
        if p == pin and t <= t_s * 1e9:
            w = width
    return w


def _frames(enc, t_start, n, seed):
    rng = random.Random(seed)
    out = []
    for k in range(n):
        codes = [rng.randint(0, 255) for _ in PINS]
        out.append((t_start + k * FRAME_S, codes, enc.frame(codes)))
    return out


def _check_frames(res, frames, lo=-100.0, hi=100.0):
    for t, codes, _ in frames:
        for i, pin in enumerate(PINS):
            w = width_at(res, pin, t + FRAME_S - 0.002)
            assert w is not None and abs(w - expected_ns(i, codes[i], lo, hi)) <= TICK_NS, (t, i, w)


@pytest.fixture(scope="module")
def hold_run():
    pico.require()
    enc = pk.Encoder(clock_us=lambda: 0)
    uart = [(T0, b"".join(enc.header(_header())))]
    a = _frames(enc, T0 + 0.15, 6, seed=1)                      # 0.50 .. 0.75 s
    uart += [(t, f) for t, _, f in a]
    bad = bytearray(enc.frame([0, 0, 0, 0]))
    bad[5] ^= 0x10                                              # a bit flip: CRC fails
    uart.append((0.82, bytes(bad)))
    uart.append((0.86, enc.frame([255] * 4)[:7] + b"\x00"))    # truncated, then a delimiter
    # stream stops after 0.75 s: failsafe at 0.85 s; a heartbeat request at 1.0 s
    uart.append((1.0, enc.heartbeat(0, 0, 0, pk.STATE_IDLE)))
    uart.append((1.05, b"".join(enc.header(_header(0.0, 180.0)))))   # a new header: new ranges
    b = _frames(enc, 1.25, 5, seed=2)
    uart += [(t, f) for t, _, f in b]
    res = pico.run(pico.receiver_files(_cfg("hold")), uart=uart, until_s=1.55)
    res["uart"], res["cfg"] = uart, _cfg("hold")
    return res, a, b


def test_boots_and_maps_calibration_within_limits(hold_run):
    res, a, _ = hold_run
    assert res["overruns"] == 0 and "Traceback" not in res["usb"], res["usb"]
    _check_frames(res, a)
    widths = [w for _, _, w in res["pulses"] if w > 0]
    assert min(widths) >= LO_US * 1000 - TICK_NS and max(widths) <= HI_US * 1000 + TICK_NS


def test_corrupted_and_truncated_frames_move_nothing_and_hold_keeps_pulsing(hold_run):
    res, a, _ = hold_run
    last_t = a[-1][0]
    for i, pin in enumerate(PINS):
        held = width_at(res, pin, last_t + 0.04)
        # no change from the bit-flipped and the truncated frame, nor from the hold failsafe
        assert [e for e in res["pulses"] if e[1] == pin and last_t + 0.04 < e[0] / 1e9 < 1.05] == []
        assert width_at(res, pin, 1.04) == held > 0     # hold: still pulsing, same width


def test_heartbeat_reply_reports_failsafe(hold_run):
    res, _, _ = hold_run
    got = pk.Decoder().feed(b"".join(data for _, data in res["tx"]))
    beats = [p for p in got if p.name == "HEARTBEAT"]
    assert len(beats) == 1
    assert beats[0].fields["state"] == pk.STATE_FAILSAFE and beats[0].fields["frames"] == 6
    assert beats[0].fields["dropped"] >= 2           # the bit flip and the truncated frame
    t_reply = res["tx"][0][0] / 1e9
    assert 1.0 < t_reply < 1.0 + 0.1


def test_new_header_remaps_and_stream_recovers(hold_run):
    res, _, b = hold_run
    # every frame after the new header (ranges 0..180) is played on every pin to one PWM tick
    _check_frames(res, b, 0.0, 180.0)
    # and with the new ranges, not the old ones: the first frame's widths differ from them
    t, codes, _ = b[0]
    got = [width_at(res, pin, t + FRAME_S - 0.002) for pin in PINS]
    old = [expected_ns(i, codes[i], -100.0, 100.0) for i in range(len(PINS))]
    assert any(abs(g - o) > TICK_NS for g, o in zip(got, old)), (got, old)


@pytest.fixture(scope="module")
def home_run():
    pico.require()
    enc = pk.Encoder(clock_us=lambda: 0)
    # servo 0 slow (90 deg/s -> 900 ns of pulse per ms), the rest fast
    cfg = _cfg("home", vel=(90.0, 100000.0, 100000.0, 100000.0), home_deg=20.0)
    uart = [(T0, b"".join(enc.header(_header())))]
    frames = [(T0 + 0.15 + k * FRAME_S, [255 if k % 6 < 3 else 0] * 4) for k in range(12)]
    uart += [(t, enc.frame(c)) for t, c in frames]
    res = pico.run(pico.receiver_files(cfg), uart=uart, until_s=1.35)
    return res, frames


def test_velocity_limit_on_the_pico(home_run):
    res, frames = home_run
    ev = [(t, w) for t, p, w in res["pulses"] if p == PINS[0]]
    # the firmware limits each of its ticks to 900 ns per ms; the PWM samples its value at every
    # period's wrap, and a frame being decoded (~5 ms on the Pico) delays the next tick, so one
    # pulse-to-pulse step may carry up to LAG_MS more of movement (seen: 26 ms worth in 20 ms)
    LAG_MS = 8
    for (t1, w1), (t2, w2) in zip(ev, ev[1:]):
        assert abs(w2 - w1) <= 900 * ((t2 - t1) / 1e6 + LAG_MS) + TICK_NS, (t1, w1, t2, w2)
    # over the whole run the slope stays within the limit
    big = [(t, w) for t, w in ev if w > 0]
    (ta, wa), (tb, wb) = big[0], big[-1]
    assert abs(wb - wa) <= 900 * ((tb - ta) / 1e6 + LAG_MS)
    assert any(abs(w2 - w1) > 10000 for (_, w1), (_, w2) in zip(ev, ev[1:]))  # it did move


def test_home_failsafe_within_timeout_plus_one_period(home_run):
    res, frames = home_run
    last = frames[-1][0]
    deadline_ns = (last + TIMEOUT_MS / 1000.0) * 1e9 + PERIOD_NS
    home_ns = (1500 + 10.0 * 20.0) * 1000
    for i, pin in enumerate(PINS[1:], 1):
        after = [(t, w) for t, p, w in res["pulses"] if p == pin and t > last * 1e9 + 0.03e9]
        assert after and after[0][0] <= deadline_ns + 2e6, (pin, after[:2])
        want = 1500000 + (-1 if i == 1 else 1) * 200000
        assert abs(width_at(res, pin, 1.34) - want) <= TICK_NS
    assert abs(home_ns - width_at(res, PINS[0], 1.34)) <= TICK_NS   # the slow one got there too


@pytest.fixture(scope="module")
def release_run():
    pico.require()
    enc = pk.Encoder(clock_us=lambda: 0)
    uart = [(T0, b"".join(enc.header(_header())))]
    a = _frames(enc, T0 + 0.15, 4, seed=5)
    uart += [(t, f) for t, _, f in a]
    b = _frames(enc, 1.0, 4, seed=6)
    uart += [(t, f) for t, _, f in b]
    res = pico.run(pico.receiver_files(_cfg("release")), uart=uart, until_s=1.25)
    res["uart"], res["cfg"] = uart, _cfg("release")
    return res, a, b


def test_torque_off_stops_pulses_then_recovers(release_run):
    res, a, b = release_run
    _check_frames(res, a)
    last = a[-1][0]
    deadline_ns = (last + TIMEOUT_MS / 1000.0) * 1e9 + PERIOD_NS
    for pin in PINS:
        stops = [t for t, p, w in res["pulses"] if p == pin and w == 0]
        assert stops and last * 1e9 < stops[0] <= deadline_ns, (pin, stops)
    _check_frames(res, b)      # the next frames bring the pulses back


def _twin_at(twin, pin, t_s):
    w = None
    for t_ms, p, d in twin:
        if p == pin and t_ms <= t_s * 1000:
            w = d
    return w


@pytest.mark.parametrize("run", ["hold_run", "release_run"])
def test_cpython_twin_gives_the_pico_s_pulses(run, request):
    """device/servo/emulate/native.py (the firmware on CPython) against the Pico, same bytes."""
    res, a, b = request.getfixturevalue(run)
    twin = pico.twin_pulses(res["cfg"], res["uart"], 1.6)
    checked = 0
    for t, _, _ in a + b:
        for pin in PINS:
            got, want = width_at(res, pin, t + FRAME_S - 0.002), _twin_at(twin, pin, t + FRAME_S - 0.002)
            assert want is not None and abs(got - want) <= TICK_NS, (run, t, pin, got, want)
            checked += 1
    assert checked == 4 * len(a + b)
    if run == "release_run":
        # torque off: the twin's duty goes to 0 when the Pico's pulses stop (within a period)
        for pin in PINS:
            t_twin = [t for t, p, d in twin if p == pin and d == 0 and t > 500][0]
            t_pico = [t for t, p, w in res["pulses"] if p == pin and w == 0][0] / 1e6
            assert abs(t_pico - t_twin) <= PERIOD_NS / 1e6 + 2, (pin, t_pico, t_twin)


FUZZ_PINS = tuple(range(2, 14))


@pytest.fixture(scope="module")
def fuzz_run():
    from tools import linkfuzz

    pico.require()
    cfg = linkfuzz.config("hold")
    cfg["heartbeat_ms"] = 0
    for s, pin in zip(cfg["servos"], FUZZ_PINS):
        s["pin"], s["max_vel_dps"] = pin, 100000.0
    enc = pk.Encoder(clock_us=lambda: 0)
    gen_head = b"".join(enc.header(_header14()))
    uart = [(T0, gen_head)]
    fz, t_end = pico.fuzz_uart(40, seed=7, t0_s=T0 + 0.1)
    uart += fz
    # afterwards: a clean header and frame, and a HELLO: the firmware is alive and right
    uart += [(t_end + 0.1, gen_head), (t_end + 0.2, enc.frame([200] * 14)), (t_end + 0.3, enc.hello())]
    res = pico.run(pico.receiver_files(cfg), uart=uart, until_s=t_end + 0.45)
    return res, cfg, uart, t_end


def _header14():
    return {"format": "motionstaff", "version": 1, "fps": 30.0, "bits": 8, "frames": 0,
            "rows": [{"name": "r%d" % i, "unit": "deg", "lo": -90.0, "hi": 90.0, "wrap": False}
                     for i in range(14)], "skeleton": None, "source": "", "captured": ""}


def test_fuzzed_stream_every_pulse_is_the_twin_s_and_the_firmware_survives(fuzz_run):
    res, cfg, uart, t_end = fuzz_run
    assert res["overruns"] == 0 and "Traceback" not in res["usb"], res["usb"][-500:]
    twin = pico.twin_pulses(cfg, uart, t_end + 0.45)
    lo, hi = 900000, 2100000
    for pin in FUZZ_PINS:
        got = [w for _, p, w in res["pulses"] if p == pin]
        want = [d for _, p, d in twin if p == pin]
        assert got and all(w == 0 or lo - TICK_NS <= w <= hi + TICK_NS for w in got)
        assert pico.is_subsequence(got, want, TICK_NS), (pin, got[:8], want[:8])
        # the clean frame after the fuzz: 200 of 255 over -90..90 deg, 10 us per deg
        assert abs(width_at(res, pin, t_end + 0.29) - (1500 + 10 * (-90 + 200 * 180 / 255)) * 1000) <= TICK_NS
    replies = [p for p in pk.Decoder().feed(b"".join(d for t, d in res["tx"] if t > (t_end + 0.3) * 1e9))
               if p.name == "HEARTBEAT"]
    assert len(replies) == 1 and replies[0].fields["state"] == pk.STATE_STREAMING
