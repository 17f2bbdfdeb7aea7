"""Learning gestures from examples: rows that matter, templates, per-gesture thresholds.

    from host.gestures.learn import motion_features, learn_gesture
    feats = motion_features(staff, fps=30.0)            # (F, nfeat) body features at 30 fps
    g = learn_gesture("kick", [ex1, ex2], negatives=[(walk, None)], command="osc:/tv/power 1")

Examples and negatives are frames x features arrays (from motion_features or motion_rows).
A negative may come with a boolean mask of the frames a match is allowed to cover (False =
this stretch holds the gesture itself, ignore matches touching it).

Rows: unless listed, the rows whose motion energy (standard deviation over the example, in
units of the row's typical size) is at least `energy_fraction` of the largest are kept.
Threshold (on the normalised DTW distance, see device/gestures/spring.py):

* positives P = each template's distance to every other example (leave-one-out);
* negatives N = each template's smallest distance to any stretch of any negative;
* both: the geometric mean of max(P) and min(N) when they separate, else 0.95 min(N);
  positives only: 1.5 max(P); negatives only: 0.7 min(N); neither: see below;
* always at most 0.6 times the distance from the template to standing still (its own mean
  pose held), so that a motionless body never matches.

Amplitude tolerance: DTW tolerates a performance up to twice as fast or slow, but not one
twice as big (a hop and a high leap). So every example also becomes templates scaled about its
first frame (its start pose; velocity rows about 0, their value at rest) by AMPLITUDES = 1/2,
1/sqrt 2, 1, sqrt 2, 2 (the same factor-of-two tolerance as in time, fixed a priori), and
every template gets its own threshold by the rule above (its P are its distances to the other
examples, its N its own nearest negative stretch, its own still-distance cap). A scaled copy
that comes close to ordinary motion thus gets a tight threshold of its own instead of
lowering everyone's. amplitudes=(1.0,) turns it off.

Size and tempo together: a copy scaled by a is matched only over stretches a/2 .. 2a times
its length (and 1/2 .. 2 as always: device/gestures/spring.py `tempo_bounds`), in learning
its nearest negative as in recognition. So the velocities size and tempo make together change
by at most the same factor of two: an x2 copy is not matched against motion that is also
faster (a running stride squeezed to half the length of an x2 hop was that copy's nearest
negative and set its threshold), an x1/2 copy not against slower motion.
"""

import numpy as np

from device.gestures.features import NAMES as FEATURE_NAMES
from device.gestures.features import SCALES as FEATURE_SCALES
from device.gestures.features import RATES as FEATURE_RATES
from device.gestures.features import MIRROR as FEATURE_MIRROR
from device.gestures.features import BodyFeatures, FeatureError, mirrored
from device.gestures.library import Gesture
from device.gestures.recognizer import resample
from device.gestures.spring import Spring, dtw_distance, tempo_bounds
from protocol.errors import FormatError

AMPLITUDES = (0.5, 2 ** -0.5, 1.0, 2 ** 0.5, 2.0)
UNIT_SCALES = {"deg": 30.0, "rad": 0.5, "m": 0.1, "cm": 10.0, "mm": 100.0, "in": 4.0}


def _skeleton(staff):
    sk = staff.skeleton
    if isinstance(sk, dict):
        from device.body.skeleton import Skeleton
        sk = Skeleton.from_dict(sk)
    return sk


def body_space_ok(staff):
    """True when the staff has a skeleton whose landmarks body features can find."""
    sk = _skeleton(staff)
    if sk is None:
        return False
    try:
        BodyFeatures(sk)
    except FeatureError:
        return False
    return list(staff.names) == sk.dof_names


def motion_features(staff, fps=30.0):
    """Body features (F, len(FEATURE_NAMES)) of a staff, resampled to fps."""
    sk = _skeleton(staff)
    if sk is None:
        raise FormatError("%s: has no skeleton, so body features cannot be computed (use --rows)"
                          % staff.meta.get("source", "staff"))
    bf = BodyFeatures(sk)
    v = staff.values.T
    if np.isnan(v).any():
        v = _hold(v)
    return resample(bf.batch(v, staff.fps), staff.fps, fps)


def motion_rows(staff, rows, fps=30.0):
    """The named staff rows (F, len(rows)) resampled to fps, and their typical sizes."""
    idx = []
    for r in rows:
        try:
            idx.append(staff.row_index(r))
        except KeyError:
            raise FormatError("%s: no row named %r" % (staff.meta.get("source", "staff"), r)) from None
    v = _hold(staff.values[idx].T)
    scales = np.array([UNIT_SCALES.get(staff.rows[i].unit, max(1e-6, (staff.rows[i].hi - staff.rows[i].lo) / 4))
                       for i in idx])
    return resample(v, staff.fps, fps), scales


def _hold(v):
    """Missing values (NaN) held from the last known one (the first known at the start)."""
    v = np.array(v, float)
    for r in range(v.shape[1]):
        ok = ~np.isnan(v[:, r])
        if not ok.any():
            v[:, r] = 0.0
            continue
        idx = np.where(ok, np.arange(len(v)), 0)
        np.maximum.accumulate(idx, out=idx)
        idx[: int(np.argmax(ok))] = int(np.argmax(ok))
        v[:, r] = v[idx, r]
    return v


def cut(values, fps, start_s, end_s):
    """Frames [start_s, end_s] of values (F, n) sampled at fps."""
    a = max(0, int(round(start_s * fps)))
    b = min(len(values), int(round(end_s * fps)) + 1)
    if b - a < 2:
        raise FormatError("cut %.3f-%.3f s holds fewer than 2 frames" % (start_s, end_s))
    return values[a:b]


def select_rows(examples, scales, energy_fraction=0.35, min_rows=2):
    """Indices of the rows that matter: motion energy >= energy_fraction of the largest."""
    e = np.mean([np.nanstd(x, axis=0) / scales for x in examples], axis=0)
    order = np.argsort(-e)
    keep = [int(i) for i in order if e[i] >= energy_fraction * e[order[0]]]
    if len(keep) < min_rows:
        keep = [int(i) for i in order[:min_rows]]
    return sorted(keep)


def negative_min(template, scales, stream, allowed=None, amplitude=1.0):
    """The smallest normalised distance of template (made with amplitude) to any stretch of
    stream (allowed frames) of a length the recogniser accepts (spring.tempo_bounds)."""
    if len(stream) < 2:
        return np.inf
    dist, start = Spring.best_per_end(template, scales, stream, *tempo_bounds(amplitude))
    if allowed is not None:
        allowed = np.asarray(allowed, bool)
        bad = np.concatenate(([0], np.cumsum(~allowed)))     # forbidden frames before t
        touch = bad[np.arange(len(dist)) + 1] - bad[start] > 0
        dist = np.where(touch, np.inf, dist)
    return float(dist.min())


def still_distance(template, scales):
    """Distance from the template to a body standing still in the template's mean pose."""
    still = np.repeat(template.mean(axis=0)[None], 2 * len(template), axis=0)
    return dtw_distance(template, still, scales)


def learn_gesture(name, examples, negatives=(), rows=None, names=None, scales=None, command="",
                  space="body", fps=30.0, hold_frames=1, energy_fraction=0.35, sources=None,
                  amplitudes=AMPLITUDES, mirror=False):
    """A Gesture from examples (list of frames x all-rows arrays, at fps) and negatives.
    mirror (body space only): the examples done with the other side of the body are templates
    too (a kick taught with the right leg is also found with the left)."""
    names = list(FEATURE_NAMES if names is None else names)
    scales = np.asarray(FEATURE_SCALES if scales is None else scales, float)
    examples = [np.asarray(x, float) for x in examples]
    if not examples:
        raise FormatError("gesture %r: no examples" % name)
    for k, x in enumerate(examples):
        if x.ndim != 2 or x.shape[1] != len(names) or len(x) < 2:
            raise FormatError("gesture %r: example %d must be at least 2 frames x %d rows" % (name, k, len(names)))
    if rows:
        unknown = [r for r in rows if r not in names]
        if unknown:
            raise FormatError("gesture %r: unknown rows %s (known: %s)" % (name, ", ".join(unknown), ", ".join(names)))
        sel = [names.index(r) for r in rows]
    else:
        sel = select_rows(examples, scales, energy_fraction)
    groups = [list(range(len(examples)))]
    sources = list(sources or ["example %d" % k for k in range(len(examples))])
    if mirror:
        if space != "body" or len(names) != len(FEATURE_NAMES):
            raise FormatError("gesture %r: --mirror needs body features (space body)" % name)
        # both sides' rows; the mirrored examples are a second group (their own positives)
        sel = sorted(set(sel) | {int(FEATURE_MIRROR[i]) for i in sel})
        groups.append(list(range(len(examples), 2 * len(examples))))
        sources += [s + " mirrored" for s in sources]
        examples = examples + [mirrored(x) for x in examples]
    sc = scales[sel]
    rates = np.array([n in FEATURE_RATES for n in names])
    base = [x[:, sel] for x in examples]
    amps = sorted(set(float(a) for a in amplitudes)) or [1.0]
    negs = [(np.asarray(s, float)[:, sel], m) for s, m in negatives]
    tpls, thrs, amp_of, src, pos1, neg1, still1 = [], [], [], [], [], [], []
    group_of = {j: grp for grp in groups for j in grp}
    for j, x in enumerate(base):
        for a in amps:
            t = scaled(x, a, rates[sel] if space == "body" else None)
            pos = [dtw_distance(t, base[i], sc) for i in group_of[j] if i != j]
            nmin = min((negative_min(t, sc, s, m, a) for s, m in negs), default=np.inf)
            still = still_distance(t, sc)
            thr = threshold_rule(pos, nmin, still)
            if a == 1.0:
                pos1 += pos
                neg1.append(nmin)
                still1.append(still)
                if not thr > 0:
                    others = [sources[i] for i in group_of[j] if i != j]
                    raise FormatError(_no_threshold(name, sources[j], others, pos, nmin,
                                                    [names[i] for i in sel]))
                if not np.isfinite(thr):
                    raise FormatError("gesture %r: %s: too short (%d frames) to learn a threshold from; "
                                      "give a longer example or more of them" % (name, sources[j], len(x)))
            if not (0 < thr < np.inf):
                continue
            tpls.append(t)
            thrs.append(thr)
            amp_of.append(a)
            src.append(sources[j] + ("" if a == 1.0 else " x%.3g" % a))
    one = [th for th, a in zip(thrs, amp_of) if a == 1.0]
    nmin = min(neg1) if neg1 else np.inf
    learned = {"positive": [round(float(p), 4) for p in pos1],
               "negative_min": round(float(nmin), 4) if np.isfinite(nmin) else None,
               "still": round(float(min(still1)), 4) if still1 else None,
               "amplitudes": amps}
    return Gesture(name, [names[i] for i in sel], sc, tpls, min(one) if one else min(thrs), command,
                   space, fps, hold_frames, src, learned, thrs, amp_of)


def scaled(template, amplitude, rates=None):
    """The template scaled about its first frame (its start pose) by amplitude; rows flagged in
    rates (velocities: a bigger motion is proportionally faster, and at rest they are 0) are
    scaled about 0 instead."""
    t = np.asarray(template, float)
    if amplitude == 1.0:
        return t.copy()
    origin = t[0].copy()
    if rates is not None:
        origin[np.asarray(rates, bool)] = 0.0
    return origin + amplitude * (t - origin)


def _no_threshold(name, source, others, pos, nmin, rows):
    """Why an example's threshold came out 0: it is (inside) another example or a negative,
    or it does not move."""
    same = [o for o, d in zip(others, pos) if not d > 0]
    if same:
        return ("gesture %r: %s and %s hold the same motion (one lies inside the other); give "
                "distinct performances" % (name, source, same[0]))
    if not nmin > 0:
        return "gesture %r: %s: a negative holds this very motion" % (name, source)
    return "gesture %r: the examples do not move in rows %s" % (name, rows)


def threshold_rule(pos, nmin, still):
    """A template's threshold from its distances to the other examples (pos), its nearest
    negative stretch (nmin, inf if none) and its distance to standing still (see above)."""
    pmax = max(pos) if pos else None
    if pmax is not None and np.isfinite(nmin):
        thr = np.sqrt(pmax * nmin) if pmax < nmin else 0.95 * nmin
    elif pmax is not None:
        thr = 1.5 * pmax
    elif np.isfinite(nmin):
        thr = 0.7 * nmin
    else:
        thr = np.inf
    return float(min(thr, 0.6 * still))
