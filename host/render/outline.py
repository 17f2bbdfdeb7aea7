"""The outline (shape) description of a body: capsules, spheres and boxes fixed to its links.

    from host.render.outline import load_outline, default_outline, body_segments
    shapes = default_outline(skeleton)                 # a capsule from each link to each child
    shapes = load_outline("robot_outline.json", skeleton)
    segs, widths, colours = body_segments(shapes, skeleton, pose, frame)   # world line segments

JSON:
    {"format": "motionstaff-outline", "version": 1,
     "shapes": [{"link": "l_thigh", "kind": "capsule", "from": [0, 0, 0], "to": [0, 0, -0.42],
                 "radius_m": 0.07, "colour": "#3b6ea5"},
                {"link": "head", "kind": "sphere", "center": [0, 0, 0.1], "radius_m": 0.11},
                {"link": "chest", "kind": "box", "center": [0, 0, 0.1], "size": [0.2, 0.34, 0.3]}]}
Points are metres in the link's frame. A renderer draws a capsule as a thick round-capped line,
a sphere as a short capsule, and a box by its 12 edges, so one outline serves the matplotlib
render and the browser viewer alike. Any body can play any motion: the outline belongs to the
body that plays it.
"""

import json

import numpy as np

from protocol.errors import FormatError

FORMAT = "motionstaff-outline"
KINDS = ("capsule", "sphere", "box")
LEFT, RIGHT, MID = "#d1495b", "#2e86ab", "#444444"
_BOX_EDGES = [(0, 1), (1, 3), (3, 2), (2, 0), (4, 5), (5, 7), (7, 6), (6, 4), (0, 4), (1, 5), (2, 6), (3, 7)]


def _side_colour(name):
    n = name.lower()
    if n.startswith(("l_", "left", "l.")) or (name[:1] == "L" and name[1:2].isupper()):
        return LEFT
    if n.startswith(("r_", "right", "r.")) or (name[:1] == "R" and name[1:2].isupper()):
        return RIGHT
    return MID


def body_size_m(skeleton):
    """The largest extent of the body at its home pose (metres)."""
    from device.body.kinematics import forward_kinematics
    p = forward_kinematics(skeleton, skeleton.home).link_pos_m
    return max(float(np.max(p.max(axis=0) - p.min(axis=0))), 1e-3)


def default_outline(skeleton):
    """A capsule from every link's origin to each child's origin; the radius grows with the
    link's mass and with the body's size (a 1.7 m human: 2.5-6 cm)."""
    size = body_size_m(skeleton)
    shapes = []
    for i, ln in enumerate(skeleton.links):
        for c in skeleton.children(i):
            off = skeleton.links[c].offset
            if np.linalg.norm(off) < 1e-6:
                continue
            r = size / 1.7 * min(0.02 + 0.006 * np.sqrt(max(ln.mass, 0.0)), 0.06)
            shapes.append({"link": ln.name, "kind": "capsule", "from": [0.0, 0.0, 0.0],
                           "to": [float(x) for x in off], "radius_m": float(max(r, 1e-4)),
                           "colour": _side_colour(skeleton.links[c].name)})
    if not shapes:      # a single link: a small sphere at it
        shapes.append({"link": skeleton.links[0].name, "kind": "sphere", "center": [0, 0, 0],
                       "radius_m": 0.05, "colour": MID})
    return shapes


def check_outline(doc, skeleton, where="outline"):
    """The validated list of shapes of an outline document."""
    if not isinstance(doc, dict) or doc.get("format", FORMAT) != FORMAT:
        raise FormatError("%s: not a %s document" % (where, FORMAT))
    shapes = doc.get("shapes")
    if not isinstance(shapes, list) or not shapes:
        raise FormatError("%s: 'shapes' must be a non-empty list" % where)
    names = set(skeleton.link_names)
    for i, s in enumerate(shapes):
        at = "%s: shapes[%d]" % (where, i)
        if not isinstance(s, dict):
            raise FormatError("%s: must be an object" % at)
        if s.get("link") not in names:
            raise FormatError("%s: link %r is not a link of the body" % (at, s.get("link")))
        if s.get("kind") not in KINDS:
            raise FormatError("%s: kind must be one of %s" % (at, "/".join(KINDS)))
        keys = {"capsule": ("from", "to"), "sphere": ("center",), "box": ("center", "size")}[s["kind"]]
        for k in keys:
            v = s.get(k)
            if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, (int, float)) for x in v)):
                raise FormatError("%s: %s must be 3 numbers" % (at, k))
        r = s.get("radius_m", 0.03)
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r < 10:
            raise FormatError("%s: radius_m must be a positive number" % at)
    return shapes


def load_outline(path, skeleton):
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read(16 << 20).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError("%s: not a JSON outline (%s)" % (path, e)) from None
    return check_outline(doc, skeleton, str(path))


def local_segments(shapes, skeleton):
    """(link index (S,), a (S, 3), b (S, 3), radius (S,), colour list): segments in link frames."""
    idx, a, b, r, col = [], [], [], [], []
    for s in shapes:
        li = skeleton.link_index(s["link"])
        rad = float(s.get("radius_m", 0.03))
        c = s.get("colour", s.get("color", MID))
        if s["kind"] == "capsule":
            segs = [(s["from"], s["to"])]
        elif s["kind"] == "sphere":
            p = np.asarray(s["center"], float)
            segs = [(p - [0, 0, rad * 0.3], p + [0, 0, rad * 0.3])]
        else:
            cen, half = np.asarray(s["center"], float), np.asarray(s["size"], float) / 2
            corners = [cen + half * np.array([sx, sy, sz]) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
            segs = [(corners[i], corners[j]) for i, j in _BOX_EDGES]
            rad = 0.004
        for p, q in segs:
            idx.append(li)
            a.append(p)
            b.append(q)
            r.append(rad)
            col.append(c)
    return np.array(idx, int), np.array(a, float), np.array(b, float), np.array(r), col


def world_segments(local, pose):
    """(F, S, 2, 3) world segments of every frame of a Pose (link_pos_m (F, L, 3), link_rot)."""
    idx, a, b, _, _ = local
    P, R = pose.link_pos_m[:, idx], pose.link_rot[:, idx]          # (F, S, 3), (F, S, 3, 3)
    wa = P + np.einsum("fsij,sj->fsi", R, a)
    wb = P + np.einsum("fsij,sj->fsi", R, b)
    return np.stack([wa, wb], axis=2)
