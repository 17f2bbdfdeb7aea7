"""The golden vectors on the real rp2 port (emulated RP2040): equal to CPython's, bit for bit.

Integer code (fxp, the fixed-point EKF, CRC, COBS, packets, container, servo drivers) is
identical. staffcodec works in floats, which are single precision on the Pico: its codes are
identical, its decoded floats are CPython's to float32 precision (so the receiver avoids floats
per frame). The 48-joint EKF run is in benchmarks/micropython.py (~7 s of emulated time).
"""

import struct
import sys

import pytest

from tools import gen_golden
from tools.mpy import pico

sys.path.insert(0, gen_golden.HERE + "/mpy")
import golden_cases  # noqa: E402

EXACT = ["fxp", "staffheader", "cobs", "crc", "packets", "container", "servo"]


@pytest.fixture(scope="module")
def on_pico():
    pico.require()
    return pico.golden(EXACT + ["staffcodec", "ekf_q.small", "servo_map"])


@pytest.mark.parametrize("name", EXACT)
def test_bit_identical_on_the_pico(name, on_pico):
    want = gen_golden.normalise(dict(golden_cases.CASES)[name]())
    assert want not in (None, {})
    assert on_pico[name][0] == want


def test_fixed_point_ekf_identical_on_the_pico(on_pico):
    want = gen_golden.normalise(golden_cases.ekf_run(6, 40, 3))      # 40 steps of 6 joints
    assert on_pico["ekf_q.small"][0] == want


def _f(h):
    return None if h is None else struct.unpack("<d", bytes.fromhex(h))[0]


def test_staffcodec_codes_identical_floats_single_precision(on_pico):
    got = on_pico["staffcodec"][0]
    want = gen_golden.normalise(golden_cases.case_staffcodec())
    assert [e[4] for e in got["encode"]] == [e[4] for e in want["encode"]]   # every code
    assert got["unwrap"] == want["unwrap"]
    assert got["decode"] != want["decode"]          # the Pico's floats are not CPython's doubles
    for (bits, g), (_, w), enc in zip(got["decode"], want["decode"], want["encode"]):
        span = _f(enc[2]) - _f(enc[1])
        for a, b in zip(g, w):
            if b is None:
                assert a is None
            else:
                # float32: 24-bit mantissa; the decode takes a few roundings
                assert abs(_f(a) - _f(b)) <= 4 * 2.0 ** -24 * max(abs(_f(b)), span), (a, b)


def test_receiver_pulses_equal_cpython_to_the_microsecond(on_pico):
    """The header-time fold (floats: single precision on the Pico) moves no pulse by 1 us."""
    import pico_golden
    from device.servo.emulate.board import Board

    got = on_pico["servo_map"][0]
    want = pico_golden.servo_map(Board())
    assert len(got) == len(want) == 30
    diff = max(abs(a - b) for g, w in zip(got, want) for a, b in zip(g, w))
    assert diff <= 1, diff             # ns (single-precision rounding at header time); < 1 us
    print("max |Pico - CPython| pulse: %d ns" % diff)
