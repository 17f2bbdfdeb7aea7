"""Support phases of the person's feet, flight spans, and the weight-shift schedule for balance.

    from host.retarget.support import foot_contacts, swings, flights
    cl, cr = foot_contacts(world_pts, fps)        # (F,) bool each: the foot stands on the floor
    flights(cl, cr, fps)                          # [(start_s, stop_s)] with both feet off

A foot stands when its lowest point (ankle or toe) is within 0.07 leg lengths of the floor (the
clip's 3rd percentile of foot heights) and moves horizontally under 1.0 leg lengths per second;
single frames that flicker are merged (phases shorter than 0.1 s join their neighbours).
"""

import numpy as np

MIN_PHASE_S = 0.1
HEIGHT_LEGS = 0.07
SPEED_LEGS_PER_S = 1.0


def _fill_short(c, n):
    """Runs shorter than n frames take their neighbours' value (both values, shortest first)."""
    c = c.copy()
    for _ in range(3):
        edges = np.flatnonzero(np.diff(c.astype(np.int8))) + 1
        starts = np.r_[0, edges]
        stops = np.r_[edges, c.size]
        changed = False
        for a, b in zip(starts, stops):
            if b - a < n and (a > 0 or b < c.size):
                c[a:b] = c[a - 1] if a > 0 else c[b]
                changed = True
        if not changed:
            break
    return c


def foot_contacts(world, fps):
    """(left, right) contact flags per frame from world points (Z up) of ankles and toes."""
    leg = np.median(np.linalg.norm(world["l_hip"] - world["l_knee"], axis=1)
                    + np.linalg.norm(world["l_knee"] - world["l_ankle"], axis=1))
    low = {}
    for s in "lr":
        cands = [world[s + "_ankle"]] + ([world[s + "_toe"]] if s + "_toe" in world else [])
        z = np.min([c[:, 2] for c in cands], axis=0)
        # horizontal speed of the foot's ankle (central differences), metres per second
        xy = world[s + "_ankle"][:, :2]
        v = np.linalg.norm(np.gradient(xy, axis=0), axis=1) * fps if xy.shape[0] > 1 else np.zeros(1)
        low[s] = (z, v)
    floor = np.percentile(np.r_[low["l"][0], low["r"][0]], 3)
    n = max(1, int(round(MIN_PHASE_S * fps)))
    out = []
    for s in "lr":
        z, v = low[s]
        c = (z - floor < HEIGHT_LEGS * leg) & (v < SPEED_LEGS_PER_S * leg)
        out.append(_fill_short(c, n))
    return out[0], out[1]


def runs(flag):
    """[(start, stop)] frame ranges where flag is True (stop exclusive)."""
    f = np.r_[False, np.asarray(flag, bool), False].astype(np.int8)
    d = np.diff(f)
    return list(zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)))


def flights(cl, cr, fps):
    """[(start_s, stop_s)] where neither foot stands."""
    return [(a / fps, b / fps) for a, b in runs(~(np.asarray(cl) | np.asarray(cr)))]


def weight_schedule(swing_l, swing_r, fps, ramp_s):
    """(F,) in [-1, 1]: +1 the weight on the left foot (the right one swings), -1 on the right,
    0 between the feet; it ramps over ramp_s before a swing starts and after it ends."""
    F = len(swing_l)
    s = np.zeros(F)
    n = max(1, int(round(ramp_s * fps)))
    t = np.arange(F)
    for flag, sign in ((swing_r, 1.0), (swing_l, -1.0)):
        for a, b in runs(flag):
            # 1 on [a, b), smooth ramps over n frames on both sides (u = (1 - cos(pi r)) / 2,
            # no jump in acceleration at either end)
            r = np.clip(np.minimum((t - (a - n)) / n, ((b - 1 + n) - t) / n), 0.0, 1.0)
            s += sign * 0.5 * (1.0 - np.cos(np.pi * r))
    return np.clip(s, -1.0, 1.0)
