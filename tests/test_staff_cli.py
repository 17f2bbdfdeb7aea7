"""convert --max-error-mm / default budget, info's bound, show --rows: the product path, and one-line errors."""

import json
import pathlib

import numpy as np
import pytest

from host.bvh import read_bvh
from host.cli import main
from host.formats import read_motion

CLIP = pathlib.Path(__file__).resolve().parent.parent / "host" / "data" / "131_03_short.bvh"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_default_and_budget_convert_state_their_bound(capsys, tmp_path):
    png = tmp_path / "a.png"
    code, out, _ = run(capsys, "convert", CLIP, png)
    assert code == 0 and "within" in out
    st = read_motion(png)
    assert st.bits == 8 and st.meta["max_error_mm"] > 0
    orig = read_bvh(CLIP)
    assert (np.abs(st.values - orig.values).max(axis=1) <= st.max_error() * (1 + 1e-9) + 1e-12).all()
    code, out, _ = run(capsys, "info", png, "--json")
    assert json.loads(out)["max_error_mm"] == st.meta["max_error_mm"]
    fine = tmp_path / "fine.png"
    assert run(capsys, "convert", CLIP, fine, "--max-error-mm", "5")[0] == 0
    assert read_motion(fine).bits == 16 and read_motion(fine).meta["max_error_mm"] == 5
    code, out, _ = run(capsys, "info", fine)
    assert "within 5 mm" in out
    # a staff converted on keeps its ranges and its bound; --bits 16 alone is fitted, no budget
    assert run(capsys, "convert", fine, tmp_path / "b.png")[0] == 0
    assert read_motion(tmp_path / "b.png").meta["max_error_mm"] == 5
    assert run(capsys, "convert", CLIP, tmp_path / "c.png", "--bits", "16")[0] == 0
    assert "max_error_mm" not in read_motion(tmp_path / "c.png").meta


@pytest.mark.parametrize("args, message", [
    (["--max-error-mm", "0.0001"], "cannot be met at 16 bits"),
    (["--max-error-mm", "5", "--bits", "8"], "cannot be met at 8 bits"),
    (["--max-error-mm", "-1"], "positive number"),
    (["--max-error-mm", "5", "--ranges", "fit"], "cannot go with --ranges"),
    (["--ranges", "budget"], "needs --max-error-mm"),
    (["--aim-mm", "0.1"], "--aim-mm needs --max-error-mm"),
    (["--max-error-mm", "5", "--bound", "chain", "--aim-mm", "0.1"], "--aim-mm needs --max-error-mm"),
    (["--max-error-mm", "5", "--aim-mm", "-1"], "--aim-mm must be a positive number"),
    (["--max-error-mm", "5", "--aim-p99"], "--aim-p99 needs --aim-mm"),
])
def test_bad_budget_is_one_line_exit_2(capsys, tmp_path, args, message):
    code, out, err = run(capsys, "convert", CLIP, tmp_path / "x.png", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()


def test_convert_aims_the_codes_and_keeps_the_bound(capsys, tmp_path):
    png = tmp_path / "aim.png"
    code, out, _ = run(capsys, "convert", CLIP, png, "--max-error-mm", "0.2", "--aim-mm", "0.1")
    assert code == 0 and "within 0.2 mm (measured on this clip)" in out
    assert read_motion(png).meta["max_error_mm"] == 0.2


def test_budget_without_lengths_is_one_line(capsys, tmp_path):
    csv = tmp_path / "a.csv"
    assert run(capsys, "convert", CLIP, csv)[0] == 0
    code, _, err = run(capsys, "convert", csv, tmp_path / "x.png", "--max-error-mm", "5")
    assert code == 2 and ("skeleton" in err or "bone lengths" in err) and len(err.strip().splitlines()) == 1


def test_show_rows_and_many_rows(capsys, tmp_path):
    from PIL import Image

    png = tmp_path / "a.png"
    assert run(capsys, "convert", CLIP, png)[0] == 0
    out = tmp_path / "s.png"
    assert run(capsys, "show", png, "-o", out, "--rows", "*Knee*,*Ankle*")[0] == 0
    assert Image.open(out).size[0] > 500
    assert run(capsys, "show", png, "-o", out, "--rows", "re:^(Left|Right)(Wrist|Elbow)")[0] == 0
    assert run(capsys, "show", png, "-o", tmp_path / "all.png")[0] == 0     # 96 rows: band labels
    assert run(capsys, "show", png, "-o", tmp_path / "r.png", "--scale", "range", "--rows", "Hips.*")[0] == 0
    code, _, err = run(capsys, "show", png, "-o", out, "--rows", "Nope*")
    assert code == 2 and "matches no row" in err
    code, _, err = run(capsys, "show", png, "-o", out, "--rows", "re:(")
    assert code == 2 and "not a regular expression" in err


def test_select_rows():
    from host.commands.show import select_rows

    names = ["Hips.Xposition", "LeftHand.Zrotation", "RightHand.Zrotation", "LeftFoot.Xrotation"]
    assert select_rows(names, "*Hand*") == [1, 2]
    assert select_rows(names, "Left*") == [1, 3]
    assert select_rows(names, "re:Hand|Foot") == [1, 2, 3]
