"""The torso's tilt on the host, from the OP3 board's gyro and accelerometer registers (not its
Madgwick roll and pitch): a complementary filter with a slow accelerometer pull and a lead.

    from host.retarget.attitude import TiltEstimator
    est = TiltEstimator()
    up = est.update(t_s, up_board, rate_rad_s, acc_g)   # unit up vector (torso frame) or None
    est.stats                                          # {"updates", "resets", "bad", "gyro_only"}

What the board's own roll and pitch lack (device/servo/emulate/opencr_imu.py, measured on the
live benchmark's recordings, torso tilt against the twin's exact one, 4 staffs): its Madgwick
(beta 0.1) pulls the attitude towards the accelerometer's direction at up to 0.1 rad/s, and the
accelerometer of a body that rocks on its ankles points 6.6-7.2 deg RMS off gravity, so the
board's tilt is 1.10-1.53 deg RMS off (0.98-1.20 shifted back by its best lag, 10 ms). Here the
gyro's rate is integrated at every read and the accelerometer only corrects the drift, over
TAU_S (2 s: 0.40-0.65 deg RMS on the same recordings; 1 s 0.51-0.72; 5 s 0.54-0.77, the gyro's
dead band and the 3-sample mean's truncation drifting), and the result is led by LEAD_S along
the rate (the gyro's chip filter, mean and hold lag it ~10 ms: 0.50-0.91 deg without the lead).
On a real board the gyro's bias after the firmware's power-up calibration drifts too: at
0.01 rad/s, TAU_S = 2 s leaves about 1.1 deg (bias x tau) of tilt error:

    e    <- e + dt (e x w)                 up in the body frame: de/dt = -w x e
    e    <- e + (dt / TAU_S) (a / |a| - e)  the accelerometer's slow pull
    up    = (e + LEAD_S (e x w)) / |.|

Bad input: a read that is missing, not finite in its rate or beyond MAX_RATE_RAD_S is None (no estimate that tick; the
state is kept and the next read integrates over the gap); a bad accelerometer (non-finite, zero)
integrates the gyro alone; the first read, a gap over MAX_GAP_S or a clock that steps back start
again from the board's own up (or the accelerometer's if that is bad).
"""

import math

TAU_S = 2.0          # the accelerometer's pull, time constant
LEAD_S = 0.010       # the tilt led along the rate by this long (the gyro path's lag)
MAX_GAP_S = 0.1      # a longer gap between reads starts again from the board's up
START_G_TOL = 0.05   # a start takes the accelerometer's direction when |a| is this near 1 g
# a rate beyond any gyro's full scale (the OpenCR's MPU9250 at +-2000 deg/s reads at most 1998)
# is not a reading: one tick of 1e6 rad/s turned the estimate 90 deg (its lead upside down)
MAX_RATE_RAD_S = math.radians(2000.0)


def _unit(v):
    """v / |v| as a tuple, or None (not three finite numbers, or zero)."""
    try:
        x, y, z = (float(c) for c in v)
    except (TypeError, ValueError, OverflowError):
        return None
    n = math.sqrt(x * x + y * y + z * z)
    m = max(abs(x), abs(y), abs(z))
    if n == math.inf and math.isfinite(m):
        # |v| = m |v / m| (m the largest entry): a finite v of any scale is a direction, as the
        # ankle stabiliser takes g (1e200 g overflowed |v|^2 and read as a bad sample)
        x, y, z = x / m, y / m, z / m
        n = math.sqrt(x * x + y * y + z * z)
    if not (n > 1e-9 and math.isfinite(n)):
        return None
    return (x / n, y / n, z / n)


def _near_1g(v):
    """|v| within START_G_TOL of 1 g (v already known to be three finite numbers)."""
    n = math.sqrt(sum(float(c) * float(c) for c in v))
    return abs(n - 1.0) <= START_G_TOL


def _finite3(v):
    try:
        x, y, z = (float(c) for c in v)
    except (TypeError, ValueError, OverflowError):
        return None
    return (x, y, z) if all(math.isfinite(c) for c in (x, y, z)) else None


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


class TiltEstimator:
    def __init__(self, tau_s=TAU_S, lead_s=LEAD_S, max_gap_s=MAX_GAP_S):
        self.tau_s, self.lead_s, self.max_gap_s = float(tau_s), float(lead_s), float(max_gap_s)
        self.e = None
        self.t = None
        self.stats = {"updates": 0, "resets": 0, "bad": 0, "gyro_only": 0}

    def update(self, t_s, up_board, rate_rad_s, acc_g):
        """The torso's up vector (unit tuple, torso frame) after this read, or None."""
        w = _finite3(rate_rad_s)
        try:
            t = float(t_s)
        except (TypeError, ValueError, OverflowError):
            t = float("nan")
        if w is not None and max(abs(c) for c in w) > MAX_RATE_RAD_S:
            w = None
        if w is None or not math.isfinite(t):
            self.stats["bad"] += 1
            return None
        a = _unit(acc_g)
        if self.e is None or self.t is None or t < self.t or t - self.t > self.max_gap_s:
            # a start: from the accelerometer when it reads about 1 g (a body near still), not
            # the board's Madgwick: a board just out of its power-up calibration answers level
            # (q = 1, 0, 0, 0) and turns to the tilt at 2 beta = 11.5 deg/s at most
            # (an accelerometer that reads nothing, 0 0 0 or not finite, is no start: no
            # estimate rather than the board's "level")
            e = None if a is None else a if _near_1g(acc_g) else (_unit(up_board) or a)
            if e is None:
                self.stats["bad"] += 1
                return None
            self.e, self.t = e, t
            self.stats["resets"] += 1
        dt = t - self.t
        self.t = t
        e = self.e
        # e <- e + dt (e x w)
        c = _cross(e, w)
        e = tuple(e[k] + dt * c[k] for k in range(3))
        if a is None:
            self.stats["gyro_only"] += 1
        else:
            # e <- e + (dt / tau) (a - e)
            k = 1.0 if self.tau_s <= 0 else min(1.0, dt / self.tau_s)   # (tau 0: the acc alone)
            e = tuple(e[k_] + k * (a[k_] - e[k_]) for k_ in range(3))
        self.e = _unit(e) or self.e
        self.stats["updates"] += 1
        # up = (e + lead (e x w)) / |.|
        c = _cross(self.e, w)
        return _unit(tuple(self.e[k] + self.lead_s * c[k] for k in range(3))) or self.e
