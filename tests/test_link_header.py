"""The compact link header and its assembler: ids keep headers apart, bad headers never raise."""

import binascii
import pathlib
import random
import re
import struct

from hypothesis import given, settings, strategies as st

from protocol import linkheader as lh, packets as pk, staffheader

SPEC = (pathlib.Path(__file__).resolve().parents[1] / "protocol" / "SPEC.md").read_text()


def test_spec_example_is_the_encoder_and_its_id_is_zlib_crc32():
    m = re.search(r"<!-- linkheader rows=([\w,]+) lo=(-?\d+) hi=(\d+) bits=(\d+) fps=(\d+) id=0x([0-9A-F]+) -->"
                  r"\s*```\s*([0-9a-f |]+)\n```", SPEC)
    names, lo, hi, bits, fps, hid, hexs = m.groups()
    blob = lh.encode([(n, float(lo), float(hi)) for n in names.split(",")], int(bits), float(fps))
    assert blob == bytes.fromhex(hexs.replace("|", "").replace(" ", ""))
    assert lh.header_id(blob) == int(hid, 16) == binascii.crc32(blob)   # independent oracle
    # the layout by hand: version, bits, fps in mHz, rows, then lo/hi f32 + name
    assert blob[:8] == struct.pack("<BBIH", 1, 8, 30000, 2)
    assert struct.unpack_from("<ff", blob, 8) == (-10.0, 150.0)


def test_round_trip_from_a_staff_header_without_the_skeleton():
    rows = [{"name": "joint_%d" % i, "unit": "deg", "lo": -90.0 - i, "hi": 90.0 + 0.25 * i} for i in range(48)]
    h = staffheader.make(rows, fps=30.0, bits=16)
    blob = lh.from_staff(h)
    assert len(blob) < 1000
    d = lh.decode(blob)
    assert d["bits"] == 16 and d["fps"] == 30.0 and len(d["rows"]) == 48
    for r, g in zip(rows, d["rows"]):
        assert g["name"] == r["name"] and g["lo"] == struct.unpack("<f", struct.pack("<f", r["lo"]))[0]


def _parts(blob, enc, size=40):
    d = pk.Decoder()
    return d.feed(b"".join(enc.header(blob, part_bytes=size)))


def _blob(n, lo=-90.0):
    return lh.encode([("r%d" % i, lo, 90.0) for i in range(n)], 8, 30.0)


def test_parts_of_two_headers_never_join():
    enc = pk.Encoder(clock_us=lambda: 0)
    a, b = _blob(8, -90.0), _blob(8, -45.0)      # same size, same part count, other ranges
    pa, pb = _parts(a, enc), _parts(b, enc)
    assert len(pa) == len(pb) > 2
    asm = pk.HeaderAssembler()
    spliced = pa[:2] + pb[2:]
    assert [asm.add(p) for p in spliced] == [None] * len(spliced)
    assert asm.restarts == 1 and asm.assembled == 0
    got = [g for g in (asm.add(p) for p in pb) if g is not None]
    assert len(got) == 1 and got[0]["id"] == lh.header_id(b) and got[0]["rows"][0]["lo"] == -45.0


def test_a_header_whose_bytes_do_not_hash_to_its_id_is_counted_not_raised():
    enc = pk.Encoder(clock_us=lambda: 0)
    blob = bytearray(_blob(4))
    hid = lh.header_id(bytes(blob))
    blob[9] ^= 1                                 # damage that a CRC of the packet would not see
    p = pk.Decoder().feed(pk.encode("HEADER", 0, 0, (pk.SCHEMA, hid, 0, 1), bytes(blob)))[0]
    asm = pk.HeaderAssembler()
    assert asm.add(p) is None and asm.bad == 1
    junk = b"\x07" * 30                          # hashes to its id but does not decode
    p = pk.Decoder().feed(pk.encode("HEADER", 0, 0, (pk.SCHEMA, lh.header_id(junk), 0, 1), junk))[0]
    assert asm.add(p) is None and asm.bad == 2
    p = pk.Decoder().feed(pk.encode("HEADER", 0, 0, (pk.SCHEMA, 5, 3, 2), b"x"))[0]   # part >= parts
    assert asm.add(p) is None and asm.bad == 3


def test_memory_is_bounded():
    enc = pk.Encoder(clock_us=lambda: 0)
    asm = pk.HeaderAssembler(max_bytes=500)
    got = [asm.add(p) for p in _parts(_blob(100), enc, size=200)]
    assert got == [None] * len(got) and asm.too_big >= 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6)), min_size=1, max_size=40),
       st.integers(0, 2 ** 31))
def test_any_mix_of_parts_yields_only_whole_real_headers(picks, seed):
    """Parts of four headers (two with the same part count), shuffled, repeated, or damaged:
    whatever the assembler returns is one of the four, byte for byte."""
    rng = random.Random(seed)
    enc = pk.Encoder(clock_us=lambda: 0)
    blobs = [_blob(8, -90.0), _blob(8, -10.0), _blob(3), _blob(20)]
    parts = [_parts(b, enc, 30) for b in blobs]
    truth = dict((lh.header_id(b), lh.decode(b)) for b in blobs)
    asm = pk.HeaderAssembler()
    for h, k in picks:
        ps = parts[h]
        p = ps[k % len(ps)]
        if rng.random() < 0.1:
            p.tail = bytes(rng.randrange(256) for _ in p.tail)
        got = asm.add(p)
        assert got is None or truth[got["id"]] == got


def test_a_request_names_the_missing_parts_and_only_those_are_resent():
    from device.servo.linkstream import LinkStreamer

    class Port:
        def __init__(self):
            self.out, self.inq = bytearray(), b""

        def write(self, b):
            self.out += b
            return len(b)

        def read(self, n):
            got, self.inq = self.inq[:n], self.inq[n:]
            return got

    t = [0.0]
    port = Port()
    blob = _blob(20)
    ls = LinkStreamer(port, blob, 8, clock=lambda: t[0], part_bytes=30)
    ls.poll()
    parts = [p for p in pk.Decoder().feed(bytes(port.out)) if p.name == "HEADER"]
    n = len(parts)
    asm = pk.HeaderAssembler()
    for p in parts:
        if p.fields["part"] not in (1, 4):          # two parts hit on the line
            assert asm.add(p) is None
    hid, missing = asm.wanted()
    assert hid == lh.header_id(blob) and missing == (1 << 1) | (1 << 4)
    assert pk.HeaderAssembler().wanted(7) == (7, pk.ALL_PARTS)
    del port.out[:]
    port.inq = pk.Encoder(clock_us=lambda: 0).request_header(hid, missing)
    t[0] += 0.01
    ls.poll()
    again = [p for p in pk.Decoder().feed(bytes(port.out)) if p.name == "HEADER"]
    assert [p.fields["part"] for p in again] == [1, 4] and n > 4
    got = [asm.add(p) for p in again]
    assert got[-1] is not None and got[-1]["id"] == hid
    assert ls.counts()["parts_resent"] == 2


class _NullPort:
    """A line that takes every byte and never answers."""

    def write(self, b):
        return len(b)

    def read(self, n):
        return b""


def test_a_scheduled_repeat_goes_behind_the_frames_never_ahead():
    """The header repeats every second, trickled one part behind each frame: a frame never waits
    behind it in the driver's queue (it waited behind the whole header, ~100 ms a second at
    115200 baud, before). The delay of a frame = the line time of what is queued ahead of it,
    by the sender's own model of the driver's buffer (device/servo/paced.py)."""
    from device.body.human import human_model
    from device.capture.loop import make_header
    from device.servo.linkstream import LinkStreamer

    t = [0.0]
    ls = LinkStreamer(_NullPort(), make_header(human_model(), 30.0), 8, baud=115200, clock=lambda: t[0])
    s = ls.sender
    delays = []
    for k in range(300):                                 # 10 s at 30 Hz
        t[0] = k / 30.0
        s._drain()
        queued_s = s.fill / s.bytes_per_s
        before = ls.n["frames_sent"]
        ls.frame([k % 256] * ls.nrows, t[0])
        if k >= 30 and ls.n["frames_sent"] > before:     # after the first header (sent whole)
            delays.append(queued_s)
    assert ls.n["header_repeats"] >= 9 and ls.n["frames_skipped"] <= 2
    assert len(delays) >= 265
    # a frame starts on a line that is idle, or behind at most one header part (~85 B: 7.4 ms)
    assert max(delays) < 0.008


def test_on_a_slow_line_the_scheduled_repeats_take_at_most_a_fifth_of_it():
    """At 9600 baud a 64-row 16-bit header is ~1.1 s of line: repeated every second it took the
    whole line and 44 of 48 frames (4 Hz, 160 B each, 67 % of the line) were skipped. Its
    repeats now come every header line time / HEADER_SHARE (at 115200 baud: still every
    second), and a receiver that lacks it still gets it at once when it asks."""
    from device.servo.linkstream import HEADER_SHARE, LinkStreamer
    rows = [{"name": "row_%02d" % i, "unit": "deg", "lo": -180, "hi": 180} for i in range(64)]
    h = staffheader.make(rows=rows, fps=4.0, bits=16)

    t = [0.0]
    ls = LinkStreamer(_NullPort(), h, 16, baud=9600, clock=lambda: t[0])
    hdr_s = sum(pk.HEAD_SIZE + 10 + len(x) + pk.CRC_SIZE + 4 for x in ls._tails) / 960.0
    assert hdr_s > 1.0 and abs(ls.repeat_s - hdr_s / HEADER_SHARE) < 1e-9
    for k in range(48):                                   # 12 s at 4 Hz
        t[0] = k / 4.0
        ls.frame([k % 256] * 64, t[0])
    c = ls.counts()
    assert c["header_repeats"] == 1 + int(11.75 // ls.repeat_s)
    assert c["frames_skipped"] <= 26 and c["frames_sent"] >= 22
    assert LinkStreamer(_NullPort(), h, 16, baud=115200, clock=lambda: 0.0).repeat_s == 1.0
