"""Jacobians of the estimators against central finite differences.

H = dh/dx for markers (3D, 2D) and IMUs (gyro, accelerometer), the gravity stiffness dg/dq and
the torque-state transition A, on the human model. Where the analytic form drops terms
(documented in device/estimate/process.py and measurement.py) the test uses states where the
dropped terms vanish, and checks the kept terms tightly.
"""

import numpy as np
import pytest

from device.body.dynamics import model_of
from device.body.human import human_model
from device.estimate.measurement import MeasurementModel
from device.estimate.observation import Camera, Observation
from device.estimate.process import ConstantAcceleration, TorqueProcess, gravity_stiffness


def floating_human_pose(seed=7, spread=0.4):
    """(skeleton, model, rng, q): the floating human model at a random pose near home."""
    sk = human_model(floating=True)
    model = model_of(sk, 1e-3)
    rng = np.random.default_rng(seed)
    q = model.to_si(sk.home) + rng.uniform(-spread, spread, model.n) * (model.is_rot + 0.1)
    return sk, model, rng, q


@pytest.fixture(scope="module")
def setup():
    return floating_human_pose()


def fd(fun, x, cols, eps=1e-6):
    out = []
    for i in cols:
        e = np.zeros_like(x)
        e[i] = eps
        out.append((fun(x + e) - fun(x - e)) / (2 * eps))
    return np.array(out).T


def obs_all(sk, cam=None):
    """An Observation with every feature present (values are not used by H)."""
    o = Observation(0.0, camera=cam)
    for f in sk.features:
        if f.kind == "imu":
            o.imu[f.name] = (np.zeros(3), np.zeros(3))
        else:
            o.markers3d[f.name] = np.zeros(3)
            if cam is not None:
                o.markers2d[f.name] = np.zeros(2)
    return o


def test_gravity_stiffness_matches_finite_differences(setup):
    sk, model, rng, q = setup
    G = gravity_stiffness(model, model.kinematics(q))
    N = fd(lambda x: model.gravity_torque(model.kinematics(x)), q, range(model.n))
    assert np.abs(G - N).max() <= 1e-6 * np.abs(N).max()


def _h(process, mm, obs):
    def h(x):
        return mm.linearise(process.linearise(x), obs, process.nx)[1]
    return h


@pytest.mark.parametrize("moving", [False, True])
def test_measurement_jacobian_ca(setup, moving):
    """CA state [q, qd, qdd]: H exact except d(Jdot qd)/dq, which vanishes at qd = 0."""
    sk, model, rng, q = setup
    proc = ConstantAcceleration(model, 1 / 60)
    cam = Camera.look_at((4.0, 1.0, 1.2), (0.0, 0.0, 1.0), 900.0, 1280, 720)
    mm = MeasurementModel(model)
    obs = obs_all(sk, cam)
    n = model.n
    qd = rng.normal(0, 1.0, n) if moving else np.zeros(n)
    x = np.concatenate([q, qd, rng.normal(0, 5.0, n)])
    z, h, H, r = mm.linearise(proc.linearise(x), obs, proc.nx)
    cols = np.arange(0, proc.nx, 2)               # every other column keeps the test fast
    N = np.zeros_like(H)
    N[:, cols] = fd(_h(proc, mm, obs), x, cols)
    H = np.where(np.isin(np.arange(proc.nx), cols)[None, :], H, 0.0)
    scale = np.abs(N).max()
    if not moving:
        assert np.abs(H - N).max() <= 1e-5 * scale
    else:
        # every row except the accelerometer q-block is exact while moving
        n_imu = sum(f.kind == "imu" for f in sk.features)
        acc_rows = np.concatenate([len(z) - 6 * n_imu + 6 * k + np.arange(3, 6) for k in range(n_imu)])
        mask = np.ones(H.shape, bool)
        mask[np.ix_(acc_rows, np.arange(n))] = False
        assert np.abs(H - N)[mask].max() <= 1e-5 * scale
        # the dropped term d(Jdot qd)/dq is second order in qd: at 1 rad/s on every dof it is
        # still a large part of the accelerometer q-block (docs/estimation.md says so)
        blk = np.ix_(acc_rows, np.arange(n))
        assert np.linalg.norm(H[blk] - N[blk]) <= 0.75 * np.linalg.norm(N[blk])


def test_measurement_jacobian_torque_at_rest(setup):
    """Torque state at rest (qd = 0, tau = g(q)): the analytic H equals finite differences
    (with h_tau_only=False; the default drops dqdd/dq, dqdd/dqd from H on purpose)."""
    sk, model, rng, q = setup
    proc = TorqueProcess(model, 1 / 60, h_tau_only=False)
    mm = MeasurementModel(model)
    obs = obs_all(sk)
    x = proc.initial_state(q)
    H = mm.linearise(proc.linearise(x), obs, proc.nx)[2]
    cols = np.arange(1, proc.nx, 2)
    N = fd(_h(proc, mm, obs), x, cols)
    assert np.abs(H[:, cols] - N).max() <= 1e-5 * np.abs(N).max()


def test_transition_matches_finite_differences_at_rest(setup):
    sk, model, rng, q = setup
    n = model.n
    # A is the second-order series I + dt Fc + dt^2/2 Fc^2 of the RK4 flow (Euler: first order)
    for integrator, tol in (("rk4", 1e-2), ("euler", 3e-2)):
        proc = TorqueProcess(model, 1 / 240, integrator=integrator, stages="full")
        x = proc.initial_state(q)
        lin = proc.linearise(x)
        A = proc.transition(lin)
        N = fd(lambda v: proc.predict(v, lin)[0], x, range(3 * n), eps=1e-7)
        assert np.abs(A - N).max() <= tol * np.abs(N).max(), integrator


def test_fd_jacobian_option_is_exact_while_moving(setup):
    """jacobian='fd' gives dqdd/dx with the Coriolis and dM/dq terms the analytic form drops."""
    sk, model, rng, q = setup
    proc = TorqueProcess(model, 1 / 60, jacobian="fd")
    n = model.n
    x = np.concatenate([q, rng.normal(0, 1.0, n), np.zeros(n)])
    x[2 * n:] = proc.initial_state(q)[2 * n:] + rng.normal(0, 1.0, n)
    lin = proc.linearise(x)
    ref = TorqueProcess(model, 1 / 60)            # same qdd(x), cheap analytic linearisation
    N = fd(lambda v: ref._qdd(v[:n], v[n:2 * n], v[2 * n:])[0], x, range(3 * n), eps=1e-5)
    D = np.hstack([lin.Dq, lin.Dqd, lin.Minv])
    assert np.abs(D - N).max() <= 1e-4 * np.abs(N).max()


def test_linear_stages_stay_close_to_full_dynamics_while_moving(setup):
    """stages='linear' (default) integrates qdd affine about the last prior; against stages=
    'full' (the dynamics re-evaluated in every RK4 stage) the mean differs by higher-order
    terms. 30 seeded draws, each from the prior itself and from a posterior one update away
    from it, with every one of the 48 dofs (root included) moving at once (tau = b: the
    estimator's damping), one 60 Hz step: at 0.5 rad/s per dof the difference stays under the
    process noise of one step (0.13 rad/s in qd) and under 1 mrad in q; at 1 rad/s per dof
    the median does (a draw's worst dof can reach 0.6 rad/s: the approximation's limit).
    Each draw has its own seed: the module's rng depends on which tests ran before."""
    sk, _, _, q = setup
    model = model_of(sk, 0.01)                   # the estimator's armature and damping
    n = model.n
    full = TorqueProcess(model, 1 / 60, stages="full", damping=0.5)
    lin_p = TorqueProcess(model, 1 / 60, damping=0.5)
    for speed, bound in ((0.5, "max"), (1.0, "median")):
        dqs, dqds = [], []
        for seed in range(30):
            rng = np.random.default_rng(seed)
            for kick in (0.0, 1.0):
                x = np.concatenate([q, rng.normal(0, speed, n), np.zeros(n)])
                x[2 * n:] = full.initial_state(q, x[n:2 * n])[2 * n:]
                lin = full.linearise(x)
                # the posterior: an update's correction away from the prior lin was taken at
                xp = x + kick * np.concatenate([rng.normal(0, 0.005, n), rng.normal(0, 0.1, n),
                                                rng.normal(0, 0.1, n)])
                a = full.predict(xp, lin)[0]
                b = lin_p.predict(xp, lin)[0]
                dqs.append(np.abs(a[:n] - b[:n]).max())
                dqds.append(np.abs(a[n:2 * n] - b[n:2 * n]).max())
                assert np.array_equal(a[2 * n:], b[2 * n:])
        pick = np.max if bound == "max" else np.median
        assert pick(dqds) < 0.13, (speed, pick(dqds))
        if bound == "max":
            assert max(dqs) < 1e-3, (speed, max(dqs))
