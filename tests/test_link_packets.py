"""The serial link: CRC catalogue values, COBS against the `cobs` package, packets, decoder."""

import random
import struct

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from protocol import cobs, crc, packets as pk, staffheader
from protocol.errors import FormatError

oracle = pytest.importorskip("cobs.cobs")


def test_crc32_catalogue_check_value():
    assert crc.CRC32_CHECK == 0xCBF43926
    assert crc.crc32(b"123456789") == 0xCBF43926
    assert crc.crc32_slow(b"123456789") == 0xCBF43926
    assert crc.crc32(b"6789", crc.crc32(b"12345")) == 0xCBF43926
    assert crc.crc32_slow(b"6789", crc.crc32_slow(b"12345")) == 0xCBF43926


def test_crc16_and_crc7_catalogue_values():
    assert crc.crc16_buypass(b"123456789") == 0xFEE8
    assert crc.crc7_pololu(b"\x83\x01") == 0x17


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600), st.integers(0, 0xFFFFFFFF))
def test_crc32_fast_equals_slow(data, seed):
    assert crc.crc32(data, seed) == crc.crc32_slow(data, seed)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=64), st.data())
def test_crc32_catches_every_single_bit_flip(data, d):
    bit = d.draw(st.integers(0, len(data) * 8 - 1))
    flipped = bytearray(data)
    flipped[bit >> 3] ^= 1 << (bit & 7)
    assert crc.crc32(bytes(flipped)) != crc.crc32(data)


@pytest.mark.parametrize("n", [0, 1, 253, 254, 255, 507, 508, 509, 1000])
def test_cobs_boundaries_against_oracle(n):
    rng = random.Random(n)
    for zeros in (0.0, 0.1, 1.0):
        data = bytes(0 if rng.random() < zeros else rng.randrange(1, 256) for _ in range(n))
        e = cobs.encode(data)
        assert e == oracle.encode(data)
        assert b"\x00" not in e
        assert len(e) <= cobs.encoded_size_max(n)
        assert cobs.decode(e) == data


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=800))
def test_cobs_round_trip_and_oracle(data):
    e = cobs.encode(data)
    assert b"\x00" not in e
    assert e == oracle.encode(data)
    assert cobs.decode(e) == data


@pytest.mark.parametrize("bad", [b"", b"\x00", b"\x05\x01", b"\x02\x00"])
def test_cobs_rejects_bad_input(bad):
    with pytest.raises(FormatError):
        cobs.decode(bad)


def test_48_joint_8bit_frame_is_at_most_60_bytes():
    for codes in ([0] * 48, [255] * 48, list(range(48)), [random.Random(1).randrange(256) for _ in range(48)]):
        w = pk.encode("FRAME8", 65535, 2 ** 24 - 1, (), bytes(codes))
        assert len(w) <= 60
        assert w.count(0) == 1 and w[-1] == 0


def test_schema_is_stable_and_changes_with_table():
    assert pk.SCHEMA == pk._schema_hash()
    saved = pk.MESSAGES
    try:
        pk.MESSAGES = saved + ((0x30, "X", "<B", ("x",), None, True),)
        assert pk._schema_hash() != pk.SCHEMA
    finally:
        pk.MESSAGES = saved


def _rows(n):
    return [{"name": "r%d" % i, "unit": "deg", "lo": -90.0, "hi": 90.0} for i in range(n)]


def test_round_trip_every_type():
    enc = pk.Encoder(clock_us=lambda: 1234567)
    h = staffheader.make(_rows(300), fps=30.0, bits=16)
    wire = [enc.hello()] + enc.header(h) + [enc.request_header(0)] + [
        enc.frame([1, 2, 3]), enc.frame([1, None, 3]), enc.frame([65535, 0], 16),
        enc.frame([None, 7], 16), enc.heartbeat(10, 20, 30, pk.STATE_STREAMING),
        enc.packet("DOWNLOAD_LIST", (9,)), enc.packet("DOWNLOAD_GET", (9, 100, 512), b"rec1"),
        enc.packet("DOWNLOAD_REPLY", (9, 100, pk.FLAG_LAST), b"\x00\x01"),
        enc.packet("DOWNLOAD_ERROR", (9, pk.ERR_NOT_FOUND), b"no such recording")]
    d = pk.Decoder()
    got = d.feed(b"".join(wire))
    assert d.dropped() == 0 and d.gaps == 0
    assert len(got) == len(wire)
    assert [p.seq for p in got] == list(range(len(wire)))
    assert all(p.time_us == 1234567 for p in got)
    ha = pk.HeaderAssembler()
    heads = [ha.add(p) for p in got if p.name == "HEADER"]
    assert len(heads) > 1 and all(x is None for x in heads[:-1])
    assert heads[-1]["bits"] == 16 and heads[-1]["fps"] == 30.0 and heads[-1]["id"] == got[1].fields["header_id"]
    assert heads[-1]["rows"] == [{"name": r["name"], "lo": r["lo"], "hi": r["hi"]} for r in h["rows"]]
    assert got[len(heads) + 1].fields == {"what": pk.REQ_HEADER, "header_id": 0, "missing": pk.ALL_PARTS}
    frames = [p.frame() for p in got if p.is_frame()]
    assert frames == [(8, [1, 2, 3]), (8, [1, None, 3]), (16, [65535, 0]), (16, [None, 7])]
    assert got[-1].fields == {"req": 9, "code": pk.ERR_NOT_FOUND}
    assert got[-1].tail == b"no such recording"


def test_schema_mismatch_refused_by_name():
    other = pk.SCHEMA ^ 1
    enc = pk.Encoder(schema=other, clock_us=lambda: 0)
    d = pk.Decoder()
    assert d.feed(enc.hello() + enc.frame([1, 2])) == []
    assert d.drops["schema"] == 2 and d.peer_schema == other
    wrong_version = pk.encode("HELLO", 0, 0, (pk.VERSION + 1, pk.SCHEMA, 100))
    assert pk.Decoder().feed(wrong_version) == []


def test_drop_reasons():
    d = pk.Decoder()
    good = pk.encode("FRAME8", 1, 1, (), b"\x01\x02")
    assert d.feed(b"\x01\x02\x00") == [] and d.drops["short"] == 1
    assert d.feed(b"\x30" + b"\x01" * 12 + b"\x00") == [] and d.drops["cobs"] == 1
    bad = bytearray(good)
    bad[-2] ^= 0x80 if bad[-2] != 0x80 else 0x01
    assert d.feed(bytes(bad)) == [] and d.drops["crc"] == 1
    assert d.feed(pk.encode("HEARTBEAT", 0, 0, (1, 2, 3, 4, 5))[:-1] + b"\x00") != []
    body = struct.pack("<BHBH", 0x7E, 0, 0, 0)
    unknown = cobs.encode(body + struct.pack("<I", crc.crc32(body, pk.SCHEMA))) + b"\x00"
    assert d.feed(unknown) == [] and d.drops["unknown_type"] == 1
    body = struct.pack("<BHBH", 0x11, 0, 0, 0) + struct.pack("<H", 20) + b"\x01"
    short_frame = cobs.encode(body + struct.pack("<I", crc.crc32(body, pk.SCHEMA))) + b"\x00"
    assert d.feed(short_frame) == [] and d.drops["length"] == 1
    assert d.feed(b"\x01" * (pk.MAX_ENCODED + 10)) == []
    assert d.feed(b"\x01" * 5000 + b"\x00" + good) != [] and d.drops["too_long"] == 1


def test_encoder_refuses_bad_input():
    with pytest.raises(FormatError):
        pk.encode("NOPE")
    with pytest.raises(FormatError):
        pk.encode("FRAME8", 0, 0, (), b"\x01" * (pk.MAX_PAYLOAD + 1))
    with pytest.raises(FormatError):
        pk.Encoder().frame([256], 8)
    with pytest.raises(FormatError):
        pk.encode("HEARTBEAT", 0, 0, (1, 2), b"")


def test_time_unwrap():
    assert pk.unwrap_time_us(0, 5) == 5
    assert pk.unwrap_time_us(pk.TIME_WRAP_US - 2, 3) == pk.TIME_WRAP_US + 3
    assert pk.unwrap_time_us(pk.TIME_WRAP_US + 3, pk.TIME_WRAP_US - 2) == pk.TIME_WRAP_US - 2


def _stream(rng, n):
    enc = pk.Encoder(clock_us=lambda: rng.randrange(1 << 24))
    sent = []
    for _ in range(n):
        codes = [rng.randrange(256) for _ in range(rng.randrange(1, 60))]
        sent.append(enc.frame(codes))
    return sent


def _key(p):
    return (p.seq, p.time_us, p.tail)


def _truth(wires):
    return set(_key(p) for p in pk.Decoder().feed(b"".join(wires)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.integers(1, 200))
def test_any_bytes_never_crash_and_chunking_does_not_matter(junk, chunk):
    d1 = pk.Decoder()
    whole = d1.feed(junk)
    d2 = pk.Decoder()
    parts = []
    for i in range(0, len(junk), chunk):
        parts += d2.feed(junk[i:i + chunk])
    assert [_key(p) for p in whole] == [_key(p) for p in parts]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32), st.floats(0.0, 0.3))
def test_corrupted_stream_never_delivers_a_corrupted_packet(seed, rate):
    rnd = random.Random(seed)
    wires = _stream(rnd, 40)
    truth = _truth(wires)
    stream = bytearray()
    for b in b"".join(wires):
        r = rnd.random()
        if r < rate / 3:
            stream.append(rnd.randrange(256))        # damaged
        elif r < rate * 2 / 3:
            pass                                     # dropped
        elif r < rate:
            stream += bytes([b, rnd.randrange(256)])  # garbage inserted after it
        else:
            stream.append(b)
    d = pk.Decoder()
    for p in d.feed(bytes(stream)):
        assert _key(p) in truth


def _drop_byte_stream(rnd, wires, rate):
    out = bytearray()
    for b in b"".join(wires):
        if rnd.random() >= rate:
            out.append(b)
    return bytes(out)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32), st.floats(0.001, 0.2))
def test_dropped_bytes_never_deliver_a_corrupted_packet(seed, rate):
    rnd = random.Random(seed)
    wires = _stream(rnd, 30)
    truth = _truth(wires)
    for p in pk.Decoder().feed(_drop_byte_stream(rnd, wires, rate)):
        assert _key(p) in truth


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000), st.integers(0, 2 ** 32))
def test_resync_within_one_packet_after_junk(junk, seed):
    rnd = random.Random(seed)
    wires = _stream(rnd, 5)
    d = pk.Decoder()
    got = d.feed(junk + b"".join(wires))
    # the first packet after the junk may be lost (it merges with the junk), never more
    assert [_key(p) for p in got][-4:] == [_key(p) for p in pk.Decoder().feed(b"".join(wires[1:]))]


def test_truncated_packets_are_dropped_and_next_one_arrives():
    wires = _stream(random.Random(3), 20)
    d = pk.Decoder()
    got = []
    for w in wires:
        got += d.feed(w[: len(w) // 2] + b"\x00")   # truncated, then terminated
    got += d.feed(wires[0])
    assert len(got) == 1 and d.dropped() == 20
