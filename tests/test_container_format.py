"""The recording container: round trips, golden bytes, torn tails at every byte, bad headers."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from protocol import container, staffheader
from protocol.errors import FormatError


def _header(nrows=3, bits=8):
    rows = [{"name": "r%d" % i, "unit": "deg", "lo": -90.0, "hi": 90.0, "wrap": True}
            for i in range(nrows)]
    return staffheader.make(rows=rows, fps=30.0, bits=bits, source="test")


def _frames(n, nrows, bits, seed=0):
    rng = random.Random(seed)
    top = (1 << bits) - 1
    return [[None if rng.random() < 0.1 else rng.randint(0, top) for _ in range(nrows)]
            for _ in range(n)]


def _write(path, frames, bits=8, fpb=1, nrows=3):
    with container.Writer(str(path), _header(nrows, bits), frames_per_block=fpb) as w:
        for i, c in enumerate(frames):
            w.write_frame(c, t_ms=i * 33)
    return path.read_bytes()


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("fpb", [1, 3, 64])
def test_round_trip(tmp_path, bits, fpb):
    frames = _frames(50, 5, bits)
    _write(tmp_path / "a.msr", frames, bits, fpb, 5)
    rec = container.read(str(tmp_path / "a.msr"))
    assert [f[2] for f in rec.frames] == frames
    assert [f[0] for f in rec.frames] == list(range(50))
    assert [f[1] for f in rec.frames] == [i * 33 for i in range(50)]
    assert rec.header["frames"] == 50 and rec.header["bits"] == bits
    assert not rec.torn and rec.dropped_bytes == 0 and rec.bad_blocks == 0


def test_golden_bytes(tmp_path):
    h = staffheader.make(rows=[{"name": "knee", "unit": "deg", "lo": 0, "hi": 150}], fps=30.0)
    data = _writeh(tmp_path, h, [[7], [None]])
    text = staffheader.dumps(h).encode()
    assert data.startswith(b"MSREC\x1a\r\n\x00\x01" + len(text).to_bytes(4, "big") + text)
    blocks = data[8 + 6 + len(text) + 4:]
    # block 0: SYNC, first 0, n 1, len 6, t 0, mask 0, code 7, crc
    assert blocks[:20].hex() == "b10c5fa7" "00000000" "0001" "00000006" "00000000" "00" "07"
    # block 1: frame 1 at t=33 ms, missing mask bit 0 set, code stored as 0
    assert blocks[24:44].hex() == "b10c5fa7" "00000001" "0001" "00000006" "00000021" "01" "00"
    assert len(blocks) == 48


def _writeh(tmp_path, h, frames):
    p = tmp_path / "g.msr"
    with container.Writer(str(p), h) as w:
        for i, c in enumerate(frames):
            w.write_frame(c, t_ms=33 * i)
    return p.read_bytes()


def test_torn_tail_at_every_byte(tmp_path):
    frames = _frames(12, 3, 8, seed=1)
    data = _write(tmp_path / "t.msr", frames, fpb=2)
    hlen = container.read_header(data)[1]
    block = container.frame_len(3, 8) * 2 + 18
    for cut in range(hlen, len(data) + 1):
        rec = container.parse(data[:cut])
        complete = (cut - hlen) // block
        assert rec.nframes == 2 * complete
        assert [f[2] for f in rec.frames] == frames[:2 * complete]
        assert rec.torn == ((cut - hlen) % block != 0)
        assert rec.dropped_bytes == (cut - hlen) % block


def test_header_truncated_or_corrupt_is_format_error(tmp_path):
    data = _write(tmp_path / "h.msr", _frames(3, 3, 8))
    hlen = container.read_header(data)[1]
    for cut in range(0, hlen):
        with pytest.raises(FormatError):
            container.parse(data[:cut])
    for pos in range(0, hlen, 7):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        with pytest.raises(FormatError):
            container.parse(bytes(bad))


def test_not_a_container(tmp_path):
    p = tmp_path / "x.msr"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    with pytest.raises(FormatError, match="bad magic"):
        container.read(str(p))


def test_corrupted_middle_block_is_skipped(tmp_path):
    frames = _frames(10, 3, 8, seed=2)
    data = bytearray(_write(tmp_path / "c.msr", frames, fpb=1))
    hlen = container.read_header(bytes(data))[1]
    block = container.frame_len(3, 8) + 18
    data[hlen + 4 * block + 12] ^= 0xFF          # inside block 4's payload
    rec = container.parse(bytes(data))
    assert [f[0] for f in rec.frames] == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert rec.bad_blocks == 1 and rec.dropped_bytes == block and not rec.torn
    assert rec.missing_indices() == [4]


def test_writer_rejects_bad_frames(tmp_path):
    w = container.Writer(str(tmp_path / "w.msr"), _header(2))
    with pytest.raises(ValueError):
        w.write_frame([1, 2, 3])
    with pytest.raises(ValueError):
        w.write_frame([1, 256])
    w.close()
    w.close()
    with pytest.raises(ValueError):
        w.write_frame([1, 2])


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_after_header_never_raises(junk):
    h = container.encode_header(_header(2))
    rec = container.parse(h + junk)
    assert rec.nframes >= 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.integers(0, 65535)), min_size=4, max_size=4),
                max_size=20), st.integers(1, 5))
def test_round_trip_property(frames, fpb):
    import io
    buf = io.BytesIO()
    w = container.Writer(buf, _header(4, 16), frames_per_block=fpb)
    for c in frames:
        w.write_frame(c)
    w.close()
    rec = container.parse(buf.getvalue())
    assert [f[2] for f in rec.frames] == frames
