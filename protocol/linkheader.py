"""The compact link header: what a receiver needs to turn frame codes into values, nothing more.

    from protocol import linkheader as lh
    blob = lh.encode([("l_knee", -10.0, 150.0), ("r_knee", -10.0, 150.0)], bits=8, fps=30.0)
    hid = lh.header_id(blob)                 # CRC-32 of the blob: the id every HEADER part carries
    h = lh.decode(blob)                      # {"id", "bits", "fps", "rows": [{"name", "lo", "hi"}]}
    blob = lh.from_staff(staff_header)       # rows, ranges and bits of a staff header; no skeleton

Layout (all little-endian): version u8 (= 1) | bits u8 (8 or 16) | fps_mhz u32 (fps * 1000) |
rows u16 | per row: lo f32 | hi f32 | name_len u8 | name (UTF-8, at most 32 bytes; 0 = unnamed).
Ranges are single-precision (what a Pico's MicroPython float holds): receivers decode codes with
these f32 ranges (the unit encodes with its doubles: < 1e-7 of the range apart). The header's id is the CRC-32 of the whole blob, so two headers that differ
in any byte have different ids (and their parts never join), and an assembled header whose bytes
do not hash to the id its parts named is damaged. 48 rows with 6-letter names: 728 bytes.
"""

import struct

from protocol import crc
from protocol.errors import FormatError

VERSION = 1
MAX_ROWS = 1024
MAX_NAME = 32
_HEAD = "<BBIH"
_HEAD_SIZE = 8
_ROW = "<ffB"
_ROW_SIZE = 9


def header_id(blob):
    """The header's id: CRC-32/ISO-HDLC of its bytes (never 0: 0 means "no header")."""
    return crc.crc32(blob) or 1


def encode(rows, bits=8, fps=30.0):
    """rows: [(name or "", lo, hi)] -> blob. Raises FormatError on what a receiver could not use."""
    if bits != 8 and bits != 16:
        raise FormatError("link header: bits must be 8 or 16, not %r" % (bits,))
    if not 0 < len(rows) <= MAX_ROWS:
        raise FormatError("link header: %d rows (need 1..%d)" % (len(rows), MAX_ROWS))
    if not 0 < fps < 4000000:
        raise FormatError("link header: fps %r out of range" % (fps,))
    out = [struct.pack(_HEAD, VERSION, bits, int(fps * 1000 + 0.5), len(rows))]
    for name, lo, hi in rows:
        nb = (name or "").encode()[:MAX_NAME]
        lo = float(lo)
        hi = float(hi)
        if not (lo == lo and hi == hi and lo < hi):
            raise FormatError("link header: row %r range [%r, %r] is not lo < hi" % (name, lo, hi))
        out.append(struct.pack(_ROW, lo, hi, len(nb)) + nb)
    return b"".join(out)


def from_staff(header):
    """The link header of a staff header dict (protocol/staffheader.py): names, lo, hi, bits, fps."""
    rows = []
    for r in header["rows"]:
        rows.append((r.get("name", ""), r["lo"], r["hi"]))
    return encode(rows, header.get("bits", 8), header.get("fps", 30.0) or 30.0)


def decode(blob):
    """blob -> {"id", "bits", "fps", "rows"}; FormatError naming the problem for any bad blob."""
    n = len(blob)
    if n < _HEAD_SIZE:
        raise FormatError("link header: %d bytes is too short" % n)
    version, bits, fps_mhz, nrows = struct.unpack_from(_HEAD, blob, 0)
    if version != VERSION:
        raise FormatError("link header: version %d (this end reads %d)" % (version, VERSION))
    if bits != 8 and bits != 16:
        raise FormatError("link header: bits %d" % bits)
    if nrows == 0 or nrows > MAX_ROWS or fps_mhz == 0:
        raise FormatError("link header: %d rows, fps %d mHz" % (nrows, fps_mhz))
    rows = []
    p = _HEAD_SIZE
    for i in range(nrows):
        if p + _ROW_SIZE > n:
            raise FormatError("link header: ends inside row %d" % i)
        lo, hi, k = struct.unpack_from(_ROW, blob, p)
        p += _ROW_SIZE
        if k > MAX_NAME or p + k > n:
            raise FormatError("link header: row %d name of %d bytes" % (i, k))
        try:
            name = bytes(blob[p:p + k]).decode()
        except UnicodeError:
            raise FormatError("link header: row %d name is not UTF-8" % i)
        p += k
        if not (lo == lo and hi == hi and lo < hi):
            raise FormatError("link header: row %d range is not lo < hi" % i)
        rows.append({"name": name, "lo": lo, "hi": hi})
    if p != n:
        raise FormatError("link header: %d bytes after the last row" % (n - p))
    return {"id": header_id(blob), "bits": bits, "fps": fps_mhz / 1000.0, "rows": rows}
