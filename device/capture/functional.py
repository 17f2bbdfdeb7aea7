"""Functional calibration of leg sensors: a still stance, then the first strides of a walk.

    from device.capture.functional import functional_calibration
    res = functional_calibration(skeleton, sensors, still, walk)
    # still, walk: lists of readings {name: {"gyro", "accel", "quat"} | None}, unit data only
    res["mounts"][name]      # R_mount (3, 3): v_link = R_mount v_sensor
    res["world_by"][name]    # W_k (3, 3): the skeleton's world = W_k (that sensor's fused world)
    res["gyro_bias"][name], res["method"][name]

What a unit sees, and nothing else (no optical reference):
  up       z_s = mean accel at rest / |.|: the segment's long axis points up in the stance
  hinge    y_s = the principal axis of the walking gyro orthogonal to z_s (thighs, shanks and feet
           turn mostly about their flexion axis), refined where a hinge joins two sensors:
           knee and ankle are near-hinges, and Seel's condition |w1 x j1| = |w2 x j2| gives
           their axes in both sensors (the hip's abduction, which tilts a PCA axis, cancels);
           the pelvis, which turns mostly about the vertical, takes the thighs' mean axis instead.
           hinge= "seel" (the default): both axes of each pair fitted freely (4 angles);
           "seel-level": both held level in the stance (2 angles); "seel-distal" (the lower-body
           unit's): the proximal axis kept (a thigh's own swing axis, the shank's knee axis),
           only the distal one fitted, level; "pca": the PCA axes. On the real walk the free
           fit tilts each thigh's axis 29-38 deg out of level (the thigh's soft tissue breaks
           the hinge) and turns the right one 37 deg from its swing axis: docs/estimation.md
  sign     y_s and -y_s fit the data alike: each segment's sagittal rate y_s . w correlates
           positively with its shank's (a leg swings together), and a leg's sign makes its knee
           flex positively: knee(t) = integral (y_shank . w_shank - y_thigh . w_thigh) dt from
           the straight stance, its 95th percentile over the strides outweighs its 5th (gyro only: any chip)
  heading  with x_s = y_s x z_s, R_mount = [x_s; y_s; z_s] (rows). The subject's left L is the
           mean horizontal knee axis; each sensor's world correction W_k turns its segment's
           y axis in the stance onto L and the forward L x up onto the skeleton's +x (one heading
           per sensor: fused chips' headings differ by several degrees near steel and floors)
So the stance is the skeleton's home pose (every segment upright, facing forward), the
estimator's starting pose. A sensor without fused orientation (gyro/accel chips) gets the
gravity and hinge axes (and the pelvis its walk-start acceleration): its heading in the stance
is its segment's, which is all a gyro/accel filter started there needs.
"""

import numpy as np

from device.capture.rot import exp_so3, quat_to_mat


def _mean(rows):
    return np.mean(np.asarray(rows, float), 0)


def _mean_rot(quats):
    q = np.asarray(quats, float)
    q = q * np.sign(q @ q[0])[:, None]
    m = q.mean(0)
    return quat_to_mat(m / np.linalg.norm(m))


def _collect(frames, name, key):
    return [r[name][key] for r in frames if r.get(name) is not None and r[name].get(key) is not None]


def hinge_axis(gyro_rad_s, up):
    """The principal axis of the angular velocities orthogonal to up (unit, sign arbitrary)."""
    w = np.asarray(gyro_rad_s, float)
    P = np.eye(3) - np.outer(up, up)
    wp = w @ P
    vals, vecs = np.linalg.eigh(wp.T @ wp)
    y = vecs[:, -1]
    return y / np.linalg.norm(y), float(vals[-1] / max(vals.sum(), 1e-12))


def _theta_y(R):
    """Angle (rad) of R about its y axis: atan2(R[0,2], R[2,2]) (a flexion angle)."""
    return np.arctan2(R[..., 0, 2], R[..., 2, 2])


def walk_onset(frames, gyro_rad_s=0.5, start=0):
    """First frame at or after start where any sensor turns faster than gyro_rad_s (None: never)."""
    for k in range(start, len(frames)):
        for r in frames[k].values():
            if r is not None and np.linalg.norm(r["gyro"]) > gyro_rad_s:
                return k
    return None


HINGES = ("seel", "seel-level", "seel-distal", "pca")


def functional_calibration(skeleton, sensors, still, walk, hinge="seel"):
    """sensors: [{"name", "link" (index)}]; still / walk: readings lists (see module doc)."""
    if hinge not in HINGES:
        raise ValueError("functional calibration: hinge %r is not one of %s" % (hinge, ", ".join(HINGES)))
    up_w = -skeleton.gravity / np.linalg.norm(skeleton.gravity)
    links = {s["name"]: skeleton.links[s["link"]].name for s in sensors}
    bias, z_s, Rs0, y_s, method = {}, {}, {}, {}, {}
    for name in links:
        g = _collect(still, name, "gyro")
        if not g:
            raise ValueError("functional calibration: sensor %s has no still readings" % name)
        bias[name] = _mean(g)
        f = _mean(_collect(still, name, "accel"))
        z_s[name] = f / np.linalg.norm(f)
        q = _collect(still, name, "quat")
        Rs0[name] = _mean_rot(q) if q else None
    for name, ln in links.items():
        if ln == "pelvis":
            continue
        w = np.asarray(_collect(walk, name, "gyro"), float).reshape(-1, 3) - bias[name]
        if len(w) < 10:
            raise ValueError("functional calibration: sensor %s has no walking readings" % name)
        y_s[name], share = hinge_axis(w, z_s[name])
        method[name] = "still+hinge (%.0f%% of the swing about it)" % (100 * share)
    # hinge joints (Seel, Raisch and Schauer 2012): the flexion axis j1 in the proximal sensor
    # and j2 in the distal one satisfy |w1 x j1| = |w2 x j2| at every instant (the angular
    # velocity orthogonal to the axis is the same on both sides): refine the segments' PCA axes
    # by least squares on that, knee (thigh, shank) then ankle (shank, foot). Unlike the PCA of
    # one segment, this is blind to the hip's abduction, which moves thigh and shank alike.
    level = hinge == "seel-level"
    distal = hinge == "seel-distal"
    for side in ("lr" if hinge in ("seel", "seel-level", "seel-distal") else ""):
        for a, b in (("thigh", "shank"), ("shank", "foot")):
            na = next((n for n, ln in links.items() if ln == side + "_" + a and not n.endswith("_low_imu")), None)
            nb = next((n for n, ln in links.items() if ln == side + "_" + b and not n.endswith("_low_imu")), None)
            if na is None or nb is None:
                continue
            w1, w2 = _gyros(walk, na, bias[na]), _gyros(walk, nb, bias[nb])
            if distal:
                # the proximal axis kept (the thigh's own swing axis; the shank's knee axis),
                # the distal one fitted level to it
                _, j2 = hinge_pair_level(w1, w2, y_s[na], y_s[nb], z_s[na], z_s[nb], fit_proximal=False)
                if a == "thigh":
                    method[nb] = "still+knee hinge (level, to the thigh's axis)"
                else:
                    method[nb] = "still+ankle hinge (level, to the shank's axis)"
                y_s[nb] = j2
                continue
            elif level:
                j1, j2 = hinge_pair_level(w1, w2, y_s[na], y_s[nb], z_s[na], z_s[nb])
            else:
                j1, j2 = hinge_pair(w1, w2, y_s[na], y_s[nb])
            if a == "thigh":
                y_s[na], y_s[nb] = j1, j2
                method[na] = method[nb] = "still+knee hinge"
            else:
                y_s[nb] = j2
                method[nb] = "still+ankle hinge"
    rate = {n: _rates(walk, n, y_s[n], bias[n]) for n in y_s}
    for side in "lr":
        names = [n for n, ln in links.items() if ln.startswith(side + "_")]
        ref = next((n for n in names if links[n] == side + "_shank"), None)
        if ref is None:
            continue
        # a leg's segments swing together: each segment's sagittal rate correlates positively
        # with the shank's (thigh and shank in swing, foot and shank in push-off)
        for n in names:
            if n != ref and _corr(rate[n], rate[ref]) < 0:
                y_s[n], rate[n] = -y_s[n], -rate[n]
        th = next((n for n in names if links[n] == side + "_thigh"), None)
        if th is not None:
            # the knee flexes positively from the straight stance: knee(t) = integral of
            # (y_shank . w_shank - y_thigh . w_thigh) dt, its median over the strides > 0
            ok = np.isfinite(rate[ref]) & np.isfinite(rate[th])
            if ok.sum() >= 10:
                knee = np.cumsum((rate[ref] - rate[th])[ok])
            else:
                # (thigh and shank hardly ever valid in one frame: each one's own samples, a
                # lost one counting 0 rad/s)
                knee = np.cumsum(np.nan_to_num(rate[ref]) - np.nan_to_num(rate[th]))
            # flexion reaches far further than hyperextension: the 95th percentile outweighs
            # the 5th (robust to the few degrees the integrated gyro drifts)
            if np.percentile(knee, 95) + np.percentile(knee, 5) < 0:
                for n in names:
                    y_s[n], rate[n] = -y_s[n], -rate[n]
    # the subject's left: mean horizontal axis of thighs and shanks in the (fused) world
    L = np.zeros(3)
    fused = any(Rs0[n] is not None for n in links)
    for n, ln in links.items():
        if n in y_s and Rs0[n] is not None and ln.split("_")[-1] in ("thigh", "shank"):
            v = Rs0[n] @ y_s[n]
            L += v - up_w * (v @ up_w)
    mounts, world_by = {}, {}
    if fused and np.linalg.norm(L) < 1e-6:
        raise ValueError("functional calibration: no thigh or shank with a fused orientation")
    L = L / max(np.linalg.norm(L), 1e-12)
    for n, ln in links.items():
        if ln == "pelvis" and Rs0[n] is not None:
            y_s[n] = Rs0[n].T @ L
            method[n] = "still+thighs' axis"
        elif ln == "pelvis":
            # no fused orientation: forward is where the pelvis accelerates as the walk starts
            # (the first 0.5 s of it), left = up x forward
            a = np.asarray(_collect(walk[:50], n, "accel"), float).mean(0)
            x = a - z_s[n] * (a @ z_s[n])
            y_s[n] = np.cross(z_s[n], x / np.linalg.norm(x))
            method[n] = "still+walk-start acceleration"
        z = z_s[n]
        y = y_s[n] - z * (y_s[n] @ z)
        y /= np.linalg.norm(y)
        x = np.cross(y, z)
        M = np.array([x, y, z])
        mounts[n] = M
        if Rs0[n] is not None:
            world_by[n] = heading_to_home(Rs0[n], M, up_w)
    world = world_by.get(next(iter(links)), np.eye(3))
    # gyro/accel-only sensors start their filters in the stance = home pose: R_w(sensor) =
    # R_w(link) R_mount with every link rotation the identity at home
    ahrs = {n: mounts[n] for n in links if Rs0[n] is None}
    return {"mounts": mounts, "world_by": world_by, "world": world, "gyro_bias": bias,
            "method": method, "ahrs": ahrs, "quality": {n: len(_collect(still, n, "gyro")) for n in links},
            "left_world": L}


def heading_to_home(R_ws, mount, up):
    """W_k: the heading rotation taking a sensor's world onto the skeleton's, where its segment
    (R_ws: the sensor's orientation in the stance, (3, 3) or a still window (N, 3, 3), and its
    mount) faces forward: its y axis (left) turned onto the skeleton's +y."""
    R_ws = np.asarray(R_ws, float)
    if R_ws.ndim == 3:
        R_ws = _mean_rot([_mat_quat(R) for R in R_ws])
    yw = R_ws @ mount[1]                    # the segment's left in the sensor's world
    yw = yw - up * (yw @ up)
    ey = np.array([0.0, 1.0, 0.0])
    psi = np.arctan2(np.cross(yw, ey) @ up, yw @ ey)
    return exp_so3(psi * up)


def _mat_quat(R):
    from device.capture.rot import mat_to_quat
    return mat_to_quat(R)


def _gyros(walk, name, bias):
    """(N, 3) gyro minus bias over the walk; NaN rows where the sensor is stale."""
    return np.array([np.full(3, np.nan) if r.get(name) is None else np.asarray(r[name]["gyro"], float) - bias
                     for r in walk]).reshape(-1, 3)


def _unit(th, ph):
    return np.array([np.cos(th) * np.cos(ph), np.cos(th) * np.sin(ph), np.sin(th)])


def hinge_pair(w1, w2, j1, j2):
    """Seel's hinge-axis identification: unit j1, j2 (sensor frames) minimising
    sum_t (|w1_t x j1| - |w2_t x j2|)^2, started from j1, j2 (scipy least_squares)."""
    from scipy.optimize import least_squares
    ok = np.isfinite(w1).all(1) & np.isfinite(w2).all(1)
    w1, w2 = w1[ok], w2[ok]

    def sph(j):
        return [np.arcsin(np.clip(j[2], -1, 1)), np.arctan2(j[1], j[0])]

    def res(x):
        a, b = _unit(x[0], x[1]), _unit(x[2], x[3])
        # e_t = |w1 x j1| - |w2 x j2|
        return np.linalg.norm(np.cross(w1, a), axis=1) - np.linalg.norm(np.cross(w2, b), axis=1)
    x = least_squares(res, sph(j1) + sph(j2)).x
    a, b = _unit(x[0], x[1]), _unit(x[2], x[3])
    # the same line as the starting axes (the cost cannot tell j from -j)
    return (a if a @ j1 >= 0 else -a), (b if b @ j2 >= 0 else -b)


def hinge_pair_level(w1, w2, j1, j2, z1, z2, fit_proximal=True):
    """Seel's hinge condition with both axes held level in the stance: j_k = cos(a_k) e_k +
    sin(a_k) (z_k x e_k), e_k the start axis made orthogonal to the sensor's up z_k (a straight
    standing leg's knee axis is horizontal; free, the 4-parameter fit tilts a thigh's axis 30-40
    deg out of level on the real walk, where the thigh's soft tissue breaks the hinge)."""
    from scipy.optimize import least_squares
    ok = np.isfinite(w1).all(1) & np.isfinite(w2).all(1)
    w1, w2 = w1[ok], w2[ok]

    def basis(j, z):
        e = j - z * (j @ z)
        e = e / np.linalg.norm(e)
        return e, np.cross(z, e)
    e1, f1 = basis(j1, z1)
    e2, f2 = basis(j2, z2)

    def res(x):
        a = np.cos(x[0]) * e1 + np.sin(x[0]) * f1
        b = np.cos(x[1]) * e2 + np.sin(x[1]) * f2
        # e_t = |w1 x j1| - |w2 x j2|
        return np.linalg.norm(np.cross(w1, a), axis=1) - np.linalg.norm(np.cross(w2, b), axis=1)
    if fit_proximal:
        x = least_squares(res, [0.0, 0.0]).x
    else:
        x = [0.0, least_squares(lambda v: res([0.0, v[0]]), [0.0]).x[0]]
    return np.cos(x[0]) * e1 + np.sin(x[0]) * f1, np.cos(x[1]) * e2 + np.sin(x[1]) * f2


def _rates(walk, name, y, bias):
    """y . (gyro - bias) over the walk (NaN where the sensor is stale)."""
    return np.array([np.nan if r.get(name) is None else (np.asarray(r[name]["gyro"], float) - bias) @ y
                     for r in walk])


def _corr(a, b):
    ok = np.isfinite(a) & np.isfinite(b)
    return float(np.corrcoef(a[ok], b[ok])[0, 1]) if ok.sum() > 2 else 1.0
