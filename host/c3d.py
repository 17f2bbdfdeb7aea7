"""C3D marker captures: import as joint angles through inverse kinematics; export feature points.

    from host.c3d import read_markers, read_c3d, write_markers_c3d
    labels, pos_m, fps = read_markers("walk.c3d")     # (F, K, 3) metres, NaN = not seen
    staff = read_c3d("walk.c3d")                      # the built-in floating human, 54 rows
    write_markers_c3d("out.c3d", names, pos_m, fps)   # points in mm, via ezc3d

Import: marker labels ("Subject:LASI" -> "LASI") are matched to the built-in human model by a
table of the common clinical marker sets (Plug-in Gait / Helen Hayes / CGM: LASI, RASI, SACR,
LPSI, LTHI, LKNE, LTIB/LSHA, LANK, LHEE, LTOE/L.TO, LSHO, LELB, LWRI, head markers, ...), or
directly when labels are the skeleton's own feature names (a C3D written by `export`). The
model is scaled to the subject (leg length from the ASIS and ankle markers), the capture's
up axis is found (head above feet) and turned to +Z, the root is started from the pelvis
markers, and device.body.ik.ik_frames solves every frame by damped least squares, warm-started.
Frames with fewer than `min_markers` markers are missing. Rows the markers cannot see (arms
of a lower-limb set) stay at home. Needs ezc3d (pip).
"""

import os
import sys

import numpy as np

from protocol.errors import FormatError

UNITS_M = {"mm": 0.001, "cm": 0.01, "m": 1.0, "in": 0.0254}

# marker -> (link, local position in metres for the 1.75 m model); right side mirrored (y -> -y)
_SIDED = {
    "ASI": ("pelvis", (0.06, 0.12, 0.08)), "PSI": ("pelvis", (-0.11, 0.045, 0.09)),
    "THI": ("thigh", ("mid", 0.08)), "KNE": ("thigh", ("end", 0.05)),
    "TIB": ("shank", ("mid", 0.05)), "SHA": ("shank", ("mid", 0.05)),
    "ANK": ("shank", ("end", 0.035)), "MAK": ("shank", ("end", -0.035)),
    "HEE": ("foot", (-0.06, 0.0, -0.04)), "TOE": ("foot", (0.15, 0.0, -0.03)), ".TO": ("foot", (0.15, 0.0, -0.03)),
    "SHO": ("upper_arm", (0.0, 0.02, 0.04)), "ELB": ("forearm", (0.0, 0.035, 0.0)),
    "WRI": ("hand", (0.0, 0.02, 0.0)), "FHD": ("head", (0.08, 0.06, 0.12)), "BHD": ("head", (-0.08, 0.06, 0.08)),
}
_MIDDLE = {"SACR": ("pelvis", (-0.12, 0.0, 0.08)), "VSAC": ("pelvis", (-0.12, 0.0, 0.08)),
           "C7": ("neck", (-0.07, 0.0, 0.0)), "CLAV": ("chest", (0.08, 0.0, 0.17)),
           "STRN": ("chest", (0.1, 0.0, 0.05)), "T10": ("chest", (-0.1, 0.0, 0.0)),
           "THEA": ("head", (0.0, 0.0, 0.2)), "FHEA": ("head", (0.1, 0.0, 0.1)),
           "RHEA": ("head", (0.0, -0.08, 0.1)), "LHEA": ("head", (0.0, 0.08, 0.1))}


def _require_ezc3d():
    try:
        import ezc3d
    except ImportError:
        raise FormatError("C3D needs the ezc3d package (pip install ezc3d)") from None
    return ezc3d


def read_markers(path):
    """(labels, positions (F, K, 3) in metres with NaN where not seen, fps) of a C3D file."""
    ezc3d = _require_ezc3d()
    if not os.path.exists(path):
        raise OSError(2, "No such file or directory", str(path))
    try:
        c = ezc3d.c3d(str(path))
    except Exception as e:  # ezc3d raises plain RuntimeError/IOError on bad files
        raise FormatError("%s: not a readable C3D file (%s)" % (path, str(e).splitlines()[0] if str(e) else type(e).__name__)) from None
    pt = c["parameters"]["POINT"]
    labels = [str(s).strip() for s in pt["LABELS"]["value"]]
    fps = float(np.ravel(pt["RATE"]["value"])[0])
    unit = (pt.get("UNITS", {}).get("value") or ["mm"])[0].strip().lower()
    scale = UNITS_M.get(unit)
    if scale is None:
        raise FormatError("%s: unknown POINT:UNITS %r" % (path, unit))
    pts = np.asarray(c["data"]["points"], float)[:3]            # (3, K, F)
    if not fps > 0 or pts.shape[1] != len(labels):
        raise FormatError("%s: POINT:RATE or LABELS do not fit the data" % path)
    pos = np.transpose(pts, (2, 1, 0)) * scale
    pos[np.all(pos == 0.0, axis=2)] = np.nan                    # (0, 0, 0) = not seen in C3D
    return labels, pos, fps


def _bare(label):
    return label.split(":")[-1].strip()


def marker_table(skeleton):
    """{marker label: (link name, local (3,) m)} of the clinical sets on this human skeleton."""
    out = {}
    def local(link, spec):
        if isinstance(spec[0], str):                             # ("mid"|"end", lateral)
            child = [c for c in skeleton.children(skeleton.link_index(link))]
            end = skeleton.links[child[0]].offset if child else np.zeros(3)
            p = end * (0.5 if spec[0] == "mid" else 1.0)
            return p + np.array([0.0, spec[1], 0.0])
        return np.array(spec, float) * _height_scale(skeleton)
    for key, (part, spec) in _SIDED.items():
        for side, sgn in (("L", 1.0), ("R", -1.0)):
            link = part if part in ("pelvis", "head") else "%s_%s" % (side.lower(), part)
            if link not in skeleton.link_names:
                continue
            p = local(link, spec) * np.array([1.0, sgn, 1.0])
            out[side + key] = (link, p)
    for key, (link, spec) in _MIDDLE.items():
        if link in skeleton.link_names:
            out[key] = (link, local(link, spec))
    return out


def _height_scale(skeleton):
    thigh = skeleton.links[skeleton.link_index("l_shank")].offset if "l_shank" in skeleton.link_names else None
    return 1.0 if thigh is None else float(np.linalg.norm(thigh)) / 0.424


def _up_rotation(labels, pos):
    """Rotation taking the capture's up axis (head/shoulders above feet) to +Z."""
    top = [i for i, l in enumerate(labels) if _bare(l)[1:] in ("SHO", "ASI", "FHD") or _bare(l) in ("THEA", "C7", "SACR")]
    low = [i for i, l in enumerate(labels) if _bare(l)[1:] in ("ANK", "HEE", "TOE", ".TO")]
    if not top or not low:
        return np.eye(3)
    d = np.nanmean(pos[:, top].reshape(-1, 3), axis=0) - np.nanmean(pos[:, low].reshape(-1, 3), axis=0)
    if not np.all(np.isfinite(d)):
        return np.eye(3)
    k = int(np.argmax(np.abs(d)))
    up = np.zeros(3)
    up[k] = np.sign(d[k])
    from host.render.figure import up_rotation
    class _G:
        gravity = -up
    return up_rotation(_G)


def read_c3d(path, min_markers=4, max_frames=None, report=True, **_):
    """A C3D marker capture as a staff of the built-in floating human (joint angles by IK).

    The IK shows its progress (host/progress.py: a bar on a terminal, plain lines in a log) and,
    with report (default), prints a fit report to stderr (fit_report): markers matched of the
    file's labels, frames solved, residual RMS and max per marker; meta["fit"] holds it."""
    from device.body.human import human_model
    from device.body.ik import ik_frames
    from device.body.kinematics import forward_kinematics
    from host.staff import Row, Staff
    labels, pos, fps = read_markers(path)
    if max_frames:
        pos = pos[:max_frames]
    W = _up_rotation(labels, pos)
    pos = pos @ W.T
    base = human_model(floating=True)
    table = marker_table(base)
    feats = [(k, _bare(l)) for k, l in enumerate(labels)]
    own = set(base.feature_names)
    use = [(k, b) for k, b in feats if b in own]
    mode = "features" if len(use) >= min_markers else "table"
    if mode == "table":
        seen, use = set(), []
        for k, b in feats:
            if b in table and b not in seen and np.isfinite(pos[:, k]).any():
                seen.add(b)
                use.append((k, b))
    if len(use) < min_markers:
        raise FormatError("%s: only %d markers match the human model (need %d): labels %s"
                          % (path, len(use), min_markers, ", ".join(_bare(l) for l in labels[:8])))
    idx, names = [k for k, _ in use], [b for _, b in use]
    P = pos[:, idx]                                              # (F, K, 3)
    sk = base
    if mode == "table":
        # scale the model to the subject: ASIS-to-ankle distance, measured vs model
        pairs = [(a, b) for a, b in (("LASI", "LANK"), ("RASI", "RANK")) if a in names and b in names]
        if pairs:
            meas = np.nanmedian([np.linalg.norm(P[:, names.index(a)] - P[:, names.index(b)], axis=1) for a, b in pairs])
            model = np.mean([_table_distance(base, table, a, b) for a, b in pairs])
            if np.isfinite(meas) and meas > 0:
                sk = human_model(height_m=1.75 * meas / model, floating=True)
                table = marker_table(sk)
        sk = _with_markers(sk, names, table)
    q0 = _initial_pose(sk, names, P)
    ok = np.isfinite(P).all(axis=2).sum(axis=1) >= min_markers
    Q = np.full((P.shape[0], sk.ndof), np.nan)
    frames = np.flatnonzero(ok)
    if frames.size:
        from host.progress import progress
        bar = progress(total=int(frames.size), desc="%s: IK" % os.path.basename(str(path)), unit="frame",
                       quiet=not report)
        try:
            Q[frames] = ik_frames(sk, names, P[frames], q0=q0, damping=0.1, progress=bar.update)
        finally:
            bar.close()
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs]
    meta = {"source": os.path.basename(str(path)), "markers": len(names)}
    st = Staff(Q.T, rows, fps=fps, bits=16, skeleton=sk, meta=meta)
    fit = forward_kinematics(sk, np.nan_to_num(Q[frames])).feature_pos_m if frames.size else None
    if fit is not None:
        fidx = [sk.feature_names.index(n) for n in names]
        err = np.linalg.norm(fit[:, fidx] - P[frames], axis=2)
        st.meta["ik_rms_m"] = float(np.sqrt(np.nanmean(err ** 2)))
        with np.errstate(invalid="ignore"):
            st.meta["fit"] = {"labels": len(labels), "matched": names, "mode": mode,
                              "frames": int(frames.size), "frames_total": int(P.shape[0]),
                              "rms_mm": [float(np.sqrt(np.nanmean(e ** 2)) * 1000) if np.isfinite(e).any() else None
                                         for e in err.T],
                              "max_mm": [float(np.nanmax(e) * 1000) if np.isfinite(e).any() else None
                                         for e in err.T]}
        if report:
            print(fit_report(st.meta["fit"], os.path.basename(str(path))), file=sys.stderr)
    return st


def fit_report(fit, name="c3d"):
    """The fit as text: a summary line, then one line per marker (worst first)."""
    rms = [r for r in fit["rms_mm"] if r is not None]
    lines = ["%s: %d of %d markers matched the human model (%s), %d of %d frames solved, residual "
             "RMS %.1f mm" % (name, len(fit["matched"]), fit["labels"], fit["mode"], fit["frames"],
                              fit["frames_total"], float(np.sqrt(np.mean(np.square(rms)))) if rms else float("nan"))]
    order = sorted(range(len(fit["matched"])), key=lambda k: -(fit["rms_mm"][k] or 0.0))
    lines.append("  %-12s %8s %8s" % ("marker", "rms mm", "max mm"))
    for k in order:
        r, m = fit["rms_mm"][k], fit["max_mm"][k]
        lines.append("  %-12s %8s %8s" % (fit["matched"][k], "-" if r is None else "%.1f" % r,
                                          "-" if m is None else "%.1f" % m))
    return "\n".join(lines)


def _table_distance(sk, table, a, b):
    from device.body.kinematics import forward_kinematics
    pose = forward_kinematics(sk, sk.home)
    def world(name):
        link, p = table[name]
        i = sk.link_index(link)
        return pose.link_pos_m[i] + pose.link_rot[i] @ p
    return float(np.linalg.norm(world(a) - world(b)))


def _with_markers(sk, names, table):
    """The skeleton with the named markers as feature points."""
    from device.body.skeleton import Skeleton
    d = sk.to_dict()
    have = {f["name"] for f in d["features"]}
    for n in names:
        if n not in have:
            link, p = table[n]
            d["features"].append({"name": n, "link": link, "kind": "marker",
                                  "position": [float(x) for x in p], "orientation": [1, 0, 0, 0]})
    return Skeleton.from_dict(d)


def _initial_pose(sk, names, P):
    """A first guess for frame 0: root at the markers' centre, yaw from left-right markers."""
    q = sk.home.copy()
    first = next((f for f in range(P.shape[0]) if np.isfinite(P[f]).all(axis=1).sum() >= 3), None)
    if first is None:
        return q
    p = P[first]
    pelvis = [names.index(n) for n in ("LASI", "RASI", "SACR", "VSAC", "LPSI", "RPSI") if n in names]
    centre = np.nanmean(p[pelvis] if pelvis else p, axis=0)
    for j, n in enumerate(("root_tx", "root_ty", "root_tz")):
        if n in sk._dof_index:
            q[sk.dof_index(n)] = centre[j] - (0.05 if n == "root_tz" and pelvis else 0.0)
    for a, b in (("LASI", "RASI"), ("LHEE", "RHEE"), ("LSHO", "RSHO"), ("LKNE", "RKNE")):
        if a in names and b in names:
            left = p[names.index(a)] - p[names.index(b)]
            if np.all(np.isfinite(left)):
                if "root_yaw" in sk._dof_index:
                    q[sk.dof_index("root_yaw")] = np.degrees(np.arctan2(-left[0], left[1]))
                break
    return np.clip(q, sk.lo, sk.hi)


def write_markers_c3d(path, names, pos_m, fps):
    """Write feature-point trajectories (F, K, 3) metres as a C3D file (mm), NaN = not seen."""
    ezc3d = _require_ezc3d()
    pos = np.asarray(pos_m, float)
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [float(fps)]
    c["parameters"]["POINT"]["LABELS"]["value"] = list(names)
    c["parameters"]["POINT"]["UNITS"]["value"] = ["mm"]
    pts = np.ones((4, len(names), pos.shape[0]))
    pts[:3] = np.transpose(pos, (2, 1, 0)) * 1000.0
    c["data"]["points"] = pts
    c.write(str(path))
