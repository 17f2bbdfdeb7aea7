"""Exchange moves after the measured budget's greedy: coarsen one row, refine another that pays for it.

    from host.budget_exchange import exchange
    steps = exchange(steps, span, bits, J, e_mm, row_error, saved, take, total)   # (rows,), same bound

row_error(k, step) is row k's decoding error (frames,), saved(k, step) the bits fewer if it
took step, take(k, step) says it did, total(errors) the points' linearised errors (frames,
links, 4, 3) (host/budget_measured.py).

host/budget_measured.py's greedy stops when no single row can take a coarser step without some
point going over E. Often one can, if another row whose chain covers every point that then goes
over takes a slightly finer step, and the pair saves bits (by the greedy's estimate, sum over
frames of log2(1 + |second difference| / step); an estimate on the file's own residuals, the
rows predicted from others included, chose no better: 0.2% either way). For each coded row a (step a x up) the rows b
that move every link a pushes over E are tried (step b / down); the pair that saves the most
bits and keeps every link within E (linearised, as the greedy) is taken:

    saved_a(up) - cost_b(down) > 0   and   max over frames, links, points |E + J_a de_a + J_b de_b| <= E

Factor pairs (up, down) = (2^(1/4), 2^(1/8)) then (2^(1/8), 2^(1/16)); passes repeat until none
is taken (ROUNDS at most: 1 or 2 give 0.6% / 0.2% larger files). On the CMU clips at 24 fps:
1-2% smaller files at the same measured bound, for about 4 s of CPU a clip (19 s for 131_03 at
120 fps, where the greedy takes 5). The caller checks the result by exact forward kinematics, as it does the greedy's.
"""

import numpy as np

from protocol import staffranges

FACTORS = ((2 ** 0.25, 2 ** 0.125), (2 ** 0.125, 2 ** 0.0625))
ROUNDS = 4


def _norms(sub):
    # each link's largest error over frames and points: |E| over the last axis (the square root
    # of the largest square: one root a link)
    return np.sqrt(np.einsum("flpa,flpa->flp", sub, sub).max(axis=(0, 2)))


def exchange(steps, span, bits, J, e_mm, row_error, saved, take, total):
    """Steps (rows,) after exchange moves; every link's linearised error stays within e_mm."""
    K = len(steps)
    steps = np.array(steps, dtype=np.float64)
    errs = [row_error(k, steps[k]) for k in range(K)]
    # float32 (as the Jacobian): half the memory traffic; the result is checked by exact FK
    E = total(errs).astype(np.float32)
    link_max = _norms(E)
    covers = np.zeros((K, E.shape[1]), bool)
    for k, (idx, _) in enumerate(J):
        covers[k, idx] = True
    top = (1 << bits) - 1

    for up, down in FACTORS:
        for _ in range(ROUNDS):
            took = 0
            for a in range(K):
                if steps[a] >= 1.5 * span[a]:
                    continue
                sa = staffranges.step_up(steps[a] * up)
                ea = row_error(a, sa)
                ia, ja = J[a]
                sub_a = E[:, ia] + ja * (ea - errs[a]).astype(np.float32)[:, None, None, None]
                lm = link_max.copy()
                lm[ia] = _norms(sub_a)
                if lm.max() <= e_mm:
                    E[:, ia], link_max, steps[a], errs[a] = sub_a, lm, sa, ea
                    take(a, sa)
                    took += 1
                    continue
                bad = lm > e_mm
                save = saved(a, sa)
                Ea = E.copy()
                Ea[:, ia] = sub_a
                best = None
                for b in np.nonzero(covers[:, bad].all(axis=1))[0]:
                    if b == a:
                        continue
                    sb = staffranges.step_down(steps[b] / down)
                    if sb >= steps[b] or (span[b] > 0 and sb * (top - 1) < span[b]):
                        continue                      # no finer step, or finer than the depth holds
                    gain = save + saved(b, sb)
                    if gain <= 0 or (best is not None and gain <= best[0]):
                        continue
                    eb = row_error(b, sb)
                    ib, jb = J[b]
                    sub_b = Ea[:, ib] + jb * (eb - errs[b]).astype(np.float32)[:, None, None, None]
                    mb = _norms(sub_b)
                    if mb.max() <= e_mm:
                        best = (gain, b, sb, eb, sub_b, mb)
                if best is not None:
                    _, b, sb, eb, sub_b, mb = best
                    ib = J[b][0]
                    Ea[:, ib] = sub_b
                    lm[ib] = mb
                    E, link_max = Ea, lm
                    steps[a], errs[a], steps[b], errs[b] = sa, ea, sb, eb
                    take(a, sa)
                    take(b, sb)
                    took += 1
            if not took:
                break
    return steps
