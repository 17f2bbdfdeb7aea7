"""Single-IMU orientation: a multiplicative (error-state) quaternion EKF with gyro-bias states.

    from device.estimate.orientation import OrientationEKF
    f = OrientationEKF(dt_s=1 / 285.714)
    for g, a in zip(gyro_rad_s, acc_m_s2):
        q_wxyz = f.step(g, a)            # sensor -> Earth (z up), heading from the gyro only

State: orientation q (sensor to Earth, w x y z) and gyro bias b (rad/s); the filter's error
state is dx = [dtheta (3, rad, Earth frame), db (3)] with covariance P (6 x 6).
  predict   q <- q * exp((w - b) dt / 2) ;  A = [[I, -R dt], [0, I]] ;  P = A P A' + Q
  update    z = a / |a| (specific force direction, sensor frame), h = R' e_z,
            H = [R' [e_z]x, 0]  (d h / d dtheta for R <- exp(dtheta) R),
            R_acc grows with | |a| - g | (acceleration that is not gravity), Joseph form.
It is the single-segment case of the joint-space machinery (same predict/update equations in
device/estimate/ekf.py); benchmarks/estimation.py runs it on BROAD beside imufusion and vqf.
"""

import numpy as np


def _quat_mul(p, q):
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return np.array([pw * qw - px * qx - py * qy - pz * qz, pw * qx + px * qw + py * qz - pz * qy,
                     pw * qy - px * qz + py * qw + pz * qx, pw * qz + px * qy - py * qx + pz * qw])


def _exp(v):
    th = np.linalg.norm(v)
    if th < 1e-12:
        return np.array([1.0, 0.5 * v[0], 0.5 * v[1], 0.5 * v[2]])
    s = np.sin(th / 2) / th
    return np.array([np.cos(th / 2), v[0] * s, v[1] * s, v[2] * s])


def _rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


class OrientationEKF:
    """Gyro + accelerometer orientation EKF (see the module docstring); SI units."""

    def __init__(self, dt_s, gyro_sigma_rad_s=0.002, bias_walk_rad_s2=3e-6, acc_sigma=0.08,
                 acc_motion_gain=0.3, g_m_s2=9.81):
        self.dt_s = float(dt_s)
        self.q = None
        self.b = np.zeros(3)
        self.P = np.diag([0.1, 0.1, 0.1, 1e-4, 1e-4, 1e-4])
        self.Qd = np.diag([gyro_sigma_rad_s ** 2] * 3 + [bias_walk_rad_s2 ** 2] * 3) * self.dt_s
        self.acc_sigma = acc_sigma
        self.acc_motion_gain = acc_motion_gain
        self.g = g_m_s2

    def _init_from(self, a):
        z = a / np.linalg.norm(a)
        # the rotation taking the sensor's measured up (z) onto Earth's up
        v = np.cross(z, [0.0, 0.0, 1.0])
        s, c = np.linalg.norm(v), z[2]
        self.q = np.array([1.0, 0, 0, 0]) if s < 1e-9 else _exp(v / s * np.arctan2(s, c))

    def step(self, gyro_rad_s, acc_m_s2, dt_s=None):
        """One predict (gyro) + update (accelerometer); returns q (w, x, y, z)."""
        dt = self.dt_s if dt_s is None else dt_s
        w = np.asarray(gyro_rad_s, float)
        a = np.asarray(acc_m_s2, float)
        if self.q is None:
            self._init_from(a)
            return self.q.copy()
        if np.all(np.isfinite(w)):
            R = _rot(self.q)
            # q <- q * exp((w - b) dt)
            self.q = _quat_mul(self.q, _exp((w - self.b) * dt))
            self.q /= np.linalg.norm(self.q)
            # A = [[I, -R dt], [0, I]] ; P = A P A' + Q
            A = np.eye(6)
            A[:3, 3:] = -R * dt
            self.P = A @ self.P @ A.T + self.Qd
        na = np.linalg.norm(a) if np.all(np.isfinite(a)) else 0.0
        if na > 1e-3:
            R = _rot(self.q)
            z = a / na
            h = R[2]                           # R' e_z: Earth's up in the sensor frame
            # H = [R' [e_z]x, 0]
            H = np.zeros((3, 6))
            H[:, :3] = R.T @ _skew([0.0, 0.0, 1.0])
            r = (self.acc_sigma + self.acc_motion_gain * abs(na - self.g) / self.g) ** 2
            # S = H P H' + R ; K = P H' S^-1
            S = H @ self.P @ H.T + r * np.eye(3)
            K = np.linalg.solve(S, H @ self.P).T
            dx = K @ (z - h)
            # R <- exp(dtheta) R ; b <- b + db
            self.q = _quat_mul(_exp(dx[:3]), self.q)
            self.q /= np.linalg.norm(self.q)
            self.b = self.b + dx[3:]
            # P = (I - K H) P (I - K H)' + K R K'
            IKH = np.eye(6) - K @ H
            self.P = IKH @ self.P @ IKH.T + r * K @ K.T
        return self.q.copy()
