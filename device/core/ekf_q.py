"""The torque-state EKF in fixed point: per joint [q, qd, tau], pure Python ints, MicroPython-safe.

    from device.core.ekf_q import EkfQ
    f = EkfQ(48, dt_q30=1 << 23)                 # 128 Hz, default model (M = 1 kg m^2, no bias)
    f.step([q_q20 or None for each joint])       # predict, then one scalar update per angle
    f.x_q20[3 * j]                               # joint j's angle, rad in Q20

Model, per joint j (the invention's dynamics with the mass matrix reduced to its diagonal):
    qdd = (tau - b) / M_jj,   b = b_ext + c * qd + g * sin(q)
M_jj and b_ext may be supplied every step by the host (from CRBA / RNEA of the whole body, so
the coupling of the limbs enters the mean through b_ext); c (damping) and g (gravity moment
amplitude) give a simple local model. Explicit Euler: q+ = q + dt qd, qd+ = qd + dt qdd,
tau+ = tau (random walk). Measurements: joint angle (H = [1 0 0]) and optionally joint velocity
(H = [0 1 0]), processed one scalar at a time; None drops out.

Design: one 3x3 covariance block per joint (block-diagonal P). It costs O(n) per step instead
of O(n^3), needs no matrix inverse, and keeps every block exactly symmetric (6 stored entries).
What it loses against the full coupled filter: the cross-covariance between joints (a
measurement of one joint never corrects another), and the off-diagonal M^-1 terms in the
Jacobian (a torque at the hip does not raise the uncertainty of the knee). With angle
measurements of every joint, as from a staff or IK, the loss is small; docs/fixed-point.md says
more. Float twin: device/estimate/ekf_joint_float.py (same model, same equations).

Q formats (fractional bits in the names): state q (rad), qd (rad/s), tau (N m) Q20 saturated
to a signed 32-bit slot (+-2048); dt, Jacobian entries and gains Q30; covariance P, process
noise and measurement variance Q40; M_jj Q32 (kg m^2); sin/cos Q30. One rounding rule (fxp):
each result is accumulated exactly and rounded once, half up. Covariance: only the upper
triangle is stored (p00 p01 p02 p11 p12 p22), Joseph-form updates, diagonal floored at 1 LSB.
"""

from device.core.fxp import round_shift, div_round, sin_q30, cos_q30

ONE_Q30 = 1 << 30
STATE_MAX_Q20 = (1 << 31) - 1
STATE_MIN_Q20 = -(1 << 31)
# stored covariance entries are kept within a signed 64-bit slot
P_MAX_Q40 = (1 << 63) - 1


def _list(v, n, name):
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise ValueError("EkfQ: %s has %d values for %d joints" % (name, len(v), n))
        return [int(a) for a in v]
    return [int(v)] * n


def _sat_x(v):
    if v > STATE_MAX_Q20:
        return STATE_MAX_Q20
    if v < STATE_MIN_Q20:
        return STATE_MIN_Q20
    return v


def _sat_p(v):
    if v > P_MAX_Q40:
        return P_MAX_Q40
    if v < -P_MAX_Q40:
        return -P_MAX_Q40
    return v


class EkfQ:
    """n per-joint torque-state EKFs stepped together (see the module docstring).

    Every argument is an int in the format its name gives, or a list of n of them:
      dt_q30        time step, s
      m_q32         M_jj, kg m^2 (default 1.0)
      c_q20         damping, N m s/rad;  g_q20  gravity moment amplitude, N m
      qn_q40        process noise per step [q, qd, tau] variances (3 ints or 3n ints)
      r_q40         angle measurement variance, rad^2; rd_q40 velocity measurement variance
      p0_q40        initial variances [q, qd, tau] (3 ints)
    State: x_q20 (3n: q, qd, tau per joint); covariance p_q40 (6n: p00 p01 p02 p11 p12 p22).
    """

    def __init__(self, n, dt_q30, m_q32=1 << 32, c_q20=0, g_q20=0, qn_q40=None, r_q40=None,
                 rd_q40=None, p0_q40=None):
        if n < 1:
            raise ValueError("EkfQ: need at least one joint")
        if dt_q30 <= 0:
            raise ValueError("EkfQ: dt_q30 must be > 0")
        self.n = n
        self.dt_q30 = int(dt_q30)
        self.m_q32 = _list(m_q32, n, "m_q32")
        for m in self.m_q32:
            if m <= 0:
                raise ValueError("EkfQ: M_jj must be > 0")
        self.c_q20 = _list(c_q20, n, "c_q20")
        self.g_q20 = _list(g_q20, n, "g_q20")
        # defaults: q/qd numerical noise 1e-10 / 1e-6, torque walk 1e-2 per step; r = (0.5 deg)^2
        if qn_q40 is None:
            qn_q40 = [110, 1099512, 10995116278]
        if len(qn_q40) == 3:
            qn_q40 = list(qn_q40) * n
        if len(qn_q40) != 3 * n:
            raise ValueError("EkfQ: qn_q40 needs 3 or 3n values")
        self.qn_q40 = [int(v) for v in qn_q40]
        self.r_q40 = _list(83732599 if r_q40 is None else r_q40, n, "r_q40")
        self.rd_q40 = _list(1099511628 if rd_q40 is None else rd_q40, n, "rd_q40")
        if p0_q40 is None:
            p0_q40 = [1 << 40, 1 << 40, 1 << 40]
        self.p0_q40 = [int(v) for v in p0_q40]
        self.x_q20 = [0] * (3 * n)
        self.p_q40 = [0] * (6 * n)
        self.reset()
        self.steps = 0

    def reset(self, q_q20=None):
        """Zero velocity and torque, angles q_q20 (list or None = 0), covariance back to p0."""
        for j in range(self.n):
            self.x_q20[3 * j] = 0 if q_q20 is None or q_q20[j] is None else int(q_q20[j])
            self.x_q20[3 * j + 1] = 0
            self.x_q20[3 * j + 2] = 0
            k = 6 * j
            self.p_q40[k] = self.p0_q40[0]
            self.p_q40[k + 1] = 0
            self.p_q40[k + 2] = 0
            self.p_q40[k + 3] = self.p0_q40[1]
            self.p_q40[k + 4] = 0
            self.p_q40[k + 5] = self.p0_q40[2]

    def predict(self, b_q20=None, m_q32=None):
        """Propagate every joint by dt. b_q20 / m_q32: this step's bias and M_jj (lists), or None."""
        dt = self.dt_q30
        x = self.x_q20
        p = self.p_q40
        qn = self.qn_q40
        for j in range(self.n):
            i = 3 * j
            k = 6 * j
            q = x[i]
            qd = x[i + 1]
            tau = x[i + 2]
            m = self.m_q32[j] if m_q32 is None else m_q32[j]
            c = self.c_q20[j]
            g = self.g_q20[j]
            # b = b_ext + c qd + g sin(q)          (Q20; c qd is Q40 -> Q20, g sin is Q50 -> Q20)
            bias = 0 if b_q20 is None else b_q20[j]
            if c:
                bias += round_shift(c * qd, 20)
            cosq_q30 = 0
            if g:
                q_q30 = q << 10
                bias += round_shift(g * sin_q30(q_q30), 30)
                cosq_q30 = cos_q30(q_q30)
            # qdd = (tau - b) / M                  (Q20 * 2^32 / Q32 -> Q20)
            qdd = div_round((tau - bias) << 32, m)
            # Jacobian A = [[1, dt, 0], [a, bb, cc], [0, 0, 1]] (Q30):
            # a = -dt g cos(q) / M  (Q30*Q20*Q30 = Q80; / (Q32 << 18) -> Q30)
            a = div_round(-dt * g * cosq_q30, m << 18) if g else 0
            # bb = 1 - dt c / M      (Q30*Q20 << 12 = Q62; / Q32 -> Q30)
            bb = ONE_Q30 - div_round((dt * c) << 12, m) if c else ONE_Q30
            # cc = dt / M            (Q30 << 32 / Q32 -> Q30)
            cc = div_round(dt << 32, m)
            # mean: q+ = q + dt qd ; qd+ = qd + dt qdd ; tau+ = tau   (Q30*Q20 -> Q20)
            x[i] = _sat_x(q + round_shift(dt * qd, 30))
            x[i + 1] = _sat_x(qd + round_shift(dt * qdd, 30))
            # covariance P+ = A P A^T + Qn, exact in Q100 (A Q30, P Q40, A Q30), one rounding
            p00 = p[k]
            p01 = p[k + 1]
            p02 = p[k + 2]
            p11 = p[k + 3]
            p12 = p[k + 4]
            p22 = p[k + 5]
            # rows of A P (Q70): r0 = P0 + dt P1 ; r1 = a P0 + bb P1 + cc P2 ; r2 = P2
            r00 = (p00 << 30) + dt * p01
            r01 = (p01 << 30) + dt * p11
            r02 = (p02 << 30) + dt * p12
            r10 = a * p00 + bb * p01 + cc * p02
            r11 = a * p01 + bb * p11 + cc * p12
            r12 = a * p02 + bb * p12 + cc * p22
            # (A P) A^T, upper triangle (Q100), then Q100 -> Q40 plus the process noise
            p[k] = _sat_p(round_shift((r00 << 30) + dt * r01, 60) + qn[i])
            p[k + 1] = _sat_p(round_shift(a * r00 + bb * r01 + cc * r02, 60))
            p[k + 2] = _sat_p(round_shift(r02 << 30, 60))
            p[k + 3] = _sat_p(round_shift(a * r10 + bb * r11 + cc * r12, 60) + qn[i + 1])
            p[k + 4] = _sat_p(round_shift(r12 << 30, 60))
            p[k + 5] = _sat_p(p22 + qn[i + 2])
        self.steps += 1

    def update_one(self, j, s, z_q20, r_q40):
        """One scalar measurement z of state s (0 angle, 1 velocity) of joint j, Joseph form."""
        x = self.x_q20
        p = self.p_q40
        i = 3 * j
        k = 6 * j
        p00 = p[k]
        p01 = p[k + 1]
        p02 = p[k + 2]
        p11 = p[k + 3]
        p12 = p[k + 4]
        p22 = p[k + 5]
        # column s of P: P H^T (Q40)
        if s == 0:
            h0 = p00
            h1 = p01
            h2 = p02
        else:
            h0 = p01
            h1 = p11
            h2 = p12
        # S = H P H^T + R  (Q40)
        sv = (h0 if s == 0 else h1) + r_q40
        if sv <= 0:
            return
        # K = P H^T / S  (Q40 << 30 / Q40 -> Q30)
        k0 = div_round(h0 << 30, sv)
        k1 = div_round(h1 << 30, sv)
        k2 = div_round(h2 << 30, sv)
        # innovation y = z - H x  (Q20)
        y = z_q20 - x[i + s]
        # x+ = x + K y  (Q30 * Q20 -> Q20)
        x[i] = _sat_x(x[i] + round_shift(k0 * y, 30))
        x[i + 1] = _sat_x(x[i + 1] + round_shift(k1 * y, 30))
        x[i + 2] = _sat_x(x[i + 2] + round_shift(k2 * y, 30))
        # Joseph form with H = e_s, expanded per entry (all terms Q100, one rounding):
        # P+_ab = P_ab - K_a P_sb - K_b P_sa + K_a K_b S
        n00 = (p00 << 60) - ((k0 * h0) << 31) + k0 * k0 * sv
        n01 = (p01 << 60) - ((k0 * h1 + k1 * h0) << 30) + k0 * k1 * sv
        n02 = (p02 << 60) - ((k0 * h2 + k2 * h0) << 30) + k0 * k2 * sv
        n11 = (p11 << 60) - ((k1 * h1) << 31) + k1 * k1 * sv
        n12 = (p12 << 60) - ((k1 * h2 + k2 * h1) << 30) + k1 * k2 * sv
        n22 = (p22 << 60) - ((k2 * h2) << 31) + k2 * k2 * sv
        # back to Q40; the diagonal is floored at 1 LSB so P stays positive
        v = round_shift(n00, 60)
        p[k] = v if v > 0 else 1
        p[k + 1] = _sat_p(round_shift(n01, 60))
        p[k + 2] = _sat_p(round_shift(n02, 60))
        v = round_shift(n11, 60)
        p[k + 3] = v if v > 0 else 1
        p[k + 4] = _sat_p(round_shift(n12, 60))
        v = round_shift(n22, 60)
        p[k + 5] = v if v > 0 else 1

    def update(self, z_q20, zd_q20=None):
        """Angles z_q20 (n values, None = missing), then velocities zd_q20 if given."""
        for j in range(self.n):
            z = z_q20[j]
            if z is not None:
                self.update_one(j, 0, z, self.r_q40[j])
        if zd_q20 is not None:
            for j in range(self.n):
                z = zd_q20[j]
                if z is not None:
                    self.update_one(j, 1, z, self.rd_q40[j])

    def step(self, z_q20, zd_q20=None, b_q20=None, m_q32=None):
        """predict() then update(); returns the state list x_q20 (not a copy)."""
        self.predict(b_q20, m_q32)
        self.update(z_q20, zd_q20)
        return self.x_q20

    def angles_q20(self):
        """The n joint angles (rad, Q20) as a new list."""
        return self.x_q20[0::3]

    def checksum(self):
        """A 30-bit digest of the state and covariance: equal on CPython and MicroPython."""
        h = 0
        for v in self.x_q20:
            h = (h * 1000003 + v) % 1073741789
        for v in self.p_q40:
            h = (h * 1000003 + v) % 1073741789
        return h
