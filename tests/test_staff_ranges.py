"""protocol/staffranges.py (the header's packed "r" ranges) and the version 3 header: round trips,
a byte-exact vector, bad input, old (version 2) files, and the 300-byte goal on a built-in body."""

import json
import math
import pathlib
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host.stafffile import decode_png, encode_png, header_text
from host.staff import Row, Staff
from protocol import staffheader
from protocol import staffranges as sr
from protocol.errors import FormatError
from test_staff_budget import _human_staff

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"

# the vector of protocol/SPEC.md section 6: four rows at 8 bits
VEC_LOS = [-7.25, 0.0, 3.0, 12.5]
VEC_KS = [-50, -40, 3, -40]
VEC_TEXT = "kjWHxbkciXA0w"
STEP_DOWN, STEP_UP = 0.01220703125, 0.012451171875      # 50 / 4096 and 51 / 4096


def _his(los, ks, top):
    return [lo + sr.step_of(k) * top for lo, k in zip(los, ks)]


def test_grid_and_vector():
    assert (sr.step_of(0), sr.step_of(-1), sr.step_of(32), sr.step_of(-32)) == (1.0, 0.984375, 2.0, 0.5)
    assert sr.index_of(0.984375) == -1 and sr.index_of(0.0123) is None and sr.index_of(-1.0) is None
    assert sr.step_down(0.0123) == STEP_DOWN and sr.step_up(0.0123) == STEP_UP
    assert sr.coarse(-7.31, -7.2) == -7.25 and sr.coarse(3.1, 3.3) == 3.25 and sr.coarse(-1.0, 2.0) == 0.0
    his = _his(VEC_LOS, VEC_KS, 255)
    assert sr.pack(VEC_LOS, his, 255) == VEC_TEXT
    assert sr.unpack(VEC_TEXT, 4, 255) == (VEC_LOS, his)
    assert sr.pack([0.0], [0.1], 255) is None                  # 0.1 / 255 is not on the grid


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-12, 1e12))
def test_step_down_up_bracket(x):
    d, u = sr.step_down(x), sr.step_up(x)
    assert d <= x <= u and u <= d * 33.0 / 32.0
    assert sr.index_of(d) is not None and sr.index_of(u) is not None


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(0.0, 1e6))
def test_coarse_is_inside(a, w):
    b = a + w
    x = sr.coarse(a, b)
    assert a <= x <= b
    n, f = sr._dyadic(x)
    assert x == math.ldexp(float(n), f)


rows_on_grid = st.lists(st.tuples(st.integers(-600, 300), st.integers(-10**6, 10**6), st.integers(-40, 10)),
                        min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(rows_on_grid, st.sampled_from([8, 16]), st.booleans())
def test_pack_round_trip_exact(rows, bits, with_ref):
    top = (1 << bits) - 1
    los = [math.ldexp(float(n), f) for _, n, f in rows]
    his = _his(los, [k for k, _, _ in rows], top)
    ref = [k + 7 * (i % 3) for i, (k, _, _) in enumerate(rows)] if with_ref else None
    text = sr.pack(los, his, top, ref)
    if any(hi - lo != sr.step_of(k) * top for lo, hi, (k, _, _) in zip(los, his, rows)):
        assert text is None          # lo + top * step rounded: off the grid, the header writes JSON numbers
        return
    assert isinstance(text, str)
    assert sr.unpack(text, len(rows), top, ref) == (los, his)
    with pytest.raises(FormatError):
        sr.unpack(text, len(rows) + 1, top, ref)


values = st.lists(st.floats(-500.0, 500.0, allow_nan=False), min_size=2, max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(values, min_size=1, max_size=6), st.sampled_from([8, 16]), st.sampled_from(["fit", "budget"]))
def test_file_round_trip_within_half_a_step(vals, bits, ranges):
    """Any data, fitted or budgeted: the header holds the ranges as "r", the file decodes exactly
    to the quantised staff, and every decoded value is within half a step of the original."""
    n = min(len(v) for v in vals)
    v = np.array([x[:n] for x in vals])
    rows = [Row("r%d" % i, "deg") for i in range(len(v))]
    staff = Staff(v, rows, bits=bits)
    if ranges == "fit":
        staff = staff.refit("fit")
    else:
        lo, hi = sr_budget_like(v, bits)
        staff = Staff(v, [r._replace(lo=a, hi=b) for r, a, b in zip(rows, lo, hi)], bits=bits)
    c = json.loads(header_text(staff))
    assert "r" in c and "lo" not in c and c["version"] == 3
    back = decode_png(encode_png(staff, effort=0))
    assert back.lo.tolist() == staff.lo.tolist() and back.hi.tolist() == staff.hi.tolist()
    assert np.array_equal(back.values, staff.quantised().values)
    err = np.abs(back.values - v)
    assert (err <= back.max_error()[:, None] * (1 + 1e-12)).all()


def sr_budget_like(v, bits):
    """host/budget.py's range placement (ranges_for) at a step of a fifth of the data's span."""
    from host.budget import ranges_for

    lo_v, hi_v = v.min(axis=1), v.max(axis=1)
    top = (1 << bits) - 1
    step = np.array([sr.step_up(max(b - a, 1e-3) / (top - 1.0) * 50.0) if b > a else sr.step_down(1e-9)
                     for a, b in zip(lo_v, hi_v)])
    step = np.array([max(s, sr.step_up((b - a) / (top - 1.0))) if b > a else s for s, a, b in zip(step, lo_v, hi_v)])
    return ranges_for(lo_v, hi_v, step, bits)


def test_bad_r_is_one_line_error():
    his = _his(VEC_LOS, VEC_KS, 255)
    text = sr.pack(VEC_LOS, his, 255)
    for bad, msg in ((text[:3], "truncated"), (text[:5] + "*" + text[6:], "not base64"),
                     (text + "A" * 4, "more than 4 rows"), (text + "g", "more than 4 rows"),
                     ("A" * 20, "too large"), ("Y///", "known code choice"), (7, "must be a string")):
        with pytest.raises(FormatError, match=msg):
            sr.unpack(bad, 4, 255)
    h = staffheader.make([{"name": "a", "lo": VEC_LOS[0], "hi": his[0]}], bits=8)
    c = staffheader.pack(h)
    assert "r" in c and staffheader.unpack(c)["rows"] == h["rows"]
    c["r"] = c["r"][:2]
    with pytest.raises(FormatError, match="header: 'r' ends inside a row"):
        staffheader.unpack(c)


@pytest.mark.parametrize("name, has", [("staff_v2_human48_budget.png", "step"), ("staff_v2_human48_fit.png", "hi")])
def test_version_2_files_keep_reading(name, has):
    """Written by the version 2 writer (decimal ranges, "lo" + "step" or "hi" lists)."""
    data = (GOLDEN / name).read_bytes()
    i = data.index(b"zTXt")
    text = json.loads(zlib.decompress(data[i + 4 + len(b"motionstaff") + 2:]))
    assert text["version"] == 2 and has in text and "r" not in text
    back = decode_png(data, name)
    orig = _human_staff(seed=0, frames=20)
    assert back.names == orig.names and back.frames == 20
    assert back.lo.tolist() == [float(x) for x in text["lo"]]
    if has == "step":
        assert back.meta["max_error_mm"] == 2.0 and back.bits == 16
    assert (np.abs(back.values - orig.values) <= back.max_error()[:, None] * (1 + 1e-9) + 1e-12).all()
    # written again, it is a version 3 file with the same ranges (as JSON numbers: they are off the grid)
    again = decode_png(encode_png(back, effort=0))
    assert again.lo.tolist() == back.lo.tolist() and again.hi.tolist() == back.hi.tolist()
    assert np.array_equal(again.values, back.values)


def _zTXt_bytes(png):
    i = png.index(b"zTXt")
    return int.from_bytes(png[i - 4:i], "big") + 12


def test_builtin_body_header_at_most_300_bytes():
    st_ = _human_staff(seed=3, frames=60)
    st_.meta["captured"] = "2026-12-01T12:00:00Z"
    sizes = {}
    for name, s2 in (("skeleton", st_.refit("skeleton")), ("fit", st_.refit("fit")),
                     ("budget", st_.refit("budget", max_error_mm=1.0))):
        c = json.loads(header_text(s2))
        assert ("ranges" in c) if name == "skeleton" else ("r" in c), c
        sizes[name] = _zTXt_bytes(encode_png(s2, effort=2))
        back = decode_png(encode_png(s2, effort=0))
        assert back.lo.tolist() == s2.lo.tolist() and back.hi.tolist() == s2.hi.tolist()
    assert max(sizes.values()) <= 300, sizes


@settings(max_examples=50, deadline=None)
@given(rows_on_grid, st.integers(0, 1), st.integers(0, 3), st.integers(0, 3))
def test_cost_is_what_write_writes(rows, mode, ok, on):
    syms = [(k, 0 if n == 0 else (abs(n) | 1 if n > 0 else 1 + (abs(n) | 1)), f) for k, n, f in rows]
    assert sr._cost(syms, mode, ok, on) == len(sr._write(syms, mode, ok, on))


def test_ranges_against_a_json_skeleton_whose_limits_the_header_rounds():
    """A skeleton stored as short JSON (limits at 6 significant digits): the steps are predicted
    from the limits the reader rebuilds, so the ranges come back exactly."""
    from device.body.human import human_model

    sk = human_model()
    sk.name = "custom48"
    for d in sk.dofs:
        d.lo, d.hi = d.lo - 0.1234567891, d.hi + 0.9876543219
    st_ = _human_staff(seed=1, frames=30)
    st_.skeleton = sk
    for s2 in (st_.refit("fit"), st_.refit("skeleton"), st_.refit("budget", max_error_mm=2.0)):
        c = json.loads(header_text(s2))
        assert "json" in c["sk"]
        back = decode_png(encode_png(s2, effort=0))
        assert back.lo.tolist() == s2.lo.tolist() and back.hi.tolist() == s2.hi.tolist()
        assert np.array_equal(back.values, s2.quantised().values)
