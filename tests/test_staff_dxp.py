"""The "dxp" row transform (16-bit files): each row's order of difference, rows that never move
left out, rows predicted from earlier rows.

Both twins agree and round-trip exactly (hypothesis); files round-trip byte for byte and any PNG
reader opens them; d2p files and files without a transform read as before; a bad "to" is one
line and exit 2; hostile pixels under a real dxp header still decode inside the rows' ranges.
"""

import io
import json
import pathlib
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from host.bvh import read_bvh
from host.cli import main
from host.rowtransform import choose, choose_orders, from_planes, to_planes
from host.staff import Row, Staff
from host.stafffile import decode_png, encode_png
from protocol import rowtransform
from protocol.errors import FormatError

CLIP = pathlib.Path(__file__).resolve().parent.parent / "host" / "data" / "131_03_short.bvh"


def _codes(rng, rows, frames, walk):
    c = (np.cumsum(rng.integers(-walk, walk + 1, (rows, frames)), axis=1) % 65536).astype(np.uint16)
    c[:, rng.random(frames) < 0.1] = rng.choice([0, 65535])       # jumps to the ends
    return c


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.integers(0, 10 ** 6), st.sampled_from([0, 1, 30, 3000, 65535]))
def test_dxp_round_trip_is_exact_and_the_twins_agree(rows, frames, seed, walk):
    rng = np.random.default_rng(seed)
    c = _codes(rng, rows, frames, walk)
    c[rng.random(rows) < 0.3] = 0                                  # rows that never move
    orders = [int(o) for o in rng.integers(0, 4, rows)]
    orders = [-1 if not c[k].any() and rng.random() < 0.8 else orders[k] for k in range(rows)]
    if all(o < 0 for o in orders):
        orders[0] = 2
    stored = [k for k in range(rows) if orders[k] >= 0]
    refs = []
    for k in stored[1:]:
        if rng.random() < 0.6:
            js = rng.choice([j for j in stored if j < k], size=min(int(rng.integers(1, 3)), stored.index(k)), replace=False)
            refs += [(k, int(j), int(rng.choice([-1, 1]) * rng.integers(1, 4097))) for j in sorted(js)]
    assert rowtransform.parse_refs(rowtransform.refs_text(refs), orders) == refs
    p = to_planes(c, orders, refs)
    kept = len(stored)
    assert p.dtype == np.uint8 and p.shape == (2 * kept, frames)
    assert np.array_equal(from_planes(p, orders, frames, refs), c)
    pure = rowtransform.forward("dxp", c.tolist(), orders, refs)
    assert pure == p.tolist()
    assert rowtransform.inverse("dxp", pure, orders, frames, refs) == c.tolist()
    # order 2 everywhere is d2p
    assert rowtransform.forward("dxp", c.tolist(), [2] * rows) == rowtransform.forward("d2p", c.tolist())
    assert rowtransform.parse_orders(rowtransform.orders_text(orders), rows) == orders


def test_choose_orders_leaves_out_only_rows_of_code_0():
    rng = np.random.default_rng(4)
    c = _codes(rng, 8, 30, 300)
    c[1:5] = 0                                # a run of rows that never move: left out
    c[5] = 7                                  # constant, not 0: kept (order 0 or more)
    m = np.zeros(c.shape, bool)
    m[6] = True
    c[6] = 0                                  # all 0 but missing: kept (its alpha must be stored)
    o = choose_orders(c, m)
    assert o[1:5] == [-1] * 4 and o[5] >= 0 and o[6] >= 0 and all(0 <= x <= 3 for x in o if x >= 0)
    # one such row between others is not worth the header's change of order and back
    c[2:5] = _codes(rng, 3, 30, 300)
    assert choose_orders(c, m)[1] >= 0
    # a smooth row takes a difference, noise takes the codes themselves
    t = np.arange(200)
    smooth = (30000 + 20000 * np.sin(t / 30.0)).astype(np.uint16)
    noise = rng.integers(0, 65536, 200).astype(np.uint16)
    o = choose_orders(np.stack([smooth, noise]))
    assert o[0] >= 1 and o[1] == 0
    assert choose_orders(np.zeros((3, 4), np.uint16)) == [0, -1, -1]      # an image keeps a row


def test_choose_predicts_a_row_that_follows_another():
    rng = np.random.default_rng(5)
    a = np.cumsum(np.cumsum(rng.integers(-40, 41, 300)))
    a = (a - a.min() + 1000).astype(np.int64)
    b = (3 * a) // 2 + rng.integers(-2, 3, 300) + 500          # 1.5 x the first, a little noise
    c = np.stack([a, rng.integers(0, 65536, 300), b]).astype(np.uint16)
    orders, refs = choose(c)
    assert [(k, j) for k, j, _ in refs] == [(2, 0)] and refs[0][2] == 96     # 1.5 x 64
    # a row that is the sum of two others takes both
    w = np.cumsum(np.cumsum(rng.integers(-40, 41, 300)))
    w = 1000 + (w - w.min()) * 30000 // (w.max() - w.min())
    s2 = a // 2 + w // 4 + 100
    _, refs2 = choose(np.stack([a, w, s2]).astype(np.uint16))
    assert [(k, j) for k, j, _ in refs2] == [(2, 0), (2, 1)]
    alone = to_planes(c, orders)
    assert np.abs(to_planes(c, orders, refs)[[2, 5]].astype(int)).sum() < np.abs(alone[[2, 5]].astype(int)).sum()
    assert np.array_equal(from_planes(to_planes(c, orders, refs), orders, 300, refs), c)


def _staff(seed=0, frames=60, missing=False):
    rng = np.random.default_rng(seed)
    v = np.cumsum(rng.normal(0, 2.0, (5, frames)), axis=1)
    v[4] = 12.5                                          # never moves (the last row: left out)
    if missing:
        v[0, rng.random(frames) < 0.2] = np.nan
    rows = [Row("r%d" % i, "deg", -400.0, 400.0, True) for i in range(5)]
    return Staff(v, rows, fps=30.0, bits=16, meta={"source": "test"}).refit("fit")


@pytest.mark.parametrize("missing", [False, True])
def test_dxp_file_round_trips_byte_for_byte_and_pillow_opens_it(missing):
    s = _staff(missing=missing)
    data = encode_png(s, effort=1, transform="dxp")
    im = Image.open(io.BytesIO(data))
    im.load()
    assert json.loads(im.info["motionstaff"])["t"] == "dxp"
    assert json.loads(im.info["motionstaff"])["to"][4] == "-"           # the constant row is not in the image
    assert im.size == (s.frames, 8)
    back = decode_png(data)
    assert np.array_equal(back.values, s.quantised().values, equal_nan=True)
    assert np.array_equal(back.codes()[0], s.codes()[0]) and np.array_equal(back.codes()[1], s.codes()[1])
    assert encode_png(back, effort=1, transform="dxp") == data


def test_dxp_is_smaller_than_d2p_on_a_real_clip_and_d2p_still_reads():
    st_ = read_bvh(CLIP).refit("budget", max_error_mm=0.2, bits=16, bound="measured")
    dxp = encode_png(st_, effort=1, transform="dxp")
    d2p = encode_png(st_, effort=1, transform="d2p")
    assert b'"t":"dxp"' in zlib.decompress(dxp[dxp.index(b"zTXt") + 17:])
    assert len(dxp) < len(d2p)
    q = st_.quantised().values
    assert np.array_equal(decode_png(dxp).values, q) and np.array_equal(decode_png(d2p).values, q)


def _tx(flat, order=8, extra=()):
    return rowtransform.flat_text(flat, order, extra)


def _with_header(data, edit):
    """data with its zTXt header JSON changed by edit(dict) (CRCs fixed)."""
    i = data.index(b"zTXt") - 4
    n = struct.unpack(">I", data[i:i + 4])[0]
    key, rest = data[i + 8:i + 8 + n].split(b"\0", 1)
    c = json.loads(zlib.decompress(rest[1:]))
    edit(c)
    new = key + b"\0\0" + zlib.compress(json.dumps(c).encode())
    chunk = struct.pack(">I", len(new)) + b"zTXt" + new + struct.pack(">I", zlib.crc32(b"zTXt" + new) & 0xFFFFFFFF)
    return data[:i] + chunk + data[i + 12 + n:]


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.update(to=c["to"][:-1] + "7"), "'to' holds '7'"),
    (lambda c: c.update(to=c["to"] + "2"), "one order per row"),
    (lambda c: c.pop("to"), "one order per row"),
    (lambda c: c.update(to="-" * len(c["to"])), "leaves every row out"),
    (lambda c: c.update(t="d2p"), "'to' (row orders) without the row transform dxp"),
    (lambda c: c.update(to=c["to"].replace("-", "1")), "header has 5 rows (10 image rows"),
    (lambda c: c.update(tx=_tx([4, 2, 0])), "multiplier 0 of row 3"),
    (lambda c: c.update(tx=_tx([4, 2, 5000])), "multiplier 5000"),
    (lambda c: c.update(tx=_tx([1, 1, 9])), "row 0 predicted from row -1"),
    (lambda c: c.update(tx=_tx([4, 2, 9, 0, 4, 9])), "row 3 predicted from row -1"),
    (lambda c: c.update(tx=_tx([6, 1, 9])), "row 5 predicted from row 4 (rows 5"),
    (lambda c: c.update(tx=[4, 2, 9]), "'tx' must be a string"),
    (lambda c: c.update(tx=_tx([4, 2, 9])[:-2] + "!"), "'tx' holds '!'"),
    (lambda c: c.update(tx=_tx([4, 2, 9, 1, 1, 9])[:2]), "'tx' ends inside a row"),
    (lambda c: c.update(tx=_tx([4, 2, 9], extra=[1])), "bits after its last triple"),
    (lambda c: c.update(tx=_tx([4, 2, 9]) + "AA"), "bits after its last triple"),
    (lambda c: c.update(tx=_tx([4, 2, 9], order=17)), "not this encoding"),
    (lambda c: c.update(tx=_tx([5, 1, 9])), "predicts row 4 from row 3, and one of them is not in the image"),
    (lambda c: c.update(tx=_tx([0, 1, 9])), "row -1 predicted from row -2"),
    (lambda c: c.update(tx=_tx([4, 2, 9, 0, 2, 7])), "row 3's reference row 1 twice"),
    (lambda c: (c.update(tx=_tx([4, 2, 9]), t="d2p"), c.pop("to")), "'tx' (predicted rows) without"),
])
def test_bad_orders_are_one_line_exit_2(capsys, tmp_path, edit, message):
    bad = tmp_path / "bad.png"
    bad.write_bytes(_with_header(encode_png(_staff(), effort=0), edit))
    code = main(["info", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and str(bad) in err and len(err.strip().splitlines()) == 1


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 31 - 1))
def test_any_dxp_pixels_under_a_real_header_decode_inside_the_rows_ranges(seed):
    rng = np.random.default_rng(seed)
    s = _staff(seed % 1000)
    text = Image.open(io.BytesIO(encode_png(s))).info["motionstaff"]
    info = PngInfo()
    info.add_text("motionstaff", text, zip=True)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (8, s.frames), dtype=np.uint8), "L").save(buf, "PNG", pnginfo=info)
    back = decode_png(buf.getvalue(), "hostile.png")
    assert np.all(back.values >= s.lo[:, None]) and np.all(back.values <= s.hi[:, None])
    with pytest.raises(FormatError, match="hostile.png: header has 5 rows"):
        buf = io.BytesIO()
        Image.fromarray(np.zeros((10, s.frames), np.uint8), "L").save(buf, "PNG", pnginfo=info)
        decode_png(buf.getvalue(), "hostile.png")


def test_choose_survives_rows_that_repeat_or_never_change():
    # two equal rows and a constant one: the joint fit's normal equations are singular
    rng = np.random.default_rng(6)
    a = _codes(rng, 1, 50, 300)[0]
    for frames in (2, 3, 50):
        c = np.stack([a, a, np.full(50, 7), a // 2])[:, :frames].astype(np.uint16)
        orders, refs = choose(c)
        assert np.array_equal(from_planes(to_planes(c, orders, refs), orders, frames, refs), c)


def test_one_order_for_every_row_is_one_character():
    assert rowtransform.orders_text([1, 1, 1]) == "1" and rowtransform.parse_orders("1", 3) == [1, 1, 1]
    assert rowtransform.orders_text([1, -1, 1]) == "1-1" and rowtransform.parse_orders("1-1", 3) == [1, -1, 1]
    with pytest.raises(FormatError, match="leaves every row out"):
        rowtransform.parse_orders("-", 1)
    with pytest.raises(FormatError, match="one order per row"):
        rowtransform.parse_orders("-", 3)
