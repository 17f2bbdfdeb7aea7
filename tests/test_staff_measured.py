"""The measured error budget (host/budget_measured.py) and the "d2p" row transform (16-bit files).

Round trips of the transform are exact (hypothesis, both twins); a file written with
--max-error-mm E (measured) has every joint and ACL 3 cm point within E by forward kinematics,
on a real clip and on random skeletons; old files still read; a bad transform name is one line.
"""

import json
import pathlib
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host.budget import bound_mm
from host.bvh import read_bvh
from host.cli import main
from host.fkerror import point_errors_mm, point_jacobian
from host.formats import read_motion
from host.rowtransform import from_planes, to_planes
from host.staff import Row, Staff
from host.stafffile import decode_png, encode_png
from protocol import rowtransform
from protocol.errors import FormatError

HERE = pathlib.Path(__file__).resolve().parent
CLIP = HERE.parent / "host" / "data" / "131_03_short.bvh"
GOLDEN = sorted((HERE / "golden").glob("staff_v*.png"))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 40), st.integers(0, 10 ** 6), st.sampled_from([1, 30, 3000, 65535]))
def test_d2p_round_trip_is_exact_and_the_twins_agree(rows, frames, seed, walk):
    rng = np.random.default_rng(seed)
    c = (np.cumsum(rng.integers(-walk, walk + 1, (rows, frames)), axis=1) % 65536).astype(np.uint16)
    c[:, rng.random(frames) < 0.1] = rng.choice([0, 65535])       # jumps to the ends
    p = to_planes(c)
    assert p.dtype == np.uint8 and p.shape == (2 * rows, frames)
    assert np.array_equal(from_planes(p), c)
    pure = rowtransform.forward("d2p", c.tolist())
    assert pure == p.tolist()
    assert rowtransform.inverse("d2p", pure) == c.tolist()


def test_d2p_file_is_smaller_and_reads_back_exactly():
    st_ = read_bvh(CLIP).refit("fit").with_bits(16).refit("fit")
    plain = encode_png(st_, effort=1, transform="none")
    planes = encode_png(st_, effort=1)
    assert len(planes) < len(plain)
    q = st_.quantised().values
    assert np.array_equal(decode_png(planes).values, q) and np.array_equal(decode_png(plain).values, q)


def test_jacobian_matches_forward_kinematics():
    clip = read_bvh(CLIP)
    v = clip.values[:, :20]
    rng = np.random.default_rng(1)
    dv = rng.normal(0, 1e-4, v.shape)
    exact = point_errors_mm(clip.skeleton, v, v + dv)
    E = np.zeros((20, clip.skeleton.nlinks, 4, 3))
    for (idx, jk), d in zip(point_jacobian(clip.skeleton, v, dtype=np.float64), dv):
        E[:, idx] += jk * d[:, None, None, None]
    lin = np.linalg.norm(E, axis=-1).max(axis=-1)
    assert np.abs(lin - exact).max() <= 1e-3 * exact.max()


@pytest.mark.parametrize("e_mm", [0.3, 2.0])
def test_measured_budget_holds_on_a_real_clip(e_mm):
    clip = read_bvh(CLIP)
    b = clip.refit("budget", max_error_mm=e_mm, bits=16, bound="measured")
    assert b.meta["max_error_bound"] == "measured"
    back = decode_png(encode_png(b, effort=0))
    assert back.meta["max_error_mm"] == e_mm and back.meta["max_error_bound"] == "measured"
    assert point_errors_mm(clip.skeleton, clip.values, back.values).max() <= e_mm
    # coarser than the chain's guarantee: the guaranteed bound of these steps is above E
    chain = clip.refit("budget", max_error_mm=e_mm, bits=16)
    assert "max_error_bound" not in chain.meta
    assert bound_mm(b).max() > e_mm
    assert len(encode_png(b, effort=0)) < len(encode_png(chain, effort=0))


def _random_skeleton(rng):
    from device.body.skeleton import Dof, Link, Skeleton

    links, dofs = [Link("root", -1, (0, 0, 0))], []
    for axis, kind in (((1, 0, 0), "translation"), ((0, 0, 1), "rotation")):
        dofs.append(Dof("root.%s%d" % (kind[0], len(dofs)), 0, kind, axis, -180 if kind == "rotation" else -2,
                        180 if kind == "rotation" else 2))
    for i in range(1, int(rng.integers(3, 8))):
        links.append(Link("l%d" % i, int(rng.integers(0, i)), rng.normal(0, 0.2, 3)))
        for j in range(int(rng.integers(1, 4))):
            axis = np.eye(3)[int(rng.integers(0, 3))]
            dofs.append(Dof("l%d.r%d" % (i, j), i, "rotation", axis, -170, 170))
    return Skeleton(links, dofs, name="random")


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10 ** 6), st.floats(0.05, 5.0), st.sampled_from([8, 16]))
def test_measured_budget_holds_on_random_skeletons(seed, e_mm, bits):
    rng = np.random.default_rng(seed)
    sk = _random_skeleton(rng)
    frames = int(rng.integers(3, 60))
    v = np.empty((sk.ndof, frames))
    for k, d in enumerate(sk.dofs):
        v[k] = np.clip(np.cumsum(rng.normal(0, 0.05 if d.kind == "translation" else 5.0, frames)), d.lo, d.hi)
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs]
    staff = Staff(v, rows, fps=30.0, bits=8, skeleton=sk)
    try:
        b = staff.refit("budget", max_error_mm=e_mm, bits=bits, bound="measured")
    except FormatError:
        return
    back = decode_png(encode_png(b, effort=0))
    assert point_errors_mm(sk, v, back.values).max() <= e_mm


@pytest.mark.parametrize("path", GOLDEN, ids=[p.name for p in GOLDEN])
def test_old_files_still_read(path):
    st_ = read_motion(path)
    assert st_.frames > 0 and st_.nrows > 0 and np.isfinite(st_.values).any()
    # re-written (16 bits now with the transform, 8 as before) they decode to the same values
    assert np.array_equal(decode_png(encode_png(st_, effort=0)).values, st_.values, equal_nan=True)


def _with_header(data, edit):
    """data with its zTXt header JSON changed by edit(dict) (CRCs fixed)."""
    i = data.index(b"zTXt") - 4
    n = struct.unpack(">I", data[i:i + 4])[0]
    body = data[i + 8:i + 8 + n]
    key, rest = body.split(b"\0", 1)
    c = json.loads(zlib.decompress(rest[1:]))
    edit(c)
    new = key + b"\0\0" + zlib.compress(json.dumps(c).encode())
    chunk = struct.pack(">I", len(new)) + b"zTXt" + new + struct.pack(">I", zlib.crc32(b"zTXt" + new) & 0xFFFFFFFF)
    return data[:i] + chunk + data[i + 12 + n:]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_transform_name_is_one_line_exit_2(capsys, tmp_path):
    st_ = read_bvh(CLIP).with_bits(16).refit("fit")
    bad = tmp_path / "bad.png"
    bad.write_bytes(_with_header(encode_png(st_, effort=0), lambda c: c.update(t="d9x")))
    code, out, err = run(capsys, "info", bad)
    assert code == 2 and "unknown row transform 'd9x'" in err and len(err.strip().splitlines()) == 1
    # a transform on an 8-bit header, and the planes' image read as plain 16-bit codes
    st8 = read_bvh(CLIP).refit("fit")
    bad.write_bytes(_with_header(encode_png(st8, effort=0), lambda c: c.update(t="d2p")))
    code, _, err = run(capsys, "info", bad)
    assert code == 2 and "needs 16 bits" in err and len(err.strip().splitlines()) == 1
    bad.write_bytes(_with_header(encode_png(st_, effort=0), lambda c: (c.pop("t"), c.pop("to", None))))
    code, _, err = run(capsys, "info", bad)
    assert code == 2 and "rows" in err and len(err.strip().splitlines()) == 1


def test_convert_measured_and_chain_bounds(capsys, tmp_path):
    a, b = tmp_path / "m.png", tmp_path / "c.png"
    code, out, _ = run(capsys, "convert", CLIP, a, "--max-error-mm", "0.5")
    assert code == 0 and "measured on this clip" in out
    code, out, _ = run(capsys, "info", a)
    assert "measured by forward kinematics" in out
    assert run(capsys, "convert", CLIP, b, "--max-error-mm", "0.5", "--bound", "chain")[0] == 0
    assert "max_error_bound" not in read_motion(b).meta
    assert a.stat().st_size < b.stat().st_size
    orig = read_bvh(CLIP)
    assert point_errors_mm(orig.skeleton, orig.values, read_motion(a).values).max() <= 0.5
    code, _, err = run(capsys, "convert", CLIP, tmp_path / "x.csv", "--transform", "d2p")
    assert code == 2 and "--transform" in err and not (tmp_path / "x.csv").exists()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 31 - 1))
def test_any_d2p_pixels_under_a_real_header_decode_inside_the_rows_ranges(seed):
    """A hostile d2p file (a real header, pixels anything at all) decodes to values inside each
    row's declared [lo, hi]: the planes' wrap keeps every code in 0..65535."""
    import io
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo
    rng = np.random.default_rng(seed)
    rows = [Row("a%d" % i, "deg", -90.0, 90.0, True) for i in range(3)]
    staff = Staff(rng.uniform(-90, 90, (3, 40)), rows, 30.0, 16, None, {"source": "test"})
    text = Image.open(io.BytesIO(encode_png(staff))).info["motionstaff"]
    info = PngInfo()
    info.add_text("motionstaff", text, zip=True)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (6, 40), dtype=np.uint8), "L").save(buf, "PNG", pnginfo=info)
    back = decode_png(buf.getvalue(), "hostile.png")
    assert np.all(back.values >= -90.0) and np.all(back.values <= 90.0)
    # the same header over an image of the wrong height: refused, naming the file
    buf = io.BytesIO()
    Image.fromarray(np.zeros((5, 40), np.uint8), "L").save(buf, "PNG", pnginfo=info)
    with pytest.raises(FormatError, match="hostile.png: header has 3 rows"):
        decode_png(buf.getvalue(), "hostile.png")
