"""The skeleton format: the built-in human model, JSON round trip, validation, kinematics."""

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.spatial.transform import Rotation

from device.body.human import human_model
from device.body.kinematics import forward_kinematics
from device.body.skeleton import Skeleton, SkeletonError
from protocol.errors import FormatError


def test_human_model_is_the_inventions_body():
    sk = human_model()
    assert sk.nlinks == 23
    assert sk.ndof == 48
    assert abs(sk.total_mass - 75.0) < 1e-9
    head = [d for d in sk.dofs if sk.links[d.link].name == "head"]
    assert [d.kind for d in head] == ["rotation"] * 3 + ["translation"]
    per_link = {ln.name: len(ln.dofs) for ln in sk.links}
    for side in "lr":
        assert per_link[side + "_upper_arm"] == 3 and per_link[side + "_thigh"] == 3
        for two in ("forearm", "hand", "shank", "foot"):
            assert per_link["%s_%s" % (side, two)] == 2
    assert sk.dofs[sk.dof_index("l_elbow_flex")].hi - sk.dofs[sk.dof_index("l_elbow_flex")].lo == 150
    # every inertia is positive definite where there is mass
    for ln in sk.links:
        assert ln.mass > 0 and np.linalg.eigvalsh(ln.inertia).min() > 0


def test_floating_model_adds_six_root_rows_first():
    sk = human_model(floating=True)
    assert sk.ndof == 54
    assert sk.dof_names[:6] == ["root_tx", "root_ty", "root_tz", "root_yaw", "root_pitch", "root_roll"]
    assert sk.dof_names[6:] == human_model().dof_names
    a = forward_kinematics(sk, sk.home).link_pos_m
    b = forward_kinematics(human_model(), human_model().home).link_pos_m
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_json_round_trip_is_exact(tmp_path):
    sk = human_model(mass_kg=62.0, height_m=1.62)
    p = tmp_path / "h.json"
    sk.save(p)
    sk2 = Skeleton.load(p)
    assert sk2.to_dict() == sk.to_dict()
    q = np.random.default_rng(3).uniform(sk.lo, sk.hi, (20, sk.ndof))
    np.testing.assert_allclose(forward_kinematics(sk2, q).feature_pos_m,
                               forward_kinematics(sk, q).feature_pos_m, atol=1e-8)


@pytest.mark.parametrize("path, value, field", [
    (("links", 3, "mass"), -1.0, "links[3].mass"),
    (("links", 2, "parent"), "nowhere", "links[2].parent"),
    (("links", 0, "offset"), [0, 1], "links[0].offset"),
    (("dofs", 5, "axis"), [0, 0, 0], "dofs[5].axis"),
    (("dofs", 7, "max"), -100, "dofs[7].max"),
    (("dofs", 1, "kind"), "twist", "dofs[1].kind"),
    (("dofs", 9, "unit"), "furlong", "dofs[9].unit"),
    (("dofs", 4, "link"), 12, "dofs[4].link"),
    (("features", 0, "kind"), "laser", "features[0].kind"),
    (("version",), 99, "version"),
    (("links", 1, "inertia"), [1, 1, 1, 5, 0, 0], "links[1].inertia"),
    (("dofs", 3, "min"), float("nan"), "dofs[3].min"),
])
def test_a_wrong_field_is_named(path, value, field):
    d = copy.deepcopy(human_model().to_dict())
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(SkeletonError) as e:
        Skeleton.from_dict(d, where="body.json")
    assert str(e.value).startswith("body.json: " + field)
    assert isinstance(e.value, FormatError)


def test_bad_files_are_one_line_errors(tmp_path):
    p = tmp_path / "x.json"
    p.write_bytes(b"\x89PNG not json")
    with pytest.raises(SkeletonError, match="x.json: not a JSON skeleton"):
        Skeleton.load(p)
    p.write_text(json.dumps([1, 2]))
    with pytest.raises(SkeletonError, match="must be a JSON object"):
        Skeleton.load(p)
    with pytest.raises(SkeletonError, match="cannot read"):
        Skeleton.load(tmp_path / "missing.json")


def _bvh_like_chain(order):
    """A root with 6 channels and a child with 3, in a BVH channel order."""
    axes = {"X": [1, 0, 0], "Y": [0, 1, 0], "Z": [0, 0, 1]}
    dofs = [{"name": "root." + a + "position", "link": "root", "kind": "translation",
             "axis": axes[a], "min": -500, "max": 500, "unit": "cm"} for a in "XYZ"]
    for link in ("root", "arm"):
        dofs += [{"name": "%s.%srotation" % (link, a), "link": link, "axis": axes[a],
                  "min": -180, "max": 180} for a in order]
    return Skeleton.from_dict({
        "links": [{"name": "root", "parent": None, "offset": [0, 0, 0]},
                  {"name": "arm", "parent": "root", "offset": [0.1, 0.2, 0.3]},
                  {"name": "hand", "parent": "arm", "offset": [0, 0.4, 0]}],
        "dofs": dofs, "gravity": [0, -9.81, 0]})


@pytest.mark.parametrize("order", ["ZXY", "ZYX", "XYZ", "YXZ"])
def test_fk_matches_intrinsic_euler_of_bvh(order):
    sk = _bvh_like_chain(order)
    rng = np.random.default_rng(7)
    q = rng.uniform(-170, 170, (50, sk.ndof))
    q[:, :3] = rng.uniform(-100, 100, (50, 3))
    pose = forward_kinematics(sk, q)
    r_root = Rotation.from_euler(order, q[:, 3:6], degrees=True)   # upper case: intrinsic
    r_arm = Rotation.from_euler(order, q[:, 6:9], degrees=True)
    np.testing.assert_allclose(pose.link_rot[:, 0], r_root.as_matrix(), atol=1e-12)
    arm = q[:, :3] * 0.01 + r_root.apply([0.1, 0.2, 0.3])
    np.testing.assert_allclose(pose.link_pos_m[:, 1], arm, atol=1e-12)
    hand = arm + (r_root * r_arm).apply([0, 0.4, 0])
    np.testing.assert_allclose(pose.link_pos_m[:, 2], hand, atol=1e-12)


def test_vectorised_equals_frame_by_frame():
    sk = human_model()
    q = np.random.default_rng(11).uniform(sk.lo, sk.hi, (8, sk.ndof))
    whole = forward_kinematics(sk, q)
    for f in range(8):
        one = forward_kinematics(sk, q[f])
        np.testing.assert_allclose(one.link_rot, whole.link_rot[f], atol=1e-13)
        np.testing.assert_allclose(one.feature_pos_m, whole.feature_pos_m[f], atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_dof_axes_give_the_jacobian(seed):
    sk = human_model(floating=True)
    rng = np.random.default_rng(seed)
    q = rng.uniform(sk.lo, sk.hi)
    k = int(rng.integers(len(sk.features)))
    pose = forward_kinematics(sk, q)
    p = pose.feature_pos_m[k]
    link = sk.features[k].link
    ancestors = set()
    while link >= 0:
        ancestors.add(link)
        link = sk.links[link].parent
    h = 1e-6
    for j, d in enumerate(sk.dofs):
        if d.link in ancestors:
            col = (np.cross(pose.dof_axis[j], p - pose.dof_origin_m[j]) if d.kind == "rotation"
                   else pose.dof_axis[j]) * d.scale
        else:
            col = np.zeros(3)
        q2 = q.copy()
        q2[j] += h
        fd = (forward_kinematics(sk, q2).feature_pos_m[k] - p) / h
        np.testing.assert_allclose(col, fd, atol=2e-6)


def test_mirror_map_pairs_left_and_right():
    sk = human_model()
    idx, sign = sk.mirror_map()
    for j, name in enumerate(sk.dof_names):
        other = sk.dof_names[idx[j]]
        if name.startswith("l_"):
            assert other == "r_" + name[2:] and sign[j] == 1
        if name in ("lumbar_rot", "head_lat"):
            assert other == name and sign[j] == -1
    assert (idx[idx] == np.arange(sk.ndof)).all()
