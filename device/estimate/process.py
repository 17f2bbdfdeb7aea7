"""Process models for the joint-space EKF: torque-state dynamics, constant velocity / acceleration.

    from device.estimate.process import TorqueProcess, ConstantVelocity, ConstantAcceleration
    proc = TorqueProcess(model, dt_s=1/60, integrator="rk4")     # state [q, qd, tau], 3n
    lin = proc.linearise(x)              # kinematics, qdd(x) and dqdd/dx at x (for H and A)
    x_new, A, Q = proc.predict(x, lin)   # mean by RK4 / Euler, A = df/dx, Q

All states are SI: q rad or m, qd rad/s or m/s, tau N m or N, qdd rad/s^2 or m/s^2; n dofs.

Torque state (the invention): qdd = M(q)^-1 (tau - b(q, qd) - d qd), tau a random walk
(M includes a small armature and d is a small joint damping, see TorqueProcess).
Continuous Jacobian  Fc = [[0, I, 0], [Dq, Dqd, M^-1], [0, 0, 0]],
  Dq = dqdd/dq, Dqd = dqdd/dqd. jacobian="analytic" (default, fast) uses
  Dq  ~= -M^-1 dg/dq   (exact gravity stiffness, closed form below; drops dM/dq qdd),
  Dqd ~= -M^-1 diag(d) (joint damping d; drops the Coriolis / centrifugal derivative);
both dropped terms vanish at rest (qd = 0, tau = g), where the analytic A equals the finite-
difference one (tests/test_ekf_jacobians.py). jacobian="fd" differentiates qdd numerically
(central differences, 4n dynamics evaluations: a slow reference).
Discrete A = I + dt Fc + dt^2/2 Fc^2 (RK4); "euler" is semi-implicit (qd first, then q with
the new qd) and its A is exact for that step given Fc.
"""

import numpy as np

from device.body import dynamics_numba
from device.body.dynamics import _cross
from device.estimate.covariance import propagate_rk4, propagate_rows


class Linearisation:
    """Quantities at one state: kin, qd, qdd (n,), dqdd_dx (n, nx), and the model's factors."""

    __slots__ = ("kin", "qd", "qdd", "dqdd_dx", "Minv", "Dq", "Dqd", "M", "x", "tau_only")

    def __init__(self, kin, qd, qdd, dqdd_dx, Minv=None, Dq=None, Dqd=None, M=None, x=None, tau_only=False):
        self.kin, self.qd, self.qdd, self.dqdd_dx = kin, qd, qdd, dqdd_dx
        self.Minv, self.Dq, self.Dqd, self.M, self.x = Minv, Dq, Dqd, M, x
        # tau_only: dqdd_dx is [0, 0, M^-1] (only its last block is non-zero)
        self.tau_only = tau_only


def gravity_stiffness(model, kin):
    """dg/dq (n, n): derivative of the gravity part g(q) of b(q, qd).

    With G = -gravity, composite subtree mass m_j and first moment h_j about the world origin,
    r_j = h_j - m_j o_j:  g_j = a_j . (r_j x G) (rotation), m_j a_j . G (translation). Then
      i above or at j, i rotation:  dg_j/dq_i = a_i . (a_j x (r_j x G) + r_j x (G x a_j))
                                    (j translation: a_i . (a_j x m_j G))
      i strictly below j, j rotation: dg_j/dq_i = y_i . (G x a_j),
          y_i = a_i x r_i (rotation i) or m_i a_i (translation i); all other pairs 0.
    """
    mc, hc, _ = model.composite(kin)
    a = kin.axis
    G = -model.gravity
    GX = getattr(model, "_gstiff_cross", None)
    if GX is None:
        # rows G x e_i: for row vectors v, v @ GX = G x v and v @ (-GX) = v x G
        GX = model._gstiff_cross = (np.cross(G, np.eye(3)), -np.cross(G, np.eye(3)))
    r = hc - mc[:, None] * kin.origin_m
    u = a @ GX[0]                                               # G x a_j
    ar = _cross(a, r)                                           # a_j x r_j
    # rotation j: z_j = a_j x (r_j x G) + r_j x (G x a_j) = (a_j x r_j) x G  (Jacobi identity)
    # translation j: z_j = a_j x (m_j G) = -m_j (G x a_j)
    rot = model.is_rot[:, None]
    z = np.where(rot, ar @ GX[1], -mc[:, None] * u)
    T1 = a @ z.T                                                # T1[i, j] = a_i . z_j
    y = np.where(rot, ar, mc[:, None] * a)
    T2 = y @ u.T                                                # T2[i, j] = y_i . u_j
    masks = getattr(model, "_gstiff_masks", None)
    if masks is None:
        rot = model.is_rot
        above = model.anc & rot[:, None]                        # i rotation, i anc-or-self j
        below = model.anc.T & ~np.eye(model.n, dtype=bool) & rot[None, :]   # i strictly below j
        masks = model._gstiff_masks = (above.astype(float), below.astype(float))
    return (T1 * masks[0] + T2 * masks[1]).T


class TorqueProcess:
    """State [q, qd, tau]; qdd = M^-1 (tau - b); tau random walk (see the module docstring).

    The torque random walk is specified as the acceleration it may cause: its covariance per
    second is M diag(accel_sigma^2) M (M at the current state, plus armature), so that
    M^-1 Q_tau M^-1 = diag(accel_sigma^2). A plain diagonal torque noise would put torque into
    the near-null directions of M (a shoulder near gimbal lock, a light finger) where M^-1 is
    huge, and the prediction would explode. tau_sigma (n,) N m / sqrt(s), if given, replaces
    it by a fixed diagonal. q_sigma / qd_sigma: integration-noise densities (Euler: 10x).
    """

    nblocks = 3

    @property
    def identity_tail(self):
        """Trailing state rows where A is the identity (tau held: its n rows; decaying: 0)."""
        return self.n if self.tau_decay is None else 0

    def __init__(self, model, dt_s, integrator="rk4", accel_sigma_rad_s2=60.0, tau_sigma=None,
                 q_sigma=1e-4, qd_sigma=1e-2, jacobian="analytic", damping=0.05, h_tau_only=True,
                 light_inertia=0.05, trans_accel_sigma_m_s2=30.0, trans_qd_sigma_m_s=0.2,
                 tau_decay_s=None, max_step_s=1.0 / 60, stages=None):
        if integrator not in ("rk4", "euler"):
            raise ValueError("integrator must be 'rk4' or 'euler', not %r" % (integrator,))
        if jacobian not in ("analytic", "fd"):
            raise ValueError("jacobian must be 'analytic' or 'fd', not %r" % (jacobian,))
        if stages is None:
            # Euler's one stage sits at the posterior itself: affine there (about the prior) the
            # semi-implicit Euler filter diverged on the dance clip (52 deg; full: 4.4)
            stages = "linear" if integrator == "rk4" else "full"
        if stages not in ("linear", "full"):
            raise ValueError("stages must be 'linear' or 'full', not %r" % (stages,))
        self.model, self.dt_s, self.integrator, self.jacobian = model, float(dt_s), integrator, jacobian
        # stages="linear" (default for RK4): the integrator's stages evaluate qdd on the linearisation the EKF
        # already holds (qdd + Dq dq + Dqd dqd + M^-1 dtau about the last prior: three n x n
        # products a stage) instead of a full kinematics + CRBA + RNEA + Cholesky (~0.3 ms each,
        # 4 per RK4 step); "full" re-evaluates the dynamics in every stage. See predict().
        self.stages = stages
        self.h_tau_only = h_tau_only
        # max_step_s: one predict integrates dt_s in ceil(dt_s / max_step_s) equal sub-steps (A is
        # the product of the sub-steps' transitions). At 30 Hz a single 33 ms step diverged on the
        # capture unit's IMU-only human model (48 deg RMS; the 60 Hz benchmark never saw it):
        # with 0.01 kg m^2 armature and 0.5 N m s/rad damping the light dofs' time constant is
        # 20 ms, and A's second-order Taylor series is wrong for dt |lambda| > 1. None: one step.
        self.substeps = 1 if not max_step_s else max(1, int(np.ceil(float(dt_s) / float(max_step_s) - 1e-9)))
        self.h_s = float(dt_s) / self.substeps
        # tau_decay_s: None = the invention's random walk; a time constant T makes the torque
        # mean-revert to b(q, qd) (zero acceleration): tau' = b + exp(-dt/T) (tau - b), an
        # Ornstein-Uhlenbeck torque that keeps unobserved accelerations bounded (one camera)
        self.tau_decay = None if tau_decay_s is None else float(np.exp(-self.h_s / tau_decay_s))
        n = model.n
        self.n, self.nx = n, 3 * n
        # joint damping d (N m s / rad): qdd = M^-1 (tau - b - d qd). With the model's armature
        # it gives directions where M is (nearly) singular - a dof moving no mass, two axes in
        # gimbal lock - a defined, decaying motion instead of an unbounded one (time constant
        # armature / d, 20 ms by default; negligible against a 5 kg m^2 thigh).
        self.damping = np.broadcast_to(np.asarray(damping, float), (n,)).copy()
        # light distal dofs (toes, fingers, a wrist) are whipped by their parents' motion: the
        # torque that holds them changes as fast as the parent accelerates, so their random walk
        # is widened: sigma_j = accel_sigma * max(1, light_inertia / M_jj(home)) ** 0.5
        kin0 = model.kinematics(model.to_si(model.skeleton.home))
        mjj = np.diag(model.mass_matrix(kin0)) + model.armature
        widen = np.sqrt(np.maximum(1.0, light_inertia / np.maximum(mjj, 1e-9))) if light_inertia else 1.0
        sig = np.broadcast_to(np.asarray(accel_sigma_rad_s2, float), (n,)) * widen
        # translations (a floating root): a body's centre of mass does not accelerate like a wrist
        sig = np.where(model.is_rot, sig, trans_accel_sigma_m_s2)
        self.accel_var = sig ** 2
        self.tau_var = None if tau_sigma is None else np.broadcast_to(np.asarray(tau_sigma, float) ** 2, (n,))
        f = 1.0 if integrator == "rk4" else 10.0
        qd_s = np.where(model.is_rot, f * qd_sigma, f * trans_qd_sigma_m_s)
        self.q_var = np.concatenate([np.full(n, (f * q_sigma) ** 2), qd_s ** 2])

    def torque_cov(self, M, accel_var):
        """M diag(accel_var) M, with M + diag(armature): the torque covariance of accelerations."""
        Ma = M + self.model.armature_diag
        return (Ma * accel_var) @ Ma

    def initial_state(self, q, qd=None):
        """[q, qd, tau] with tau = b(q, qd): the torque that holds the body as it moves now."""
        qd = np.zeros(self.n) if qd is None else np.asarray(qd, float)
        kin = self.model.kinematics(q)
        return np.concatenate([q, qd, self.model.bias(kin, qd)])

    def _qdd(self, q, qd, tau, full=False):
        m = self.model
        kin = m.kinematics(q)
        M = m.mass_matrix(kin)
        fac = m.factor(M)
        b = m.bias(kin, qd) + self.damping * qd
        qdd = m.solve(fac, tau - b)
        return (qdd, kin, fac, M) if full else (qdd, b)

    def linearise(self, x):
        n = self.n
        q, qd, tau = x[:n], x[n:2 * n], x[2 * n:]
        Kg = None
        if self.jacobian == "analytic" and dynamics_numba.available():
            # the optional compiled path: kinematics, M, b and dg/dq in one pass (same values)
            m = self.model
            kin, M, b, Kg = dynamics_numba.linearise_terms(m, q, qd)
            fac = m.factor(M)
            # qdd = M^-1 (tau - b - d qd)
            qdd = m.solve(fac, tau - (b + self.damping * qd))
        else:
            qdd, kin, fac, M = self._qdd(q, qd, tau, full=True)
        # dqdd/dtau = M^-1
        eye = getattr(self, "_eye", None)
        if eye is None:
            eye = self._eye = np.eye(n)
            eye.flags.writeable = False
        Minv = self.model.solve(fac, eye)
        if self.jacobian == "fd":
            Dq, Dqd = self._fd(q, qd, tau)
        else:
            # Dq ~= -M^-1 dg/dq ; Dqd ~= -M^-1 diag(d) (damping; Coriolis dropped)
            Dq = -Minv @ (gravity_stiffness(self.model, kin) if Kg is None else Kg)
            Dqd = -Minv * self.damping[None, :]
        if self.h_tau_only:
            # for H: qdd depends on the state through tau only (see the class docstring)
            dqdd_dx = np.zeros((n, 3 * n))
            dqdd_dx[:, 2 * n:] = Minv
        else:
            dqdd_dx = np.hstack([Dq, np.zeros((n, n)) if Dqd is None else Dqd, Minv])
        return Linearisation(kin, qd, qdd, dqdd_dx, Minv, Dq, Dqd, M, x.copy(), tau_only=self.h_tau_only)

    def _fd(self, q, qd, tau, eps=1e-6):
        n = self.n
        Dq, Dqd = np.empty((n, n)), np.empty((n, n))
        for i in range(n):
            e = np.zeros(n)
            e[i] = eps
            Dq[:, i] = (self._qdd(q + e, qd, tau)[0] - self._qdd(q - e, qd, tau)[0]) / (2 * eps)
            Dqd[:, i] = (self._qdd(q, qd + e, tau)[0] - self._qdd(q, qd - e, tau)[0]) / (2 * eps)
        return Dq, Dqd

    def predict(self, x, lin):
        """(x_new, A, Q) for one step from x; A from lin, a Linearisation at (or near) x.

        The EKF passes the linearisation of the previous prior (already computed for H) rather
        than re-linearising at the posterior: one dynamics evaluation less per step. With
        sub-steps (max_step_s), the mean is integrated sub-step by sub-step and A is the
        sub-step transition (from lin) raised to the number of sub-steps.
        """
        n = self.n
        x = self._mean(x, lin)
        q_diag, Q_tau = self._noise(lin)
        Q = np.zeros((3 * n, 3 * n))
        Q.flat[:(2 * n) * (3 * n + 1):3 * n + 1] = q_diag
        Q[2 * n:, 2 * n:] = Q_tau
        A = self.transition(lin, self.h_s)
        if self.tau_decay is not None:
            # d tau' / d tau = a I ; d tau' / dq ~= (1 - a) dg/dq = -(1 - a) M Dq (gravity part)
            a = self.tau_decay
            A[2 * n:, 2 * n:] = a * np.eye(n)
            A[2 * n:, :n] = -(1.0 - a) * ((lin.M + np.diag(self.model.armature)) @ lin.Dq)
        if self.substeps > 1:
            A = np.linalg.matrix_power(A, self.substeps)
        return x, A, Q

    def predict_cov(self, x, P, lin):
        """(x_new, P_new = A P A' + Q): predict() and the covariance step by blocks
        (device/estimate/covariance.py), A and Q never formed; None where A's tau rows are not
        the identity (tau_decay_s).

        With k sub-steps A is the sub-step's transition to the k-th power, by blocks:
        A_h = [[F, G], [0, I]] (F: (2n, 2n) the q and qd rows' own columns, G (2n, n) their tau
        columns) gives A_h^k = [[F^k, G_k], [0, I]], G_k = F G_{k-1} + G (G_1 = G): the tau rows
        stay the identity, so P- = A P A' + Q goes by rows (propagate_rows), as predict() with
        the full A would (same numbers to round-off, a third of the products)."""
        if self.tau_decay is not None:
            return None
        x_new = self._mean(x, lin)
        q_diag, Q_tau = self._noise(lin)
        if self.substeps > 1:
            n = self.n
            B = self.transition_rows(lin, self.h_s)
            F, G = B[:, :2 * n], B[:, 2 * n:]
            Fk, Gk = F, G
            for _ in range(self.substeps - 1):
                # F^k = F F^(k-1) ; G_k = F G_(k-1) + G
                Gk = F @ Gk + G
                Fk = F @ Fk
            return x_new, propagate_rows(P, np.concatenate([Fk, Gk], axis=1), q_diag, Q_tau)
        if self.integrator == "rk4":
            n = self.n
            Dqd = np.zeros((n, n)) if lin.Dqd is None else lin.Dqd
            return x_new, propagate_rk4(P, lin.Dq, Dqd, lin.Minv, self.h_s, q_diag, Q_tau)
        return x_new, propagate_rows(P, self.transition_rows(lin, self.h_s), q_diag, Q_tau)

    def _mean(self, x, lin):
        """x_new: the mean integrated over dt_s (sub-step by sub-step)."""
        if self.stages == "linear" and self.tau_decay is None and lin.x is not None:
            # qdd(x) ~= qdd(x_l) + [Dq, Dqd, M^-1] (x - x_l), x_l the state of lin (the last
            # prior): the dynamics affine about x_l; the stages of RK4 (Euler) then cost three
            # n x n products each. What it drops, against stages="full": the second-order
            # change of qdd between x_l and the stage points (dM/dq qdd and the Coriolis terms,
            # the same terms A drops); tests/test_ekf_jacobians.py bounds the difference
            if self.integrator == "rk4":
                return self._rk4_affine(x, lin)
            qddf = self._affine_qdd(lin)
        else:
            qddf = None
        for _ in range(self.substeps):
            x = self._step(x, self.h_s, qddf)
        return x

    def _rk4_affine(self, x, lin):
        """RK4 sub-steps of the dynamics affine about lin (stages="linear"), in closed form.

        With y = [q, qd] and tau held the affine dynamics are y' = F y + e,
          F = [[0, I], [Dq, Dqd]],  F y + e = [qd, qdd_l + [Dq, Dqd] (y - y_l) + M^-1 (tau - tau_l)]
        and RK4's four stages (k1 = g(y), k2 = g(y + h/2 k1), ...) of a linear system sum to
        its Taylor polynomial of degree 4: with g = F y + e,
          y' = y + h (g + h/2 F g + h^2/6 F^2 g + h^3/24 F^3 g)
        (the same numbers as _step with _affine_qdd's stages, to round-off), here by Horner.
        """
        n, h = self.n, self.h_s
        xl = lin.x
        Dqd = np.zeros((n, n)) if lin.Dqd is None else lin.Dqd
        # C = [Dq, Dqd]: F v = [v_qd, C v]
        C = np.concatenate([lin.Dq, Dqd], axis=1)
        tau = x[2 * n:]
        # a_l = qdd_l - C y_l + M^-1 (tau - tau_l): qdd = a_l + C y (tau held over the step)
        a_l = lin.qdd - C @ xl[:2 * n] + lin.Minv @ (tau - xl[2 * n:])
        y = x[:2 * n]
        for _ in range(self.substeps):
            # g = F y + e ;  v_k = F^k g
            g = np.concatenate([y[n:], a_l + C @ y])
            v1 = np.concatenate([g[n:], C @ g])
            v2 = np.concatenate([v1[n:], C @ v1])
            v3 = np.concatenate([v2[n:], C @ v2])
            # y' = y + h (g + h/2 (v1 + h/3 (v2 + h/4 v3)))
            s = v2 + (h / 4.0) * v3
            s = v1 + (h / 3.0) * s
            s = g + (h / 2.0) * s
            y = y + h * s
        return np.concatenate([y, tau])

    def _noise(self, lin):
        """(q_diag, Q_tau): Q = blockdiag(diag(q_diag), Q_tau) over dt_s."""
        dt = self.dt_s
        qd = getattr(self, "_q_diag", None)
        if qd is None or qd[0] != dt:
            # Q_q, Q_qd = dt diag(q_sigma^2, qd_sigma^2)
            qd = self._q_diag = (dt, self.q_var * dt)
        # Q_tau = dt M diag(accel_sigma^2) M  (or dt diag(tau_sigma^2))
        Q_tau = dt * (np.diag(self.tau_var) if self.tau_var is not None
                      else self.torque_cov(lin.M, self.accel_var))
        return qd[1], Q_tau

    def _affine_qdd(self, lin):
        """qdd(q, qd, tau) affine about lin: qdd_l + Dq (q - q_l) + Dqd (qd - qd_l) + M^-1 (tau - tau_l)."""
        n = self.n
        xl = lin.x
        Dq, Dqd, Minv, qdd_l = lin.Dq, lin.Dqd, lin.Minv, lin.qdd
        # qdd_l - Dq q_l - Dqd qd_l - M^-1 tau_l: the constant of the affine model
        c = qdd_l - Dq @ xl[:n] - Minv @ xl[2 * n:]
        if Dqd is not None:
            c = c - Dqd @ xl[n:2 * n]

        held = [None, None]                   # (tau, c + M^-1 tau): tau is held over the stages

        def qdd(q, qd, tau):
            # qdd = (c + M^-1 tau) + Dq q + Dqd qd
            if held[0] is not tau:
                held[0], held[1] = tau, c + Minv @ tau
            v = held[1] + Dq @ q
            return (v if Dqd is None else v + Dqd @ qd), None
        return qdd

    def _step(self, x, dt, qddf=None):
        """The mean over one (sub-)step dt: RK4 or semi-implicit Euler, tau held (or decaying).

        qddf(q, qd, tau) -> (qdd, b): the acceleration the stages use (default: the full
        dynamics, self._qdd)."""
        n = self.n
        f = self._qdd if qddf is None else qddf
        q, qd, tau = x[:n], x[n:2 * n], x[2 * n:]
        k1v, b1 = f(q, qd, tau)
        if self.integrator == "euler":
            # semi-implicit (symplectic) Euler: qd' = qd + dt qdd ; q' = q + dt qd'
            # (explicit Euler grows every undamped oscillation; it diverged on the dance clip)
            qdn = qd + dt * k1v
            qn = q + dt * qdn
        else:
            # RK4 on [q, qd] with tau held: k_i = f(x + c_i dt k_{i-1})
            k1q = qd
            k2q = qd + 0.5 * dt * k1v
            k2v = f(q + 0.5 * dt * k1q, k2q, tau)[0]
            k3q = qd + 0.5 * dt * k2v
            k3v = f(q + 0.5 * dt * k2q, k3q, tau)[0]
            k4q = qd + dt * k3v
            k4v = f(q + dt * k3q, k4q, tau)[0]
            qn = q + dt / 6.0 * (k1q + 2 * k2q + 2 * k3q + k4q)
            qdn = qd + dt / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
        tau_n = tau if self.tau_decay is None else b1 + self.tau_decay * (tau - b1)
        return np.concatenate([qn, qdn, tau_n])

    def transition(self, lin, dt=None):
        """Discrete A over dt (default dt_s) from the continuous Fc = [[0, I, 0], [Dq, Dqd, Minv], [0, 0, 0]]."""
        n = self.n
        A = np.zeros((3 * n, 3 * n))
        A[:2 * n] = self.transition_rows(lin, dt)
        # tau rows: tau held
        A[2 * n:, 2 * n:] = np.eye(n)
        return A

    def transition_rows(self, lin, dt=None):
        """The q and qd rows of transition() (2n, 3n): its tau rows are [0, 0, I]."""
        n = self.n
        dt = self.dt_s if dt is None else float(dt)
        Dq, Minv = lin.Dq, lin.Minv
        Dqd = np.zeros((n, n)) if lin.Dqd is None else lin.Dqd
        diag = getattr(self, "_diag_rows", None)
        if diag is None:
            # flat indices of the diagonals of the (q, q) and (qd, qd) blocks of a (2n, 3n) array
            i = np.arange(n)
            diag = self._diag_rows = (i * (3 * n + 1), (n + i) * (3 * n + 1))
        if self.integrator == "euler":
            B = np.zeros((2 * n, 3 * n))
            Bf = B.reshape(-1)
            # qd' row: [dt Dq, I + dt Dqd, dt Minv] ; q' row: [I, dt I, 0] + dt (qd' row)
            B[n:, :n] = dt * Dq
            B[n:, n:2 * n] = dt * Dqd
            Bf[diag[1]] += 1.0
            B[n:, 2 * n:] = dt * Minv
            B[:n, :n] = dt * B[n:, :n]
            Bf[diag[0]] += 1.0
            B[:n, n:2 * n] = dt * B[n:, n:2 * n]
            B[:n, 2 * n:] = dt * B[n:, 2 * n:]
            return B
        # A = I + dt Fc + dt^2/2 Fc^2,  Fc^2 = [[Dq, Dqd, Minv], [Dqd Dq, Dq + Dqd^2, Dqd Minv], 0]
        # by block rows, C = [Dq, Dqd, Minv] (Fc's qd rows):
        #   q rows  = [I, dt I, 0] + h C ;  qd rows = [0, I, 0] + dt C + h (Dqd C + [0, Dq, 0])
        h = 0.5 * dt * dt
        C = np.concatenate([Dq, Dqd, Minv], axis=1)
        B = np.empty((2 * n, 3 * n))
        Bf = B.reshape(-1)
        # q rows = h C + [I, dt I, 0]
        np.multiply(C, h, out=B[:n])
        Bf[diag[0]] += 1.0
        Bf[diag[0] + n] += dt
        # qd rows = (dt C + h Dqd C) + (I + h Dq in the qd columns)
        np.add(dt * C, h * (Dqd @ C), out=B[n:])
        T = h * Dq
        T.flat[::n + 1] += 1.0
        B[n:, n:2 * n] += T
        return B


class _Kinematic:
    """Shared part of the kinematic baselines (no dynamics)."""

    def __init__(self, model, dt_s, sigma):
        self.model, self.dt_s, self.sigma = model, float(dt_s), float(sigma)
        self.n = model.n
        self.nx = self.nblocks * self.n

    def initial_state(self, q, qd=None):
        x = np.zeros(self.nx)
        x[:self.n] = q
        if qd is not None:
            x[self.n:2 * self.n] = qd
        return x


class ConstantVelocity(_Kinematic):
    """State [q, qd]; white acceleration of density accel_sigma (rad/s^2 / sqrt(Hz)); qdd = 0."""

    nblocks = 2

    def __init__(self, model, dt_s, accel_sigma_rad_s2=30.0):
        super().__init__(model, dt_s, accel_sigma_rad_s2)

    def linearise(self, x):
        n = self.n
        kin = self.model.kinematics(x[:n])
        return Linearisation(kin, x[n:2 * n], np.zeros(n), np.zeros((n, self.nx)))

    def predict(self, x, lin):
        n, dt, s2 = self.n, self.dt_s, self.sigma ** 2
        I = np.eye(n)
        # x' = A x,  A = [[I, dt I], [0, I]]
        A = np.block([[I, dt * I], [0 * I, I]])
        # Q = s^2 [[dt^3/3, dt^2/2], [dt^2/2, dt]]  (white acceleration)
        Q = s2 * np.block([[dt ** 3 / 3 * I, dt ** 2 / 2 * I], [dt ** 2 / 2 * I, dt * I]])
        return A @ x, A, Q


class ConstantAcceleration(_Kinematic):
    """State [q, qd, qdd]; white jerk of density jerk_sigma (rad/s^3 / sqrt(Hz))."""

    nblocks = 3

    @property
    def identity_tail(self):
        """Trailing state rows where A is the identity: the qdd block."""
        return self.n

    def __init__(self, model, dt_s, jerk_sigma_rad_s3=1500.0):
        super().__init__(model, dt_s, jerk_sigma_rad_s3)

    def linearise(self, x):
        n = self.n
        kin = self.model.kinematics(x[:n])
        d = np.zeros((n, self.nx))
        d[:, 2 * n:] = np.eye(n)
        return Linearisation(kin, x[n:2 * n], x[2 * n:], d)

    def predict(self, x, lin):
        n, dt, s2 = self.n, self.dt_s, self.sigma ** 2
        I, Z = np.eye(n), np.zeros((n, n))
        A = np.block([[I, dt * I, dt * dt / 2 * I], [Z, I, dt * I], [Z, Z, I]])
        # Q = s^2 [[dt^5/20, dt^4/8, dt^3/6], [dt^4/8, dt^3/3, dt^2/2], [dt^3/6, dt^2/2, dt]]
        c = [[dt ** 5 / 20, dt ** 4 / 8, dt ** 3 / 6], [dt ** 4 / 8, dt ** 3 / 3, dt ** 2 / 2],
             [dt ** 3 / 6, dt ** 2 / 2, dt]]
        Q = s2 * np.block([[c[i][j] * I for j in range(3)] for i in range(3)])
        return A @ x, A, Q
