"""P- = A P A' + Q by blocks, for transitions whose structure is known (A never formed).

    from device.estimate.covariance import propagate_rk4, propagate_rows
    P_new = propagate_rk4(P, lin.Dq, lin.Dqd, lin.Minv, dt_s, q_diag, Q_tau)  # torque state, RK4
    P_new = propagate_rows(P, B, q_diag, Q_tau)      # any A = [[B], [0, I]] (e.g. Euler's)

propagate_rk4:
The state is [q, qd, tau] (n each) and A is TorqueProcess.transition()'s second-order series
A = I + dt Fc + h Fc^2 (h = dt^2 / 2), whose block rows, with C = [Dq, Dqd, Minv] (n x 3n), are
  A1 = [I, dt I, 0] + h C
  A2 = [0, I, 0] + dt C + h (Dqd C + [0, Dq, 0])
  A3 = [0, 0, I]                                   (tau held)
Q = blockdiag(diag(q_diag), Q_tau). The identity and dt I blocks are sums, not products: with
Y = C P and, for X = [A1; A2] P, Z = X C',
  X1 = P1 + dt P2 + h Y,   X2 = P2 + dt Y + h (Dqd Y + Dq P2)              (Pi: block rows of P)
  X A1' = Xq + dt Xqd + h Z,   X A2' = Xqd + dt Z + h (Z Dqd' + Xqd Dq')     (Xq, Xqd: columns)
and the symmetric result needs X A2' only for the rows of X2 (its (1, 2) block is the
transpose of the (2, 1) one). 23 n^3 multiply-adds against 30 n^3 for forming A's two block
rows (Dqd C) and multiplying them out (propagate_rows): the same algebra, rounded differently
(tests/test_est_filters.py checks both against the dense A P A' + Q).
"""

import numpy as np


def propagate_rk4(P, Dq, Dqd, Minv, dt_s, q_diag, Q_tau):
    """A P A' + Q (3n x 3n) for A = TorqueProcess.transition() (RK4), Q = blockdiag(diag(q_diag), Q_tau)."""
    n = len(Dq)
    k = 2 * n
    dt = float(dt_s)
    h = 0.5 * dt * dt
    # C = [Dq, Dqd, Minv]: the qd rows of Fc
    C = np.concatenate([Dq, Dqd, Minv], axis=1)
    P2 = P[n:k]
    # Y = C P
    Y = C @ P
    X = np.empty((k, 3 * n))
    X1, X2 = X[:n], X[n:]
    # X1 = A1 P = P1 + dt P2 + h Y
    np.multiply(P2, dt, out=X1)
    X1 += P[:n]
    X1 += h * Y
    # X2 = A2 P = P2 + dt Y + h (Dqd Y + Dq P2)
    np.matmul(Dqd, Y, out=X2)
    X2 += Dq @ P2
    X2 *= h
    X2 += dt * Y
    X2 += P2
    # Z = X C'
    Z = X @ C.T
    Xqd = X[:, n:k]
    out = np.empty_like(P)
    # P-[:, :n] rows 0..2n = X A1' = Xq + dt Xqd + h Z
    top = out[:k, :n]
    np.multiply(Xqd, dt, out=top)
    top += X[:, :n]
    top += h * Z
    # P-[n:2n, n:2n] = X2 A2' = X2qd + dt Z2 + h (Z2 Dqd' + X2qd Dq')
    Z2, X2qd = Z[n:], Xqd[n:]
    blk = Z2 @ Dqd.T
    blk += X2qd @ Dq.T
    blk *= h
    blk += dt * Z2
    blk += X2qd
    out[n:k, n:k] = blk
    # P-[:n, n:2n] = (P-[n:2n, :n])'
    out[:n, n:k] = out[n:k, :n].T
    # + diag(q_diag) on the first 2n diagonal entries
    out.flat[:k * (3 * n + 1):3 * n + 1] += q_diag
    # tau rows / columns: P-[:2n, 2n:] = X[:, 2n:] (A3 = [0, 0, I]), P-[2n:, 2n:] = P33 + Q_tau
    out[:k, k:] = X[:, k:]
    out[k:, :k] = X[:, k:].T
    np.add(P[k:, k:], Q_tau, out=out[k:, k:])
    return out


def propagate_rows(P, B, q_diag, Q_tail):
    """P- = A P A' + Q for A = [[B], [0, I]] (B: its first k rows) and
    Q = blockdiag(diag(q_diag), Q_tail) (q_diag (k,)): propagate() without forming A or Q,
    by blocks:
      A P A' + Q = [[B P B' + diag(q_diag), (B P)[:, k:]], [((B P)[:, k:])', P[k:, k:] + Q_tail]]
    """
    k = len(B)
    m = k // 2
    nx = len(P)
    # BP = B P
    BP = B @ P
    out = np.empty_like(P)
    # P-[:k, :k] = B P B' (symmetric): its first m rows, its (2, 2) block, and the (2, 1) block
    # as the transpose of (1, 2) (a quarter of the products saved)
    top = BP[:m] @ B.T
    out[:m, :k] = top
    out[m:k, m:k] = BP[m:] @ B[m:].T
    out[m:k, :m] = top[:, m:].T
    # + diag(q_diag)
    out.flat[:k * (nx + 1):nx + 1] += q_diag
    # P-[:k, k:] = B P [0; I] = BP[:, k:] ; P-[k:, :k] its transpose
    out[:k, k:] = BP[:, k:]
    out[k:, :k] = BP[:, k:].T
    # P-[k:, k:] = P[k:, k:] + Q_tail
    np.add(P[k:, k:], Q_tail, out=out[k:, k:])
    return out
