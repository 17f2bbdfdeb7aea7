"""The numpy twin of protocol/rowtransform.py: 16-bit codes <-> "d2p" byte planes, exactly.

    from host.rowtransform import to_planes, from_planes
    planes = to_planes(codes)              # (rows, frames) uint16 -> (2 * rows, frames) uint8
    assert (from_planes(planes) == codes).all()

Same integers as the pure version (tests check it with hypothesis): the second difference of
each row along time (mod 2^16, signed), zigzagged, high bytes of every row then low bytes.
"""

import numpy as np

from protocol.errors import FormatError


def to_planes(codes):
    """(2 rows, frames) uint8: high then low byte planes of the zigzagged second differences."""
    c = np.asarray(codes)
    if c.ndim != 2 or not np.issubdtype(c.dtype, np.integer) or (c.size and (c.min() < 0 or c.max() > 0xFFFF)):
        raise ValueError("row transform d2p: the codes are not (rows, frames) 16-bit codes (0..65535)")
    c = c.astype(np.int64)
    pad = np.zeros((c.shape[0], 2), np.int64)
    x = np.concatenate([pad, c], axis=1)
    # d_t = c_t - 2 c_(t-1) + c_(t-2)  (mod 2^16, as a signed number)
    d = (x[:, 2:] - 2 * x[:, 1:-1] + x[:, :-2]) & 0xFFFF
    d = np.where(d >= 0x8000, d - 0x10000, d)
    # z = 2 d (d >= 0), -2 d - 1 (d < 0)
    z = np.where(d >= 0, 2 * d, -2 * d - 1)
    return np.concatenate([z >> 8, z & 0xFF], axis=0).astype(np.uint8)


def from_planes(planes):
    """(rows, frames) uint16 codes of to_planes' output, or FormatError (planes it cannot make)."""
    p = np.asarray(planes)
    if p.ndim != 2 or p.shape[0] % 2:
        raise FormatError("row transform d2p: planes of shape %s, not 2-D with an even count of rows"
                          % (p.shape,))
    if p.size and (p.min() < 0 or p.max() > 255):
        raise FormatError("row transform d2p: a plane sample is not a byte (0..255)")
    p = p.astype(np.int64)
    n = p.shape[0] // 2
    z = (p[:n] << 8) | p[n:]
    # d = z / 2 (z even), -(z + 1) / 2 (z odd)
    d = np.where(z & 1, -((z + 1) >> 1), z >> 1)
    # c_t = sum of the first differences, each the sum of the second ones (mod 2^16)
    d1 = np.cumsum(d, axis=1) & 0xFFFF
    return (np.cumsum(d1, axis=1) & 0xFFFF).astype(np.uint16)
