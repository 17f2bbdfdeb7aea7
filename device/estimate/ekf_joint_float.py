"""The float twin of device/core/ekf_q.py: the same per-joint torque-state EKF in floats.

    from device.estimate.ekf_joint_float import EkfJointFloat
    f = EkfJointFloat.twin_of(ekf_q)          # same parameters, decoded from the ints
    f.step([angle_rad or None, ...]); f.x     # [q, qd, tau] * n, floats

Same model and equations, line for line (see ekf_q's docstring): qdd = (tau - b) / M_jj with
b = b_ext + c qd + g sin q, explicit Euler, block-diagonal 3x3 covariance, Joseph-form scalar
updates with the same expansion, the same diagonal floor. It is the reference the fixed-point
filter is tested against (tests/test_fxp_ekf.py): differences are then pure arithmetic round-off.
Plain Python floats (a 3x3 block gains nothing from numpy: call overhead dominates).
"""

import math


def _list(v, n):
    if isinstance(v, (list, tuple)):
        return [float(a) for a in v]
    return [float(v)] * n


class EkfJointFloat:
    """n per-joint [q, qd, tau] EKFs in floats; units rad, rad/s, N m, kg m^2, seconds."""

    def __init__(self, n, dt_s, m_kgm2=1.0, c=0.0, g_nm=0.0, qn=(1e-10, 1e-6, 1e-2),
                 r_rad2=(0.5 * math.pi / 180) ** 2, rd=1e-3, p0=(1.0, 1.0, 1.0)):
        self.n = n
        self.dt_s = float(dt_s)
        self.m = _list(m_kgm2, n)
        self.c = _list(c, n)
        self.g = _list(g_nm, n)
        qn = list(qn)
        self.qn = [float(v) for v in (qn * n if len(qn) == 3 else qn)]
        self.r = _list(r_rad2, n)
        self.rd = _list(rd, n)
        self.p0 = [float(v) for v in p0]
        self.x = [0.0] * (3 * n)
        self.p = [0.0] * (6 * n)
        self.reset()

    @classmethod
    def twin_of(cls, f):
        """A float filter with exactly the parameters (decoded) of a device.core.ekf_q.EkfQ."""
        t = cls(f.n, f.dt_q30 / 2.0 ** 30, [m / 2.0 ** 32 for m in f.m_q32],
                [c / 2.0 ** 20 for c in f.c_q20], [g / 2.0 ** 20 for g in f.g_q20],
                [v / 2.0 ** 40 for v in f.qn_q40], [v / 2.0 ** 40 for v in f.r_q40],
                [v / 2.0 ** 40 for v in f.rd_q40], [v / 2.0 ** 40 for v in f.p0_q40])
        t.x = [v / 2.0 ** 20 for v in f.x_q20]
        t.p = [v / 2.0 ** 40 for v in f.p_q40]
        return t

    def reset(self, q=None):
        for j in range(self.n):
            self.x[3 * j:3 * j + 3] = [0.0 if q is None or q[j] is None else float(q[j]), 0.0, 0.0]
            self.p[6 * j:6 * j + 6] = [self.p0[0], 0.0, 0.0, self.p0[1], 0.0, self.p0[2]]

    def predict(self, b=None, m=None):
        dt = self.dt_s
        x = self.x
        p = self.p
        qn = self.qn
        for j in range(self.n):
            i = 3 * j
            k = 6 * j
            q, qd, tau = x[i], x[i + 1], x[i + 2]
            mj = self.m[j] if m is None else m[j]
            c = self.c[j]
            g = self.g[j]
            # b = b_ext + c qd + g sin(q)
            bias = (0.0 if b is None else b[j]) + c * qd + g * math.sin(q)
            # qdd = (tau - b) / M
            qdd = (tau - bias) / mj
            # A = [[1, dt, 0], [a, bb, cc], [0, 0, 1]]
            a = -dt * g * math.cos(q) / mj
            bb = 1.0 - dt * c / mj
            cc = dt / mj
            # q+ = q + dt qd ; qd+ = qd + dt qdd ; tau+ = tau
            x[i] = q + dt * qd
            x[i + 1] = qd + dt * qdd
            p00, p01, p02, p11, p12, p22 = p[k:k + 6]
            # rows of A P
            r00 = p00 + dt * p01
            r01 = p01 + dt * p11
            r02 = p02 + dt * p12
            r10 = a * p00 + bb * p01 + cc * p02
            r11 = a * p01 + bb * p11 + cc * p12
            r12 = a * p02 + bb * p12 + cc * p22
            # P+ = (A P) A^T + Qn
            p[k] = r00 + dt * r01 + qn[i]
            p[k + 1] = a * r00 + bb * r01 + cc * r02
            p[k + 2] = r02
            p[k + 3] = a * r10 + bb * r11 + cc * r12 + qn[i + 1]
            p[k + 4] = r12
            p[k + 5] = p22 + qn[i + 2]

    def update_one(self, j, s, z, r):
        x = self.x
        p = self.p
        i = 3 * j
        k = 6 * j
        p00, p01, p02, p11, p12, p22 = p[k:k + 6]
        h0, h1, h2 = (p00, p01, p02) if s == 0 else (p01, p11, p12)
        # S = H P H^T + R
        sv = (h0 if s == 0 else h1) + r
        if sv <= 0:
            return
        # K = P H^T / S
        k0, k1, k2 = h0 / sv, h1 / sv, h2 / sv
        # x+ = x + K (z - H x)
        y = z - x[i + s]
        x[i] += k0 * y
        x[i + 1] += k1 * y
        x[i + 2] += k2 * y
        # Joseph form, expanded: P+_ab = P_ab - K_a P_sb - K_b P_sa + K_a K_b S
        p[k] = max(p00 - 2 * k0 * h0 + k0 * k0 * sv, 2.0 ** -40)
        p[k + 1] = p01 - (k0 * h1 + k1 * h0) + k0 * k1 * sv
        p[k + 2] = p02 - (k0 * h2 + k2 * h0) + k0 * k2 * sv
        p[k + 3] = max(p11 - 2 * k1 * h1 + k1 * k1 * sv, 2.0 ** -40)
        p[k + 4] = p12 - (k1 * h2 + k2 * h1) + k1 * k2 * sv
        p[k + 5] = max(p22 - 2 * k2 * h2 + k2 * k2 * sv, 2.0 ** -40)

    def update(self, z, zd=None):
        for j in range(self.n):
            if z[j] is not None:
                self.update_one(j, 0, z[j], self.r[j])
        if zd is not None:
            for j in range(self.n):
                if zd[j] is not None:
                    self.update_one(j, 1, zd[j], self.rd[j])

    def step(self, z, zd=None, b=None, m=None):
        self.predict(b, m)
        self.update(z, zd)
        return self.x
