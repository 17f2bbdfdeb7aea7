"""host/stafffile.py: PNG staff round trips (8/16 bits, missing values, palette) and bad files."""

import io
import json
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from host.pngrows import _candidates, filter_rows, unfilter_rows
from host.rowtransform import choose, low_order, sort_low, to_planes
from host.staff import Row, Staff
from host.stafffile import (TRIAL_PIECE_BYTES, TRIAL_PIECES, _deflate, _sample, decode_png, encode_png, palette_rgb,
                            read_staff, write_staff, zlib_strategy)
from protocol.errors import FormatError


def make_staff(bits=8, missing=False, frames=50, nrows=4, seed=0):
    rng = np.random.default_rng(seed)
    v = np.cumsum(rng.normal(0, 2.0, size=(nrows, frames)), axis=1)
    if missing:
        v[rng.random(v.shape) < 0.1] = np.nan
    rows = [Row("r%d" % i, "deg", 0.0, 1.0, True) for i in range(nrows)]
    return Staff(v, rows, fps=30.0, bits=bits, meta={"source": "test"}).refit("fit")


@pytest.mark.parametrize("bits,transform", [(8, "auto"), (16, "none"), (16, "auto")])
@pytest.mark.parametrize("missing", [False, True])
def test_round_trip_is_exact(tmp_path, bits, transform, missing):
    s = make_staff(bits, missing)
    p = tmp_path / "s.png"
    write_staff(p, s, effort=1, transform=transform)
    back = read_staff(p)
    assert back.bits == bits and back.fps == 30.0 and back.names == s.names
    assert np.array_equal(back.values, s.quantised().values, equal_nan=True)
    assert back.meta["source"] == "test"
    # any PNG reader opens it: Pillow sees the pixels as the codes (or, 16 bits by default, as
    # the 8-bit byte planes of each row's chosen differences, 2 x rows rows, the low planes in
    # the order of their high planes' sums)
    im = Image.open(p)
    codes, mask = s.codes()
    if bits == 16 and transform == "auto":
        orders, refs = choose(codes, mask)
        kept = mask[np.asarray(orders) >= 0]
        planes = to_planes(codes, orders, refs)
        order = low_order(planes[:len(kept)])
        codes, mask = sort_low(planes, order), sort_low(np.concatenate([kept, kept]), order)
    assert im.size == (s.frames, codes.shape[0])
    a = np.asarray(im)
    if not missing:
        assert np.array_equal(a, codes)
    elif codes.dtype == np.uint8:
        assert im.mode == "LA" and np.array_equal(a[..., 1] == 0, mask)
        assert np.array_equal(a[..., 0][~mask], codes[~mask])


def test_every_effort_reads_back_the_same():
    s = make_staff(8, frames=300)
    q = s.quantised().values
    sizes = []
    for effort in (0, 1, 2):
        data = encode_png(s, effort=effort)
        sizes.append(len(data))
        assert np.array_equal(decode_png(data).values, q)
    assert sizes[2] <= sizes[1] <= sizes[0]


def test_colour_palette_decodes_exactly(tmp_path):
    s = make_staff(8)
    p = tmp_path / "c.png"
    write_staff(p, s, colour=True)
    im = Image.open(p)
    assert im.mode == "P"
    pal = np.array(im.getpalette()[:768], np.uint8).reshape(256, 3)
    assert np.array_equal(pal, palette_rgb())          # the palette is the colour map
    assert np.array_equal(read_staff(p).values, s.quantised().values)
    with pytest.raises(ValueError, match="8-bit"):
        encode_png(make_staff(16), colour=True)
    with pytest.raises(ValueError, match="missing"):
        encode_png(make_staff(8, missing=True), colour=True)


def test_skeleton_travels_in_the_header(tmp_path):
    from device.body.human import human_model

    sk = human_model()
    v = np.tile(sk.home[:, None], (1, 5))
    s = Staff(v, [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs], skeleton=sk)
    p = tmp_path / "h.png"
    write_staff(p, s, effort=0)
    back = read_staff(p)
    assert back.skeleton.dof_names == sk.dof_names
    assert np.allclose(back.skeleton.links[5].inertia, sk.links[5].inertia, atol=1e-9)
    assert back.skeleton.total_mass == pytest.approx(sk.total_mass)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 40), st.sampled_from([1, 2, 4]), st.integers(0, 2**31))
def test_filters_invert(nrows, width, bpp, seed):
    raw = np.random.default_rng(seed).integers(0, 256, size=(nrows, width * bpp)).astype(np.uint8)
    data = filter_rows(raw, bpp)
    assert np.array_equal(unfilter_rows(data, nrows, width * bpp, bpp), raw)
    # every filter type by hand, including the slow Average and Paeth paths
    for kind in range(5):
        rows = []
        prev = np.zeros(width * bpp, np.uint8)
        for r in range(nrows):
            c = (_candidates(raw[r], prev, bpp)[kind] & 0xFF).astype(np.uint8)
            rows.append(bytes([kind]) + c.tobytes())
            prev = raw[r]
        buf = b"".join(rows)
        assert np.array_equal(unfilter_rows(buf, nrows, width * bpp, bpp), raw)



def test_zlib_strategy_is_chosen_by_the_data():
    """Above zopfli's size the writer deflates with the strategy that wins on a sample: Huffman
    codes only for noise-like bytes (string matches cost there), matches for repeating ones."""
    rng = np.random.default_rng(5)
    noise = np.clip(rng.normal(0, 2.0, 3 << 20), -100, 100).astype(np.int8).tobytes()
    motif = bytes(rng.integers(0, 256, 700, dtype=np.uint8))
    repeating = bytes(b ^ (i % 3 == 0 and (i // 7) % 2) for i, b in enumerate(motif * 4500))
    assert zlib_strategy(noise) == zlib.Z_HUFFMAN_ONLY
    assert zlib_strategy(repeating) == zlib.Z_FILTERED
    sample = _sample(noise)
    assert len(sample) == TRIAL_PIECES * TRIAL_PIECE_BYTES
    assert sample[:TRIAL_PIECE_BYTES] == noise[:TRIAL_PIECE_BYTES]
    # evenly spaced: the last piece ends within TRIAL_PIECES bytes of the end (noise: found once)
    assert len(noise) - TRIAL_PIECE_BYTES - noise.rindex(sample[-TRIAL_PIECE_BYTES:]) < TRIAL_PIECES
    for data in (noise, repeating):
        for effort in (0, 1, 2):
            assert zlib.decompress(_deflate(data, effort)) == data
    assert _sample(b"abc") == b"abc"

# --- bad files -----------------------------------------------------------------------------

def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _with_header(png, header_text):
    """The PNG with its motionstaff chunk replaced by a tEXt chunk holding header_text."""
    out, pos = [png[:8]], 8
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"zTXt":
            if header_text is not None:
                out.append(_chunk(b"tEXt", b"motionstaff\0" + header_text.encode()))
        else:
            out.append(png[pos:pos + 12 + n])
        pos += 12 + n
    return b"".join(out)


def decode_png_header(png):
    from host.stafffile import _chunks
    return _chunks(png, "x")[1]


@pytest.fixture(scope="module")
def good():
    return encode_png(make_staff(8, frames=20), effort=0)


def test_plain_text_header_also_reads(good):
    h = decode_png_header(good)
    back = decode_png(_with_header(good, h.decode()))
    assert back.frames == 20


@pytest.mark.parametrize("change, message", [
    (lambda h: h.update(frames=21), "frames"),
    (lambda h: h.update(rows=h["rows"][:3]), "rows"),
    (lambda h: h.update(bits=16), "bits"),
    (lambda h: h.update(version=99), "unknown version"),
    (lambda h: h.update(fps=-1), "fps"),
])
def test_header_not_matching_the_image(good, change, message):
    h = json.loads(decode_png_header(good))
    change(h)
    with pytest.raises(FormatError, match=message):
        decode_png(_with_header(good, json.dumps(h)), "bad.png")


def test_refuses_what_it_cannot_trust(good, tmp_path):
    with pytest.raises(FormatError, match="bad.png: not a PNG"):
        decode_png(b"GIF89a" + good[6:], "bad.png")
    with pytest.raises(FormatError, match="no motionstaff header"):
        decode_png(_with_header(good, None), "bad.png")
    with pytest.raises(FormatError, match="not valid JSON"):
        decode_png(_with_header(good, "{oops"), "bad.png")
    plain = io.BytesIO()
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(plain, "PNG")
    with pytest.raises(FormatError, match="no motionstaff header"):
        decode_png(plain.getvalue(), "plain.png")
    corrupt = bytearray(good)
    corrupt[-20] ^= 0xFF
    with pytest.raises(FormatError, match="bad.png"):
        decode_png(bytes(corrupt), "bad.png")


def test_every_truncation_is_refused(good):
    for cut in list(range(0, 60)) + list(range(60, len(good), 7)):
        with pytest.raises(FormatError, match="cut.png"):
            decode_png(good[:cut], "cut.png")


def test_absurd_dimensions_refused_before_decoding(good):
    h = json.loads(decode_png_header(good))
    h["frames"] = 4_000_000_000
    bad = _with_header(good, json.dumps(h))
    ihdr = struct.pack(">IIBBBBB", 4_000_000_000, 4, 8, 0, 0, 0, 0)
    bad = bad[:8] + _chunk(b"IHDR", ihdr) + bad[8 + 25:]
    with pytest.raises(FormatError, match="more than"):
        decode_png(bad, "huge.png")


def test_16bit_alpha_zlib_bomb_refused():
    s = make_staff(16, missing=True, frames=10, nrows=2)
    data = encode_png(s, effort=0, transform="none")     # 16-bit grey+alpha: this reader's own inflate
    # replace the IDAT with far more data than the image needs
    pos, out = 8, [data[:8]]
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        out.append(_chunk(b"IDAT", zlib.compress(b"\1" * 10_000_000)) if kind == b"IDAT" else data[pos:pos + 12 + n])
        pos += 12 + n
    with pytest.raises(FormatError, match="bytes, expected"):
        decode_png(b"".join(out), "bomb.png")


def test_zero_frames_cannot_be_written():
    with pytest.raises(ValueError):
        encode_png(Staff(np.zeros((2, 0)), [Row("a"), Row("b")]))


def test_random_corruption_only_ever_raises_format_error():
    rng = np.random.default_rng(3)
    goods = [encode_png(make_staff(8, frames=30), effort=0),
             encode_png(make_staff(16, missing=True, frames=30), effort=0),
             encode_png(make_staff(8, frames=30), colour=True, effort=0)]
    for it in range(600):
        g = bytearray(goods[it % 3])
        for _ in range(int(rng.integers(1, 4))):
            g[int(rng.integers(8, len(g)))] = int(rng.integers(0, 256))
        if it % 2:      # recompute the CRCs so that the corruption reaches the decoders
            pos, out = 8, bytearray(g[:8])
            while pos + 8 <= len(g):
                n, kind = struct.unpack(">I4s", g[pos:pos + 8])
                body = bytes(g[pos + 8:pos + 8 + n])
                out += _chunk(kind, body)
                pos += 12 + n
            g = out
        try:
            decode_png(bytes(g), "f.png")
        except FormatError as e:
            assert str(e).startswith("f.png") and "\n" not in str(e)
