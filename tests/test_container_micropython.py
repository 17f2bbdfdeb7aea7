"""The recording container writes the same blocks and recovers the same frames under MicroPython.

(MicroPython's dicts do not keep insertion order, so the header JSON's key order differs: the
header must parse to the same dict, the blocks must be byte-identical.)"""

import io

from protocol import container, staffheader

CODE = """
import io
from protocol import container, staffheader
rows = [{"name": "r%d" % i, "unit": "deg", "lo": -90, "hi": 90} for i in range(10)]
h = staffheader.make(rows=rows, fps=30.0, bits=BITS)
b = io.BytesIO()
w = container.Writer(b, h, frames_per_block=3)
for k in range(7):
    w.write_frame([None if (k + i) % 4 == 0 else (k * 37 + i * 11) % TOP for i in range(10)], t_ms=33 * k)
w.close()
data = b.getvalue()
print(data.hex())
rec = container.parse(data[:-5])
print(rec.nframes, rec.torn, rec.dropped_bytes, rec.frames[-1][2])
"""


def _cpython(bits):
    top = (1 << bits) - 1
    rows = [{"name": "r%d" % i, "unit": "deg", "lo": -90, "hi": 90} for i in range(10)]
    h = staffheader.make(rows=rows, fps=30.0, bits=bits)
    b = io.BytesIO()
    w = container.Writer(b, h, frames_per_block=3)
    for k in range(7):
        w.write_frame([None if (k + i) % 4 == 0 else (k * 37 + i * 11) % top for i in range(10)], t_ms=33 * k)
    w.close()
    data = b.getvalue()
    rec = container.parse(data[:-5])
    return data, "%d %s %d %s" % (rec.nframes, rec.torn, rec.dropped_bytes, rec.frames[-1][2])


def test_container_on_micropython(mpy):
    for bits in (8, 16):
        code = CODE.replace("BITS", str(bits)).replace("TOP", str((1 << bits) - 1))
        out = mpy.run(code).strip().splitlines()
        ref, summary = _cpython(bits)
        got = bytes.fromhex(out[0])
        assert out[1] == summary
        h1, at1 = container.read_header(got)
        h2, at2 = container.read_header(ref)
        assert h1 == h2
        assert got[at1:] == ref[at2:]
        assert container.parse(got).frames == container.parse(ref).frames
