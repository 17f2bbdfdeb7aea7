"""Review of the bounded branch recovery (device/capture/branch.py), its batched orientation IK
(device/body/ik_batch.py, RigidBodyModel.rotations), the IK log map near pi (device/body/ik.py)
and the twin's ticks_ms (device/servo/emulate/native.py): the cases that broke them."""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.spatial.transform import Rotation

from device.body.dynamics import model_of
from device.body.human import human_model
from device.body.ik import _rotvec
from device.body.ik_batch import OrientationIKBatch
from device.body.skeleton import Dof, Feature, Link, Skeleton
from device.capture.branch import BranchCheck
from device.capture.lowerbody import legs_skeleton
from device.capture.unit import humanoid18
from device.estimate.measurement import MeasurementModel
from device.servo.emulate.native import TICKS_MAX, NativeEmulator
from tests.ik_oracle import single_steps


def _odd_skeleton():
    """World-fixed links (a root without dofs, a second root), prismatic dofs (m and cm), a
    dof-less link between two moving ones, a rad dof; an IMU on each."""
    rng = np.random.default_rng(5)
    links = [Link("base", -1, [0.1, 0, 0]), Link("slider", 0, [0, 0.2, 0], mass=1.0),
             Link("arm", 1, [0, 0, 0.3], mass=1.0), Link("bracket", 2, [0.1, 0, 0]),
             Link("hand", 3, [0.1, 0, 0.1], mass=1.0), Link("post", -1, [0, 0, 1.0])]
    dofs = [Dof("tx", 1, "translation", [1, 0, 0], -1, 1),
            Dof("ty", 1, "translation", rng.normal(size=3), -1, 1),
            Dof("r1", 1, "rotation", rng.normal(size=3), -170, 170),
            Dof("r2", 2, "rotation", rng.normal(size=3), -90, 90),
            Dof("tz", 2, "translation", [0, 0, 1], -50, 50, unit="cm"),
            Dof("r3", 4, "rotation", rng.normal(size=3), -3, 3, unit="rad")]
    feats = [Feature("imu_" + ln.name, i, "imu", [0, 0, 0], rng.normal(size=4))
             for i, ln in enumerate(links)]
    return Skeleton(links, dofs, feats, name="odd")


SKELETONS = [human_model(), human_model(floating=True), legs_skeleton(), humanoid18(), _odd_skeleton()]


@pytest.mark.parametrize("sk", SKELETONS, ids=lambda s: s.name)
def test_batched_rotations_are_kinematics_for_every_dof_kind(sk):
    m = model_of(sk)
    rng = np.random.default_rng(1)
    for B in (1, 4):
        Q = m.to_si(rng.uniform(sk.lo, sk.hi, (B, sk.ndof)))
        R, axis = m.rotations(Q)
        for b in range(B):
            kin = m.kinematics(Q[b])
            np.testing.assert_allclose(R[b], kin.R, atol=1e-12)
            np.testing.assert_allclose(axis[b], kin.axis, atol=1e-12)


@pytest.mark.parametrize("sk", SKELETONS, ids=lambda s: s.name)
def test_batched_step_is_the_single_problems_step(sk):
    """Seeds anywhere in the limits (and at them), targets anywhere (world-fixed sensors too)."""
    rng = np.random.default_rng(2)
    names = [f.name for f in sk.features if f.kind == "imu"]
    seeds = rng.uniform(sk.lo, sk.hi, (3, sk.ndof))
    seeds[1] = sk.hi
    Rt = Rotation.random(len(names), random_state=3).as_matrix()
    ik = OrientationIKBatch(sk, names, seeds, prior_weight=0.02)
    ik.set_orientations(Rt)
    Q = ik.model.to_si(seeds)
    Qn, step, e_deg = ik.iterate(Q)
    for b, (qn, s, r) in enumerate(single_steps(sk, names, Rt, seeds, Q)):
        np.testing.assert_allclose(Qn[b], qn, atol=1e-10)
        assert abs(step[b] - s) < 1e-10
    # B = 1
    one = OrientationIKBatch(sk, names, seeds[:1], prior_weight=0.02)
    one.set_orientations(Rt)
    np.testing.assert_allclose(one.iterate(Q[:1])[0], Qn[:1], atol=1e-12)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1), st.floats(0.0, 2e-3))
def test_rotvec_near_pi_keeps_the_axis_sign(x, y, z, below):
    """log(R) within 1e-3 rad of pi took the eigenvector's arbitrary sign: half the time the
    residual was the rotation the other way round (-th about the axis)."""
    a = np.array([x, y, z])
    if np.linalg.norm(a) < 1e-3:
        return
    a /= np.linalg.norm(a)
    th = np.pi - below
    v = _rotvec(Rotation.from_rotvec(a * th).as_matrix()[None])[0]
    if below < 1e-9:                          # at pi exactly both signs are the rotation
        v = v if v @ a >= 0 else -v
    np.testing.assert_allclose(v, a * th, atol=2e-6)


class _Est:
    """The estimator interface BranchCheck uses (meas, model, initialise, q_dof)."""

    def __init__(self, sk):
        self.model = model_of(sk)
        self.meas = MeasurementModel(self.model)
        self.q = sk.home.copy()

    def initialise(self, q, t_s=None):
        self.q = np.array(q, float)

    @property
    def q_dof(self):
        return self.q.copy()


def _setup():
    sk = human_model()
    est = _Est(sk)
    names = [f.name for f in sk.features if f.kind == "imu"]
    kin = est.model.kinematics(est.model.to_si(sk.home))
    _, R, _ = est.meas.features(kin, np.array([est.meas.index[n] for n in names]))
    truth = dict(zip(names, R))
    chk = BranchCheck(sk, 30.0)
    off = sk.home.copy()
    off[sk.dof_index("l_elbow_flex")] += 30.0          # the filter 30 deg off on one joint
    for k in range(40):
        chk(est, SimpleNamespace(orient=truth, t_s=k / 30.0), sk.home.copy())
    return sk, est, chk, names, truth, off


def test_fires_only_after_its_solves_had_their_steps():
    """A bad frame, frames between good and bad (the solves go stale), a bad frame: the check
    fired on it with the new solves' 2 steps (it counted the dropped solves' bad frame)."""
    sk, est, chk, names, truth, off = _setup()
    mid = sk.home.copy()
    mid[sk.dof_index("l_elbow_flex")] += 9.0
    for k, q in enumerate([off, mid, mid, mid, mid, mid, off]):
        chk(est, SimpleNamespace(orient=truth, t_s=2 + k / 30.0), q.copy())
    assert chk.resets == 0 and chk.solves is not None and chk.solves.bad == 1
    chk(est, SimpleNamespace(orient=truth, t_s=3.0), off.copy())
    assert chk.resets == 1 and chk.fewest_at_fire == 4
    assert abs(est.q[sk.dof_index("l_elbow_flex")] - sk.home[sk.dof_index("l_elbow_flex")]) < 0.5


def test_sensors_dropping_out_mid_recovery_keep_the_solves_and_the_bound():
    """Every frame a different sensor missing, one reading NaN, one a zero matrix (a zero
    quaternion), one a reflection: the solves go on (4 steps when it fires, 6 steps a frame at
    most); before, a NaN anywhere skipped the whole check and a changed set restarted them."""
    sk, est, chk, names, truth, off = _setup()
    for k in range(2):
        orient = {n: R for i, (n, R) in enumerate(truth.items()) if i != 3 + k}
        orient[names[0]] = np.full((3, 3), np.nan)
        orient[names[1]] = np.zeros((3, 3))
        orient[names[2]] = -truth[names[2]]
        chk(est, SimpleNamespace(orient=orient, t_s=2 + k / 30.0), off.copy())
    assert chk.resets == 1 and chk.fewest_at_fire == 4 and chk.most_in_a_frame == 6
    assert abs(est.q[sk.dof_index("l_elbow_flex")] - sk.home[sk.dof_index("l_elbow_flex")]) < 0.5


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.floats(0.0, 3e9), st.integers(-10 ** 7, 10 ** 10))
def test_twin_ticks_ms_floors_on_any_monotonic_clock(t0_s, k):
    """t0 a monotonic clock's reading (up to ~95 years of uptime), the clock k ms after it
    (k < 0: before t0): ticks_ms reads k. int() + 1e-6 ms read k - 1 once the clock's float
    spacing passed 1 ns (t0 ~ 1e7 s) and rounded times before t0 towards zero."""
    t = [t0_s]
    emu = NativeEmulator(clock=lambda: t[0])
    t[0] = t0_s + k / 1000.0
    assert emu.now_ms() == k & TICKS_MAX              # (ticks_ms is modulo 2^30, never < 0)
    t[0] = t0_s + (k + 0.5) / 1000.0
    assert emu.now_ms() == k & TICKS_MAX



def test_random_dropouts_and_offsets_keep_the_per_frame_bound():
    """Seeded: 120 frames of the filter good, between, or bad on random joints, random sensors
    missing or non-finite: never more than 3 seeds x 2 steps in a call, never a fire on fewer
    than 2 x 2 steps, never an exception."""
    sk, est, chk, names, truth, off = _setup()
    rng = np.random.default_rng(11)
    joints = [sk.dof_index(n) for n in ("l_elbow_flex", "r_knee_flex", "l_shoulder_abd", "lumbar_flex")]
    for k in range(120):
        q = sk.home.copy()
        q[joints[rng.integers(len(joints))]] += rng.choice([0.0, 9.0, 30.0, 60.0])
        orient = {n: R for n, R in truth.items() if rng.random() > 0.2}
        if orient and rng.random() < 0.2:
            orient[next(iter(orient))] = np.full((3, 3), np.inf)
        before = chk.iterations
        chk(est, SimpleNamespace(orient=orient, t_s=2 + k / 30.0), q)
        assert chk.iterations - before <= 6
    assert chk.resets >= 1 and chk.fewest_at_fire >= 4 and chk.most_in_a_frame == 6
