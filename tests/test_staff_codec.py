"""host/staff.py: the numpy codec path against protocol/staffcodec.py, bounds, unwrap, ranges."""

import numpy as np
import pytest
from hypothesis import assume, example, given, settings, strategies as st

from host import staff as hs
from host.staff import Row, Staff
from protocol import staffcodec as sc
from protocol import staffheader, staffranges

finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)


@st.composite
def rows_of_values(draw):
    nrows = draw(st.integers(1, 4))
    los, his, vals = [], [], []
    for _ in range(nrows):
        lo = draw(finite)
        hi = lo + draw(st.floats(1e-3, 2e4))
        assume(hi > lo)
        los.append(lo)
        his.append(hi)
        # values in range, out of range (clamped) and missing
        vals.append(draw(st.lists(st.one_of(st.floats(lo, hi), finite, st.just(float("nan"))),
                                  min_size=1, max_size=12)))
    n = min(len(v) for v in vals)
    return np.array(los), np.array(his), np.array([v[:n] for v in vals])


@settings(max_examples=400, deadline=None)
@given(rows_of_values(), st.sampled_from([8, 16]))
def test_numpy_codes_identical_to_pure(data, bits):
    lo, hi, v = data
    codes, missing = hs.encode(v, lo, hi, bits)
    assert codes.dtype == (np.uint8 if bits == 8 else np.uint16)
    for r in range(v.shape[0]):
        pure = sc.encode_column(list(v[r]), [lo[r]] * v.shape[1], [hi[r]] * v.shape[1], bits)
        assert [None if m else int(c) for c, m in zip(codes[r], missing[r])] == pure
        back = hs.decode(codes[r:r + 1], lo[r:r + 1], hi[r:r + 1], bits, missing[r:r + 1])[0]
        pure_back = sc.decode_column(pure, [lo[r]] * len(pure), [hi[r]] * len(pure), bits)
        assert [None if x != x else x for x in back] == pure_back


@settings(max_examples=1000, deadline=None)
@given(finite, st.floats(1e-3, 2e4), st.data(), st.sampled_from([8, 16]))
def test_error_at_most_half_a_step(lo, span, data, bits):
    hi = lo + span
    assume(hi > lo)
    v = np.array([[data.draw(st.floats(lo, hi)) for _ in range(5)]])
    c, m = hs.encode(v, [lo], [hi], bits)
    back = hs.decode(c, [lo], [hi], bits, m)
    bound = hs.max_error([lo], [hi], bits)[0]
    # the exact bound, plus a few ulps for the float arithmetic itself
    assert (np.abs(back - v) <= bound * (1 + 1e-9) + 1e-12 * np.abs(v)).all()


def test_lookup_table_decode_equals_direct():
    rng = np.random.default_rng(1)
    for bits in (8, 16):
        top = (1 << bits) - 1
        codes = rng.integers(0, top + 1, size=(3, 70000)).astype(np.uint16 if bits == 16 else np.uint8)
        lo, hi = np.array([-90.0, 0.0, 3.5]), np.array([90.0, 1e-3, 1e4])
        fast = hs.decode(codes, lo, hi, bits)
        slow = lo[:, None] + codes.astype(float) * (hi - lo)[:, None] / top
        assert np.array_equal(fast, slow)


def test_clamping_and_empty_range():
    c, m = hs.encode(np.array([[-1e300, 1e300, np.inf, -np.inf, np.nan]]), [0.0], [1.0], 8)
    assert c.tolist() == [[0, 255, 255, 0, 0]] and m.tolist() == [[False] * 4 + [True]]
    c, _ = hs.encode(np.array([[5.0]]), [1.0], [1.0], 16)     # span 0: code 0, like the pure path
    assert c.tolist() == [[0]] == [[sc.encode(5.0, 1.0, 1.0, 16)]]
    with pytest.raises(ValueError):
        hs.encode(np.zeros((1, 1)), [0.0], [1.0], 12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-4000, 4000).map(lambda k: k / 4.0), st.just(float("nan"))),
                min_size=1, max_size=40))
def test_unwrap_matches_pure_unwrapper(vals):
    # quarter degrees are exact in binary, so both paths must agree exactly (ties included)
    u = sc.Unwrapper([True, False])
    pure = [u.push([v, v])[0] for v in vals]
    fast = hs.unwrap_deg(np.array([vals, vals]), [True, False])
    assert [None if x != x else x for x in fast[0]] == [None if x != x else x for x in pure]
    assert np.array_equal(fast[1], np.array(vals), equal_nan=True)      # wrap False: untouched


def test_unwrap_through_180():
    v = np.array([[170.0, 179.0, -179.0, -170.0, 175.0]])
    assert hs.unwrap_deg(v).tolist() == [[170.0, 179.0, 181.0, 190.0, 175.0]]


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=1, max_size=30), st.sampled_from([8, 16]))
@example([31.2], 8)
def test_fit_ranges_contain_data_and_stay_tight(vals, bits):
    v = np.array([vals])
    lo, hi = hs.fit_ranges(v, bits)
    assert lo[0] <= v.min() and hi[0] >= v.max() and hi[0] > lo[0]
    span = v.max() - v.min()
    top = (1 << bits) - 1
    if span > 0:
        # a grid step at most 1/32 above span / (top - 2)
        assert hi[0] - lo[0] <= max(span, 1e-6) * top / (top - 2.0) * 33.0 / 32.0 * (1 + 1e-12) + 1e-9 * abs(v).max()
        assert staffranges.pack([float(lo[0])], [float(hi[0])], top) is not None     # on the header's grid
    # (a constant row keeps its value exactly, off the grid: the header then stores JSON numbers;
    # hypothesis found vals=[31.2] in CI)
    st_ = Staff(v, [Row("r", "deg", lo[0], hi[0])], bits=bits)
    err = np.abs(st_.quantised().values - v)
    assert (err <= st_.max_error()[0] * (1 + 1e-9) + 1e-12 * np.abs(v)).all()


def test_fit_constant_row_is_exact_and_nan_rows_survive():
    v = np.array([[15.7357] * 5, [np.nan] * 5, [1.0, np.nan, 3.0, 2.0, np.nan]])
    lo, hi = hs.fit_ranges(v, 8)
    assert lo[0] == 15.7357 and hi[0] > lo[0]
    st_ = Staff(v, [Row("a"), Row("b"), Row("c")]).refit("fit")
    q = st_.quantised().values
    assert (q[0] == 15.7357).all()
    assert np.isnan(q[1]).all()
    assert np.array_equal(np.isnan(q[2]), np.isnan(v[2]))


def test_staff_api_and_header():
    v = np.array([[0.0, 10.0, 20.0], [1.0, 2.0, np.nan]])
    s = Staff(v, [Row("knee", "deg", -10.0, 150.0, True), Row("ext", "m", 0.0, 5.0)], fps=60.0, bits=16,
              meta={"source": "test"})
    assert (s.frames, s.nrows, s.duration_s, s.row_index("ext")) == (3, 2, 0.05, 1)
    c, m = s.codes()
    back = Staff.from_codes(c, m, s.rows, s.fps, s.bits)
    assert np.array_equal(back.values, s.quantised().values, equal_nan=True)
    h = staffheader.loads(staffheader.dumps(s.header()))
    assert h["frames"] == 3 and h["bits"] == 16 and h["rows"][0]["wrap"] is True and h["source"] == "test"
    cp = s.copy()
    cp.values[0, 0] = 99.0
    assert s.values[0, 0] == 0.0
    with pytest.raises(KeyError):
        s.row_index("nope")
    with pytest.raises(ValueError):
        Staff(v, [Row("one")])
    with pytest.raises(ValueError):
        Staff(v, s.rows, bits=12)
    with pytest.raises(ValueError):
        Staff(v, s.rows, fps=0)


def test_skeleton_ranges():
    from device.body.human import human_model

    sk = human_model()
    v = np.zeros((sk.ndof, 4))
    s = Staff(v, [Row(n, d.unit) for n, d in zip(sk.dof_names, sk.dofs)], skeleton=sk).refit("skeleton")
    assert np.array_equal(s.lo, sk.lo) and np.array_equal(s.hi, sk.hi)
    with pytest.raises(ValueError):
        Staff(v[:1], [Row("nope")], skeleton=sk).refit("skeleton")
