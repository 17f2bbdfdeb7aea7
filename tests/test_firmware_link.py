"""device/firmware/link.py: the allocation-free frame reader agrees with protocol.packets.Decoder."""

import random

from hypothesis import given, settings, strategies as st

from device.firmware import link
from protocol import packets as pk


def _reader_frames(data, nrows_max=64):
    r = link.FrameReader(nrows_max)
    got, others = [], []
    for b in data:
        k = r.push(b)
        if k == link.FRAME:
            got.append((r.seq, r.time_us, (r.bits, [None if r.missing[i] else r.codes[i]
                                                     for i in range(r.nrows)])))
        elif k == link.OTHER:
            others += [p.name for p in r.packets]
    return r, got, others


def _decoder_frames(data):
    d = pk.Decoder()
    ps = d.feed(data)
    return d, [(p.seq, p.time_us, p.frame()) for p in ps if p.is_frame()], \
        [p.name for p in ps if not p.is_frame()]


def _stream(seed, n=30):
    rng = random.Random(seed)
    enc = pk.Encoder(clock_us=lambda: rng.randrange(1 << 24))
    wire = [enc.hello()]
    for k in range(n):
        rows = rng.randint(1, 40)
        codes = [rng.randrange(1 << 16) for _ in range(rows)]
        bits = rng.choice((8, 16))
        if bits == 8:
            codes = [c & 255 for c in codes]
        if rng.random() < 0.3:
            codes[rng.randrange(rows)] = None
        wire.append(enc.frame(codes, bits))
        if k % 9 == 0:
            wire.append(enc.heartbeat(k, k, 0, 1))
    return b"".join(wire)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(0, 10 ** 6), st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 7)),
                                         max_size=25),
       st.binary(max_size=300))
def test_same_frames_as_the_protocol_decoder_on_any_corruption(seed, flips, junk):
    data = bytearray(_stream(seed))
    for at, bit in flips:
        data[at % len(data)] ^= 1 << bit
    cut = seed % len(data)
    data[cut:cut] = junk
    data = bytes(data)
    r, got, others = _reader_frames(data)
    d, want, want_others = _decoder_frames(data)
    assert got == want
    assert others == want_others
    assert r.dropped() == d.dropped()
    assert r.gaps == d.gaps


def test_clean_stream_and_counters():
    data = _stream(1)
    r, got, others = _reader_frames(data)
    d, want, _ = _decoder_frames(data)
    assert got == want and len(got) == 30 and r.dropped() == 0 and r.gaps == 0
    assert others.count("HEARTBEAT") == 4 and others[0] == "HELLO"


def test_too_many_rows_is_dropped_not_overflowed():
    enc = pk.Encoder(clock_us=lambda: 0)
    r, got, _ = _reader_frames(enc.frame(list(range(50)), 8), nrows_max=18)
    assert got == [] and r.drops["rows"] == 1


def test_overlong_garbage_resynchronises():
    enc = pk.Encoder(clock_us=lambda: 0)
    data = b"\x07" * 5000 + b"\x00" + enc.frame([1, 2, 3], 8)
    r, got, _ = _reader_frames(data)
    assert len(got) == 1 and r.drops["too_long"] == 1


def test_crc_split_tables_match_crc32():
    from protocol import crc

    lo, hi = link._tables()
    t = crc._table32()
    assert all(t[i] == lo[i] | (hi[i] << 16) for i in range(256))
    assert max(lo + hi) < 1 << 16
