"""The estimators behind make_estimator: tracking, the update against filterpy, NEES, bad input.

Short seeded simulations on the 48-dof human model (device/estimate/simulate.py); no timing.
"""

import numpy as np
import pytest

from device.body.human import human_model
from device.body.skeleton import Skeleton
from device.estimate import make_estimator
from device.estimate.observation import Camera, Observation
from device.estimate.simulate import SensorNoise, simulate

FPS = 60.0


@pytest.fixture(scope="module")
def clip():
    """A smooth 1.5 s motion of every joint around the standing pose, and its observations."""
    sk = human_model()
    t = np.arange(int(1.5 * FPS)) / FPS
    rng = np.random.default_rng(0)
    amp = rng.uniform(0.03, 0.12, sk.ndof) * (sk.hi - sk.lo)
    ph = rng.uniform(0, 2 * np.pi, sk.ndof)
    fr = rng.uniform(0.3, 1.2, sk.ndof)
    q = np.clip(sk.home + amp * (0.5 + np.sin(2 * np.pi * fr * t[:, None] + ph)), sk.lo, sk.hi)
    obs, truth = simulate(sk, q, FPS, noise=SensorNoise(), seed=1)
    return sk, q, obs


def run(kind, sk, q, obs, **opts):
    est = make_estimator(kind, sk, 1.0 / FPS, **opts)
    est.initialise(q[0], t_s=0.0)
    return est, np.array([est.step(o) for o in obs])


def rms(a, b, sk):
    m = np.array([d.kind == "rotation" and "finger" not in d.name and "thumb" not in d.name for d in sk.dofs])
    return float(np.sqrt(np.mean((a - b)[15:, m] ** 2)))


@pytest.mark.parametrize("kind,limit_deg", [("ekf", 2.0), ("ekf-euler", 4.0), ("cv", 3.0), ("ca", 2.0)])
def test_filters_track_a_simulated_motion(clip, kind, limit_deg):
    sk, q, obs = clip
    est, qe = run(kind, sk, q, obs)
    assert np.all(np.isfinite(qe))
    assert rms(qe, q, sk) < limit_deg, kind
    assert est.failures == 0
    assert np.all(qe >= sk.lo - 1e-9) and np.all(qe <= sk.hi + 1e-9)


def test_update_matches_filterpy(clip):
    """One predict + update of our EKF equals filterpy's ExtendedKalmanFilter with the same
    A, Q, H, h(x), R (Joseph form in both)."""
    filterpy = pytest.importorskip("filterpy.kalman")
    sk, q, obs = clip
    est = make_estimator("ca", sk, 1.0 / FPS, clamp=False)
    est.initialise(q[0], t_s=0.0)
    for o in obs[1:4]:
        est.step(o)
    x0, P0 = est.x.copy(), est.P.copy()
    x_pred, A, Q = est.process.predict(x0, est.lin)
    lin = est.process.linearise(x_pred)
    z, h, H, r = est.meas.linearise(lin, obs[4], est.nx)
    f = filterpy.ExtendedKalmanFilter(dim_x=est.nx, dim_z=len(z))
    f.x, f.P, f.F, f.Q = x0.copy(), P0.copy(), A, Q
    f.predict()
    f.update(z, lambda x: H, lambda x: h, R=np.diag(r))
    est.step(obs[4])
    np.testing.assert_allclose(est.x, f.x, rtol=1e-6, atol=1e-8)   # inv(S) vs Cholesky solve
    np.testing.assert_allclose(est.P, f.P, rtol=1e-7, atol=1e-12)


def slider():
    """One body on one prismatic dof with a marker: the joint-space filters are linear here."""
    return Skeleton.from_dict({
        "name": "slider", "gravity": [0, 0, -9.81],
        "links": [{"name": "base", "parent": None},
                  {"name": "cart", "parent": "base", "mass": 2.0, "inertia": [0.01, 0.01, 0.01, 0, 0, 0]}],
        "dofs": [{"name": "x", "link": "cart", "kind": "translation", "axis": [1, 0, 0],
                  "min": -100, "max": 100}],
        "features": [{"name": "m", "link": "cart", "kind": "marker", "position": [0, 0, 0]}]})


def test_nees_is_consistent_on_a_linear_model():
    """CV filter on motion drawn from its own model: mean NEES ~ 2 (chi^2, 2 dof)."""
    sk = slider()
    dt, s_a, s_m = 1.0 / FPS, 3.0, 0.01
    rng = np.random.default_rng(2)
    nees = []
    for run_i in range(20):
        est = make_estimator("cv", sk, dt, cv_accel_sigma_rad_s2=s_a, marker_sigma_m=s_m, clamp=False,
                             p0_sigma=(0.05, 0.5, 0.0))
        est.initialise([0.0], t_s=0.0)
        x = np.array([rng.normal(0, 0.05), rng.normal(0, 0.5)])
        est.x = np.zeros(2)
        # exact discretisation of white acceleration: x' = A x + w, w ~ N(0, Q)
        A = np.array([[1, dt], [0, 1]])
        Q = s_a ** 2 * np.array([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])
        L = np.linalg.cholesky(Q)
        for k in range(1, 120):
            x = A @ x + L @ rng.normal(size=2)
            z = np.array([x[0], 0.0, 0.0]) + rng.normal(0, s_m, 3)
            est.step(Observation(k * dt, markers3d={"m": z}))
            e = est.x - x
            nees.append(e @ np.linalg.solve(est.P, e))
    m = np.mean(nees)
    # 20 x 119 samples: the mean of chi^2(2) is 2, its standard error ~ 2 / sqrt(2380 / 10)
    assert 1.6 < m < 2.5, m


def test_missing_observations_drop_out(clip):
    sk, q, obs = clip
    est = make_estimator("ekf", sk, 1.0 / FPS)
    est.initialise(q[0], t_s=0.0)
    name = next(iter(obs[1].markers3d))
    o = Observation(1 / FPS, imu={k: None for k in obs[1].imu},
                    markers3d={name: [np.nan, 0.0, 0.0]})
    qe = est.step(o)
    assert est.nz == 0 and np.all(np.isfinite(qe))
    est.step(obs[2])
    assert est.nz > 0
    qe = est.step(None)                      # no observation at all: prediction only
    assert np.all(np.isfinite(qe))


def test_predicted_marker_windows_contain_the_next_markers(clip):
    sk, q, obs = clip
    cam = Camera.look_at((4.0, 0.5, 1.0), (0.0, 0.0, 1.0), 1000.0, 1920, 1080)
    obs2, truth = simulate(sk, q[:40], FPS, noise=SensorNoise(), seed=4, camera=cam)
    est = make_estimator("ekf", sk, 1.0 / FPS)
    est.initialise(q[0], t_s=0.0)
    inside = total = 0
    names = truth["marker_names"]
    for f in range(30):
        est.step(obs2[f])
        win = est.predicted_markers2d()
        uv = cam.project(truth["markers_m"][f + 1])
        for k, nm in enumerate(names):
            if nm in win:
                u, v, r = win[nm]
                total += 1
                inside += np.hypot(u - uv[k, 0], v - uv[k, 1]) <= r
    assert total > 100 and inside / total > 0.95


def test_bad_input():
    sk = human_model()
    with pytest.raises(ValueError, match="kind"):
        make_estimator("kalman", sk, 0.01)
    with pytest.raises(ValueError, match="dt_s"):
        make_estimator("ekf", sk, 0.0)
    with pytest.raises(TypeError, match="unknown options"):
        make_estimator("ekf", sk, 0.01, colour="red")
    est = make_estimator("cv", sk, 0.01)
    with pytest.raises(RuntimeError):
        est.step(Observation(0.0))
    est.initialise(sk.home)
    with pytest.raises(ValueError, match="no feature named"):
        est.step(Observation(0.01, markers3d={"nose": [0, 0, 1]}))
    with pytest.raises(ValueError, match="camera"):
        Observation(0.0, markers2d={"head_m1": (1.0, 2.0)})


def test_block_covariance_products_equal_the_dense_ones():
    """propagate (A's identity tail by blocks) and joseph (the products associated from the
    right, every branch) equal the dense A P A' + Q and (I - K H) P (I - K H)' + K R K',
    also for a sub-optimal gain K."""
    from scipy.linalg import cho_factor, cho_solve

    from device.estimate.ekf import joseph, propagate
    rng = np.random.default_rng(4)
    nx = 36
    P = rng.normal(size=(nx, nx))
    P = P @ P.T
    A = np.eye(nx)
    A[:24] += 0.1 * rng.normal(size=(24, nx))
    Q = np.diag(rng.uniform(0.1, 1, nx))
    ref = A @ P @ A.T + Q
    np.testing.assert_allclose(propagate(P, A, Q, 12), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(propagate(P, A, Q, 0), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    for nz in (5, 36, 50, 80):                   # nz <= nx, nx < nz < 2 nx, nz >= 2 nx
        H = rng.normal(size=(nz, nx))
        r = rng.uniform(0.1, 1.0, nz)
        PHT = P @ H.T
        K = cho_solve(cho_factor(H @ PHT + np.diag(r)), PHT.T).T + 1e-3 * rng.normal(size=(nx, nz))
        IKH = np.eye(nx) - K @ H
        ref = IKH @ P @ IKH.T + (K * r) @ K.T
        got = joseph(P, PHT, K, H, r)
        np.testing.assert_allclose(got, ref, atol=1e-10 * np.abs(ref).max())
        assert np.array_equal(got, got.T)
