"""The EKF step's fast paths equal the straightforward computations they replace.

Each by blocks / in closed form / compiled, against the dense or reference form, on the human
model: P- = A P A' + Q without forming A (device/estimate/covariance.py), RK4's affine stages as
a Taylor polynomial (TorqueProcess._rk4_affine), the process model's predict_cov, the optional
numba dynamics terms (device/body/dynamics_numba.py), and the measurement model's per-name
caches (a repeated set of sensors with a missing value still drops it).
"""

import numpy as np
import pytest

from device.body import dynamics_numba
from device.body.dynamics import model_of
from device.body.human import human_model
from device.estimate.covariance import propagate_rk4, propagate_rows
from device.estimate.measurement import MeasurementModel
from device.estimate.observation import Observation
from device.estimate.process import Linearisation, TorqueProcess, gravity_stiffness


@pytest.fixture(scope="module")
def setup():
    sk = human_model(floating=True)
    model = model_of(sk, 0.01)
    rng = np.random.default_rng(11)
    q = model.to_si(sk.home) + rng.uniform(-0.4, 0.4, model.n) * (model.is_rot + 0.1)
    return sk, model, rng, q


def _spd(rng, n):
    X = rng.normal(size=(n, n))
    return X @ X.T + n * np.eye(n)


def _moving_state(proc, q, rng):
    n = proc.n
    x = np.concatenate([q, rng.normal(0, 1.0, n), np.zeros(n)])
    x[2 * n:] = proc.initial_state(q, x[n:2 * n])[2 * n:] + rng.normal(0, 1.0, n)
    return x


def _dense(A, P, Q):
    return A @ P @ A.T + Q


def test_block_propagations_equal_the_dense_product(setup):
    """propagate_rk4 and propagate_rows equal A P A' + Q with A from transition()."""
    sk, model, rng, q = setup
    n = model.n
    for integrator in ("rk4", "euler"):
        proc = TorqueProcess(model, 1 / 60, integrator=integrator, damping=0.5)
        lin = proc.linearise(_moving_state(proc, q, rng))
        A = proc.transition(lin, proc.h_s)
        P = _spd(rng, 3 * n)
        q_diag = rng.uniform(0.1, 1.0, 2 * n)
        Q_tau = _spd(rng, n)
        Q = np.zeros((3 * n, 3 * n))
        Q[:2 * n, :2 * n] = np.diag(q_diag)
        Q[2 * n:, 2 * n:] = Q_tau
        ref = _dense(A, P, Q)
        tol = 1e-12 * np.abs(ref).max()
        got = propagate_rows(P, proc.transition_rows(lin, proc.h_s), q_diag, Q_tau)
        np.testing.assert_allclose(got, ref, rtol=0, atol=tol)
        if integrator == "rk4":
            got = propagate_rk4(P, lin.Dq, lin.Dqd, lin.Minv, proc.h_s, q_diag, Q_tau)
            np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


def test_predict_cov_equals_predict_and_the_dense_covariance(setup):
    """TorqueProcess.predict_cov = (predict()'s mean, A P A' + Q with predict()'s A, Q), with and
    without sub-steps."""
    sk, model, rng, q = setup
    n = model.n
    cases = [("rk4", 1 / 60), ("euler", 1 / 60), ("rk4", 1 / 30), ("euler", 1 / 30), ("rk4", 1 / 20)]
    for integrator, dt_s in cases:
        # 1/30 and 1/20 s: 2 and 3 sub-steps (max_step_s 1/60), A the sub-step's to that power
        proc = TorqueProcess(model, dt_s, integrator=integrator, damping=0.5, stages="linear")
        assert proc.substeps == int(round(dt_s * 60))
        x = _moving_state(proc, q, rng)
        lin = proc.linearise(x)
        xp = x + np.concatenate([rng.normal(0, 0.005, n), rng.normal(0, 0.1, 2 * n)])
        P = _spd(rng, 3 * n)
        x_ref, A, Q = proc.predict(xp, lin)
        x_new, P_new = proc.predict_cov(xp, P, lin)
        np.testing.assert_allclose(x_new, x_ref, rtol=1e-12, atol=1e-12)
        ref = _dense(A, P, Q)
        np.testing.assert_allclose(P_new, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    # a decaying torque keeps the dense path
    assert TorqueProcess(model, 1 / 60, tau_decay_s=0.2).predict_cov(x, P, lin) is None


def test_rk4_affine_equals_the_four_stages(setup):
    """The closed-form RK4 of the affine dynamics equals RK4's four stages on them."""
    sk, model, rng, q = setup
    n = model.n
    for dt, max_step in ((1 / 60, 1 / 60), (1 / 30, 1 / 60), (1 / 60, 1 / 200)):
        proc = TorqueProcess(model, dt, damping=0.5, max_step_s=max_step)
        x = _moving_state(proc, q, rng)
        lin = proc.linearise(x)
        xp = x + np.concatenate([rng.normal(0, 0.005, n), rng.normal(0, 0.1, 2 * n)])
        ref = xp
        qddf = proc._affine_qdd(lin)
        for _ in range(proc.substeps):
            ref = proc._step(ref, proc.h_s, qddf)
        got = proc._rk4_affine(xp, lin)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        assert np.array_equal(got[2 * n:], xp[2 * n:])


@pytest.mark.skipif(dynamics_numba.numba is None, reason="numba is not installed (optional)")
@pytest.mark.parametrize("floating", [False, True])
def test_numba_dynamics_terms_equal_numpy(floating):
    """The compiled kinematics, M, b, dg/dq and motion cache equal the numpy functions."""
    sk = human_model(floating=floating)
    model = model_of(sk, 0.01)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = model.to_si(sk.home) + rng.normal(0, 0.5, model.n)
        qd = rng.normal(0, 2.0, model.n)
        kin2, M2, b2, K2 = dynamics_numba.linearise_terms(model, q, qd)
        kin = model.kinematics(q)
        V, Ad = model.motion(kin, qd)
        pairs = [(kin.T, kin2.T), (kin.R, kin2.R), (kin.p_m, kin2.p_m), (kin.axis, kin2.axis),
                 (kin.origin_m, kin2.origin_m), (kin.S, kin2.S), (model.mass_matrix(kin), M2),
                 (model.bias(kin, qd), b2), (gravity_stiffness(model, kin), K2),
                 (V, kin2._vel[1]), (Ad, kin2._vel[2])]
        for a, b in pairs:
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * max(1.0, np.abs(a).max()))
    with pytest.raises(ValueError, match="finite"):
        dynamics_numba.linearise_terms(model, np.full(model.n, np.nan), np.zeros(model.n))


@pytest.mark.skipif(dynamics_numba.numba is None, reason="numba is not installed (optional)")
def test_linearise_with_and_without_numba_agree(setup, monkeypatch):
    sk, model, rng, q = setup
    proc = TorqueProcess(model, 1 / 60, damping=0.5)
    x = _moving_state(proc, q, rng)
    a = proc.linearise(x)
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "0")
    assert not dynamics_numba.available()
    b = proc.linearise(x)
    for name in ("qdd", "Minv", "Dq", "Dqd", "M", "dqdd_dx"):
        u, v = getattr(a, name), getattr(b, name)
        np.testing.assert_allclose(u, v, rtol=0, atol=1e-10 * max(1.0, np.abs(v).max()), err_msg=name)
    assert isinstance(a, Linearisation) and np.array_equal(a.x, b.x)


def test_repeated_sensor_set_still_drops_missing_values(setup):
    """The per-name index cache of the measurement model: a frame with the same sensors as the
    last one, one reading NaN (or None), makes rows for the others only."""
    sk, model, rng, q = setup
    mm = MeasurementModel(model)
    proc = TorqueProcess(model, 1 / 60)
    lin = proc.linearise(proc.initial_state(q))
    names = [f.name for f in sk.features if f.kind == "imu"][:4]
    good = {k: (rng.normal(size=3), rng.normal(size=3)) for k in names}
    z, h, H, r = mm.linearise(lin, Observation(0.0, imu=good), proc.nx)
    assert len(z) == 24
    z2, h2, H2, r2 = mm.linearise(lin, Observation(0.0, imu=good), proc.nx)       # cached path
    assert np.array_equal(z, z2) and np.array_equal(H, H2) and np.array_equal(r, r2)
    for bad in (None, (np.full(3, np.nan), np.zeros(3))):
        obs = Observation(0.0, imu=dict(good, **{names[1]: bad}))
        z3, h3, H3, r3 = mm.linearise(lin, obs, proc.nx)
        keep = np.r_[0:6, 12:24]
        assert len(z3) == 18
        np.testing.assert_array_equal(z3, z[keep])
        np.testing.assert_allclose(H3, H[keep], rtol=0, atol=1e-12 * np.abs(H).max())


@pytest.mark.skipif(dynamics_numba.numba is None, reason="numba is not installed (optional)")
@pytest.mark.parametrize("floating", [False, True])
def test_numba_imu_rows_equal_numpy(floating, monkeypatch):
    """device/estimate/imu_numba.py: the IMU rows (h, H) equal the numpy path's, for the torque
    model (h_tau_only or not) and the constant-acceleration / constant-velocity models."""
    from device.estimate.process import ConstantAcceleration, ConstantVelocity
    sk = human_model(floating=floating)
    model = model_of(sk, 0.01)
    rng = np.random.default_rng(9)
    q = model.to_si(sk.home) + rng.normal(0, 0.4, model.n)
    mm = MeasurementModel(model)
    names = [f.name for f in sk.features if f.kind == "imu"]
    obs = Observation(0.0, imu={k: (rng.normal(size=3), rng.normal(size=3)) for k in names})
    for proc in (TorqueProcess(model, 1 / 60, damping=0.5), TorqueProcess(model, 1 / 60, h_tau_only=False),
                 ConstantAcceleration(model, 1 / 60), ConstantVelocity(model, 1 / 60)):
        x = proc.initial_state(q, rng.normal(0, 1.0, model.n))
        if proc.nx == 3 * model.n:
            x[2 * model.n:] += rng.normal(0, 1.0, model.n)
        lin = proc.linearise(x)
        monkeypatch.setenv("MOTIONSTAFF_NUMBA", "1")
        z1, h1, H1, r1 = mm.linearise(lin, obs, proc.nx)
        monkeypatch.setenv("MOTIONSTAFF_NUMBA", "0")
        z0, h0, H0, r0 = mm.linearise(lin, obs, proc.nx)
        assert np.array_equal(z1, z0) and np.array_equal(r1, r0)
        np.testing.assert_allclose(h1, h0, rtol=0, atol=1e-12 * np.abs(h0).max())
        np.testing.assert_allclose(H1, H0, rtol=0, atol=1e-12 * np.abs(H0).max())


def test_information_update_equals_the_covariance_form(setup):
    """With more rows than states (the whole body's IMUs) the update runs in information form:
    the same posterior as the covariance form (Cholesky of S, P - U U') and as filterpy's
    textbook K = P H' S^-1, x + K y, (I - K H) P, to round-off; the prior P is not modified."""
    from device.estimate.ekf import JointEKF
    sk, model, rng, q = setup
    n = model.n
    nx, nz = 3 * n, 3 * n + 40
    H = rng.normal(size=(nz, nx)) * (rng.uniform(size=(nz, nx)) < 0.15)       # sparse like the IMUs'
    r = rng.uniform(0.01, 1.0, nz)
    P = _spd(rng, nx) * 1e-3
    x0 = rng.normal(size=nx)
    z, h = rng.normal(size=nz), rng.normal(size=nz)

    class _Meas:
        def linearise(self, lin, obs, nx_):
            return z, h, H, r

    def posterior(information):
        est = JointEKF.__new__(JointEKF)
        est.meas, est.nx, est.clamp, est.failures, est.lin = _Meas(), nx, False, 0, None
        est.x, est.P = x0.copy(), P.copy()
        if not information:
            est._update_information = lambda *a: False
        prior = est.P
        est.update(None, _own_P=False)
        np.testing.assert_array_equal(prior, P)                     # the prior is untouched
        assert est.P.flags.c_contiguous and np.array_equal(est.P, est.P.T)
        return est.x, est.P, est.nis

    xi, Pi, nis_i = posterior(True)
    xc, Pc, nis_c = posterior(False)
    S = H @ P @ H.T + np.diag(r)
    K = P @ H.T @ np.linalg.inv(S)
    x_ref = x0 + K @ (z - h)
    P_ref = (np.eye(nx) - K @ H) @ P
    for x_, P_ in ((xi, Pi), (xc, Pc)):
        np.testing.assert_allclose(x_, x_ref, rtol=0, atol=1e-9 * np.abs(x_ref).max())
        np.testing.assert_allclose(P_, P_ref, rtol=0, atol=1e-9 * np.abs(P_ref).max())
    assert abs(nis_i - nis_c) < 1e-8 * nis_c


def _marker_rows_numpy(mm, model, kin, cam, idx):
    """The numpy path the compiled marker rows replace: features, project, d uv / dq."""
    p, _, _ = mm.features(kin, idx)
    return p, cam.project(p), cam.project_jacobian(p) @ model.point_jacobian(kin, mm.f_link[idx], p)


@pytest.mark.skipif(dynamics_numba.numba is None, reason="numba is not installed (optional)")
@pytest.mark.parametrize("floating", [False, True])
def test_numba_marker_rows_and_kinematics_equal_numpy(floating):
    """device/estimate/camera_numba.py: the 2D markers' pixels and pixel Jacobians, and
    dynamics_numba.kinematics, equal the numpy functions; a feature behind the camera has NaN
    pixels (the callers drop it)."""
    from device.estimate import camera_numba
    from device.estimate.observation import Camera
    sk = human_model(floating=floating)
    model = model_of(sk, 0.01)
    mm = MeasurementModel(model)
    rng = np.random.default_rng(21)
    idx = np.array([k for k, f in enumerate(sk.features) if f.kind == "marker"], int)
    assert len(idx) > 10
    for trial in range(4):
        q = model.to_si(sk.home) + rng.normal(0, 0.5, model.n)
        kin = model.kinematics(q)
        kin2 = dynamics_numba.kinematics(model, q)
        for name in ("T", "R", "p_m", "axis", "origin_m", "S"):
            a, b = getattr(kin, name), getattr(kin2, name)
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * max(1.0, np.abs(a).max()), err_msg=name)
        # a camera 3 m away (the last trial: inside the body, some features behind it)
        eye = (3.0, 0.5, 1.0) if trial < 3 else (0.0, 0.0, 1.0)
        cam = Camera.look_at(eye_m=eye, target_m=(-1.0, 0, 0.9), f_px=600, width_px=640, height_px=480)
        p0, uv0, J0 = _marker_rows_numpy(mm, model, kin, cam, idx)
        p1, uv1, J1 = camera_numba.marker_rows(mm, kin, cam, idx)
        np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-12)
        ok = np.isfinite(uv0).all(1)
        assert np.array_equal(np.isfinite(uv1).all(1), ok)
        if trial == 3:
            assert not ok.all()
        np.testing.assert_allclose(uv1[ok], uv0[ok], rtol=0, atol=1e-9)
        np.testing.assert_allclose(J1[ok], J0[ok], rtol=0, atol=1e-10 * np.abs(J0[ok]).max())
        assert not J1[~ok].any()
    with pytest.raises(ValueError, match="finite"):
        dynamics_numba.kinematics(model, np.full(model.n, np.nan))


@pytest.mark.skipif(dynamics_numba.numba is None, reason="numba is not installed (optional)")
def test_marker_update_and_windows_with_and_without_numba_agree(setup, monkeypatch):
    """The EKF's 2D-marker rows (MeasurementModel.linearise) and search windows
    (JointEKF.predicted_markers2d) are the same with the compiled marker rows as without."""
    from device.estimate import make_estimator
    from device.estimate.observation import Camera
    sk, model, rng, q = setup
    est = make_estimator("ekf", sk, 1 / 30)
    est.initialise(model.from_si(q))
    est.x[model.n:2 * model.n] = rng.normal(0, 1.0, model.n)
    cam = Camera.look_at(eye_m=(3.0, 0.5, 1.0), target_m=(0, 0, 0.9), f_px=600, width_px=640, height_px=480)
    names = [f.name for f in sk.features if f.kind == "marker"]
    pred = est.predicted_markers2d(cam)
    obs = Observation(0.0, markers2d={n: (pred[n][0] + rng.normal(0, 2), pred[n][1] + rng.normal(0, 2))
                                      for n in names if n in pred}, camera=cam)
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "1")
    w1, rows1 = est.predicted_markers2d(cam), est.meas.linearise(est.lin, obs, est.nx)
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "0")
    w0, rows0 = est.predicted_markers2d(cam), est.meas.linearise(est.lin, obs, est.nx)
    assert list(w1) == list(w0) and len(w0) > 10
    np.testing.assert_allclose(np.array(list(w1.values())), np.array(list(w0.values())), rtol=1e-9)
    for a, b in zip(rows1, rows0):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * max(1.0, np.abs(b).max()))
    # a camera inside the body: the markers behind it have no window, either way
    inside = Camera.look_at(eye_m=(0.0, 0.0, 1.0), target_m=(-1.0, 0, 0.9), f_px=600, width_px=640, height_px=480)
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "1")
    w1 = est.predicted_markers2d(inside)
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "0")
    w0 = est.predicted_markers2d(inside)
    assert list(w1) == list(w0) and 0 < len(w0) < len(names)
    np.testing.assert_allclose(np.array(list(w1.values())), np.array(list(w0.values())), rtol=1e-9)


@pytest.mark.skipif(dynamics_numba.numba is None, reason="numba is not installed (optional)")
@pytest.mark.parametrize("floating", [False, True])
def test_numba_orient_rows_equal_numpy(floating, monkeypatch):
    """device/estimate/orient_numba.py: the fused orientations' rows (z = log(Rm Rs'), H) equal
    the numpy path's, a residual near pi (the axis from the symmetric part) included."""
    from device.capture.rot import exp_so3
    sk = human_model(floating=floating)
    model = model_of(sk, 0.01)
    mm = MeasurementModel(model)
    rng = np.random.default_rng(17)
    proc = TorqueProcess(model, 1 / 60)
    q = model.to_si(sk.home) + rng.normal(0, 0.4, model.n)
    lin = proc.linearise(proc.initial_state(q))
    names = [f.name for f in sk.features if f.kind == "imu"]
    _, Rs, _ = mm.features(lin.kin, np.array([mm.index[k] for k in names]))
    # measured = exp(w) Rs: small residuals, one large, one within 1e-4 of pi
    W = rng.normal(0, 0.2, (len(names), 3))
    W[0] = [0.0, 2.5, 0.0]
    W[1] = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5]) * (np.pi - 1e-4)
    Rm = exp_so3(W) @ Rs
    obs = Observation(0.0, orient=dict(zip(names, Rm)))
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "1")
    z1, h1, H1, r1 = mm.linearise(lin, obs, proc.nx)
    monkeypatch.setenv("MOTIONSTAFF_NUMBA", "0")
    z0, h0, H0, r0 = mm.linearise(lin, obs, proc.nx)
    np.testing.assert_allclose(z1, z0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(z0.reshape(-1, 3), W, rtol=0, atol=1e-6)
    assert np.array_equal(H1, H0) and np.array_equal(h1, h0) and np.array_equal(r1, r0)


def test_information_update_by_row_blocks_equals_one_product(setup):
    """JointEKF._add_HtH: with the measurement model's row blocks (markers and orientations:
    q columns only, the IMUs: all) Y + H' R^-1 H by blocks equals the one syrk over all rows."""
    from device.estimate.ekf import JointEKF
    sk, model, rng, q = setup
    n = model.n
    nx = 3 * n
    blocks = [(30, n), (5 * 6, nx), (12, n)]
    Hs = rng.normal(size=(sum(b for b, _ in blocks), nx))
    start = 0
    for rows, cols in blocks:
        Hs[start:start + rows, cols:] = 0.0
        start += rows

    class _Meas:
        row_blocks = blocks

    est = JointEKF.__new__(JointEKF)
    est.n, est.meas = n, _Meas()
    Y0 = np.asfortranarray(_spd(rng, nx))
    got = np.tril(est._add_HtH(Y0.copy(order="F"), Hs))
    want = np.tril(Y0 + Hs.T @ Hs)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
    est.meas = type("_NoBlocks", (), {})()
    np.testing.assert_allclose(np.tril(est._add_HtH(Y0.copy(order="F"), Hs)), want, rtol=0,
                               atol=1e-12 * np.abs(want).max())


@pytest.mark.skipif(dynamics_numba.numba is None, reason="numba is not installed (optional)")
def test_compiled_rows_take_one_variant_of_the_feature_indices(setup):
    """The measurement model's cached indices are read-only (_indices), the search windows' and
    a frame's with a missing sensor writable: numba compiles one variant per kind, so the one
    warm-up did not run (the 2D marker update with every marker seen: read-only) compiled or
    loaded from its cache inside a timed frame. The kernels see one kind: writable."""
    from device.estimate import camera_numba, orient_numba
    from device.estimate.observation import Camera
    sk, model, rng, q = setup
    mm = MeasurementModel(model)
    kin = dynamics_numba.kinematics(model, q)
    cam = Camera.look_at(eye_m=(3.0, 0.5, 1.0), target_m=(0, 0, 0.9), f_px=600, width_px=640, height_px=480)
    for kind in ("marker", "imu"):
        idx = np.array([k for k, f in enumerate(sk.features) if f.kind == kind], int)
        ro = idx.copy()
        ro.flags.writeable = False
        for i in (idx, ro):
            if kind == "marker":
                camera_numba.marker_rows(mm, kin, cam, i)
            else:
                orient_numba.orient_rows(mm, kin, i, np.broadcast_to(np.eye(3), (len(i), 3, 3)))
    for kernel in (camera_numba._rows, orient_numba._rows):
        assert all(sig[1].mutable for sig in kernel.signatures), kernel.signatures
