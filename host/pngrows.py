"""PNG row filters (RFC 2083 / PNG spec section 9): choose one per row, and undo them.

    from host.pngrows import filter_rows, unfilter_rows
    data = filter_rows(raw, bpp=1)                 # raw (rows, rowbytes) uint8 -> bytes to deflate
    raw2 = unfilter_rows(data, rows, rowbytes, 1)  # == raw

filter_rows tries None, Sub, Up, Average and Paeth on each row and keeps the one whose bytes
have the least order-0 entropy (a staff row is one dof over time, so Sub, the difference along
time, usually wins; on the benchmark clips this picks as well as deflating each candidate). unfilter_rows is vectorised for None/Sub/Up and loops for Average/Paeth.
"""

import numpy as np

from protocol.errors import FormatError


def _candidates(x, up, bpp):
    x = x.astype(np.int16)
    b = up.astype(np.int16)
    a = np.concatenate([np.zeros(bpp, np.int16), x[:-bpp]])
    c = np.concatenate([np.zeros(bpp, np.int16), b[:-bpp]])
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    return [x, x - a, x - b, x - ((a + b) >> 1), x - pred]


def _entropy_bits(row):
    """Order-0 entropy of a row's bytes, in bits: what deflate's Huffman stage roughly pays."""
    counts = np.bincount(row, minlength=256)
    p = counts[counts > 0] / row.size
    return -float((p * np.log2(p)).sum()) * row.size


def filter_rows(raw, bpp, choose=True, fixed=1):
    """Filtered scanlines (a filter-type byte, then the row) for rows of raw (rows, rowbytes):
    each row's filter chosen, or (choose=False) filter `fixed` on every row (0 None, 1 Sub)."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    out = []
    prev = np.zeros(raw.shape[1], np.uint8)
    for r in range(raw.shape[0]):
        if choose:
            cands = [(c & 0xFF).astype(np.uint8) for c in _candidates(raw[r], prev, bpp)]
            k = int(np.argmin([_entropy_bits(c) for c in cands]))
            row = cands[k].tobytes()
        elif fixed == 0:
            k = 0
            row = raw[r].tobytes()
        else:
            k = 1
            row = ((raw[r].astype(np.int16) - np.concatenate([np.zeros(bpp, np.int16), raw[r, :-bpp]])) & 0xFF
                   ).astype(np.uint8).tobytes()
        out.append(bytes([k]))
        out.append(row)
        prev = raw[r]
    return b"".join(out)


def unfilter_rows(data, rows, rowbytes, bpp, where="png"):
    """Undo the filters: (rows, rowbytes) uint8 from inflated IDAT bytes."""
    if len(data) != rows * (rowbytes + 1):
        raise FormatError("%s: image data has %d bytes, expected %d" % (where, len(data), rows * (rowbytes + 1)))
    buf = np.frombuffer(data, np.uint8).reshape(rows, rowbytes + 1)
    out = np.zeros((rows, rowbytes), np.uint8)
    prev = np.zeros(rowbytes, np.uint8)
    for r in range(rows):
        kind, x = int(buf[r, 0]), buf[r, 1:]
        if kind == 0:
            row = x.copy()
        elif kind == 1:
            # each byte plus the byte bpp to its left: a running sum per interleaved plane
            row = (np.cumsum(x.reshape(-1, bpp).astype(np.uint64), axis=0) & 0xFF).astype(np.uint8).ravel()
        elif kind == 2:
            row = x + prev
        elif kind in (3, 4):
            row = _unfilter_slow(kind, x, prev, bpp)
        else:
            raise FormatError("%s: row %d has unknown PNG filter type %d" % (where, r, kind))
        out[r] = row
        prev = out[r]
    return out


def _unfilter_slow(kind, x, prev, bpp):
    row = bytearray(len(x))
    xs, up = x.tolist(), prev.tolist()
    for i in range(len(xs)):
        a = row[i - bpp] if i >= bpp else 0
        b = up[i]
        if kind == 3:
            row[i] = (xs[i] + ((a + b) >> 1)) & 0xFF
        else:
            c = up[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pr = a if (pa <= pb and pa <= pc) else (b if pb <= pc else c)
            row[i] = (xs[i] + pr) & 0xFF
    return np.frombuffer(bytes(row), np.uint8)
