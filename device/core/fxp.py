"""Fixed-point helpers: one rounding rule, saturation, division, sin/cos in Q30, isqrt.

    from device.core import fxp
    a_q16 = fxp.from_float(1.5, 16)            # host boundary only: 98304
    fxp.mul(a_q16, a_q16, 16)                  # 1.5 * 1.5 in Q16 -> 147456 (2.25)
    fxp.sin_q30(fxp.PI_Q30 // 6)               # ~ 0.5 in Q30 (536870912 +- 2)

Numbers are plain ints with a binary scale named in the variable (`x_q20` = x * 2^20). Every
result is rounded once, half up (towards +infinity): `(acc + (1 << (s-1))) >> s`; `>>` floors on
both CPython and MicroPython, so results are bit-identical there. Division rounds the same way:
`(2*a + b) // (2*b)` with b made positive first. No floats, no `/`, no round(), no math.* on
the fixed-point path; from_float / to_float are for the host side (tests, configuration).
MicroPython-safe: no int.bit_length, no math.isqrt (bit_length() and isqrt() are given here).
"""

# pi, pi/2 and 2*pi in Q30: floor(v * 2^30 + 0.5), generated on CPython
PI_Q30 = 3373259426
HALF_PI_Q30 = 1686629713
TWO_PI_Q30 = 6746518852
ONE_Q30 = 1 << 30

# Taylor coefficients (-1)^k / (2k+1)! in Q62, for sin on [-pi/2, pi/2] (degree 17: error < 1e-12)
_SIN_C_Q62 = (
    4611686018427387904,
    -768614336404564651,
    38430716820228233,
    -915017067148291,
    12708570377060,
    -115532457973,
    740592679,
    -3526632,
    12966,
)


def round_shift(acc, s):
    """acc / 2^s rounded half up (s > 0); acc << -s for s <= 0 (exact)."""
    if s <= 0:
        return acc << (-s)
    # (acc + 2^(s-1)) >> s == floor(acc / 2^s + 1/2)
    return (acc + (1 << (s - 1))) >> s


def mul(a, b, s):
    """a * b / 2^s, rounded once half up (e.g. Q16 * Q16 -> Q16 with s = 16)."""
    return round_shift(a * b, s)


def div_round(a, b):
    """a / b rounded half up (towards +infinity on ties); b != 0, any signs."""
    if b == 0:
        raise ZeroDivisionError("fxp.div_round: division by zero")
    if b < 0:
        a = -a
        b = -b
    # floor(a/b + 1/2) == floor((2a + b) / 2b)
    return (2 * a + b) // (2 * b)


def div_q(a, b, s):
    """(a << s) / b rounded half up: the quotient of two same-format numbers in Q(s)."""
    return div_round(a << s, b)


def sat(v, lo, hi):
    """v clamped to [lo, hi]."""
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


def sat_bits(v, bits):
    """v clamped to a signed two's-complement width: [-2^(bits-1), 2^(bits-1) - 1]."""
    top = (1 << (bits - 1)) - 1
    if v > top:
        return top
    if v < -top - 1:
        return -top - 1
    return v


def bit_length(n):
    """int.bit_length() for MicroPython, which lacks it: bits of |n|, 0 for 0."""
    n = -n if n < 0 else n
    b = 0
    while n >= 0x10000:
        n >>= 16
        b += 16
    while n:
        n >>= 1
        b += 1
    return b


def isqrt(n):
    """floor(sqrt(n)) for an int n >= 0 (Newton's method; math.isqrt is not on MicroPython)."""
    if n < 0:
        raise ValueError("fxp.isqrt: negative argument")
    if n < 2:
        return n
    # start above the root: 2^ceil(bits/2) >= sqrt(n)
    x = 1 << ((bit_length(n) + 1) >> 1)
    while True:
        # x' = (x + n // x) // 2 decreases monotonically to floor(sqrt(n))
        y = (x + n // x) >> 1
        if y >= x:
            return x
        x = y


def sqrt_q(v, s):
    """sqrt of a Q(s) value in Q(s), rounded to nearest: isqrt(v * 2^s) with a half-up fix."""
    # sqrt(v / 2^s) * 2^s = sqrt(v * 2^s)
    n = v << s
    r = isqrt(n)
    # round half up: r + 1 if (r + 1/2)^2 <= n, i.e. 4n >= (2r + 1)^2
    if 4 * n >= (2 * r + 1) * (2 * r + 1):
        r += 1
    return r


def _sin_core_q30(x_q30):
    # x in [-pi/2, pi/2]; sin x = x * sum_k c_k (x^2)^k, evaluated by Horner in Q62
    x2_q62 = x_q30 * x_q30 << 2
    acc_q62 = _SIN_C_Q62[8]
    for k in (7, 6, 5, 4, 3, 2, 1, 0):
        # acc = c_k + x^2 * acc
        acc_q62 = _SIN_C_Q62[k] + round_shift(x2_q62 * acc_q62, 62)
    # sin = x * acc: Q30 * Q62 -> Q30
    return round_shift(x_q30 * acc_q62, 62)


def sin_q30(x_q30):
    """sin(x) in Q30 for x in radians Q30 (error < 1 LSB for |x| <= 4 rad, < 4 LSB to 64 rad)."""
    # reduce to [-pi, pi): x - 2*pi*round(x / 2pi)
    x = x_q30 - TWO_PI_Q30 * div_round(x_q30, TWO_PI_Q30)
    # fold into [-pi/2, pi/2] with sin(pi - x) = sin(x)
    if x > HALF_PI_Q30:
        x = PI_Q30 - x
    elif x < -HALF_PI_Q30:
        x = -PI_Q30 - x
    return _sin_core_q30(x)


def cos_q30(x_q30):
    """cos(x) in Q30 for x in radians Q30: sin(x + pi/2)."""
    return sin_q30(x_q30 + HALF_PI_Q30)


def from_float(v, s):
    """Host boundary only: floor(v * 2^s + 0.5) as an int (round half up, like round_shift)."""
    import math

    return int(math.floor(v * (1 << s) + 0.5))


def to_float(v, s):
    """Host boundary only: an int in Q(s) back to a float."""
    return v / float(1 << s)
