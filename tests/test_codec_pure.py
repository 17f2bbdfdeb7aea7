"""The pure-Python staff codec and header (protocol/): exact bounds, clamping, missing, unwrap."""

import math

import pytest
from hypothesis import assume, given, settings, strategies as st

from protocol import staffcodec as sc
from protocol import staffheader
from protocol.errors import FormatError

finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)


@st.composite
def range_and_value(draw):
    lo = draw(finite)
    span = draw(st.floats(1e-3, 2e4))
    hi = lo + span
    assume(hi > lo)
    v = draw(st.floats(lo, hi))
    return lo, hi, v


@settings(max_examples=2000, deadline=None)
@given(range_and_value(), st.sampled_from([8, 16]))
def test_error_is_at_most_half_a_step(rv, bits):
    lo, hi, v = rv
    c = sc.encode(v, lo, hi, bits)
    assert 0 <= c <= (1 << bits) - 1
    back = sc.decode(c, lo, hi, bits)
    # the bound of the issue, with a few ulps for the float arithmetic itself
    assert abs(back - v) <= (hi - lo) / (2 * ((1 << bits) - 1)) * (1 + 1e-9) + 1e-12 * abs(v)


@given(range_and_value(), st.sampled_from([8, 16]))
def test_codes_are_monotonic_and_exact_on_levels(rv, bits):
    lo, hi, v = rv
    c = sc.encode(v, lo, hi, bits)
    assert sc.encode(sc.decode(c, lo, hi, bits), lo, hi, bits) == c
    assert sc.encode(min(hi, v + (hi - lo) * 0.01), lo, hi, bits) >= c


def test_clamping_and_missing():
    assert sc.encode(-1000.0, -90, 90, 8) == 0
    assert sc.encode(1000.0, -90, 90, 8) == 255
    assert sc.encode(1e300, -90, 90, 16) == 65535
    assert sc.encode(float("inf"), 0, 1, 8) == 255
    assert sc.encode(float("-inf"), 0, 1, 8) == 0
    assert sc.encode(None, 0, 1, 8) is None
    assert sc.encode(float("nan"), 0, 1, 8) is None
    assert sc.decode(None, 0, 1, 8) is None
    assert sc.encode_column([1.0, None, 3.0], [0, 0, 0], [4, 4, 4], 8) == [64, None, 191]
    with pytest.raises(ValueError):
        sc.encode(1.0, 0, 2, 12)


def test_half_way_rounds_up():
    # (v - lo) / span * 255 = 0.5 exactly -> code 1 (round half up, both paths)
    assert sc.encode(0.5, 0.0, 255.0, 8) == 1
    assert sc.encode(1.5, 0.0, 255.0, 8) == 2
    assert sc.encode(2.5, 0.0, 255.0, 8) == 3


@given(st.floats(-720, 720), st.floats(-180, 180))
def test_unwrap_lands_within_half_a_turn(prev, v):
    u = sc.unwrap_deg(prev, v)
    assert abs(u - prev) <= 180.0 + 1e-9
    assert abs(math.remainder(u - v, 360.0)) < 1e-9


def test_unwrapper_keeps_a_turn_continuous():
    u = sc.Unwrapper([True, False])
    out = [u.push([a, a]) for a in (170.0, 179.0, -179.0, -170.0, 175.0)]
    assert [o[0] for o in out] == [170.0, 179.0, 181.0, 190.0, 175.0]
    assert [o[1] for o in out] == [170.0, 179.0, -179.0, -170.0, 175.0]
    assert u.push([None, None]) == [None, None]


def _header():
    return staffheader.make(rows=[{"name": "a", "unit": "deg", "lo": -90, "hi": 90, "wrap": True},
                                  {"name": "b", "unit": "m", "lo": 0, "hi": 2}],
                            fps=30, bits=8, frames=10, source="test")


def test_header_round_trip():
    h = _header()
    assert staffheader.loads(staffheader.dumps(h)) == h
    assert staffheader.loads(staffheader.dumps(h).encode()) == h


@pytest.mark.parametrize("field, value, msg", [
    ("format", "png", "'format'"),
    ("version", 2, "unknown version 2"),
    ("fps", 0, "'fps'"),
    ("fps", float("nan"), "'fps'"),
    ("bits", 12, "'bits'"),
    ("frames", -1, "'frames'"),
    ("rows", [], "'rows'"),
    ("skeleton", [1], "'skeleton'"),
])
def test_header_names_the_wrong_field(field, value, msg):
    h = _header()
    h[field] = value
    with pytest.raises(FormatError, match=msg):
        staffheader.check(h)


def test_header_rows_checked():
    h = _header()
    h["rows"][1]["hi"] = -1
    with pytest.raises(FormatError, match=r"rows\[1\] \(b\): 'hi'"):
        staffheader.check(h)
    h = _header()
    h["rows"][1]["name"] = "a"
    with pytest.raises(FormatError, match="repeats rows"):
        staffheader.check(h)
    for bad in (b"\xff\xfe", b"{", b"[]", b"null"):
        with pytest.raises(FormatError):
            staffheader.loads(bad)
