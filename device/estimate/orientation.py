"""Single-IMU orientation: a multiplicative (error-state) quaternion EKF with gyro-bias states.

    from device.estimate.orientation import OrientationEKF, noise_from_rest
    f = OrientationEKF(1 / 285.714, **noise_from_rest(gyro_rad_s[:5000], acc_m_s2[:5000], 1 / 285.714))
    for g, a in zip(gyro_rad_s, acc_m_s2):
        q_wxyz = f.step(g, a)            # sensor -> Earth (z up), heading from the gyro only

State: orientation q (sensor to Earth, w x y z), gyro bias b (rad/s) and lever arm r (m, sensor
frame: from a centre of rotation to the sensor); the error state is dx = [dtheta (3, rad, Earth
frame), db (3), dr (3)] with covariance P (9 x 9) (6 x 6 without the lever arm, lever0_m=0).
  predict   q <- q * exp((w - b) dt) ;  A = [[I, -R dt, 0], [0, I, 0], [0, 0, I]] ;  P = A P A' + Q
            Q = diag(n_g^2 dt + 2 tau_c (k_s |w - b|)^2 dt / 3, n_b^2 dt, 0)
                (gyro white noise; scale/misalignment error, a rate error k_s |w| correlated
                over tau_c; bias random walk; r constant)
  update    a_c = a - M r, M = [u]x [u]x + [du/dt]x, u = w - b: the accelerometer without the
            centripetal and tangential acceleration of a point at r from a fixed centre
            (a body segment turning about its joint; r ~ 0 when nothing fits);
            z = a_c / |a_c| (gravity direction, sensor frame), h = R' e_z,
            H = [R' [e_z]x, 0, (I - z z') M / |a_c|]  (R <- exp(dtheta) R, r <- r + dr),
            R_acc = (n_a^2 + s_lin^2) / g^2 per axis, s_lin^2 a running mean of
            |a_c - g R' e_z|^2 / 3 (the acceleration left that is not gravity), Joseph form.
  rest      when |w - b| and | |a_c| - g | stay under thresholds for rest_min_s, the gyro
            measures the bias: z = w, h = b, H = [0, I, 0], R = n_g^2 / dt (per-sample variance).
It is the single-segment case of the joint-space machinery (same predict/update equations in
device/estimate/ekf.py). device/estimate/orientation_smoother.py runs it forwards, keeps what
each step computed, and runs a Rauch-Tung-Striebel pass backwards (the offline mode).
benchmarks/estimation.py runs both on BROAD beside imufusion and vqf.

Where the default numbers come from (noise_from_rest() replaces the sensor ones with a
recording's own still segment; none was fitted to an optical reference):
  gyro_noise_rad_s_rthz 1e-4   white gyro noise density: BROAD trial 02's first still 38 s give
                               1.0e-4 rad/s/sqrt(Hz) (std 1.7e-3 rad/s at 285.7 Hz, white:
                               lag-1 autocorrelation < 0.07, Allan slope -1/2 to tau = 1 s)
  gyro_scale_frac 0.005        gyro scale-factor + axis-misalignment error of a calibrated MEMS
                               gyro (0.1-1 % is the usual datasheet range): 0.5 %
  scale_tau_s 0.1              correlation time of that rate error = of the angular rate itself:
                               the integral of the gyro's autocorrelation over all lags (its
                               zero-frequency power, which is what accumulates as angle error);
                               BROAD trial 02's movement gives 0.02-0.14 s (integrated to 5-20 s;
                               0.6 s to the first zero crossing, back-and-forth motion cancels)
  bias_walk_rad_s2 5e-6        bias random walk: the Allan deviation floor of the same still
                               segment (about 5e-5 rad/s at tau = 3 s) reached over 100 s
  bias0_rad_s 0.01             initial bias uncertainty: 0.6 deg/s, a MEMS turn-on bias
  lever0_m 0.1                 prior std of each lever-arm component: a body segment's scale
                               (an IMU sits within centimetres to decimetres of a joint)
  acc_noise_m_s2 0.05          accelerometer white noise per sample (same still segment: 0.043,
                               0.047, 0.069 m/s^2 per axis)
  lin_acc_tau_s 0.5            averaging time of the non-gravity acceleration estimate: about
                               one slow human movement (0.3-1 s); gyro autocorrelation on BROAD
                               trial 02 falls to 1/e at 0.8 s
  rest_gyro_rad_s 0.035, rest_acc_m_s2 0.5, rest_min_s 1.5
                               rest thresholds: VQF's defaults (2 deg/s, 0.5 m/s^2, 1.5 s)
  g_m_s2 9.81                  gravity; noise_from_rest() uses the still segment's mean |a|
                               (which also absorbs the accelerometer's scale error)
"""

import math

import numpy as np

from protocol.errors import FormatError

_I3 = np.eye(3)


def _norm3(v):
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _finite3(v):
    return math.isfinite(v[0]) and math.isfinite(v[1]) and math.isfinite(v[2])


def _quat_mul(p, q):
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return np.array([pw * qw - px * qx - py * qy - pz * qz, pw * qx + px * qw + py * qz - pz * qy,
                     pw * qy - px * qz + py * qw + pz * qx, pw * qz + px * qy - py * qx + pz * qw])


def _exp(v):
    th = _norm3(v)
    if th < 1e-12:
        return np.array([1.0, 0.5 * v[0], 0.5 * v[1], 0.5 * v[2]])
    s = math.sin(th / 2) / th
    return np.array([math.cos(th / 2), v[0] * s, v[1] * s, v[2] * s])


def _log(q):
    """The rotation vector (rad) of a unit quaternion: the inverse of _exp."""
    w, v = q[0], np.asarray(q[1:])
    if w < 0:
        w, v = -w, -v
    s = np.linalg.norm(v)
    if s < 1e-12:
        return 2.0 * v
    return v * (2.0 * np.arctan2(s, w) / s)


def _conj(q):
    return np.array([q[0], -q[1], -q[2], -q[3]])


def _rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


# d h / d dtheta for h = R' e_z and R <- exp(dtheta) R is R' [e_z]x
_SKEW_EZ = _skew([0.0, 0.0, 1.0])


def still_segment(gyro_rad_s, acc_m_s2, dt_s, gyro_th_rad_s=0.035, acc_th_m_s2=0.5, margin_s=1.0):
    """The number of leading samples in which the sensor is still (|w| < gyro_th and
    | |a| - median |a| | < acc_th, VQF's rest thresholds), less margin_s; 0 if none."""
    g = np.asarray(gyro_rad_s, float)
    a = np.asarray(acc_m_s2, float)
    na = np.linalg.norm(a, axis=1)
    ok = (np.linalg.norm(g, axis=1) < gyro_th_rad_s) & (np.abs(na - np.median(na)) < acc_th_m_s2)
    bad = np.flatnonzero(~ok)
    n = len(ok) if len(bad) == 0 else int(bad[0])
    return max(0, n - int(round(margin_s / dt_s)))


def noise_from_rest(gyro_rad_s, acc_m_s2, dt_s):
    """Sensor noise measured on a still segment (N >= 100 samples): a dict of OrientationEKF
    keyword arguments (gyro_noise_rad_s_rthz, acc_noise_m_s2, g_m_s2). The bias is not
    returned: the filter estimates it (from the same rest, through its rest update)."""
    g = np.asarray(gyro_rad_s, float)
    a = np.asarray(acc_m_s2, float)
    if g.ndim != 2 or g.shape[1] != 3 or a.shape != g.shape or len(g) < 100:
        raise FormatError("noise_from_rest: need >= 100 still samples of (N, 3) gyro and accelerometer, got %s and %s"
                          % (g.shape, a.shape))
    # white noise: per-sample std s at rate 1/dt is a density of s * sqrt(dt)
    gyro_density = float(np.sqrt(np.mean(np.var(g, axis=0)) * dt_s))
    acc_std = float(np.sqrt(np.mean(np.var(a, axis=0))))
    return {"gyro_noise_rad_s_rthz": gyro_density, "acc_noise_m_s2": acc_std,
            "g_m_s2": float(np.mean(np.linalg.norm(a, axis=1)))}


class OrientationEKF:
    """Gyro + accelerometer orientation EKF (see the module docstring); SI units.

    step() = predict() (gyro) + update() (accelerometer, and the rest update); the smoother
    reads the attributes each part leaves: A (last transition Jacobian), P, q, vector().
    Attributes: q, b (rad/s), r (lever arm, m), rest (the rest update ran), nx (6 or 9)."""

    def __init__(self, dt_s, gyro_noise_rad_s_rthz=1e-4, gyro_scale_frac=0.005, scale_tau_s=0.1, bias_walk_rad_s2=5e-6,
                 bias0_rad_s=0.01, acc_noise_m_s2=0.05, lin_acc_tau_s=0.5, rest_gyro_rad_s=0.035,
                 rest_acc_m_s2=0.5, rest_min_s=1.5, g_m_s2=9.81, rest_update=True, lever0_m=0.1):
        if not dt_s > 0:
            raise FormatError("OrientationEKF: dt_s must be > 0, got %r" % (dt_s,))
        self.dt_s = float(dt_s)
        self.q = None
        self.b = np.zeros(3)
        # lever0_m > 0: also estimate the lever arm r (m, sensor frame, constant) from a
        # centre of rotation to the sensor, with that prior std
        self.r = np.zeros(3)
        self.nx = 9 if lever0_m > 0 else 6       # error-state size: dtheta, db (, dr)
        self.P = np.diag([0.1] * 3 + [bias0_rad_s ** 2] * 3 + [lever0_m ** 2] * (self.nx - 6))
        self.A = np.eye(self.nx)
        self._eye = np.eye(self.nx)
        self._w_prev = None
        self.gyro_noise = float(gyro_noise_rad_s_rthz)
        self.gyro_scale = float(gyro_scale_frac)
        self.scale_tau_s = float(scale_tau_s)
        self.bias_walk = float(bias_walk_rad_s2)
        self.acc_noise = float(acc_noise_m_s2)
        self.lin_tau_s = float(lin_acc_tau_s)
        self.rest_gyro = float(rest_gyro_rad_s)
        self.rest_acc = float(rest_acc_m_s2)
        self.rest_min_s = float(rest_min_s)
        self.rest_update = bool(rest_update)
        self.g = float(g_m_s2)
        self.lin_var = 0.0           # running mean of |a_c - g R' e_z|^2 / 3, (m/s^2)^2
        self.still_s = 0.0           # how long the rest conditions have held
        self.rest = False
        self._w = np.zeros(3)        # last gyro sample (the rest update's measurement)
        self._dt = self.dt_s

    def _init_from(self, a):
        z = a / np.linalg.norm(a)
        # the rotation taking the sensor's measured up (z) onto Earth's up
        v = np.cross(z, [0.0, 0.0, 1.0])
        s, c = np.linalg.norm(v), z[2]
        self.q = np.array([1.0, 0, 0, 0]) if s < 1e-9 else _exp(v / s * np.arctan2(s, c))

    def predict(self, gyro_rad_s, dt_s=None):
        """Propagate q, b, P over dt_s with one gyro sample (skipped if it is not finite)."""
        dt = self.dt_s if dt_s is None else float(dt_s)
        self._dt = dt
        w = np.asarray(gyro_rad_s, float)
        self.A = self._eye.copy()
        if not _finite3(w):
            self._w = np.full(3, np.nan)
            return
        self._w = w
        R = _rot(self.q)
        u = w - self.b
        # q <- q * exp((w - b) dt)
        q = _quat_mul(self.q, _exp(u * dt))
        self.q = q / math.sqrt(q @ q)
        # A = [[I, -R dt, 0], [0, I, 0], [0, 0, I]]
        self.A[:3, 3:6] = -R * dt
        # Q = diag(n_g^2 dt + 2 tau_c (k_s |w - b|)^2 dt / 3, n_b^2 dt, 0): white noise, and the
        # scale/misalignment error as a rate error of std k_s |w| correlated over tau_c (white
        # equivalent 2 sigma^2 tau_c), spread over the three axes; r is constant
        qth = (self.gyro_noise ** 2 + 2.0 * self.scale_tau_s * (self.gyro_scale * _norm3(u)) ** 2 / 3.0) * dt
        qb = self.bias_walk ** 2 * dt
        # P = A P A' + Q
        P = self.A @ self.P @ self.A.T
        P[0, 0] += qth
        P[1, 1] += qth
        P[2, 2] += qth
        P[3, 3] += qb
        P[4, 4] += qb
        P[5, 5] += qb
        self.P = P

    def _correct(self, H, var, innov):
        # S = H P H' + var I ; K = P H' S^-1
        HP = H @ self.P
        S = HP @ H.T + var * _I3
        K = np.linalg.solve(S, HP).T
        dx = K @ innov
        # R <- exp(dtheta) R ; b <- b + db
        q = _quat_mul(_exp(dx[:3]), self.q)
        self.q = q / math.sqrt(q @ q)
        self.b = self.b + dx[3:6]
        if self.nx == 9:
            # r <- r + dr
            self.r = self.r + dx[6:]
        # P = (I - K H) P (I - K H)' + K var K'
        IKH = self._eye - K @ H
        self.P = IKH @ self.P @ IKH.T + var * K @ K.T

    def update(self, acc_m_s2):
        """Accelerometer update (skipped if not finite or ~0), then the rest update."""
        a = np.asarray(acc_m_s2, float)
        dt = self._dt
        M = None
        w_ok = _finite3(self._w)
        if self.nx == 9 and w_ok:
            u = self._w - self.b
            ud = np.zeros(3) if self._w_prev is None else (self._w - self._w_prev) / dt
            # the acceleration of a point at r from a fixed centre: M r, M = [u]x [u]x + [du/dt]x
            # (du/dt a backward difference; M's dependence on b is neglected)
            Su = _skew(u)
            M = Su @ Su + _skew(ud)
            # a_c = a - M r
            a = a - M @ self.r
        self._w_prev = self._w if w_ok else None
        na = _norm3(a) if _finite3(a) else 0.0
        if na <= 1e-3:
            self.still_s = 0.0
            self.rest = False
            return
        R = _rot(self.q)
        # s_lin^2 <- s_lin^2 + (dt / tau) (|a_c - g R' e_z|^2 / 3 - s_lin^2): the non-gravity
        # acceleration per axis, all three components (| |a| - g | alone sees only the one
        # along gravity); the residual also holds the tilt error, small beside it
        res = a - self.g * R[2]
        e2_m2_s4 = float(res @ res) / 3.0
        self.lin_var += min(1.0, dt / self.lin_tau_s) * (e2_m2_s4 - self.lin_var)
        # z = a_c / |a_c| ; h = R' e_z (Earth's up in the sensor frame: row 2 of R)
        # H = [R' [e_z]x, 0, (I - z z') M / |a_c|]
        H = np.zeros((3, self.nx))
        H[:, :3] = R.T @ _SKEW_EZ
        if M is not None:
            z = a / na
            H[:, 6:] = (_I3 - np.outer(z, z)) @ M / na
        # R_acc = (n_a^2 + s_lin^2) / g^2 per axis (rad^2)
        var_rad2 = (self.acc_noise ** 2 + self.lin_var) / self.g ** 2
        self._correct(H, var_rad2, a / na - R[2])
        if not self.rest_update:
            return
        w = self._w
        if w_ok and _norm3(w - self.b) < self.rest_gyro and abs(na - self.g) < self.rest_acc:
            self.still_s += dt
        else:
            self.still_s = 0.0
        self.rest = self.still_s >= self.rest_min_s
        if self.rest:
            # z = w (at rest the gyro reads its bias) ; h = b ; H = [0, I, 0] ; R = n_g^2 / dt
            H = np.zeros((3, self.nx))
            H[:, 3:6] = _I3
            self._correct(H, self.gyro_noise ** 2 / dt, w - self.b)

    def step(self, gyro_rad_s, acc_m_s2, dt_s=None):
        """One predict (gyro) + update (accelerometer); returns q (w, x, y, z). The first
        usable call only initialises the inclination from the accelerometer (NaN before it)."""
        if self.q is None:
            a = np.asarray(acc_m_s2, float)
            if not (np.all(np.isfinite(a)) and np.linalg.norm(a) > 1e-3):
                return np.full(4, np.nan)            # not started: waits for a usable sample
            self._init_from(a)
            return self.q.copy()
        self.predict(gyro_rad_s, dt_s)
        self.update(acc_m_s2)
        return self.q.copy()

    def vector(self):
        """The additive part of the state: the gyro bias b (3,), then r (3,) if estimated."""
        return np.concatenate([self.b, self.r])[:self.nx - 3]
