"""The compiled batched orientation IK step equals the numpy one (device/body/ik_batch.py).

The branch recovery of the unit (device/capture/branch.py) takes these steps in real time; the
numpy OrientationIKBatch.iterate is the reference. Both on the human model with 22 sensors,
random poses and targets, including targets a half turn away (the log map's near-pi branch)
and steps that hit the joint limits.
"""

import numpy as np
import pytest

from device.body import ik_batch_numba
from device.body.human import human_model
from device.body.ik_batch import OrientationIKBatch
from device.capture.rot import exp_so3

pytestmark = pytest.mark.skipif(not ik_batch_numba.available(), reason="numba not installed (or MOTIONSTAFF_NUMBA=0)")


def _ik(seed):
    sk = human_model()
    names = [f.name for f in sk.features if f.kind == "imu"]
    rng = np.random.default_rng(seed)
    seeds = sk.home + rng.uniform(-1, 1, (3, sk.ndof)) * 0.3 * (sk.hi - sk.lo)
    seeds = np.clip(seeds, sk.lo, sk.hi)
    ik = OrientationIKBatch(sk, names, seeds, prior_weight=0.02)
    return sk, names, ik, rng, seeds


def _numpy_step(ik, Q, monkeypatch):
    """OrientationIKBatch.iterate on its numpy path (the compiled one switched off)."""
    with monkeypatch.context() as m:
        m.setenv("MOTIONSTAFF_NUMBA", "0")
        assert not ik_batch_numba.available()
        return ik.iterate(Q)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compiled_step_equals_numpy(seed, monkeypatch):
    sk, names, ik, rng, seeds = _ik(seed)
    Q = ik.model.to_si(seeds)
    # targets: the pose of another random configuration, a few turned by (almost) pi
    Rf, _ = ik._features(ik.model.to_si(np.clip(sk.home + rng.normal(0, 20, sk.ndof), sk.lo, sk.hi))[None])
    Rt = Rf[0].copy()
    RfQ, _ = ik._features(Q[:1])
    for k in (0, 5):
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        Rt[k] = exp_so3(ax * (np.pi - 1e-4)) @ RfQ[0, k]      # seed 0: residual ~pi
    ik.set_orientations(Rt)
    ik.clamp = True
    for _ in range(3):
        ref = _numpy_step(ik, Q, monkeypatch)
        got = ik_batch_numba.iterate_batch(ik, Q)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
        Qs, step0, e0 = ik_batch_numba.iterate_batch(ik, Q, solve=False)
        np.testing.assert_array_equal(Qs, Q)
        np.testing.assert_allclose(e0, ref[2], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(e0, np.degrees(np.linalg.norm(ik._residual(ik._features(Q)[0]), axis=2)),
                                   rtol=1e-9, atol=1e-9)
        Q = ref[0]
    # the joint limits bind on some dofs (the clamp branch is exercised)
    assert (np.isclose(Q, ik.lo) | np.isclose(Q, ik.hi)).any()


def test_dispatch_uses_compiled_step(monkeypatch):
    sk, names, ik, rng, seeds = _ik(4)
    Rf, _ = ik._features(ik.model.to_si(seeds[:1]))
    ik.set_orientations(Rf[0])
    calls = []
    real = ik_batch_numba.iterate_batch
    monkeypatch.setattr(ik_batch_numba, "iterate_batch", lambda *a: calls.append(1) or real(*a))
    Q_new, step, e = ik.iterate(ik.model.to_si(seeds))
    assert calls == [1]
    assert e[0].max() < 1e-6                      # seed 0 is the targets' own pose
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "0")
    Q_np, step_np, e_np = ik.iterate(ik.model.to_si(seeds))
    assert calls == [1]                           # the numpy path, not the compiled one
    np.testing.assert_allclose(Q_new, Q_np, rtol=1e-9, atol=1e-9)
