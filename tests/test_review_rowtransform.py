"""Fresh-eyes review of the "d2p" row transform (protocol/rowtransform.py and its numpy twin
host/rowtransform.py): planes that cannot be forward's output (an odd count, rows of unequal
length, samples above a byte) and codes outside 16 bits are refused, not decoded to a silent
wrong staff; 0- and 1-column staffs and the code range's ends round-trip in both twins."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host.rowtransform import from_planes, to_planes
from protocol import rowtransform
from protocol.errors import FormatError


@pytest.mark.parametrize("planes, what", [
    ([[1, 2], [3, 4], [5, 6]], "even"),          # 3 plane rows: was 1 code row, the third dropped
    ([[1, 2, 3], [3]], "length"),                # a low plane shorter: was cut to its length
    ([[300], [0]], "byte"),                      # a 16-bit sample: was (300 << 8) | 0, wrapped
    ([[0], [-1]], "byte"),
])
def test_pure_inverse_refuses_planes_forward_cannot_make(planes, what):
    with pytest.raises(FormatError, match=what):
        rowtransform.inverse("d2p", planes)


@pytest.mark.parametrize("rows", [[[65536]], [[0, -1]], [[1.5]]])
def test_pure_forward_refuses_codes_outside_16_bits(rows):
    # 65536 came back as 0, -1 as 65535: the file held another staff than the one written
    with pytest.raises(ValueError, match="16-bit"):
        rowtransform.forward("d2p", rows)


@pytest.mark.parametrize("planes, what", [
    (np.zeros((3, 4), np.uint8), "even"),         # was 2 code rows, broadcast from 1 high plane
    (np.zeros(4, np.uint8), "2-D"),               # was an AxisError traceback
    (np.array([[300], [0]]), "byte"),
])
def test_numpy_from_planes_refuses_what_to_planes_cannot_make(planes, what):
    with pytest.raises(FormatError, match=what):
        from_planes(planes)


@pytest.mark.parametrize("codes", [np.array([[70000, 5]]), np.array([[-5, 5]]), np.zeros(3, np.uint16)])
def test_numpy_to_planes_refuses_what_is_not_16_bit_code_rows(codes):
    with pytest.raises(ValueError):
        to_planes(codes)


@pytest.mark.parametrize("frames", [0, 1, 2])
def test_short_rows_and_the_codes_ends_round_trip_in_both_twins(frames):
    for ends in ([0, 65535], [65535, 0], [65535, 65535], [0, 0]):
        c = np.array([(ends * 2)[:frames], (ends[::-1] * 2)[:frames]], np.uint16).reshape(2, frames)
        p = to_planes(c)
        assert p.shape == (4, frames) and np.array_equal(from_planes(p), c)
        assert rowtransform.forward("d2p", c.tolist()) == p.tolist()
        assert rowtransform.inverse("d2p", p.tolist()) == c.tolist()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.sampled_from([0, 1, 2, 32767, 32768, 65534, 65535]) | st.integers(0, 65535),
                         min_size=5, max_size=5), min_size=1, max_size=4))
def test_any_codes_round_trip_and_the_twins_agree(rows):
    p = rowtransform.forward("d2p", rows)
    assert all(0 <= b <= 255 for r in p for b in r)
    assert rowtransform.inverse("d2p", p) == rows
    assert np.array_equal(to_planes(np.array(rows, np.uint16)), np.array(p, np.uint8))
    assert from_planes(np.array(p, np.uint8)).tolist() == rows


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.integers(0, 255), min_size=6, max_size=6), min_size=2, max_size=6)
       .filter(lambda p: len(p) % 2 == 0))
def test_any_bytes_decode_to_codes_and_the_twins_agree(planes):
    pure = rowtransform.inverse("d2p", planes)
    assert all(0 <= c <= 65535 for r in pure for c in r)
    assert from_planes(np.array(planes, np.uint8)).tolist() == pure
    # and they are the planes of those codes again (the transform is a bijection)
    assert rowtransform.forward("d2p", pure) == planes
