"""Rigid-body dynamics of a skeleton: mass matrix (CRBA), bias forces (RNEA), forward dynamics.

    from device.body.human import human_model
    from device.body.dynamics import RigidBodyModel
    model = RigidBodyModel(human_model())          # compile once per skeleton
    q = model.to_si(skeleton_q)                    # dof units -> rad / m   (ndof,)
    kin = model.kinematics(q)                      # world axes, origins, frames of every dof
    M = model.mass_matrix(kin)                     # (n, n) kg m^2 / kg
    b = model.bias(kin, qd)                        # (n,)  C(q, qd) qd + g(q), N m / N
    qdd = model.forward_dynamics(q, qd, tau)       # M qdd = tau - b, by Cholesky

Every dof is a 1-dof joint: a revolute joint about its axis or a prismatic joint along it.
Several dofs on one link are a chain of massless intermediate frames; the link's mass (and the
mass of any dof-less descendant links, e.g. BVH End Sites) sits on the frame after its last
dof. Links above the first dof (a fixed-base root) are the world. All math is in SI: q in rad
or m (dof value * dof.scale), qd in rad/s or m/s, tau in N m or N.

Method. Everything is expressed in the world frame (Featherstone's "absolute coordinates"),
where the motion axis of dof j is the spatial vector S_j = [a_j; o_j x a_j] (rotation about the
world axis a_j through o_j) or [0; a_j] (translation). In these coordinates the recursions of
the classical algorithms become prefix sums over the tree, done with one (n, n) ancestor matrix
`anc` (anc[i, j] = dof i is dof j or an ancestor of it):
  RNEA   v_j = sum_{i anc j} S_i qd_i               (outward velocity recursion)
         a_j = a_0 + sum_{i anc j} (v_par(i) x S_i) qd_i + S_i qdd_i   (outward acceleration)
         f_j = I_j a_j + v_j x* I_j v_j,  F_j = sum_{k desc j} f_k,  tau_j = S_j . F_j  (inward)
  CRBA   Ic_j = sum_{k desc j} I_k (composite inertia), M_ij = S_i . Ic_j S_j for i anc j
with a_0 = [0; -gravity]. Only the world poses need a loop (over tree depth, vectorised over
the dofs of one level). Checked against pinocchio to 1e-9 (tests/test_dyn_pinocchio.py).
"""

import weakref

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotrs

_CACHE = weakref.WeakKeyDictionary()


def model_of(skeleton, armature=0.0):
    """The compiled RigidBodyModel of a skeleton (cached per skeleton object and armature)."""
    per = _CACHE.setdefault(skeleton, {})
    if armature not in per:
        per[armature] = RigidBodyModel(skeleton, armature)
    return per[armature]


def mass_matrix(skeleton, q_si):
    """M(q): (n, n) joint-space mass matrix for q (n,) in rad / m."""
    m = model_of(skeleton)
    return m.mass_matrix(m.kinematics(q_si))


def bias_forces(skeleton, q_si, qd_si):
    """b(q, qd) = C(q, qd) qd + g(q): (n,) in N m / N."""
    m = model_of(skeleton)
    return m.bias(m.kinematics(q_si), qd_si)


def inverse_dynamics(skeleton, q_si, qd_si, qdd_si):
    """tau = M(q) qdd + b(q, qd) by RNEA: (n,)."""
    m = model_of(skeleton)
    return m.rnea(m.kinematics(q_si), qd_si, qdd_si)


def forward_dynamics(skeleton, q_si, qd_si, tau, armature=0.0):
    """qdd = (M(q) + diag(armature))^-1 (tau - b(q, qd)): (n,) in rad/s^2 / m/s^2."""
    return model_of(skeleton, armature).forward_dynamics(q_si, qd_si, tau)


_ROLL4 = np.array([1, 2, 0, 1])


def cholesky_lower(A):
    """Lower Cholesky factor of a symmetric positive-definite A (its lower triangle is read),
    for cholesky_solve; raises np.linalg.LinAlgError if A is not positive definite."""
    c, info = dpotrf(A, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError("matrix not positive definite (potrf info %d)" % info)
    return c


def cholesky_solve(c, rhs):
    """A^-1 rhs from c = cholesky_lower(A); rhs (n,) or (n, k)."""
    x, info = dpotrs(c, rhs, lower=1)
    if info != 0:
        raise ValueError("potrs: illegal argument %d" % -info)
    return x


def _cross(a, b):
    """Row-wise cross product of (..., 3) arrays (faster than np.cross for small stacks).

    With a~ = (a1, a2, a0, a1): a x b = a~[:3] * b~[1:] - a~[1:] * b~[:3] (two gathers, two
    products, one difference: fewer numpy calls than component by component).
    """
    ae = a[..., _ROLL4]
    be = b[..., _ROLL4]
    return ae[..., :3] * be[..., 1:] - ae[..., 1:] * be[..., :3]


class Kinematics:
    """World frames of every dof at one configuration (from RigidBodyModel.kinematics).

    R (n, 3, 3), p_m (n, 3): the frame after dof j (rotation, origin) in the world.
    axis (n, 3), origin_m (n, 3): world axis of dof j and a point on it.
    S (n, 6): spatial motion axes [angular; linear at the world origin].
    """

    __slots__ = ("q", "R", "p_m", "axis", "origin_m", "S", "T", "_inert", "_comp", "_vel")

    def __init__(self, q, R, p_m, axis, origin_m, S, T=None):
        self.q, self.R, self.p_m, self.axis, self.origin_m, self.S = q, R, p_m, axis, origin_m, S
        self.T = T             # (n + 1, 3, 4) [R | p] per dof frame, world last (or None)
        self._inert = None
        self._comp = None
        self._vel = None       # (qd, V, velocity-product accelerations) of the last motion()


class RigidBodyModel:
    """A skeleton compiled for dynamics: dof tree, fixed offsets, lumped inertias.

    parent (n,) int: the dof whose frame carries dof j's joint (-1: the world).
    link_body (L,) int: the dof frame a link is rigidly attached to (-1: the world),
    link_off_m (L, 3): the link origin in that frame. armature (n,): added to diag(M) in
    forward_dynamics only (keeps dofs on massless leaf links solvable; 0 = pure rigid body).
    """

    def __init__(self, skeleton, armature=0.0):
        sk = skeleton
        n = sk.ndof
        self.skeleton = sk
        self.n = n
        self.scale = sk.scales
        self.axis_local = np.array([d.axis for d in sk.dofs]).reshape(n, 3)
        self.is_rot = np.array([d.kind == "rotation" for d in sk.dofs], bool)
        self.gravity = np.asarray(sk.gravity, float)
        L = sk.nlinks
        parent = np.full(n, -1)
        t0 = np.zeros((n, 3))
        link_body = np.full(L, -1)
        link_off = np.zeros((L, 3))
        for i, ln in enumerate(sk.links):
            if ln.parent < 0:
                body, off = -1, ln.offset.copy()
            else:
                body, off = link_body[ln.parent], link_off[ln.parent] + ln.offset
            for j in ln.dofs:
                parent[j], t0[j] = body, off
                body, off = j, np.zeros(3)
            link_body[i], link_off[i] = body, off
        self.parent, self.t0_m = parent, t0
        self.link_body, self.link_off_m = link_body, link_off
        depth = np.zeros(n, int)
        order = self._topological(parent)
        for j in order:
            depth[j] = 0 if parent[j] < 0 else depth[parent[j]] + 1
        self.order = order
        self.levels = [np.array([j for j in order if depth[j] == d]) for d in range(depth.max() + 1)] if n else []
        anc = np.zeros((n, n), bool)
        for j in order:
            if parent[j] >= 0:
                anc[:, j] = anc[:, parent[j]]
            anc[j, j] = True
        self.anc = anc
        self.ancf = anc.astype(float)
        # lumped inertia per dof frame: mass, com (frame j), rotational inertia about the com
        mass = np.zeros(n)
        first = np.zeros((n, 3))
        second = np.zeros((n, 3, 3))
        for i, ln in enumerate(sk.links):
            b = link_body[i]
            if b < 0 or ln.mass <= 0.0 and not ln.inertia.any():
                continue
            c = link_off[i] + ln.com
            mass[b] += ln.mass
            first[b] += ln.mass * c
            # inertia about the frame origin: I_c + m (|c|^2 I - c c')
            second[b] += ln.inertia + ln.mass * (c @ c * np.eye(3) - np.outer(c, c))
        com = np.where(mass[:, None] > 0, first / np.where(mass > 0, mass, 1.0)[:, None], 0.0)
        self.mass_kg, self.com_m = mass, com
        # about the com again: I_c = I_o - m (|c|^2 I - c c')
        cc = np.einsum("ni,ni->n", com, com)[:, None, None] * np.eye(3) - np.einsum("ni,nj->nij", com, com)
        self.inertia_com = second - mass[:, None, None] * cc
        self.armature = np.broadcast_to(np.asarray(armature, float), (n,)).copy()
        self.armature_diag = np.diag(self.armature)           # (n, n), read only
        self.armature_diag.flags.writeable = False
        # parent index with the world as an extra last row (index n)
        self._par = np.where(parent < 0, n, parent)
        self._compile_kinematics()

    @staticmethod
    def _topological(parent):
        n = len(parent)
        done, order = np.zeros(n, bool), []
        while len(order) < n:
            for j in range(n):
                if not done[j] and (parent[j] < 0 or done[parent[j]]):
                    done[j] = True
                    order.append(j)
        return order

    def to_si(self, q_dof):
        """Dof units (deg, cm, ...) -> rad / m."""
        return np.asarray(q_dof, float) * self.scale

    def from_si(self, q_si):
        return np.asarray(q_si, float) / self.scale

    # -- kinematics -----------------------------------------------------------------------------
    def kinematics(self, q_si, root_R=None, root_p_m=None):
        """World frames of all dofs for q (n,) in rad / m (root_R, root_p_m place the world).

        Each dof frame relative to its parent dof frame is T_j = (Rloc_j, t0_j + a_j q_j)
        (Rodrigues rotation; the translation along the local axis for a prismatic dof). The
        world frames W_j = W_parent(j) T_j are composed by pointer jumping: every round
        replaces each frame's relative transform G_j (to its current ancestor J_j) by
        G_{J_j} G_j and J_j by J_{J_j}, all dofs at once, so ceil(log2(depth + 1)) rounds
        (4 for the 15-deep human model) instead of one numpy pass per tree level.
        """
        n = self.n
        q = np.asarray(q_si, float)
        if q.shape != (n,) or not np.isfinite(q.sum()):
            raise ValueError("kinematics: q must be %d finite values (rad / m), got shape %s"
                             % (n, q.shape))
        # T: relative transforms as homogeneous 4 x 4 blocks [G t; 0 1], row n is the world
        # (identity, its own ancestor); composing two is one 4 x 4 product
        T = np.empty((n + 1, 4, 4))
        T[n] = self._I4
        # per dof, as one product of [1, sin q, 1 - cos q, q] with precomputed bases:
        # Rodrigues Rloc = I + sin q K + (1 - cos q) K^2 (identity for translations) and
        # t = t0 + a q (the translation along the local axis for a prismatic dof)
        qr = q * self._rotf
        c = np.empty((n, 1, 4))
        c[:, 0, 0] = 1.0
        np.sin(qr, out=c[:, 0, 1])
        np.cos(qr, out=c[:, 0, 2])
        np.subtract(1.0, c[:, 0, 2], out=c[:, 0, 2])
        np.multiply(q, self._transf, out=c[:, 0, 3])
        np.matmul(c, self._basis, out=T[:n].reshape(n, 1, 16))
        # the pre-frame of dof j (its parent's world frame) is what its axis and origin need:
        # keep the parent pointer; compose the parent chain only
        for J in self._jumps:
            # T_j <- T_{J_j} T_j ; J_j <- J_{J_j} (precomputed)
            T = T[J] @ T
        T = T[:, :3]
        if root_R is not None or root_p_m is not None:
            Rw = np.eye(3) if root_R is None else np.asarray(root_R, float)
            pw = np.zeros(3) if root_p_m is None else np.asarray(root_p_m, float)
            T = Rw @ T
            T[:, :, 3] += pw
            T[n] = self._T_world          # world-fixed links stay where they were (link_frames)
        R, p = T[:n, :, :3], T[:n, :, 3]
        # parent (pre-)frame of dof j (world row n for a root dof): [Rp | pp] [a 0; t0 1]
        ao = T[self._par_w[:n]] @ self._axis_t0
        axis, origin = ao[:, :, 0], ao[:, :, 1]
        S = np.empty((n, 6))
        S[:, :3] = axis * self._rotf[:, None]
        S[:, 3:] = np.where(self.is_rot[:, None], _cross(origin, axis), axis)
        return Kinematics(q, R, p, axis, origin, S, T)

    def rotations(self, Q_si):
        """World rotations only, for B configurations at once (batched orientation IK).

        Q_si (B, n) rad / m -> (R (B, n, 3, 3) the frame after each dof, axis (B, n, 3) the
        world axis of each dof). As kinematics(): Rloc_j = I + sin q K_j + (1 - cos q) K_j^2
        (identity for a prismatic dof), composed by pointer jumping, all configurations at once.
        """
        n = self.n
        Q = np.asarray(Q_si, float)
        if Q.ndim != 2 or Q.shape[1] != n or not np.isfinite(Q.sum()):
            raise ValueError("rotations: Q must be (B, %d) finite values (rad / m), got shape %s"
                             % (n, Q.shape))
        B = len(Q)
        qr = Q * self._rotf
        # R_rel = [1, sin q, 1 - cos q] @ [I, K, K^2] (per dof, flattened 3 x 3)
        c = np.empty((B, n, 1, 3))
        c[:, :, 0, 0] = 1.0
        np.sin(qr, out=c[:, :, 0, 1])
        np.cos(qr, out=c[:, :, 0, 2])
        np.subtract(1.0, c[:, :, 0, 2], out=c[:, :, 0, 2])
        R = np.empty((B, n + 1, 3, 3))
        R[:, n] = np.eye(3)
        np.matmul(c, self._basis_R, out=R[:, :n].reshape(B, n, 1, 9))
        for J in self._jumps:
            # R_j <- R_{J_j} R_j ; J_j <- J_{J_j} (precomputed)
            R = R[:, J] @ R
        # a dof's world axis: its parent frame's rotation times the local axis
        axis = np.einsum("bnij,nj->bni", R[:, self._par_w[:n]], self.axis_local)
        return R[:, :n], axis

    def _compile_kinematics(self):
        sk = self.skeleton
        n, L = self.n, sk.nlinks
        ax = self.axis_local
        K = np.zeros((n, 3, 3))
        K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -ax[:, 2], ax[:, 1], -ax[:, 0]
        K[:, 1, 0], K[:, 2, 0], K[:, 2, 1] = ax[:, 2], -ax[:, 1], ax[:, 0]
        self._K, self._K2 = K, K @ K
        self._nlk = L
        self._kmax = max([len(ln.dofs) for ln in sk.links] + [0])
        self._bypos = []
        for k in range(self._kmax):
            rows = [i for i, ln in enumerate(sk.links) if len(ln.dofs) > k]
            self._bypos.append((np.array(rows, int), np.array([sk.links[i].dofs[k] for i in rows], int)))
        self._lk_rows = np.arange(L)
        self._lk_n = np.array([len(ln.dofs) for ln in sk.links], int)
        self._lk_off = np.array([ln.offset for ln in sk.links]).reshape(L, 3)
        self._lpar = np.array([L if ln.parent < 0 else ln.parent for ln in sk.links], int)
        depth = np.zeros(L, int)
        for i, ln in enumerate(sk.links):
            depth[i] = 0 if ln.parent < 0 else depth[ln.parent] + 1
        self._link_levels = [np.nonzero(depth == d)[0] for d in range(depth.max() + 1)]
        self._dlink = np.array([d.link for d in sk.dofs], int)
        self._dpos = np.array([sk.links[d.link].dofs.index(j) for j, d in enumerate(sk.dofs)], int)
        self._dpar = self._lpar[self._dlink]
        self._doff = self._lk_off[self._dlink]
        # pointer jumping over the dof tree: parent with the world as row n (its own parent)
        self._par_w = np.append(self._par, self.n)
        # a dof on tree level d is d + 1 hops from the world; r rounds compose 2^r hops
        depth = len(self.levels)
        self._jump_rounds = int(np.ceil(np.log2(depth))) if depth > 1 else depth
        J, self._jumps = self._par_w.copy(), []
        for _ in range(self._jump_rounds):
            self._jumps.append(J)
            J = J[J]
        self._rotf = self.is_rot.astype(float)
        self._transf = 1.0 - self._rotf
        self._T_world = np.hstack([np.eye(3), np.zeros((3, 1))])
        # kinematics(): a dof's homogeneous transform (flattened 4 x 4) is
        # [1, sin q, 1 - cos q, q] @ [[I t0; 0 1], [K 0; 0 0], [K^2 0; 0 0], [0 a; 0 0]]
        B = np.zeros((n, 4, 4, 4))
        B[:, 0, :3, :3] = np.eye(3)
        B[:, 0, :3, 3] = self.t0_m
        B[:, 0, 3, 3] = 1.0
        B[:, 1, :3, :3] = K
        B[:, 2, :3, :3] = self._K2
        B[:, 3, :3, 3] = self.axis_local
        self._basis = B.reshape(n, 4, 16)
        self._basis_R = np.stack([np.broadcast_to(np.eye(3), (n, 3, 3)), K, self._K2],
                                 axis=1).reshape(n, 3, 9)            # rotations(): [I, K, K^2]
        # motion(): rows / columns of [V; 0] giving [w_par, w_par, v_par] and of S giving [a, b, a]
        self._sd_rows = self._par_w[:n, None]
        self._sd_cols = np.array([0, 1, 2, 0, 1, 2, 3, 4, 5])[None, :]
        self._sd_scols = np.array([0, 1, 2, 3, 4, 5, 0, 1, 2])
        self._rn_cols = np.array([0, 1, 2, 3, 4, 5, 3, 4, 5])          # rnea(): [n, f, f]
        self._gravity6 = np.concatenate([np.zeros(3), self.gravity])
        com1 = np.ones((n, 4, 1))
        com1[:, :3, 0] = self.com_m
        self._com1 = com1
        self._I4 = np.eye(4)
        # [a_local 0; t0 1] (n, 4, 2): the parent frame [R | p] times it gives [axis, origin]
        self._axis_t0 = np.zeros((n, 4, 2))
        self._axis_t0[:, :3, 0] = self.axis_local
        self._axis_t0[:, :3, 1] = self.t0_m
        self._axis_t0[:, 3, 1] = 1.0

    def link_frames(self, kin):
        """World rotation (L, 3, 3) and origin (L, 3) of every link."""
        b = self.link_body
        n = self.n
        R = np.concatenate([kin.R, np.eye(3)[None]])[np.where(b < 0, n, b)]
        p = np.concatenate([kin.p_m, np.zeros((1, 3))])[np.where(b < 0, n, b)]
        return R, p + np.einsum("lij,lj->li", R, self.link_off_m)

    def _inertias(self, kin):
        """Per dof frame, at the world origin: mass (n,), first moment m c (n, 3), J_O (n, 3, 3)."""
        if kin._inert is None:
            n = self.n
            # c = p + R com  (the homogeneous frame [R | p] times [com; 1])
            if kin.T is not None:
                c = (kin.T[:n] @ self._com1)[:, :, 0]
            else:
                c = kin.p_m + np.einsum("nij,nj->ni", kin.R, self.com_m)
            # [m, h = m c, J_O] per frame as the rows of one (n, 13) array (composite() sums them)
            I13 = np.empty((n, 13))
            I13[:, 0] = self.mass_kg
            h = I13[:, 1:4]
            np.multiply(self.mass_kg[:, None], c, out=h)
            # J_O = I_c(world) + m (|c|^2 I - c c') = R I_c R' - h c' + (h . c) I
            J = kin.R @ self.inertia_com @ kin.R.transpose(0, 2, 1)
            J -= h[:, :, None] * c[:, None, :]
            I13[:, 4:] = J.reshape(n, 9)
            I13[:, 4::4] += np.einsum("ni,ni->n", h, c)[:, None]          # the diagonal of J_O
            kin._inert = (I13[:, 0], h, I13[:, 4:].reshape(n, 3, 3), I13)
        return kin._inert[:3]

    @staticmethod
    def _apply_inertia(m, h, J, mot):
        """Spatial inertia (m, h = m c, J_O) times motion vectors mot (k, 6) -> forces (k, 6).

        lin = m a - h x alpha ;  ang = J_O alpha + h x a
        (mot may carry leading axes: (..., k, 6) -> (..., k, 6)).
        """
        al, a = mot[..., :3], mot[..., 3:]
        hx = _cross(h[:, None, :], mot.reshape(mot.shape[:-1] + (2, 3)))   # [h x alpha, h x a]
        out = np.empty(mot.shape)
        np.subtract(m[:, None] * a, hx[..., 0, :], out=out[..., 3:])
        np.add((J @ al[..., None])[..., 0], hx[..., 1, :], out=out[..., :3])
        return out

    # -- dynamics -------------------------------------------------------------------------------
    def composite(self, kin):
        """Composite (subtree) inertias per dof frame: mass (n,), first moment (n, 3), J_O (n, 3, 3)."""
        if kin._comp is None:
            self._inertias(kin)
            # Ic_j = sum over the subtree of j (anc[j, k] = 1 for k below j): one product
            n = self.n
            c = self.ancf @ kin._inert[3]
            kin._comp = (c[:, 0], c[:, 1:4], c[:, 4:].reshape(n, 3, 3))
        return kin._comp

    def mass_matrix(self, kin):
        """M(q) (n, n) by the composite-rigid-body algorithm in world coordinates."""
        # composite inertias: Ic_j = sum over the subtree of j (anc[j, k] = 1 for k below j)
        mc, hc, Jc = self.composite(kin)
        # F_j = Ic_j S_j ; M_ij = S_i . F_j for i an ancestor of j (or j)
        F = self._apply_inertia(mc, hc, Jc, kin.S)
        Mu = (kin.S @ F.T) * self.ancf
        # M = Mu + Mu' - diag(Mu): Mu[i, j] where i is an ancestor of j (or j), else Mu[j, i]
        return np.where(self.anc, Mu, Mu.T)

    def velocities(self, kin, qd_si):
        """Spatial velocities (n, 6) [omega; v at the world origin] of every dof frame."""
        # v_j = sum_{i anc j} S_i qd_i
        return self.ancf.T @ (kin.S * np.asarray(qd_si, float)[:, None])

    def motion(self, kin, qd_si):
        """(V, Ad) at qd: spatial velocities (n, 6) and the velocity-product part of the
        accelerations, Ad_j = sum_{i anc j} Sdot_i qd_i (the accelerations at qdd = 0, no
        gravity). Cached on kin for the last qd: the bias (RNEA) and the IMU model share it."""
        c = kin._vel
        if c is not None and np.array_equal(c[0], qd_si):
            return c[1], c[2]
        qd = np.array(qd_si, float)
        n = self.n
        # v_j = sum_{i anc j} S_i qd_i, with the world (at rest) as row n
        Vw = np.empty((n + 1, 6))
        np.matmul(self.ancf.T, kin.S * qd[:, None], out=Vw[:n])
        Vw[n] = 0.0
        V = Vw[:n]
        # Sdot_i = v_par(i) x S_i  (motion cross product [w; v] x [a; b] = [w x a; w x b + v x a])
        # w x a, w x b and v x a in one product: [w, w, v] x [a, b, a] (gathers precomputed)
        X = _cross(Vw[self._sd_rows, self._sd_cols].reshape(n, 3, 3),
                   kin.S[:, self._sd_scols].reshape(n, 3, 3))
        Sd = X[:, :2].reshape(n, 6)
        Sd[:, 3:] += X[:, 2]
        # Ad_j = sum_{i anc j} Sdot_i qd_i
        Ad = self.ancf.T @ (Sd * qd[:, None])
        kin._vel = (qd, V, Ad)
        return V, Ad

    def accelerations(self, kin, qd_si, qdd_si, gravity=False):
        """Spatial accelerations (n, 6) of every dof frame (+ [0; -g] if gravity)."""
        V, Ad = self.motion(kin, qd_si)
        # a_j = a_0 + sum_{i anc j} (Sdot_i qd_i + S_i qdd_i)
        qdd = None if qdd_si is None else np.asarray(qdd_si, float)
        if qdd is not None and qdd.any():
            A = Ad + self.velocities(kin, qdd)
            if gravity:
                A[:, 3:] -= self.gravity
        else:
            # (qdd = 0 or None) a_j - [0; g]
            A = Ad - self._gravity6 if gravity else Ad.copy()
        return V, A

    def rnea(self, kin, qd_si, qdd_si):
        """tau = M qdd + b by recursive Newton-Euler (gravity from the skeleton)."""
        V, A = self.accelerations(kin, qd_si, qdd_si, gravity=True)
        m, h, J = self._inertias(kin)
        n = self.n
        # f_j = I_j a_j + v_j x* (I_j v_j),  x*: [w; v] x* [n; f] = [w x n + v x f; w x f]
        IV, f = self._apply_inertia(m, h, J, np.concatenate([V[None], A[None]]))   # I v, I a
        # [w x n, w x f, v x f] in one product ([w, w, v] x [n, f, f], gathers precomputed)
        X = _cross(V[:, self._sd_cols[0]].reshape(n, 3, 3), IV[:, self._rn_cols].reshape(n, 3, 3))
        f[:, :3] += X[:, 0]
        f[:, :3] += X[:, 2]
        f[:, 3:] += X[:, 1]
        # F_j = sum over the subtree of j ; tau_j = S_j . F_j
        Fsub = self.ancf @ f
        return np.einsum("ni,ni->n", kin.S, Fsub)

    def bias(self, kin, qd_si):
        """b(q, qd) = C qd + g: RNEA with qdd = 0."""
        return self.rnea(kin, qd_si, None)

    def gravity_torque(self, kin):
        """g(q): RNEA with qd = qdd = 0."""
        z = np.zeros(self.n)
        return self.rnea(kin, z, z)

    def factor(self, M):
        """Cholesky factor of M + diag(armature), for solve() (LAPACK potrf directly: scipy's
        cho_factor / cho_solve wrappers cost more than the 48 x 48 factorisation itself)."""
        return cholesky_lower(M + self.armature_diag)

    @staticmethod
    def solve(fac, rhs):
        return cholesky_solve(fac, rhs)

    def forward_dynamics(self, q_si, qd_si, tau, kin=None):
        """qdd = (M + diag(armature))^-1 (tau - b): (n,)."""
        kin = self.kinematics(q_si) if kin is None else kin
        M = self.mass_matrix(kin)
        return self.solve(self.factor(M), np.asarray(tau, float) - self.bias(kin, qd_si))

    # -- points on links --------------------------------------------------------------------------
    def point_jacobian(self, kin, links, points_world_m):
        """Linear Jacobians (K, 3, n) of world points rigidly attached to `links` (K,).

        column j = a_j x (p - o_j) (rotation) or a_j (translation), for dofs above the link.
        """
        b = self.link_body[np.asarray(links)]
        mask = np.where((b >= 0)[:, None], self.ancf.T[np.maximum(b, 0)], 0.0)    # (K, n)
        d = points_world_m[:, None, :] - kin.origin_m[None]                      # (K, n, 3)
        col = np.where(self.is_rot[None, :, None], _cross(kin.axis[None], d), kin.axis[None])
        return (col * mask[:, :, None]).transpose(0, 2, 1)

    def angular_jacobian(self, links):
        """(K, n) mask of the rotation dofs above each link (columns are world axes a_j)."""
        b = self.link_body[np.asarray(links)]
        mask = np.where((b >= 0)[:, None], self.ancf.T[np.maximum(b, 0)], 0.0)
        return mask * self.is_rot[None, :]
