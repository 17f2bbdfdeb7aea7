"""The servo receiver firmware (device/firmware) under the wasm MicroPython with a simulated machine.

Streams are made by the unit's own code (protocol.packets.Encoder) on CPython; the firmware runs
under MicroPython (tools/mpy/fw_harness.py) and, for comparison, under CPython with the same
simulated machine: pulses and counters must be identical on both.
"""

import copy
import json
import os
import random
import sys

import pytest

from protocol import packets as pk
from protocol.errors import FormatError
from tools.mpy_run import MPY_DIR

sys.path.insert(0, MPY_DIR)
import fw_harness  # noqa: E402
import sim_machine  # noqa: E402

NSERVO = 18
LO_US, HI_US = 700, 2300


def _cfg(action="hold", vel=100000.0, heartbeat_ms=0):
    return {"format": "motionstaff-receiver", "version": 1,
            "failsafe": {"timeout_ms": 300, "action": action}, "heartbeat_ms": heartbeat_ms,
            "servos": [{"name": "s%d" % i, "pin": i, "row": "r%d" % i, "neutral_us": 1500,
                        "direction": -1 if i % 5 == 0 else 1, "us_per_deg": 10.0,
                        "min_us": LO_US, "max_us": HI_US, "max_vel_dps": vel,
                        "offset_deg": 5.0 if i == 3 else 0.0} for i in range(NSERVO)]}


HEADER = {"format": "motionstaff", "version": 1, "fps": 30.0, "bits": 8, "frames": 0,
          "rows": [{"name": "r%d" % i, "unit": "deg", "lo": -100.0, "hi": 100.0, "wrap": False}
                   for i in range(NSERVO)],
          "skeleton": None, "source": "", "captured": ""}


def expected_ns(i, code, bits=8):
    """The calibration, computed independently in floats: the pulse a code asks for (clamped)."""
    top = (1 << bits) - 1
    deg = -100.0 + code * 200.0 / top + (5.0 if i == 3 else 0.0)
    us = 1500 + (-1 if i % 5 == 0 else 1) * 10.0 * deg
    return min(max(us * 1000.0, LO_US * 1000.0), HI_US * 1000.0)


def _stream(nframes, seed, bits=8):
    rng = random.Random(seed)
    enc = pk.Encoder(clock_us=lambda: 0)
    head = b"".join(enc.header(dict(HEADER, bits=bits)))
    frames = []
    for k in range(nframes):
        codes = [rng.randint(0, (1 << bits) - 1) for _ in range(NSERVO)]
        if k % 7 == 3:
            codes[2] = None
        frames.append((codes, enc.frame(codes, bits)))
    return head, frames


def _on_both(mpy, cfg, schedule):
    cpy = _cpython_run(cfg, schedule)
    code = "import json, fw_harness\nprint(json.dumps(fw_harness.run(%s, %s)))" % (
        json.dumps(cfg).replace("true", "True").replace("false", "False").replace("null", "None"),
        json.dumps(schedule))
    mp = json.loads(mpy.run(code, name="fw_run", fresh=True))
    return cpy, mp


def _cpython_run(cfg, schedule):
    saved = sys.modules.get("machine")
    sys.modules["machine"] = sim_machine
    try:
        return json.loads(json.dumps(fw_harness.run(copy.deepcopy(cfg), schedule)))
    finally:
        if saved is None:
            del sys.modules["machine"]
        else:
            sys.modules["machine"] = saved


def test_clean_stream_maps_calibration_and_limits(mpy):
    head, frames = _stream(40, seed=1)
    sched = [(0, head.hex())] + [(33 * (k + 1), f.hex()) for k, (_, f) in enumerate(frames)]
    cpy, mp = _on_both(mpy, _cfg(), sched)
    assert mp == cpy  # bit-identical on MicroPython and CPython
    assert mp["counters"]["frames"] == 40 and mp["counters"]["dropped"] == 0
    held = [None] * NSERVO
    for k, (codes, _) in enumerate(frames):
        pulses = mp["pulses"][k + 1]
        for i in range(NSERVO):
            if codes[i] is not None:
                held[i] = expected_ns(i, codes[i])
            if held[i] is not None:
                assert abs(pulses[i] - held[i]) <= 1, (k, i)  # rounding of the folded map
            assert LO_US * 1000 <= pulses[i] <= HI_US * 1000 or pulses[i] == 0
    assert mp["counters"]["limited"] > 0  # some codes ask for more than the limits allow


def test_sixteen_bit_frames(mpy):
    head, frames = _stream(10, seed=2, bits=16)
    sched = [(0, head.hex())] + [(33 * (k + 1), f.hex()) for k, (_, f) in enumerate(frames)]
    cpy, mp = _on_both(mpy, _cfg(), sched)
    assert mp == cpy
    codes = frames[-1][0]
    for i in range(NSERVO):
        if codes[i] is not None:
            assert abs(mp["pulses"][-1][i] - expected_ns(i, codes[i], 16)) <= 3


def test_velocity_limit_ramps(mpy):
    vel = 90.0  # deg/s -> 900 us/s -> 900 ns per ms
    enc = pk.Encoder(clock_us=lambda: 0)
    head = b"".join(enc.header(HEADER))
    sched = [(0, head.hex())] + [(10 + 20 * k, enc.frame([255] * NSERVO).hex()) for k in range(50)]
    sched += [(10990 + 20 * k, enc.frame([255] * NSERVO).hex()) for k in range(20)]  # a stall
    cpy, mp = _on_both(mpy, _cfg(vel=vel), sched)
    assert mp == cpy
    # the ramp starts at home (1500 us) and moves at most 900 ns per ms
    assert max(abs(mp["pulses"][1][i] - 1500000) for i in range(NSERVO)) == 900 * 10
    for k in range(2, len(sched)):
        dt = min(sched[k][0] - sched[k - 1][0], 100)  # a stalled loop counts as 100 ms at most
        for i in range(NSERVO):
            step = abs(mp["pulses"][k][i] - mp["pulses"][k - 1][i])
            assert step <= 900 * dt, (k, i, step)
    # and it gets there, clamped to the limits, without a failsafe in between
    assert mp["counters"]["failsafes"] == 0
    assert all(p in (LO_US * 1000, HI_US * 1000) for p in mp["pulses"][-1])


def test_corrupted_streams_never_move_a_servo_wrongly(mpy):
    head, frames = _stream(120, seed=3)
    rng = random.Random(4)
    stream = bytearray(head + b"".join(f for _, f in frames))
    for _ in range(60):
        stream[rng.randrange(len(head), len(stream))] ^= 1 << rng.randrange(8)
    at = rng.randrange(len(head), len(stream))
    stream[at:at] = bytes(rng.randrange(256) for _ in range(1500))  # junk, longer than a packet
    chunks = [bytes(stream[i:i + 37]) for i in range(0, len(stream), 37)]
    sched = [(10 * (k + 1), c.hex()) for k, c in enumerate(chunks)]
    cpy, mp = _on_both(mpy, _cfg(), sched)
    assert mp == cpy
    # what the unit's own decoder accepts is exactly what the firmware used
    ref = [p for p in pk.Decoder().feed(bytes(stream)) if p.is_frame()]
    assert mp["counters"]["frames"] == len(ref) and 0 < len(ref) < 120
    allowed = [set([0]) for _ in range(NSERVO)]
    for p in ref:
        for i, c in enumerate(p.frame()[1]):
            if c is not None:
                allowed[i].add(round(expected_ns(i, c)))
    for pin, ns in mp["log"]:
        assert any(abs(ns - a) <= 1 for a in allowed[pin]), (pin, ns)
        assert LO_US * 1000 <= ns <= HI_US * 1000
    assert mp["counters"]["dropped"] > 0


@pytest.mark.parametrize("action", ["hold", "release", "home"])
def test_failsafe_after_timeout(mpy, action):
    head, frames = _stream(5, seed=5)
    sched = [(0, head.hex())] + [(33 * (k + 1), f.hex()) for k, (_, f) in enumerate(frames)]
    sched += [(200, ""), (600, ""), (700, ""), (800, "")]
    cpy, mp = _on_both(mpy, _cfg(action=action), sched)
    assert mp == cpy
    before, after = mp["pulses"][5], mp["pulses"][-1]
    assert mp["counters"]["failsafes"] == 1 and mp["counters"]["state"] == pk.STATE_FAILSAFE
    if action == "hold":
        assert after == before
    elif action == "release":
        assert after == [0] * NSERVO
    else:
        assert after == [round(1500000)] * NSERVO
    # frames again: streaming resumes
    enc = pk.Encoder(clock_us=lambda: 0)
    sched2 = sched + [(900, enc.frame([128] * NSERVO).hex())]
    mp2 = _cpython_run(_cfg(action=action), sched2)
    assert mp2["counters"]["state"] == pk.STATE_STREAMING


def test_heartbeat_reply_reports_counters(mpy):
    head, frames = _stream(6, seed=6)
    host = pk.Encoder(clock_us=lambda: 0)
    junk = b"\x05\x01\x02\x00"
    sched = [(0, head.hex())] + [(33 * (k + 1), f.hex()) for k, (_, f) in enumerate(frames)]
    sched += [(300, (junk + host.heartbeat(1, 0, 0, 0)).hex())]
    cpy, mp = _on_both(mpy, _cfg(), sched)
    assert mp == cpy
    replies = [p for p in pk.Decoder().feed(bytes.fromhex(mp["tx"])) if p.name == "HEARTBEAT"]
    assert len(replies) == 1
    f = replies[0].fields
    assert f["frames"] == 6 and f["dropped"] == 1 and f["state"] == pk.STATE_STREAMING
    assert f["uptime_ms"] == 300


def test_no_allocation_per_frame_in_steady_state(mpy):
    head, frames = _stream(103, seed=7)
    warm = [head.hex()] + [f.hex() for _, f in frames[:3]]
    steady = [f.hex() for _, f in frames[3:]]
    code = "import json, fw_harness\nprint(json.dumps(fw_harness.heap_per_frame(%s, %s, %s)))" % (
        json.dumps(_cfg()), json.dumps(warm), json.dumps(steady))
    code = code.replace("true", "True").replace("false", "False").replace("null", "None")
    alloc, locked, nframes = json.loads(mpy.run(code, name="fw_heap", fresh=True))
    # the heap was locked over 100 frames: any allocation would have raised MemoryError
    assert locked is True and nframes == 103 and alloc == 0


def test_frames_before_a_header_are_not_used(mpy):
    enc = pk.Encoder(clock_us=lambda: 0)
    sched = [(10, enc.frame([10] * NSERVO).hex()), (20, enc.frame([20] * NSERVO).hex())]
    cpy, mp = _on_both(mpy, _cfg(), sched)
    assert mp == cpy and mp["pulses"][-1] == [0] * NSERVO and mp["counters"]["no_map"] == 2


def test_config_check_names_the_field():
    from device.firmware import config

    assert config.check(_cfg())["uart"]["baud"] == 115200
    bad = _cfg()
    bad["servos"][1]["pin"] = 0
    with pytest.raises(FormatError, match=r"servos\[1\].*pin 0"):
        config.check(bad)
    bad = _cfg()
    bad["servos"][2]["min_us"] = 3000
    with pytest.raises(FormatError, match="min_us"):
        config.check(bad)
    bad = _cfg(action="explode")
    with pytest.raises(FormatError, match="failsafe"):
        config.check(bad)
    with pytest.raises(FormatError):
        config.check({"format": "nope"})


def test_config_load_errors(tmp_path):
    from device.firmware import config

    p = tmp_path / "receiver.json"
    p.write_text("{not json")
    with pytest.raises(FormatError, match="not valid JSON"):
        config.load(str(p))
    with pytest.raises(FormatError, match="cannot be read"):
        config.load(str(tmp_path / "missing.json"))
    p.write_text(json.dumps(_cfg()))
    assert len(config.load(str(p))["servos"]) == NSERVO
