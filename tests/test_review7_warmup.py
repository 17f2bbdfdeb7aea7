"""Review 7: device/capture/warmup.py leaves the unit's skeleton (and numpy's global random state)
as it found them, does nothing with MOTIONSTAFF_NUMBA=0, and takes sensor names the body has no
IMU feature for (a custom body) without failing the unit."""

import copy
import pickle

import numpy as np
import pytest

from device.body import dynamics_numba
from device.body.human import human_model
from device.capture import warmup


def _never(*a):
    raise AssertionError("warm_up ran with the compiled path off")


def test_numba_off_does_nothing(monkeypatch):
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "0")
    monkeypatch.setattr(warmup, "_DONE", set())
    monkeypatch.setattr(warmup, "_run", _never)
    assert warmup.warm_up(human_model(), ["pelvis_imu"], "ekf", camera=True) is False
    assert warmup._DONE == set()


@pytest.mark.skipif(not dynamics_numba.available(), reason="numba not installed")
def test_orient_on_a_body_without_imus_leaves_everything_as_it_was(monkeypatch):
    monkeypatch.setattr(warmup, "_DONE", set())
    sk = human_model()
    bare = copy.deepcopy(sk)
    bare.features = [f for f in bare.features if f.kind != "imu"]
    imus = [f.name for f in sk.features if f.kind == "imu"]
    before = [pickle.dumps(sk), pickle.dumps(bare)]
    state = np.random.get_state()[1].copy()
    assert warmup.warm_up(bare, imus + ["not_a_sensor"], "orient") is True
    assert warmup.warm_up(sk, imus[:3], "orient") is False           # (once a process)
    monkeypatch.setattr(warmup, "_DONE", set())
    assert warmup.warm_up(sk, imus[:3] + ["not_a_sensor"], "none") is True
    assert [pickle.dumps(sk), pickle.dumps(bare)] == before
    assert (np.random.get_state()[1] == state).all()
