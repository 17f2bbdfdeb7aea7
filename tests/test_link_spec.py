"""protocol/SPEC.md cannot drift: its examples, message table and SCHEMA come from the code."""

import pathlib
import re

from protocol import cobs, packets as pk

SPEC = (pathlib.Path(__file__).resolve().parents[1] / "protocol" / "SPEC.md").read_text()


def _examples():
    pat = re.compile(r"<!-- example (\w+) seq=(\d+) time_us=(\d+) fields=([\w,]*) tail=([0-9a-f]*) -->\s*```\s*"
                     r"body: ([0-9a-f |]+)\n\s*crc:\s+([0-9a-f ]+)\n\s*wire: ([0-9a-f ]+)\n```")
    return pat.findall(SPEC)


def H(s):
    return bytes.fromhex(s.replace("|", "").replace(" ", ""))


def test_every_example_matches_the_encoder():
    ex = _examples()
    assert len(ex) == SPEC.count("<!-- example ") >= 6
    for name, seq, t, fields, tail, body, crc, wire in ex:
        f = tuple(pk.SCHEMA if x == "SCHEMA" else int(x) for x in fields.split(",") if x)
        w = pk.encode(name, int(seq), int(t), f, bytes.fromhex(tail))
        assert w == H(wire), name
        raw = cobs.decode(w[:-1])
        assert raw[:-4] == H(body) and raw[-4:] == H(crc), name
        body_hdr = body.split("|")[0]
        assert len(H(body_hdr)) == pk.HEAD_SIZE
        got = pk.Decoder().feed(w)
        assert len(got) == 1 and got[0].name == name


def test_table_and_schema_in_spec():
    assert "SCHEMA = 0x%08X" % pk.SCHEMA in SPEC
    for mid, name, fmt, fields, tail, seeded in pk.MESSAGES:
        row = "| 0x%02X | %s | `%s` | %s | %s | %s |" % (mid, name, fmt, ", ".join(fields) or "-",
                                                       tail or "-", "SCHEMA" if seeded else "0")
        assert row in SPEC, row
    assert "%d bytes + the 0x00 = %d bytes" % (pk.MAX_ENCODED, pk.MAX_PACKET_BYTES) in SPEC
    for reason in pk.DROP_REASONS:
        assert "| %s |" % reason in SPEC
