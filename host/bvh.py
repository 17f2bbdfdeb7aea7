"""BVH import and export: a clip's channels become staff rows `<Joint>.<Channel>`.

    from host.bvh import read_bvh, write_bvh
    staff = read_bvh("walk.bvh")                 # rows "Hips.Xposition", ... ; staff.skeleton
    staff = read_bvh("walk.bvh", ranges="skeleton", bits=16, units="cm")
    write_bvh("copy.bvh", staff)                 # the original hierarchy and channel order

Any rotation order, 0 to 6 channels on any joint, End Sites, CRLF/LF/mixed line endings,
tabs. Rotations are degrees (rows wrap); positions stay in the file's units, guessed from the
body's height ("m" if under 3 units tall, "cmu" = 1/0.45 inch for CMU-named skeletons, else "cm") unless
`units=` says otherwise. The derived skeleton (host/bvhskeleton.py) is the hierarchy in metres.
Malformed input raises FormatError naming the file and line.
"""

import os

import numpy as np

from host.bvhskeleton import build_skeleton, skeleton_hierarchy
from host.staff import Row, Staff, unwrap_deg
from protocol.errors import FormatError

CHANNELS = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
_CANON = {c.lower(): c for c in CHANNELS}
MAX_BYTES = 1 << 30          # refuse BVH files over 1 GiB before reading them
MAX_JOINTS = 10000
MAX_DEPTH = 200              # nesting (recursion) limit; real bodies are under 30 deep


class Joint:
    """One ROOT/JOINT of a BVH hierarchy (End Sites are offsets kept on their parent)."""

    __slots__ = ("name", "parent", "offset", "channels", "end_sites")

    def __init__(self, name, parent, offset=(0.0, 0.0, 0.0), channels=()):
        self.name = name
        self.parent = parent            # index, -1 for the root
        self.offset = np.asarray(offset, float)
        self.channels = list(channels)  # canonical names, file order
        self.end_sites = []             # offsets of this joint's End Sites


class _Tokens:
    """Whitespace tokens with their 1-based line numbers, for error messages."""

    def __init__(self, lines, where):
        self.items = []
        self.where = where
        for n, line in enumerate(lines, 1):
            for t in line.split():
                self.items.append((t, n))
        self.i = 0

    def fail(self, msg, line=None):
        if line is None:
            line = self.items[min(self.i, len(self.items) - 1)][1] if self.items else 1
        raise FormatError("%s: line %d: %s" % (self.where, line, msg))

    def next(self, what):
        if self.i >= len(self.items):
            self.fail("file ends where %s was expected" % what)
        t = self.items[self.i]
        self.i += 1
        return t

    def expect(self, word):
        t, n = self.next(repr(word))
        if t.upper() != word.upper():
            self.fail("expected %r, found %r" % (word, t), n)
        return n

    def number(self, what):
        t, n = self.next(what)
        try:
            v = float(t)
        except ValueError:
            self.fail("%s: %r is not a number" % (what, t), n)
        if not np.isfinite(v):
            self.fail("%s: %r is not finite" % (what, t), n)
        return v

    def peek(self):
        return self.items[self.i][0] if self.i < len(self.items) else None


def _parse_joint(tk, joints, parent, depth=0):
    name, n = tk.next("a joint name")
    if depth > MAX_DEPTH:
        tk.fail("joints nested deeper than %d" % MAX_DEPTH, n)
    if name == "{":
        tk.fail("joint has no name", n)
    if any(j.name == name for j in joints):
        tk.fail("joint name %r repeats" % name, n)
    if len(joints) >= MAX_JOINTS:
        tk.fail("more than %d joints" % MAX_JOINTS, n)
    tk.expect("{")
    tk.expect("OFFSET")
    off = [tk.number("OFFSET") for _ in range(3)]
    j = Joint(name, parent, off)
    me = len(joints)
    joints.append(j)
    if (tk.peek() or "").upper() == "CHANNELS":
        tk.next("CHANNELS")
        cnt, cn = tk.next("a channel count")
        if not cnt.isdigit() or int(cnt) > 6:
            tk.fail("channel count must be 0 to 6, not %r" % cnt, cn)
        for _ in range(int(cnt)):
            c, ln = tk.next("a channel name")
            canon = _CANON.get(c.lower())
            if canon is None:
                tk.fail("unknown channel %r (expected one of %s)" % (c, " ".join(CHANNELS)), ln)
            if canon in j.channels:
                tk.fail("channel %r repeats on joint %r" % (c, name), ln)
            j.channels.append(canon)
    while True:
        t, ln = tk.next("'}' closing joint %r" % name)
        u = t.upper()
        if u == "}":
            return
        if u == "JOINT":
            _parse_joint(tk, joints, me, depth + 1)
        elif u == "END":
            tk.expect("Site")
            tk.expect("{")
            tk.expect("OFFSET")
            j.end_sites.append(np.array([tk.number("End Site OFFSET") for _ in range(3)]))
            tk.expect("}")
        else:
            tk.fail("expected JOINT, End Site or '}' in joint %r, found %r" % (name, t), ln)


def parse_bvh(text, where="bvh"):
    """Parse BVH text: (joints, frame_time_s, values (frames, channels) float64)."""
    lines = text.splitlines()          # handles \r\n, \n and \r, mixed
    motion_at = None
    for n, line in enumerate(lines):
        if line.strip().upper() == "MOTION":
            motion_at = n
            break
    if motion_at is None:
        raise FormatError("%s: no MOTION section (truncated, or not a BVH file)" % where)
    tk = _Tokens(lines[:motion_at], where)
    if not tk.items or tk.items[0][0].upper() != "HIERARCHY":
        raise FormatError("%s: line 1: expected HIERARCHY" % where)
    tk.i = 1
    joints = []
    t, n = tk.next("ROOT")
    if t.upper() != "ROOT":
        tk.fail("expected ROOT, found %r" % t, n)
    _parse_joint(tk, joints, -1)
    if tk.peek() is not None:
        t, n = tk.next("")
        tk.fail("only one ROOT is supported; found %r after the first hierarchy" % t, n)
    nch = sum(len(j.channels) for j in joints)
    frames, frame_time, first = _motion_header(lines, motion_at, where)
    # memory bound: every value takes at least 2 characters ("0 "), so a frame count the
    # rest of the file cannot hold is refused before any allocation
    rest_chars = sum(len(x) + 1 for x in lines[first:])
    if frames * max(nch, 1) * 2 > rest_chars + 2:
        raise FormatError("%s: line %d: declares %d frames of %d channels but the file is too short "
                          "(truncated?)" % (where, motion_at + 2, frames, nch))
    values = _motion_values(lines, first, frames, nch, where)
    return joints, frame_time, values


def _motion_header(lines, at, where):
    got = {}
    n = at + 1
    while n < len(lines) and len(got) < 2:
        line = lines[n].strip()
        n += 1
        if not line:
            continue
        key, _, val = line.partition(":")
        k = " ".join(key.split()).lower()
        if k not in ("frames", "frame time"):
            raise FormatError("%s: line %d: expected 'Frames:' and 'Frame Time:', found %r" % (where, n, line[:40]))
        try:
            got[k] = float(val) if k == "frame time" else int(val)
        except ValueError:
            raise FormatError("%s: line %d: %r is not a valid %s" % (where, n, val.strip()[:40], k))
    if "frames" not in got or "frame time" not in got:
        raise FormatError("%s: line %d: missing 'Frames:' or 'Frame Time:'" % (where, n))
    if got["frames"] < 0:
        raise FormatError("%s: 'Frames' must be >= 0, not %d" % (where, got["frames"]))
    ft = got["frame time"]
    if not (np.isfinite(ft) and ft > 1e-6):
        raise FormatError("%s: 'Frame Time' must be > 0, not %r" % (where, ft))
    return got["frames"], ft, n


def _motion_values(lines, first, frames, nch, where):
    body = [(n, ln) for n, ln in enumerate(lines[first:], first + 1) if ln.strip()]
    if len(body) < frames:
        raise FormatError("%s: %d frames declared but only %d motion lines (truncated?)" % (where, frames, len(body)))
    body = body[:frames]
    if nch == 0:
        return np.zeros((frames, 0))
    out = np.empty((frames, nch))
    for f, (n, ln) in enumerate(body):
        parts = ln.split()
        if len(parts) != nch:
            raise FormatError("%s: line %d: %d values, expected %d channels" % (where, n, len(parts), nch))
        try:
            out[f] = np.array(parts, dtype=np.float64)
        except ValueError:
            bad = next(p for p in parts if not _isfloat(p))
            raise FormatError("%s: line %d: %r is not a number" % (where, n, bad[:40])) from None
    if not np.isfinite(out).all():
        f = int(np.argwhere(~np.isfinite(out))[0, 0])
        raise FormatError("%s: line %d: value is not finite" % (where, body[f][0]))
    return out


def _isfloat(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def guess_units(joints):
    """'m' if the rest pose is under 3 units tall (vertical extent); 'cmu' (the CMU database's
    1/0.45 inch) for a CMU-named skeleton 15 to 50 units tall; else 'cm'."""
    pos = np.zeros((len(joints), 3))
    pts = []
    for i, j in enumerate(joints):
        pos[i] = (pos[j.parent] if j.parent >= 0 else 0) + j.offset
        pts.append(pos[i])
        pts.extend(pos[i] + e for e in j.end_sites)
    pts = np.array(pts)
    extent = float((pts.max(axis=0) - pts.min(axis=0)).max()) if len(pts) else 0.0
    if extent < 3.0:
        return "m"
    names = {j.name for j in joints}
    if 15.0 <= extent <= 50.0 and ("LHipJoint" in names or "lowerback" in names):
        return "cmu"
    return "cm"


def read_bvh(path, ranges="fit", bits=8, units=None, skeleton=None):
    """Import a BVH file as a Staff (rows `<Joint>.<Channel>`, skeleton derived from it)."""
    where = os.fspath(path)
    size = os.path.getsize(path)
    if size > MAX_BYTES:
        raise FormatError("%s: %d bytes is larger than the %d this reader accepts" % (where, size, MAX_BYTES))
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    if "\0" in text[:4096]:
        raise FormatError("%s: binary data, not a BVH text file" % where)
    return bvh_to_staff(text, where, ranges=ranges, bits=bits, units=units, skeleton=skeleton)


def bvh_to_staff(text, where="bvh", ranges="fit", bits=8, units=None, skeleton=None):
    """The Staff of BVH text (see read_bvh)."""
    joints, frame_time, values = parse_bvh(text, where)
    units = units or guess_units(joints)
    names, rows_unit, wrap = [], [], []
    for j in joints:
        for c in j.channels:
            names.append("%s.%s" % (j.name, c))
            rot = c.endswith("rotation")
            rows_unit.append("deg" if rot else units)
            wrap.append(rot)
    if not names:
        raise FormatError("%s: the hierarchy has no channels" % where)
    v = unwrap_deg(values.T, wrap)
    sk = skeleton if skeleton is not None else build_skeleton(joints, units, v, name=os.path.basename(where))
    rows = [Row(n, u, 0.0, 1.0, w) for n, u, w in zip(names, rows_unit, wrap)]
    fps = 1.0 / frame_time
    # fps as printed (e.g. .0083333) is 120.0005; keep it exact when a round rate is meant
    if abs(fps - round(fps)) < 1e-5 * fps:
        fps = float(round(fps))
    st = Staff(v, rows, fps=fps, bits=bits, skeleton=sk,
               meta={"source": os.path.basename(where), "bvh_frame_time_s": frame_time})
    return st.refit(ranges)


# ------------------------------------------------------------------------------------------
# export

def _fmt(x):
    s = "%.10g" % x
    return "0" if s == "-0" else s


def staff_to_bvh(staff, units=None):
    """BVH text of a staff, using its skeleton's hierarchy (links -> joints, dofs -> channels)."""
    if staff.skeleton is None:
        raise FormatError("this staff has no skeleton, so it cannot be written as BVH")
    joints, columns, factors, adds, units = skeleton_hierarchy(staff.skeleton, staff.names, units)
    out = ["HIERARCHY"]

    kids = {}
    for i, j in enumerate(joints):
        kids.setdefault(j.parent, []).append(i)

    def emit(i, depth):
        j = joints[i]
        ind = "\t" * depth
        out.append("%s%s %s" % (ind, "ROOT" if j.parent < 0 else "JOINT", j.name))
        out.append(ind + "{")
        out.append("%s\tOFFSET %s" % (ind, " ".join(_fmt(x) for x in j.offset)))
        out.append("%s\tCHANNELS %d%s" % (ind, len(j.channels), "".join(" " + c for c in j.channels)))
        for k in kids.get(i, []):
            emit(k, depth + 1)
        for e in j.end_sites:
            out.append(ind + "\tEnd Site")
            out.append(ind + "\t{")
            out.append("%s\t\tOFFSET %s" % (ind, " ".join(_fmt(x) for x in e)))
            out.append(ind + "\t}")
        out.append(ind + "}")

    emit(0, 0)
    frame_time = staff.meta.get("bvh_frame_time_s")
    if not frame_time or abs(1.0 / frame_time - staff.fps) > 1e-3 * staff.fps:
        frame_time = 1.0 / staff.fps
    out.append("MOTION")
    out.append("Frames: %d" % staff.frames)
    out.append("Frame Time: %.7g" % frame_time)
    v = staff.values
    if np.isnan(v).any():
        # BVH cannot mark a missing value: hold the last known one (the first known, at the start)
        v = _hold_missing(v)
    cols = np.empty((staff.frames, len(columns)))
    for k, (r, f, a) in enumerate(zip(columns, factors, adds)):
        cols[:, k] = f * v[r] + a
    for f in range(staff.frames):
        out.append(" ".join(_fmt(x) for x in cols[f]))
    return "\n".join(out) + "\n"


def _hold_missing(v):
    v = v.copy()
    for r in range(v.shape[0]):
        ok = ~np.isnan(v[r])
        if not ok.any():
            v[r] = 0.0
            continue
        idx = np.where(ok, np.arange(v.shape[1]), 0)
        np.maximum.accumulate(idx, out=idx)
        first = int(np.argmax(ok))
        idx[:first] = first
        v[r] = v[r, idx]
    return v


def write_bvh(path, staff, units=None):
    """Write a staff as a BVH file (see staff_to_bvh)."""
    text = staff_to_bvh(staff, units)
    with open(path, "w", newline="\n") as f:
        f.write(text)
