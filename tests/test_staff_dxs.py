"""The "dxs" row transform (the 16-bit default until session 15, now dxe's, tests/test_staff_dxe.py): dxp with the low planes in the order of their
high planes' sums.

Both twins agree and round-trip exactly (hypothesis, random orders, references and missing
values); the low planes are in that order; files round-trip byte for byte, any PNG reader opens
them, and on a real clip dxs is smaller than dxp; a dxp file written before
(tests/golden/staff_v3_dxp_131_03_short.png, with missing values) still reads; a
reader without dxs refuses the file in one line.
"""

import io
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from host.bvh import read_bvh
from host.cli import main
from host.rowtransform import choose, from_planes, low_order, sort_low, to_planes, unsort_low
from host.staff import Row, Staff
from host.stafffile import decode_png, encode_png
from protocol import rowtransform

CLIP = pathlib.Path(__file__).resolve().parent.parent / "host" / "data" / "131_03_short.bvh"


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.integers(0, 10 ** 6), st.sampled_from([0, 1, 30, 3000, 65535]),
       st.booleans())
def test_dxs_and_dxe_round_trip_is_exact_and_the_twins_agree(rows, frames, seed, walk, edge):
    rng = np.random.default_rng(seed)
    c = (np.cumsum(rng.integers(-walk, walk + 1, (rows, frames)), axis=1) % 65536).astype(np.uint16)
    c[rng.random(rows) < 0.3] = 0
    name = "dxe" if edge else "dxs"             # dxe: the differences from the first frame
    orders, refs = choose(c, edge=edge)
    p = sort_low(to_planes(c, orders, refs, edge))
    n = p.shape[0] // 2
    # the low planes in the order of their high planes' sums (ties: row order)
    sums = p[:n].astype(np.int64).sum(axis=1)
    assert (np.diff(sums[low_order(p[:n])]) >= 0).all()
    assert np.array_equal(p[n:], to_planes(c, orders, refs, edge)[n:][low_order(p[:n])])
    assert np.array_equal(from_planes(unsort_low(p), orders, frames, refs, edge), c)
    pure = rowtransform.forward(name, c.tolist(), orders, refs)
    assert pure == p.tolist()
    assert rowtransform.low_order(p[:n].tolist()) == low_order(p[:n]).tolist()
    assert rowtransform.inverse(name, pure, orders, frames, refs) == c.tolist()


def _staff(missing=False):
    rng = np.random.default_rng(5)
    v = np.cumsum(rng.normal(0, 3, (5, 60)), axis=1)
    v[1] = 0.5 * v[0] + rng.normal(0, 0.01, 60)
    v[2] *= 40.0
    v[4] = 12.0
    if missing:
        v[3, 10:14] = np.nan
    rows = [Row("r%d" % i, "deg", -1.0, 1.0, True) for i in range(5)]
    return Staff(v, rows, fps=30.0, bits=16, meta={"source": "test"}).refit("fit")


@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("transform, name", [("dxs", "dxs"), ("auto", "dxe")])     # dxe: the default
def test_dxs_and_dxe_round_trip_byte_for_byte(missing, transform, name):
    s = _staff(missing)
    data = encode_png(s, effort=1, transform=transform)
    im = Image.open(io.BytesIO(data))
    im.load()
    assert json.loads(im.info["motionstaff"])["t"] == name
    back = decode_png(data)
    assert np.array_equal(back.values, s.quantised().values, equal_nan=True)
    assert np.array_equal(back.codes()[1], s.codes()[1])
    assert encode_png(back, effort=1, transform=transform) == data
    # the alpha of the low planes travels with them
    px = np.asarray(im)
    if missing:
        n = px.shape[0] // 2
        order = low_order(px[:n, :, 0])
        assert np.array_equal(px[n:, :, 1], px[:n, :, 1][order])


def test_dxs_is_smaller_than_dxp_on_a_real_clip_and_dxp_still_reads():
    b = read_bvh(CLIP).refit("budget", max_error_mm=0.2, bits=16, bound="measured")
    dxs = encode_png(b, transform="dxs")
    dxp = encode_png(b, transform="dxp")
    assert len(dxs) < len(dxp)
    q = b.quantised().values
    assert np.array_equal(decode_png(dxs).values, q) and np.array_equal(decode_png(dxp).values, q)


def test_a_reader_without_dxs_refuses_it_in_one_line(capsys, tmp_path, monkeypatch):
    path = tmp_path / "new.png"
    path.write_bytes(encode_png(_staff(), effort=0, transform="dxs"))
    monkeypatch.setattr(rowtransform, "NAMES", ("d2p", "dxp"))
    code = main(["info", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "unknown row transform 'dxs'" in err and len(err.strip().splitlines()) == 1


def test_a_dxp_file_written_before_reads_and_rewrites_as_dxe():
    path = pathlib.Path(__file__).resolve().parent / "golden" / "staff_v3_dxp_131_03_short.png"
    data = path.read_bytes()
    assert json.loads(Image.open(io.BytesIO(data)).info["motionstaff"])["t"] == "dxp"
    old = decode_png(data, str(path))
    assert old.bits == 16 and np.isnan(old.values[5, 3:7]).all() and np.isfinite(old.values[5, 7:]).all()
    new = encode_png(old, effort=0)
    assert json.loads(Image.open(io.BytesIO(new)).info["motionstaff"])["t"] == "dxe"
    assert np.array_equal(decode_png(new).values, old.values, equal_nan=True)
