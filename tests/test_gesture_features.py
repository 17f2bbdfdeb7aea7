"""Body features: skeleton independence (one take, two skeleton conventions) and well-posed angles.

    .venv/bin/python -m pytest -q tests/test_gesture_features.py
"""

import os

import numpy as np
import pytest

from device.gestures.features import NAMES, BodyFeatures

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bvh")
need_data = pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")


def _col(f, name):
    return f[:, NAMES.index(name)]


@need_data
def test_one_take_in_two_skeleton_conventions_gives_nearly_the_same_features():
    """CMU 05_20 converted twice (MotionBuilder-style and Daz-style skeletons: other joint
    names, bone lengths, root and neck placed elsewhere, Daz rest pose with knees bent 8 deg and
    elbows 17 deg): the feature curves must agree. Bounds are in the features' units; before
    the features used the mid-hip point and the mid-shoulder trunk axis, the pelvis horizontal
    speed differed by 2.6 leg/s and a shoulder angle by 356 deg (a wrap)."""
    from host.bvh import read_bvh
    from host.gestures.learn import motion_features
    a = motion_features(read_bvh(os.path.join(DATA, "05_20-mb.bvh")))
    b = motion_features(read_bvh(os.path.join(DATA, "05_20-daz.bvh")))
    assert a.shape == b.shape and np.isfinite(a).all() and np.isfinite(b).all()
    d = np.abs(a - b)
    angles = [i for i, n in enumerate(NAMES) if n.endswith("_deg")]
    assert d[:, angles].max() <= 25.0                        # degrees, every frame
    assert np.percentile(d[:, angles], 99, axis=0).max() <= 20.0
    for n in ("l_foot_h_leg", "r_foot_h_leg"):
        assert _col(d, n).max() <= 0.06                      # leg lengths
    assert _col(d, "pelvis_vh_leg_s").max() <= 0.5           # leg lengths per second
    # the Daz root jumps 0.5 cm for one 120-fps frame (636): velocity spikes, so a percentile
    assert np.percentile(_col(d, "pelvis_vz_leg_s"), 95) <= 0.2
    assert _col(d, "pelvis_vz_leg_s").max() <= 1.0


def test_limb_angles_are_continuous_and_zero_hanging_down():
    """Hip and shoulder angles are the swing from hanging down split into forward and sideways
    parts: a limb pointing sideways (T-pose arm) is (0, 90), forward is (90, 0), and a sweep
    from down through sideways to almost straight up changes smoothly (no wrap, no
    ill-conditioned projection)."""
    up, lat, fwd = np.array([[0.0, 0, 1]]), np.array([[0.0, 1, 0]]), np.array([[1.0, 0, 0]])
    sw = BodyFeatures._swing_deg
    for v, sgn, want in (([0, 0, -1], 1, (0, 0)), ([0, 1, 0], 1, (0, 90)), ([0, -1, 0], -1, (0, 90)),
                         ([1, 0, 0], 1, (90, 0)), ([-1, 0, 0], 1, (-90, 0)), ([1, 0, -1], 1, (45, 0))):
        f, s = sw(np.array([v], float), fwd, lat, up, sgn)
        assert (f[0], s[0]) == pytest.approx(want, abs=1e-9)
    rng = np.random.default_rng(7)
    ang = np.radians(np.linspace(0, 150, 500))
    v = np.stack([0.2 * np.sin(ang), np.sin(ang), -np.cos(ang)], axis=1) + rng.normal(0, 1e-3, (500, 3))
    f, s = sw(v, fwd, lat, up, 1.0)
    assert np.abs(np.diff(f)).max() < 2.0 and np.abs(np.diff(s)).max() < 2.0
    assert s[-1] > 140


def test_built_in_body_standing_is_neutral_and_size_free():
    """The human model standing in its home pose: limbs hang (angles 0), feet one leg length
    below the hips; a uniformly scaled-up pose gives the same features (size-free)."""
    from device.body.human import human_model
    sk = human_model()
    bf = BodyFeatures(sk)
    f = bf.batch(np.repeat(sk.home[None], 3, axis=0), fps=30.0)
    for n in ("l_hip_flex_deg", "r_hip_abd_deg", "l_knee_deg", "r_shoulder_flex_deg",
              "l_shoulder_abd_deg", "trunk_lean_fwd_deg", "pelvis_vz_leg_s", "pelvis_vh_leg_s"):
        assert np.abs(_col(f, n)).max() < 1.0, n
    assert _col(f, "l_foot_h_leg") == pytest.approx(-1.0, abs=0.1)
    p = bf.positions(sk.home[None])
    big = {k: 1.7 * v for k, v in p.items()}
    np.testing.assert_allclose(bf.from_positions(big), bf.from_positions(p), atol=1e-9)
