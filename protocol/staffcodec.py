"""The staff codec: one joint value <-> one 8- or 16-bit code over the row's range.

    from protocol import staffcodec as sc
    c = sc.encode(45.0, -90.0, 90.0, 8)     # 191
    sc.decode(c, -90.0, 90.0, 8)            # 45.17..., within sc.max_error(-90, 90, 8)

code = floor((v - lo) / (hi - lo) * (2^bits - 1) + 0.5), clamped to [0, 2^bits - 1]; a missing
value (None, or NaN) stays missing (None). Pure Python for MicroPython; host/staff.py has the
numpy path, which gives identical codes. Angles are unwrapped before quantisation
(unwrap_deg / Unwrapper) so that motion through +-180 degrees stays continuous.
"""

BITS = (8, 16)


def levels(bits):
    """Largest code: 255 for 8 bits, 65535 for 16."""
    if bits != 8 and bits != 16:
        raise ValueError("bits must be 8 or 16, not %r" % (bits,))
    return (1 << bits) - 1


def step(lo, hi, bits):
    """Value difference between two neighbouring codes."""
    return (hi - lo) / levels(bits)


def max_error(lo, hi, bits):
    """The exact bound on |decode(encode(v)) - v| for lo <= v <= hi: half a step."""
    return (hi - lo) / (2.0 * levels(bits))


def _missing(v):
    # NaN is the only value not equal to itself
    return v is None or v != v


def encode(v, lo, hi, bits):
    """Quantise v over [lo, hi] to a code, clamped; None for a missing value."""
    if _missing(v):
        return None
    top = levels(bits)
    span = hi - lo
    if span <= 0:
        return 0
    # code = floor((v - lo) / (hi - lo) * top + 0.5)
    x = (v - lo) / span * top + 0.5
    if x <= 0.0:
        return 0
    if x >= top:
        return top
    return int(x)  # x > 0, so int() is floor


def decode(code, lo, hi, bits):
    """The value a code stands for; None stays None."""
    if code is None:
        return None
    top = levels(bits)
    # v = lo + code * (hi - lo) / top
    return lo + code * (hi - lo) / top


def encode_column(values, los, his, bits):
    """One frame: a list of codes (None where a value is missing)."""
    return [encode(values[i], los[i], his[i], bits) for i in range(len(values))]


def decode_column(codes, los, his, bits):
    """One frame back to values (None where missing)."""
    return [decode(codes[i], los[i], his[i], bits) for i in range(len(codes))]


def unwrap_deg(prev_deg, v_deg):
    """v + k*360 for the whole k that lands nearest prev (prev None: v unchanged)."""
    if prev_deg is None or _missing(v_deg):
        return v_deg
    d = v_deg - prev_deg
    # k = round(d / 360), ties away from the previous value's side are irrelevant at +-180
    k = int((d + 180.0) // 360.0)
    return v_deg - k * 360.0


class Unwrapper:
    """Unwraps a stream of angle columns row by row; rows not marked as angles pass through.

        u = Unwrapper([True, False])
        u.push([179.0, 0.2]); u.push([-179.0, 0.3])   # -> [181.0, 0.3]
    """

    def __init__(self, wrap_rows):
        self.wrap = list(wrap_rows)
        self.prev = [None] * len(self.wrap)

    def push(self, values):
        out = list(values)
        for i in range(len(out)):
            if self.wrap[i] and not _missing(out[i]):
                out[i] = unwrap_deg(self.prev[i], out[i])
                self.prev[i] = out[i]
        return out
