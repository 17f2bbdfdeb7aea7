"""The "dxe" row transform (the 16-bit default since session 15): dxs whose differences start at
the first frame (frame t of order min(t, n)), so only frame 0 holds a code itself.

Both twins agree and round-trip exactly, and files (the default) byte for byte
(tests/test_staff_dxs.py's tests, with edge); the first frames hold the differences of lower order;
on a real clip dxe is smaller than dxs; a dxs file written before
(tests/golden/staff_v3_dxs_131_03_short.png, with missing values) reads to the codes of the
same staff written as codes (staff_v3_codes_131_03_short.png); a reader without dxe refuses
the file in one line.
"""

import io
import json
import pathlib

import numpy as np
from PIL import Image

from host.bvh import read_bvh
from host.cli import main
from host.stafffile import decode_png, encode_png
from protocol import rowtransform
from tests.test_staff_dxs import _staff

HERE = pathlib.Path(__file__).resolve().parent
CLIP = HERE.parent / "host" / "data" / "131_03_short.bvh"


def test_the_first_frames_hold_differences_of_lower_order():
    c = [[1000, 1010, 1030, 1060, 1100]]
    # order 2: c_0, then the first difference, then second differences
    assert rowtransform._diff(c[0], 2, edge=True) == [1000, 10, 10, 10, 10]
    assert rowtransform._diff(c[0], 2) == [1000, -990, 10, 10, 10]
    assert rowtransform._diff(c[0], 3, edge=True) == [1000, 10, 10, 0, 0]
    planes = rowtransform.forward("dxe", c, [2])
    assert planes == [[7, 0, 0, 0, 0], [208, 20, 20, 20, 20]]      # zigzag(1000) = 2000 = 7 * 256 + 208
    assert rowtransform.inverse("dxe", planes, [2], 5) == c


def test_dxe_is_smaller_than_dxs_on_a_real_clip():
    b = read_bvh(CLIP).refit("budget", max_error_mm=0.2, bits=16, bound="measured")
    dxe = encode_png(b)
    dxs = encode_png(b, transform="dxs")
    assert len(dxe) < len(dxs)
    q = b.quantised().values
    assert np.array_equal(decode_png(dxe).values, q) and np.array_equal(decode_png(dxs).values, q)


def test_a_dxs_file_written_before_reads():
    data = (HERE / "golden" / "staff_v3_dxs_131_03_short.png").read_bytes()
    assert json.loads(Image.open(io.BytesIO(data)).info["motionstaff"])["t"] == "dxs"
    old = decode_png(data)
    codes = decode_png((HERE / "golden" / "staff_v3_codes_131_03_short.png").read_bytes())
    assert old.bits == 16 and np.isnan(old.values[5, 3:7]).all()
    assert np.array_equal(old.values, codes.values, equal_nan=True)
    new = encode_png(old, effort=0)
    assert np.array_equal(decode_png(new).values, old.values, equal_nan=True)


def test_a_reader_without_dxe_refuses_it_in_one_line(capsys, tmp_path, monkeypatch):
    path = tmp_path / "new.png"
    path.write_bytes(encode_png(_staff(), effort=0))
    monkeypatch.setattr(rowtransform, "NAMES", ("d2p", "dxp", "dxs"))
    code = main(["info", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "unknown row transform 'dxe'" in err and len(err.strip().splitlines()) == 1
