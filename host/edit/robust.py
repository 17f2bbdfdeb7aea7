"""despike:robust - leave-one-out prediction from both sides and from the joint's rotation.

    from host.edit.robust import robust_spikes
    mask, repaired = robust_spikes(values, steps_deg, groups)   # groups: _rotation.euler_groups
    clean = despike(staff, "robust")                             # the same through host.edit

Every pixel is predicted without its own value from its row's nearest good neighbours, gaps
and flagged pixels left out (host.edit._predict: C the cubic through two either side, M the
line between the nearest two, L and R one side's line); for the rows of a joint's Euler
triple also from the joint's rotation (host.edit._rotation: the rotation interpolated across
the frame, with the frame's two other rows - spikes are independent per pixel, so they are
intact - gives this row's angle exactly, through Euler flips and gimbal lock). The residual
is the smaller of |v - C| and |v - rotation|. The threshold is in the row's own units,
`threshold` x the local scale + `min_steps` quantisation steps; the local scale is 1.4826 x
the running median over `window` frames of the least of |v - C|, |v - L|, |v - R| (a spike
does not spread into its neighbours' scale: one of L, R of a neighbour misses it), at least a
quarter of the row's own and at least its tail (the 90th percentile / 1.645, rows of 50
frames or more: a toe slapping the floor is motion). A pixel over it is a spike unless one
side explains it (|v - L| or |v - R| <= `side` |L - R| + threshold: a genuine step, an Euler
flip of the source's own). Candidates within 2 frames of each other are judged again with
all of them left out (pairs). Iterated (`passes`): the worst hit of a neighbourhood (+-2
frames of its row, its joint's three rows at that frame; end frames, extrapolated, rank
after) is flagged, what had it among its neighbours is judged again, until nothing changes;
last, every flag is judged once more against the final good pixels. Runs of more than
`max_run` flagged frames are motion; a frame where more than `column_share` of the rows (and
more than 3) are hits is a whole-body event. A flagged pixel gets C, or the rotation's angle
where C disagrees with it by more than the threshold and the frame's other rows are no
suspects. A still row has residual 0 everywhere: only pixels that really stick out change.

Speed: the dense work is one pass of shifted slices (host.edit._residual); everything after it
is on the candidate pixels only (one hour of 48 rows: about 1 s, benchmarks/editing.py).
"""

import numpy as np

from host.edit import _predict as P
from host.edit._residual import ref, residuals, running_median_at, scale_parts
from host.edit._rotation import predict_euler

SOUND = 6.0
EDGE = 3.0           # near an end: the threshold + EDGE x the side's second difference
MOVE = 1.0           # + MOVE x one frame of the side's motion (see _judge)


def _judge(v, work, good, groups, rr, tt, thr, side, trust, pred=None):
    """At the pixels (rr, tt): (residual for ranking, hit, replacement) from the good
    neighbours - the row's cubic and, for a joint's rows, its rotation with the other rows of
    the frame (from work).
    The replacement is the cubic unless the rotation disagrees with it by more than `thr` (an
    Euler flip, gimbal lock: the cubic is what is wrong) and the frame's other rows are `trust`ed
    (not suspects themselves)."""
    C, L, M, Rr, y1, z1 = P.predictions(v, good, at=(rr, tt)) if pred is None else pred
    c_ref = ref(C, L, M, Rr, y1, z1)
    x = v[rr, tt]
    res = np.abs(x - c_ref)
    rep = c_ref
    if groups:
        at = np.zeros(v.shape, bool)
        at[rr, tt] = True
        est = predict_euler(work, good, groups, at=at, given=True)[rr, tt]
        with np.errstate(invalid="ignore"):
            res = np.where(np.isnan(est), res, np.minimum(res, np.abs(x - est)))
        with np.errstate(invalid="ignore"):
            use = trust & ~(np.abs(est - c_ref) <= thr) & ~np.isnan(est)
        rep = np.where(use, est, c_ref)
    with np.errstate(invalid="ignore"):
        tol = side * np.abs(L - Rr) + thr
        # a genuine step (or a jump of the source's own) is explained by one side - a side that
        # continues itself, not one whose next pixel is a glitch too
        side_ok = (((np.abs(x - L) <= tol) & _sound(v, good, rr, tt, SOUND * thr, -1))
                   | ((np.abs(x - Rr) <= tol) & _sound(v, good, rr, tt, SOUND * thr, 1)))
        hit = (res > thr) & ~side_ok
    # near an end (of the row, or of a gap at an end) a pixel is only extrapolated from one
    # side or interpolated by a line, which miss a curving motion by about its second
    # difference and a changing one by a part of a frame's motion: a spike there must stick out
    # by EDGE times the longer side's own second difference and one frame of its motion more
    # (a side of fewer than three good pixels: no evidence, no flag)
    weak = np.isnan(C)                      # fewer than two good pixels on one side
    if weak.any():
        d = np.where(np.isnan(L[weak]), 1, -1)
        curv, move = _side_motion(v, good, rr[weak], tt[weak], d)
        with np.errstate(invalid="ignore"):
            hit[weak] &= res[weak] > np.broadcast_to(thr, res.shape)[weak] + EDGE * curv + MOVE * move
    # an end frame ranks after a pixel seen from both sides
    res = np.where(weak & np.isnan(M), 0.5 * res, res)
    return res, hit, rep


def robust_spikes(v, steps, groups=(), threshold=6.0, min_steps=2.0, window=15, max_run=2,
                  passes=6, column_share=0.08, side=0.4):
    """(flag mask, values with the flagged pixels replaced) for values v (rows, frames)."""
    valid = ~np.isnan(v)
    R, F = v.shape
    step = np.asarray(steps, dtype=np.float64)[:, None]
    flag = np.zeros(v.shape, bool)
    held = np.zeros(v.shape, bool)
    out = v.copy()
    res = np.zeros(v.shape)
    hit = np.zeros(v.shape, bool)
    rep = np.full(v.shape, np.nan)
    # pass 0, dense: every pixel against its neighbours; the scale, once
    res_c, near = residuals(v, valid)
    base, floor = scale_parts(near, valid, window)
    del near
    lowest = threshold * floor + min_steps * step          # the threshold is never below this
    thr = np.full(v.shape, np.nan)

    def over(rr, tt, r_c):
        """r_c > the threshold at (rr, tt); the local scale computed where it is needed."""
        with np.errstate(invalid="ignore"):
            maybe = r_c > lowest[rr, 0]
        a, b = rr[maybe], tt[maybe]
        need = np.isnan(thr[a, b])
        if need.any():
            a1, b1 = a[need], b[need]
            s_loc = 1.4826 * running_median_at(base, a1, b1, window)
            thr[a1, b1] = (threshold * np.maximum(s_loc, floor[a1, 0])
                           + min_steps * step[a1, 0])
        out = np.zeros(rr.shape, bool)
        with np.errstate(invalid="ignore"):
            out[maybe] = r_c[maybe] > thr[a, b]
        return out

    with np.errstate(invalid="ignore"):
        screened = valid & (res_c > lowest)
    r0, t0 = np.nonzero(screened)
    cand = np.zeros(v.shape, bool)
    cand[r0, t0] = over(r0, t0, res_c[r0, t0])
    del res_c, r0, t0
    # the other two rows of each row's joint (-1: none), for the cross-row tests
    o1 = np.full(R, -1)
    o2 = np.full(R, -1)
    for g in groups:
        for k in range(3):
            o1[g.rows[k]], o2[g.rows[k]] = g.rows[(k + 1) % 3], g.rows[(k + 2) % 3]
    score = np.zeros(v.shape)                  # a scratch image, zero but where being used
    event = np.zeros(F, bool)
    todo = np.flatnonzero(cand)
    flagged = np.zeros(0, np.int64)            # flat indices of flag, sorted
    for it in range(passes):
        good = valid & ~flag
        rr, tt = np.divmod(todo, F)
        if rr.size:
            pr = P.predictions(v, good, at=(rr, tt))
            if it > 0:
                c_now = over(rr, tt, np.abs(v[rr, tt] - ref(*pr)))
                cand[rr, tt] = c_now
                rr, tt = rr[c_now], tt[c_now]
                pr = tuple(a[c_now] for a in pr)
            hit.flat[todo] = False
            trust = _trust_at(cand, o1, o2, rr, tt)
            a, b, c = _judge(v, out, good, groups, rr, tt, thr[rr, tt], side, trust, pred=pr)
            res[rr, tt], hit[rr, tt], rep[rr, tt] = a, b, c
            # glitches close together (+-2 frames): each is explained by a side that holds the
            # other - test them again with every such candidate left out
            two = ~b & _any_near(cand, rr, tt, 2)
            if two.any():
                r2, t2 = rr[two], tt[two]
                a, b, c = _judge(v, out, good & ~cand, groups, r2, t2, thr[r2, t2], side, trust[two])
                res[r2, t2], hit[r2, t2], rep[r2, t2] = a, b, c
        if it == 0:
            # a frame where many rows jump at once is a whole-body event (a T-pose first frame,
            # a glitch of the source's own), decided once so that passes do not oscillate
            event = hit.sum(axis=0) > max(3.0, column_share * R)
        hr, ht = np.nonzero(hit)
        hits = hr * F + ht
        live = ~event[ht] & ~held[hr, ht]
        hr, ht, hf = hr[live], ht[live], hits[live]
        fresh = ~flag[hr, ht]
        sc = res[hr, ht] / np.maximum(np.nan_to_num(thr[hr, ht], nan=1.0), 1e-300)
        # per joint and frame only the largest (a spike throws the other rows' rotation
        # predictions; they are judged again without it), then the largest within +-2 frames
        score[hr[fresh], ht[fresh]] = sc[fresh]
        top = fresh.copy()
        for o in (o1, o2):
            oo = o[hr]
            has = oo >= 0
            top[has] &= sc[has] >= score[oo[has], ht[has]]
        score[hr[fresh & ~top], ht[fresh & ~top]] = 0.0
        for d in (-2, -1, 1, 2):
            t2 = ht + d
            ok = (t2 >= 0) & (t2 < F)
            top[ok] &= sc[ok] >= score[hr[ok], t2[ok]]
        score[hr, ht] = 0.0
        f_idx = np.union1d(hf[~fresh], hf[top])          # still hits, and the new ones
        keep = _short_run_idx(f_idx, F, max_run)
        held.flat[f_idx[~keep]] = True
        f_idx = f_idx[keep]
        was = flag.flat[f_idx]
        gone = flagged[~np.isin(flagged, f_idx, assume_unique=True)]
        changed = np.concatenate([f_idx[~was], gone])
        out.flat[flagged] = v.flat[flagged]
        out.flat[f_idx] = rep.flat[f_idx]
        if changed.size == 0:
            break
        flag.flat[flagged] = False
        flag.flat[f_idx] = True
        flagged = f_idx
        # only what had a changed pixel among its neighbours is judged again
        cr, ct = np.divmod(changed, F)
        near_t = (ct[:, None] + np.arange(-4, 5)[None, :]).ravel()
        near_r = np.repeat(cr, 9)
        ok = (near_t >= 0) & (near_t < F)
        mark = np.zeros(v.size, bool)
        mark[near_r[ok] * F + near_t[ok]] = True
        # and the next frames of a new flag, screened or not: a glitch can hide behind another
        nf = f_idx[~was]
        nt = nf % F
        mark2 = np.zeros(v.size, bool)
        mark2[nf[nt > 0] - 1] = True
        mark2[nf[nt < F - 1] + 1] = True
        todo = np.flatnonzero((mark & (screened | cand).ravel())
                              | (mark2 & valid.ravel() & ~flag.ravel()))
    # last, every flagged pixel once more against the final good pixels: still a spike, and
    # replaced by what they predict (a flag of an early pass may have leant on a later one)
    rr, tt = np.nonzero(flag)
    if rr.size:
        good = valid & ~flag
        trust = _trust_at(flag, o1, o2, rr, tt)
        _, b, c = _judge(v, out, good, groups, rr, tt, thr[rr, tt], side, trust)
        flag[rr[~b], tt[~b]] = False
        out[rr, tt] = np.where(b, c, v[rr, tt])
    return flag, out


def _side_motion(v, good, rr, tt, d, reach=12):
    """At (rr, tt): how far a line from side d (-1 before, +1 after, per pixel) can be off,
    from that side's nearest three good pixels v1, v2, v3 (within `reach` frames, at t1, t2,
    t3): (|v1 - the line through v2, v3 at t1|, |v1 - v2| scaled to the distance from t1 to
    the pixel) - the side's curvature and its motion over the extrapolated stretch. NaN where
    the side has fewer than three good pixels within reach."""
    F = v.shape[1]
    curv = np.full(rr.shape, np.nan)
    move = np.full(rr.shape, np.nan)
    for i in range(rr.size):
        r, t, s = int(rr[i]), int(tt[i]), int(d[i])
        at = []
        k = t + s
        while 0 <= k < F and abs(k - t) <= reach and len(at) < 3:
            if good[r, k]:
                at.append(k)
            k += s
        if len(at) < 3:
            continue
        (t1, t2, t3), (v1, v2, v3) = at, (v[r, at[0]], v[r, at[1]], v[r, at[2]])
        curv[i] = abs(v1 - (v2 + (v2 - v3) * (t1 - t2) / (t2 - t3)))
        move[i] = abs(v1 - v2) * abs(t - t1) / abs(t1 - t2)
    return curv, move


def _sound(v, good, rr, tt, thr, d):
    """At (rr, tt): the next pixel on side d (-1 before, +1 after) lies within thr of the line
    through the two beyond it (True where those three are not all good: no evidence)."""
    F = v.shape[1]
    t1, t2, t3 = tt + d, tt + 2 * d, tt + 3 * d
    ok = (t3 >= 0) & (t3 < F)
    c1, c2, c3 = (np.clip(x, 0, F - 1) for x in (t1, t2, t3))
    ok &= good[rr, c1] & good[rr, c2] & good[rr, c3]
    with np.errstate(invalid="ignore"):
        dev = np.abs(v[rr, c1] - 2.0 * v[rr, c2] + v[rr, c3])
    return ~ok | (dev <= thr)


def _trust_at(cand, o1, o2, rr, tt):
    """At (rr, tt): no other row of the pixel's joint is a candidate at that frame."""
    out = np.ones(rr.shape, bool)
    for o in (o1, o2):
        oo = o[rr]
        has = oo >= 0
        out[has] &= ~cand[oo[has], tt[has]]
    return out


def _any_near(mask, rr, tt, width):
    """At (rr, tt): another pixel of mask within +-width frames in the same row."""
    F = mask.shape[1]
    out = np.zeros(rr.shape, bool)
    for d in range(-width, width + 1):
        if d:
            t2 = tt + d
            ok = (t2 >= 0) & (t2 < F)
            out[ok] |= mask[rr[ok], t2[ok]]
    return out


def _short_run_idx(idx, F, longest):
    """For sorted flat indices of a (rows, F) mask: True where in a run of <= longest frames."""
    if idx.size == 0:
        return np.zeros(0, bool)
    r, t = np.divmod(idx, F)
    flat = r * (F + 1) + t                               # a gap between rows
    start = np.ones(idx.size, bool)
    start[1:] = np.diff(flat) != 1
    run_id = np.cumsum(start) - 1
    return np.bincount(run_id)[run_id] <= longest
