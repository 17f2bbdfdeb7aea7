"""device/core/fxp.py: the one rounding rule, division, saturation, isqrt, sin/cos in Q30."""

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from device.core import fxp

# (acc, s, expected): round half up, i.e. ties go towards +infinity, negative ties included
ROUND_SHIFT = [
    (1, 1, 1), (-1, 1, 0), (3, 1, 2), (-3, 1, -1), (2, 1, 1), (-2, 1, -1),
    (-5, 2, -1), (-6, 2, -1), (-7, 2, -2), (6, 2, 2), (5, 2, 1), (7, 2, 2),
    (0, 5, 0), (5, 0, 5), (5, -2, 20), (-5, -2, -20), ((1 << 100) + (1 << 69), 70, 1 << 30 | 1),
    (-(1 << 29), 30, 0), (-(1 << 29) - 1, 30, -1),
]

# (a, b, expected) for div_round
DIV_ROUND = [
    (1, 2, 1), (-1, 2, 0), (3, 2, 2), (-3, 2, -1), (1, -2, 0), (-1, -2, 1), (7, 3, 2),
    (-7, 3, -2), (5, -3, -2), (0, 5, 0), (-8, 4, -2), (10 ** 30, 3, 333333333333333333333333333333),
]


@pytest.mark.parametrize("acc,s,want", ROUND_SHIFT)
def test_round_shift_golden(acc, s, want):
    assert fxp.round_shift(acc, s) == want


@pytest.mark.parametrize("a,b,want", DIV_ROUND)
def test_div_round_golden(a, b, want):
    assert fxp.div_round(a, b) == want


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(-(1 << 80), 1 << 80), st.integers(1, 70))
def test_round_shift_is_floor_half_up(acc, s):
    assert fxp.round_shift(acc, s) == math.floor(Fraction(acc, 1 << s) + Fraction(1, 2))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(-(1 << 80), 1 << 80), st.integers(-(1 << 40), 1 << 40).filter(lambda b: b != 0))
def test_div_round_is_floor_half_up(a, b):
    assert fxp.div_round(a, b) == math.floor(Fraction(a, b) + Fraction(1, 2))


def test_div_round_by_zero():
    with pytest.raises(ZeroDivisionError):
        fxp.div_round(1, 0)


def test_mul_and_div_q():
    a = fxp.from_float(1.5, 16)
    assert a == 98304
    assert fxp.mul(a, a, 16) == fxp.from_float(2.25, 16)
    assert fxp.div_q(fxp.from_float(1.0, 16), fxp.from_float(3.0, 16), 16) == 21845
    assert fxp.div_q(-fxp.from_float(1.0, 16), fxp.from_float(3.0, 16), 16) == -21845


def test_saturation_exact_bounds():
    assert fxp.sat(5, -3, 3) == 3 and fxp.sat(-5, -3, 3) == -3 and fxp.sat(2, -3, 3) == 2
    assert fxp.sat_bits(1 << 40, 32) == (1 << 31) - 1
    assert fxp.sat_bits(-(1 << 40), 32) == -(1 << 31)
    assert fxp.sat_bits((1 << 31) - 1, 32) == (1 << 31) - 1
    assert fxp.sat_bits(-(1 << 31), 32) == -(1 << 31)
    assert fxp.sat_bits(128, 8) == 127 and fxp.sat_bits(-129, 8) == -128


def test_from_float_rounds_half_up():
    assert fxp.from_float(0.5, 0) == 1
    assert fxp.from_float(-0.5, 0) == 0
    assert fxp.from_float(-1.5, 0) == -1
    assert fxp.from_float(2.5, 0) == 3
    assert fxp.to_float(3 << 19, 20) == 1.5


def test_bit_length_and_isqrt():
    rng = random.Random(7)
    cases = [0, 1, 2, 3, 4, 15, 16, 17, 255, 256, (1 << 64) - 1, 1 << 64, 10 ** 40]
    cases += [rng.getrandbits(rng.randint(1, 200)) for _ in range(3000)]
    for n in cases:
        assert fxp.bit_length(n) == n.bit_length()
        assert fxp.bit_length(-n) == n.bit_length()
        assert fxp.isqrt(n) == math.isqrt(n)
    with pytest.raises(ValueError):
        fxp.isqrt(-1)


def test_sqrt_q_rounds_to_nearest():
    for v in [0, 1, 2, 1 << 16, 3 << 16, 12345678]:
        want = math.floor(math.sqrt(v / 65536.0) * 65536 + 0.5)
        assert abs(fxp.sqrt_q(v, 16) - want) <= 1
    assert fxp.sqrt_q(4 << 16, 16) == 2 << 16


def test_constants():
    assert fxp.PI_Q30 == math.floor(math.pi * 2 ** 30 + 0.5)
    assert fxp.HALF_PI_Q30 == math.floor(math.pi / 2 * 2 ** 30 + 0.5)
    assert fxp.TWO_PI_Q30 == math.floor(2 * math.pi * 2 ** 30 + 0.5)
    for k, c in enumerate(fxp._SIN_C_Q62):
        assert c == math.floor(Fraction((-1) ** k, math.factorial(2 * k + 1)) * 2 ** 62 + Fraction(1, 2))


SIN_GOLDEN = [(0, 0), (fxp.HALF_PI_Q30, 1 << 30), (-fxp.HALF_PI_Q30, -(1 << 30)),
              (fxp.PI_Q30 // 6, 536870912), (fxp.PI_Q30, 0)]


@pytest.mark.parametrize("x,want", SIN_GOLDEN)
def test_sin_golden(x, want):
    assert abs(fxp.sin_q30(x) - want) <= 1


@pytest.mark.parametrize("lim,bound", [(4.0, 1.0), (64.0, 4.0)])
def test_sin_cos_error_bound(lim, bound):
    rng = random.Random(3)
    for _ in range(5000):
        x = fxp.from_float(rng.uniform(-lim, lim), 30)
        xf = x / 2.0 ** 30
        assert abs(fxp.sin_q30(x) - math.sin(xf) * 2 ** 30) < bound
        assert abs(fxp.cos_q30(x) - math.cos(xf) * 2 ** 30) < bound


def test_sin_is_odd_and_periodic():
    for x in (1, 12345, 987654321, 3 * fxp.PI_Q30 // 4):
        assert fxp.sin_q30(-x) == -fxp.sin_q30(x)
        assert abs(fxp.sin_q30(x + fxp.TWO_PI_Q30) - fxp.sin_q30(x)) <= 1
