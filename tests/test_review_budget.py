"""Fresh-eyes review of the error bound a staff file states (convert --max-error-mm, header "e"
and "em"; host/budget_measured.py, host/budget_check.py): a file states a bound only for the
values it holds, after an edit too; the edges (E, one frame, a still row, a zero-length bone)."""

import numpy as np
import pytest

from host.bvh import read_bvh
from host.edit.ops import apply_ops, parse_ops
from host.fkerror import point_errors_mm
from host.stafffile import decode_png, encode_png
from tests.test_staff_measured import CLIP, run


@pytest.fixture(scope="module")
def made():
    clip = read_bvh(CLIP)
    return {"measured": decode_png(encode_png(clip.refit("budget", max_error_mm=0.3, bits=16, bound="measured"),
                                              effort=0)),
            "chain": decode_png(encode_png(clip.refit("budget", max_error_mm=0.3, bits=16), effort=0))}


def _states_what_holds(edited):
    back = decode_png(encode_png(edited, effort=0))
    e = back.meta.get("max_error_mm")
    if e is not None:
        assert point_errors_mm(back.skeleton, edited.values, back.values).max() <= e
    return back


@pytest.mark.parametrize("bound", ["measured", "chain"])
@pytest.mark.parametrize("op", ["smooth:butter,cutoff=3", "despike", "retime:fps=60"])
def test_an_edited_staff_states_no_bound_its_values_break(made, bound, op):
    # the smoothed clip overshot the ranges fitted to the old one (clamped: 58 mm at a joint,
    # chain) or was measured on other poses (1.9 mm, measured): the file still said 0.3 mm
    edited, _ = apply_ops(made[bound], parse_ops([op]))
    assert edited.meta["max_error_mm"] == 0.3           # the edit keeps the old meta ...
    back = _states_what_holds(edited)                     # ... the file states only what holds
    if op.startswith("smooth"):
        assert "max_error_mm" not in back.meta and "max_error_bound" not in back.meta


def test_a_cut_keeps_its_bound_and_a_rewrite_is_not_measured_again(made, monkeypatch):
    cut, _ = apply_ops(made["measured"], parse_ops(["cut:1.0-4.5"]))
    back = _states_what_holds(cut)
    assert back.meta["max_error_mm"] == 0.3 and back.meta["max_error_bound"] == "measured"
    # a staff read and written again unchanged: no forward kinematics (the fingerprint holds)
    import host.fkerror

    def boom(*a, **k):
        raise AssertionError("measured again")

    monkeypatch.setattr(host.fkerror, "point_errors_mm", boom)
    assert decode_png(encode_png(back, effort=0)).meta["max_error_mm"] == 0.3


def test_edit_command_writes_no_false_bound(capsys, tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert run(capsys, "convert", CLIP, a, "--max-error-mm", "0.3")[0] == 0
    assert run(capsys, "edit", a, b, "smooth:butter,cutoff=3")[0] == 0
    code, out, _ = run(capsys, "info", b)
    assert code == 0 and "--max-error-mm" not in out
