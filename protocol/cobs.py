"""Consistent Overhead Byte Stuffing (Cheshire & Baker 1999): no 0x00 in the encoded bytes.

    from protocol import cobs
    cobs.encode(b"\\x11\\x00\\x22") == b"\\x02\\x11\\x02\\x22"
    cobs.decode(cobs.encode(data)) == data       # FormatError on bytes no encoder produces

The encoded form is at most len(data) + 1 + len(data) // 254 bytes and contains no zero, so a
0x00 can delimit packets. Works a block at a time (bytes.find / slicing), not per byte.
Identical output to the PyPI `cobs` package (tests use it as the oracle).
"""

from protocol.errors import FormatError


def encoded_size_max(n):
    """Largest encoded length for n input bytes."""
    return n + 1 + n // 254


def encode(data):
    """COBS-encode bytes-like data; the result has no 0x00 byte."""
    data = bytes(data)
    out = bytearray()
    n = len(data)
    i = 0
    while True:
        j = data.find(b"\x00", i, i + 254)
        if j < 0:
            end = i + 254 if n - i >= 254 else n
            block = data[i:end]
            if len(block) == 254:
                out.append(0xFF)
                out += block
                i = end
                if i == n:
                    # a full block at the very end still needs no trailing code byte
                    return bytes(out)
                continue
            out.append(len(block) + 1)
            out += block
            return bytes(out)
        out.append(j - i + 1)
        out += data[i:j]
        i = j + 1


def decode(enc):
    """Inverse of encode; FormatError if enc contains 0x00 or a code runs past the end."""
    enc = bytes(enc)
    n = len(enc)
    if n == 0:
        raise FormatError("cobs: empty input")
    out = bytearray()
    i = 0
    while i < n:
        code = enc[i]
        if code == 0:
            raise FormatError("cobs: zero byte at offset %d" % i)
        end = i + code
        if end > n:
            raise FormatError("cobs: block at offset %d runs past the end" % i)
        block = enc[i + 1:end]
        if b"\x00" in block:
            raise FormatError("cobs: zero byte inside a block at offset %d" % i)
        out += block
        i = end
        if code != 0xFF and i < n:
            out.append(0)
    return bytes(out)
