"""protocol/download.py: names, the listing, and the request/reply packets - identical bytes on
CPython and on MicroPython (the wasm runner), and every unsafe name refused."""

import pytest

from protocol import download as dl
from protocol import packets as pk
from protocol.errors import FormatError

CODE = """
from protocol import download as dl
from protocol import packets as pk
enc = pk.Encoder(clock_us=lambda: 123456)
out = [dl.list_request(enc, 7), dl.get_request(enc, 8, "rec0001.msr", 1000, dl.WINDOW)]
out += dl.reply_chunks(enc, 8, 1000, bytes(range(256)) * 5, True)
out.append(dl.error_reply(enc, 9, pk.ERR_NOT_FOUND, "no recording 'x'"))
out.append(dl.encode_listing([("rec0001.msr", 12345, 0xDEADBEEF), ("b-2_x.msr", 0, 1)]))
print(",".join([ "".join(["%02x" % c for c in b]) for b in out ]))
print([dl.safe_name(n) for n in ("ok.msr", "../x", "a/b", ".h", "", "x" * 65, "a b", "c:d", "ä.msr")])
"""


def cpython_run():
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(CODE, {})
    return buf.getvalue()


def test_same_bytes_on_micropython(mpy):
    assert mpy.run(CODE) == cpython_run()


def test_safe_names():
    assert dl.safe_name("rec0001.msr") and dl.safe_name("a-b_c.1.msr")
    for bad in ("../evil.msr", "a/b.msr", "/abs.msr", ".hidden", "..", "", "x" * 65, "a\\b", "nul\x00",
                "c:d.msr", "space .msr", None, 5):
        assert not dl.safe_name(bad), bad


def test_listing_round_trip_and_errors():
    entries = [("rec0001.msr", 12345, 0xDEADBEEF), ("b.msr", 0, 1)]
    assert dl.decode_listing(dl.encode_listing(entries)) == entries
    with pytest.raises(FormatError, match="unsafe"):
        dl.encode_listing([("../x.msr", 1, 1)])
    for bad in (b"a\t1\n", b"a\tx\t00\n", b"a\t-1\t00\n", b"\xff\xfe"):
        with pytest.raises(FormatError):
            dl.decode_listing(bad)


def test_reply_chunks_cover_the_data_once():
    enc = pk.Encoder(clock_us=lambda: 0)
    data = bytes(range(256)) * 9
    dec = pk.Decoder()
    got = dec.feed(b"".join(dl.reply_chunks(enc, 3, 500, data, True)))
    assert [p.fields["offset"] for p in got] == [500 + i * dl.CHUNK for i in range(len(got))]
    assert b"".join(p.tail for p in got) == data
    assert [p.fields["flags"] & pk.FLAG_LAST for p in got] == [0] * (len(got) - 1) + [1]
    assert max(len(p.tail) for p in got) == dl.CHUNK
    empty = dec.feed(b"".join(dl.reply_chunks(enc, 4, 0, b"", True)))
    assert len(empty) == 1 and empty[0].fields["flags"] == pk.FLAG_LAST
    with pytest.raises(FormatError, match="unsafe"):
        dl.get_request(enc, 1, "../x", 0, 10)
