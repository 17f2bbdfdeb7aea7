"""OSC and VMC output, received by a real python-osc server on loopback."""

import math
import os

import numpy as np
import pytest

pytest.importorskip("pythonosc")

from device.body.human import human_model  # noqa: E402
from device.body.kinematics import forward_kinematics  # noqa: E402
from device.outputs.osc import OscOutput, parse_target  # noqa: E402
from device.outputs.vmc import VmcOutput, quat_xyzw  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bvh")


@pytest.fixture
def receiver(osc_receiver):
    return osc_receiver


def test_osc_frames_arrive_with_row_values(receiver):
    names = ["l_knee_flex", "r knee/flex", "head_ext"]
    out = OscOutput(names, port=receiver.port, per_row=True, units=["deg", "deg", "m"])
    frames = [[10.5, 20.25, 0.01], [11.0, float("nan"), 0.02], [12.0, 22.0, None]]
    for i, v in enumerate(frames):
        out(i, i / 30.0, v, None)
    msgs = receiver.wait_count("/motionstaff/frame", 3)
    out.close()
    got = [args for a, args in msgs if a == "/motionstaff/frame"]
    assert [g[0] for g in got] == [0, 1, 2]
    for i, (g, v) in enumerate(zip(got, frames)):
        assert g[1] == pytest.approx(i / 30.0, abs=1e-6)
        for x, y in zip(g[2:], v):
            if y is None or (isinstance(y, float) and math.isnan(y)):
                assert math.isnan(x)
            else:
                assert x == np.float32(y)
    rows = [args for a, args in msgs if a == "/motionstaff/rows"]
    assert rows[0] == tuple(names)
    assert [args for a, args in msgs if a == "/motionstaff/units"][0] == ("deg", "deg", "m")
    per = [(a, args) for a, args in msgs if a.startswith("/motionstaff/row/")]
    assert ("/motionstaff/row/r_knee_flex", (np.float32(20.25),)) in per
    assert len(per) == 9


def test_osc_bad_input():
    with pytest.raises(ValueError):
        OscOutput([], port=9000)
    with pytest.raises(ValueError):
        OscOutput(["a"], port=70000)
    out = OscOutput(["a", "b"], port=9)
    with pytest.raises(ValueError):
        out.messages(0, 0.0, [1.0])
    out.close()
    assert parse_target("10.0.0.2:7000") == ("10.0.0.2", 7000)
    assert parse_target(":7001") == ("127.0.0.1", 7001)
    assert parse_target("") == ("127.0.0.1", 9000)
    for bad in ("host:port", "h:0", "h:99999"):
        with pytest.raises(ValueError):
            parse_target(bad)


def _check_vmc(sk, q, msgs, out):
    bones = [args for a, args in msgs if a == "/VMC/Ext/Bone/Pos"]
    assert len(bones) == len(out.bone_names)
    assert {b[0] for b in bones} == set(out.bone_names)
    pose = forward_kinematics(sk, q)
    M = out.M
    world = {}
    by_name = {b[0]: b for b in bones}
    for name, link, parent in zip(out.bone_names, out.links, out.parents):
        b = by_name[name]
        quat = np.array(b[4:8], float)
        assert abs(np.linalg.norm(quat) - 1.0) < 1e-6          # unit (float32 on the wire)
        from scipy.spatial.transform import Rotation
        R_local = Rotation.from_quat(quat).as_matrix()
        p_local = np.array(b[1:4], float)
        if parent < 0:
            Rw, pw = R_local, p_local
        else:
            pname = out.bone_names[out.links.index(parent)]
            Rpar, ppar = world[pname]
            Rw, pw = Rpar @ R_local, ppar + Rpar @ p_local
        world[name] = (Rw, pw)
        # back in the skeleton's frame: matches forward kinematics
        np.testing.assert_allclose(M.T @ pw, pose.link_pos_m[link], atol=2e-5)
        # rotations are relative to the T-pose: the world rotation is Rw T_b (Unity axes)
        np.testing.assert_allclose(M.T @ Rw @ out.tpose[name] @ M, pose.link_rot[link], atol=2e-5)
    return world


def test_vmc_human_model_bones_match_fk(receiver):
    sk = human_model()
    rng = np.random.default_rng(7)
    q = sk.lo + rng.random(sk.ndof) * (sk.hi - sk.lo)
    out = VmcOutput(sk, port=receiver.port)
    assert out.bone_names[:5] == ["Hips", "Spine", "Chest", "Neck", "Head"]
    assert "LeftUpperArm" in out.bone_names and "RightToes" in out.bone_names
    out(0, 0.0, sk.home)
    out(1, 1 / 30.0, q)
    msgs = receiver.wait_count("/VMC/Ext/T", 2)
    out.close()
    n = len(out.bone_names)
    first = msgs[: msgs.index(next(m for m in msgs if m[0] == "/VMC/Ext/T")) + 1]
    second = msgs[len(first):]
    assert ("/VMC/Ext/OK", (1,)) in first
    assert [a for a, _ in second if a == "/VMC/Ext/T"] and second[-1][1][0] == pytest.approx(1 / 30.0)
    root = [args for a, args in msgs if a == "/VMC/Ext/Root/Pos"]
    assert root[0] == ("root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    # home stands with the arms hanging: relative to the T-pose the upper arms are turned 90
    # deg down about Unity's forward axis (Z), every other bone is the identity; the subject's
    # left (+Y) is Unity's -X
    home = {args[0]: args for a, args in first if a == "/VMC/Ext/Bone/Pos"}
    down = {"LeftUpperArm": (0.0, 0.0, np.sqrt(0.5), np.sqrt(0.5)),
            "RightUpperArm": (0.0, 0.0, -np.sqrt(0.5), np.sqrt(0.5))}
    for name, b in home.items():
        assert b[4:8] == pytest.approx(down.get(name, (0.0, 0.0, 0.0, 1.0)), abs=1e-6), name
    assert home["LeftUpperLeg"][1] < 0 < home["RightUpperLeg"][1]
    assert home["Hips"][2] == pytest.approx(sk.links[0].offset[2], abs=1e-6)   # Y up
    _check_vmc(sk, sk.home, first, out)
    _check_vmc(sk, q, second, out)
    assert len([a for a, _ in second if a == "/VMC/Ext/Bone/Pos"]) == n


@pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")
def test_vmc_real_bvh_clip_matches_fk(receiver):
    from host.bvh import read_bvh
    st = read_bvh(os.path.join(DATA, "dataset-1_kick_normal_001.bvh"))
    out = VmcOutput(st.skeleton, port=receiver.port, row_names=st.names)
    assert "RightUpperLeg" in out.bone_names and "LeftToes" in out.bone_names
    frames = [0, 60, 190]
    for k, f in enumerate(frames):
        out(f, f / st.fps, st.values[:, f])
    msgs = receiver.wait_count("/VMC/Ext/T", 3)
    out.close()
    ends = [i for i, (a, _) in enumerate(msgs) if a == "/VMC/Ext/T"]
    start = 0
    for f, e in zip(frames, ends):
        _check_vmc(st.skeleton, st.values[:, f], msgs[start:e + 1], out)
        start = e + 1


@pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")
def test_vmc_one_take_in_two_skeletons_points_the_avatars_limbs_alike():
    """CMU 05_20 as MotionBuilder (rest: arms hanging) and Daz (rest: T-pose) skeletons: the
    bones of an avatar driven by either stream point the same way (upper arms, thighs,
    shanks within 9 deg at every 20th frame). Relative to the rest pose instead, the -mb upper
    arms were 80-90 deg off."""
    from scipy.spatial.transform import Rotation

    from device.outputs.tpose import DIRECTIONS
    from host.bvh import read_bvh

    def directions(name):
        st = read_bvh(os.path.join(DATA, name))
        out = VmcOutput(st.skeleton, port=None)
        parent = {b: (out.bone_names[out.links.index(p)] if p >= 0 else None)
                  for b, p in zip(out.bone_names, out.parents)}
        res = []
        for f in range(0, st.values.shape[1], 20):
            world, d = {}, {}
            for b, _, q in out.bones(st.values[:, f])[1]:
                R = Rotation.from_quat(q).as_matrix()
                world[b] = R if parent[b] is None else world[parent[b]] @ R
                d[b] = world[b] @ np.array(DIRECTIONS.get(b, (0.0, 1.0, 0.0)))
            res.append(d)
        return res

    a, b = directions("05_20-mb.bvh"), directions("05_20-daz.bvh")
    for bone in ("LeftUpperArm", "RightUpperArm", "LeftUpperLeg", "RightUpperLeg",
                 "LeftLowerLeg", "RightLowerLeg"):
        ang = [np.degrees(np.arccos(np.clip(x[bone] @ y[bone], -1, 1))) for x, y in zip(a, b)]
        assert max(ang) < 9.0, (bone, max(ang))


@pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")
def test_vmc_rest_pose_that_is_no_pose_gives_way_to_the_first_frame():
    """Bandai-Namco's BVH rest pose lays every bone along X: the T-pose is taken from the first
    frame sent (standing), so the spine stands on the hips (local spine rotation small) and
    the legs hang, instead of a 90-deg twist or a leg pointing up."""
    from scipy.spatial.transform import Rotation

    from device.outputs.tpose import stands
    from host.bvh import read_bvh
    st = read_bvh(os.path.join(DATA, "dataset-1_kick_normal_001.bvh"))
    out = VmcOutput(st.skeleton, port=None)
    assert out.tpose is None                         # decided on the first frame
    _, bones = out.bones(st.values[:, 0])
    rot = {b: np.degrees(np.linalg.norm(Rotation.from_quat(q).as_rotvec())) for b, _, q in bones}
    assert rot["Spine"] < 10 and rot["Chest"] < 10
    q = {b: Rotation.from_quat(q) for b, _, q in bones}
    for side in ("Left", "Right"):                   # thighs within 45 deg of hanging down
        thigh = (q["Hips"] * q[side + "UpperLeg"]).apply([0.0, -1.0, 0.0])
        assert thigh[1] < -np.cos(np.radians(45.0)), (side, thigh)
    sk = human_model()
    assert stands(*_rest_positions(VmcOutput(sk, port=None), sk.home))


def _rest_positions(out, q):
    pose = forward_kinematics(out.skeleton, q)
    idx = {l: k for k, l in enumerate(out.links)}
    return (out.bone_names, [idx.get(p, -1) for p in out.parents],
            [out.M @ pose.link_pos_m[i] for i in out.links])


def test_vmc_bad_input():
    sk = human_model()
    with pytest.raises(ValueError):
        VmcOutput(sk, port=None, row_names=["x"])
    out = VmcOutput(sk, port=None)
    with pytest.raises(ValueError):
        out.bones(np.zeros(3))
    q = np.full(sk.ndof, np.nan)            # all missing: the rest pose (arms hanging)
    _, bones = out.bones(q)
    _, rest = out.bones(sk.home)
    assert all(np.allclose(a[2], b[2]) for a, b in zip(bones, rest))
    R = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])   # 90 deg about z
    np.testing.assert_allclose(quat_xyzw(R), [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-12)


@pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")
def test_stream_command_replays_a_clip(receiver, make_osc_receiver, capsys):
    from host.cli import main
    from host.bvh import read_bvh
    path = os.path.join(DATA, "dataset-1_run_normal_001.bvh")      # 24 frames
    vmc = make_osc_receiver()
    rc = main(["stream", path, "--osc", ":%d" % receiver.port, "--vmc", vmc.target,
               "--as-fast-as-possible"])
    assert rc == 0
    msgs = receiver.wait_count("/motionstaff/frame", 24)
    vmsgs = vmc.wait_count("/VMC/Ext/T", 24)
    st = read_bvh(path)
    frames = [args for a, args in msgs if a == "/motionstaff/frame"]
    assert sorted(f[0] for f in frames) == list(range(24))
    f5 = next(f for f in frames if f[0] == 5)
    np.testing.assert_array_equal(np.array(f5[2:], np.float32), st.values[:, 5].astype(np.float32))
    nbones = len(VmcOutput(st.skeleton, port=None).bone_names)
    assert nbones == 21          # Bandai: Hips Spine Chest Neck Head + 2 x 8 limb bones
    assert sum(a == "/VMC/Ext/Bone/Pos" for a, _ in vmsgs) == 24 * nbones
    assert "streamed 24 frames" in capsys.readouterr().out
    assert main(["stream", path]) == 2
    assert main(["stream", path, "--osc", "host:notaport"]) == 2
