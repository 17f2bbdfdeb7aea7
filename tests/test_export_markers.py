"""`export --markers`: feature-point trajectories as C3D (ezc3d) and CSV, with BVH and the
labelled picture alongside; a BVH skeleton without features exports its link origins."""

import numpy as np
import pytest

pytest.importorskip("ezc3d", reason="ezc3d (pip) is not installed")

from device.body.human import human_model  # noqa: E402
from device.body.kinematics import forward_kinematics  # noqa: E402
from host.c3d import read_markers  # noqa: E402
from host.cli import main  # noqa: E402
from host.staff import Row, Staff  # noqa: E402


def test_export_markers_c3d_and_csv(tmp_path, capsys, shared_data):
    sk = human_model()
    F = 30
    v = np.repeat(sk.home[:, None], F, axis=1)
    v[sk.dof_index("l_elbow_flex")] = np.linspace(0, 120, F)
    st = Staff(v, [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs], 30.0, bits=16, skeleton=sk)
    from host.stafffile import write_staff
    write_staff(str(tmp_path / "h.png"), st)
    out_c3d, out_csv = tmp_path / "m.c3d", tmp_path / "m.csv"
    assert main(["export", str(tmp_path / "h.png"), "--markers", str(out_c3d)]) == 0
    assert main(["export", str(tmp_path / "h.png"), "--markers", str(out_csv), "--bvh", str(tmp_path / "h.bvh"),
                 "--picture", str(tmp_path / "pic.png")]) == 0
    labels, pos, fps = read_markers(str(out_c3d))
    ref = forward_kinematics(sk, st.quantised().values.T).feature_pos_m
    mk = [k for k, f in enumerate(sk.features) if f.kind == "marker"]
    assert labels == [sk.features[k].name for k in mk] and fps == 30.0
    np.testing.assert_allclose(pos, ref[:, mk], atol=1e-4)
    rows = (tmp_path / "m.csv").read_text().splitlines()
    assert rows[0].split(",")[:4] == ["time_s", labels[0] + ".x_m", labels[0] + ".y_m", labels[0] + ".z_m"]
    assert len(rows) == F + 1
    np.testing.assert_allclose([float(x) for x in rows[5].split(",")[1:4]], ref[4, mk[0]], atol=2e-6)
    assert (tmp_path / "h.bvh").stat().st_size > 0 and (tmp_path / "pic.png").stat().st_size > 1000
    # a BVH skeleton has no features: its link origins are exported, up turned to +Z
    bvh = str(shared_data / "bvh" / "131_03.bvh")
    assert main(["export", bvh, "--markers", str(tmp_path / "b.csv")]) == 0
    head = (tmp_path / "b.csv").read_text().splitlines()[0]
    assert "Hips.x_m" in head and "LeftAnkle.z_m" in head
    capsys.readouterr()
    assert main(["export", bvh, "--markers", str(tmp_path / "b.trc")]) == 2
    assert main(["export", bvh]) == 2
    assert capsys.readouterr().err.count("\n") == 2
