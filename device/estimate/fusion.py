"""The per-segment orientation baseline: one x-io Fusion AHRS (imufusion) per IMU, then IK.

    from device.estimate import make_estimator
    est = make_estimator("fusion", skeleton, 1 / 60)        # markers too unless use_markers=False
    est.initialise(q0_dof); q_dof = est.step(obs)

The way Xsens-, OpenSense- and SlimeVR-style systems work: each IMU's AHRS (Madgwick's revised
complementary filter, x-io Fusion) gives its sensor's orientation in an Earth frame (z up,
NWU); the known orientation at initialise() (the N-pose calibration) aligns each AHRS; joint
angles are then the relative orientations decomposed onto the skeleton's dof axes, which
device/body/ik.py does by damped least squares on all segment orientations at once (plus
the 3D markers present, so this baseline sees the same observations as the EKF).
"""

import numpy as np

from device.body.dynamics import model_of
from device.body.ik import solve_ik
from device.estimate.measurement import MeasurementModel


def quat_to_matrix(q):
    """(w, x, y, z) -> (3, 3) rotation."""
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def matrix_to_quat(R):
    """(3, 3) rotation -> (w, x, y, z), w >= 0."""
    K = np.array([
        [R[0, 0] - R[1, 1] - R[2, 2], R[1, 0] + R[0, 1], R[2, 0] + R[0, 2], R[2, 1] - R[1, 2]],
        [R[1, 0] + R[0, 1], R[1, 1] - R[0, 0] - R[2, 2], R[2, 1] + R[1, 2], R[0, 2] - R[2, 0]],
        [R[2, 0] + R[0, 2], R[2, 1] + R[1, 2], R[2, 2] - R[0, 0] - R[1, 1], R[1, 0] - R[0, 1]],
        [R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], R[0, 0] + R[1, 1] + R[2, 2]]]) / 3.0
    w, V = np.linalg.eigh(K)
    x, y, z, qw = V[:, -1]
    q = np.array([qw, x, y, z])
    return q if qw >= 0 else -q


def earth_from_world(gravity):
    """Rotation taking skeleton-world vectors to an Earth frame whose z is up (-gravity)."""
    up = -np.asarray(gravity, float)
    up /= np.linalg.norm(up)
    e = np.eye(3)[int(np.argmin(np.abs(up)))]
    x = np.cross(e, up)
    x /= np.linalg.norm(x)
    y = np.cross(up, x)
    return np.stack([x, y, up])


class FusionEstimator:
    """imufusion.Ahrs per IMU feature + IK over orientations (and markers)."""

    def __init__(self, skeleton, dt_s, gain=0.5, use_markers=True, marker_sigma_m=0.005,
                 orientation_weight=0.3, **ignored):
        import imufusion

        self._imufusion = imufusion
        self.skeleton = skeleton
        self.dt_s = float(dt_s)
        self.gain = float(gain)
        self.use_markers = use_markers
        self.orientation_weight = orientation_weight
        self.model = model_of(skeleton)
        self.meas = MeasurementModel(self.model)
        self.imus = [f.name for f in skeleton.features if f.kind == "imu"]
        self.R_ew = earth_from_world(skeleton.gravity)
        self.g = float(np.linalg.norm(skeleton.gravity)) or 9.81
        self.q = None
        self.ahrs = {}

    def _new_ahrs(self):
        im = self._imufusion
        a = im.Ahrs()
        s = im.AhrsSettings()
        s.sample_rate = int(round(1.0 / self.dt_s))
        s.convention = im.CONVENTION_NWU
        s.gain = self.gain
        s.gyroscope_range = 2000.0
        s.acceleration_rejection = 10.0
        s.magnetic_rejection = 0.0
        a.set_settings(s)
        return a

    def initialise(self, q0_dof, qd0_dof=None, t_s=None):
        """Align every AHRS to its sensor's orientation at q0 (dof units)."""
        self.q = np.asarray(q0_dof, float).copy()
        kin = self.model.kinematics(self.model.to_si(self.q))
        idx = np.array([self.meas.index[n] for n in self.imus], int)
        _, Rs, _ = self.meas.features(kin, idx) if len(idx) else (None, np.zeros((0, 3, 3)), None)
        for name, R in zip(self.imus, Rs):
            a = self._new_ahrs()
            a.set_quaternion(matrix_to_quat(self.R_ew @ R))
            a.skip_startup()
            self.ahrs[name] = a
        return self

    def step(self, obs):
        """Update every AHRS with its IMU sample (missing: the AHRS coasts), then IK."""
        orient = {}
        for name in self.imus:
            a = self.ahrs[name]
            v = obs.imu.get(name) if obs is not None else None
            if v is not None and all(np.all(np.isfinite(np.asarray(u, float))) for u in v):
                gyro, acc = v
                a.update_no_magnetometer(np.degrees(np.asarray(gyro, float)), np.asarray(acc, float) / self.g)
            # world rotation of the sensor: R_w = R_ew' R_earth
            orient[name] = self.R_ew.T @ quat_to_matrix(a.get_quaternion())
        pos = obs.markers3d if (obs is not None and self.use_markers) else None
        self.q, _ = solve_ik(self.skeleton, positions=pos, orientations=orient, q0=self.q,
                             orientation_weight=self.orientation_weight, max_iter=10, tol_rad=1e-5)
        return self.q.copy()

    def predicted_markers2d(self, camera=None, **kw):
        return {}
