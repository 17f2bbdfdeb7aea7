"""The convert / info / diff / show commands, and one-line errors (exit 2) on bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from host.cli import main
from host.formats import read_motion, register_reader, write_motion
from protocol.errors import FormatError


@pytest.fixture(scope="module")
def clip(shared_data):
    p = shared_data / "bvh" / "131_03.bvh"
    if not p.exists():
        pytest.skip("%s is absent" % p)
    return p


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_convert_chain_and_info_and_diff(capsys, tmp_path, clip):
    png, bvh, csv, png2 = (tmp_path / n for n in ("a.png", "a.bvh", "a.csv", "b.png"))
    assert run(capsys, "convert", clip, png)[0] == 0
    code, out, err = run(capsys, "info", png, "--json")
    assert code == 0 and err == ""
    info = json.loads(out)
    assert (info["frames"], info["fps"], info["bits"]) == (1102, 120.0, 8)
    assert info["duration_s"] == pytest.approx(1102 / 120.0)
    assert {"name", "unit", "lo", "hi"} <= set(info["rows"][0]) and len(info["rows"]) == 96
    assert run(capsys, "convert", png, bvh)[0] == 0
    assert run(capsys, "convert", png, csv)[0] == 0
    assert run(capsys, "convert", csv, png2, "--bits", "16")[0] == 0
    # the staff against its source: every row within its bound
    code, out, _ = run(capsys, "diff", clip, png, "--json")
    d = json.loads(out)
    bound = {r["name"]: r["max_error"] for r in info["rows"]}
    assert code == 0 and {"rms", "max", "rows"} <= set(d)
    assert all(r["max"] <= bound[r["name"]] * (1 + 1e-9) + 1e-9 for r in d["rows"])
    # exported BVH and CSV hold the staff's values
    for other, tol in ((bvh, 1e-6), (csv, 1e-6), (png2, 0.01)):    # png2: re-quantised at 16 bits
        d = json.loads(run(capsys, "diff", png, other, "--json")[1])
        assert d["max"] < tol and d["frames"] == 1102
    code, out, _ = run(capsys, "diff", png, png)
    assert code == 0 and "overall" in out
    code, out, _ = run(capsys, "info", png)
    assert code == 0 and "Hips.Xposition" in out


def test_convert_options(capsys, tmp_path, clip):
    a16, col, sk = tmp_path / "a16.png", tmp_path / "col.png", tmp_path / "sk.png"
    assert run(capsys, "convert", clip, a16, "--bits", "16")[0] == 0
    assert read_motion(a16).bits == 16
    assert run(capsys, "convert", a16, col, "--bits", "8", "--colour")[0] == 0
    from PIL import Image
    assert Image.open(col).mode == "P" and read_motion(col).bits == 8
    assert run(capsys, "convert", clip, sk, "--ranges", "skeleton")[0] == 0
    st = read_motion(sk)
    assert st.row_index("LeftKnee.Xrotation") >= 0
    assert st.rows[st.row_index("LeftKnee.Xrotation")].lo == -180.0


def test_show(capsys, tmp_path, clip):
    out = tmp_path / "score.png"
    assert run(capsys, "show", clip, "-o", out, "--title", "t")[0] == 0
    from PIL import Image
    assert Image.open(out).size[0] > 500


def _bad(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_bad_input_is_one_line_exit_2(capsys, tmp_path, clip):
    good = tmp_path / "good.png"
    assert run(capsys, "convert", clip, good)[0] == 0
    data = good.read_bytes()
    cases = [
        (["info", tmp_path / "missing.png"], "missing.png"),
        (["info", _bad(tmp_path, "text.png", b"hello")], "text.png: not a PNG"),
        (["info", _bad(tmp_path, "cut.png", data[: len(data) // 2])], "cut.png: truncated"),
        (["info", _bad(tmp_path, "x.foo", b"")], "x.foo: cannot read"),
        (["info", _bad(tmp_path, "bad.bvh", b"HIERARCHY\nROOT a\n{\nOFFSET 0 0\n")], "bad.bvh: no MOTION"),
        (["info", _bad(tmp_path, "bad.csv", b"time_s,a [deg]\n0,1\n0.1,x\n")], "bad.csv: line 3"),
        (["convert", good, tmp_path / "out.xyz"], "out.xyz: cannot write"),
        (["convert", good, good], "same file"),
        (["convert", good, tmp_path / "o.csv", "--colour"], "--colour"),
        (["diff", good, _bad(tmp_path, "other.csv", b"time_s,zz [deg]\n0,1\n")], "no rows in common"),
        (["show", tmp_path / "missing.bvh", "-o", tmp_path / "s.png"], "missing.bvh"),
    ]
    for argv, message in cases:
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        assert err.count("\n") == 1 and err.startswith("motionstaff: ") and message in err, (argv, err)
        assert "Traceback" not in err


def test_no_traceback_through_the_real_entry_point(tmp_path):
    p = _bad(tmp_path, "junk.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 7)
    r = subprocess.run([sys.executable, "-m", "host.cli", "info", str(p)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("motionstaff: ") and r.stderr.count("\n") == 1


def test_formats_registry(tmp_path):
    with pytest.raises(FormatError, match="cannot read"):
        read_motion(_bad(tmp_path, "a.xyz", b""))
    register_reader(".txt2", "host.csvio:read_csv")
    p = _bad(tmp_path, "a.txt2", b"time_s,a [deg],b [cm]\n0,1,\n0.5,2,3\n")
    st = read_motion(p)
    assert st.fps == 2.0 and st.names == ["a", "b"] and st.rows[0].wrap and np.isnan(st.values[1, 0])
    out = tmp_path / "a.png"
    write_motion(out, st, colour=False, units="cm")     # options a writer does not take are dropped
    assert np.array_equal(read_motion(out).values, st.quantised().values, equal_nan=True)
