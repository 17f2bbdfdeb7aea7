"""The in-memory motion staff (numpy) and the numpy fast path of the staff codec.

    from host.staff import Staff, Row, fit_ranges
    values = np.array([[0.0, 10.0, 20.0]])                # (rows, frames), NaN = missing
    st = Staff(values, [Row("knee", "deg", -10.0, 150.0, True)], fps=30.0, bits=8)
    codes, missing = st.codes()                            # uint8 (1, 3), bool (1, 3)
    st.quantised().values                                  # what a reader of the file gets back

encode()/decode() give codes identical to protocol/staffcodec.py (same float operations in the
same order; tests check it with hypothesis). unwrap_deg() is the vectorised twin of
staffcodec.Unwrapper. fit_ranges() fits each row's [lo, hi] to its data; skeleton_ranges()
takes them from a skeleton's dof limits.
"""

from typing import NamedTuple

import numpy as np

from protocol import staffheader, staffranges
from protocol.errors import FormatError


class Row(NamedTuple):
    """One staff row: a degree of freedom's name, unit, range [lo, hi] and whether it wraps (angle)."""

    name: str
    unit: str = ""
    lo: float = 0.0
    hi: float = 1.0
    wrap: bool = False

    def to_dict(self):
        return {"name": self.name, "unit": self.unit, "lo": float(self.lo), "hi": float(self.hi),
                "wrap": bool(self.wrap)}


def levels(bits):
    """Largest code for a bit depth (255 or 65535)."""
    if bits not in (8, 16):
        raise ValueError("bits must be 8 or 16, not %r" % (bits,))
    return (1 << bits) - 1


def encode(values, lo, hi, bits):
    """Codes (uint8/uint16) and missing mask of values (rows, frames) over per-row lo, hi (rows,).

    code = floor((v - lo) / (hi - lo) * top + 0.5), clamped; the exact operations of
    staffcodec.encode, so the codes are identical. Missing (NaN) values get code 0.
    """
    top = levels(bits)
    v = np.asarray(values, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64).reshape(-1, *([1] * (v.ndim - 1)))
    hi = np.asarray(hi, dtype=np.float64).reshape(-1, *([1] * (v.ndim - 1)))
    span = hi - lo
    missing = np.isnan(v)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # x = (v - lo) / span * top + 0.5, in place (the same operations in the same order)
        x = np.subtract(v, lo)
        x /= span
        x *= top
        x += 0.5
        if not (span > 0).all():
            x[np.broadcast_to(~(span > 0), x.shape)] = 0.0
        if missing.any():
            x[missing] = 0.0
        np.clip(x, 0.0, float(top), out=x)
        np.floor(x, out=x)
    return x.astype(np.uint8 if bits == 8 else np.uint16), missing


def decode(codes, lo, hi, bits, missing=None):
    """Values (float64) of codes (rows, frames): lo + code * (hi - lo) / top; NaN where missing."""
    top = levels(bits)
    c = np.asarray(codes)
    lo = np.asarray(lo, dtype=np.float64).reshape(-1, *([1] * (c.ndim - 1)))
    hi = np.asarray(hi, dtype=np.float64).reshape(-1, *([1] * (c.ndim - 1)))
    # one lookup table per row: table[r, code] = lo + code * (hi - lo) / top (same operations)
    if c.ndim == 2 and c.shape[1] > (top + 1) // 4:
        table = lo + np.arange(top + 1, dtype=np.float64)[None, :] * (hi - lo) / top
        v = np.take_along_axis(table, c.astype(np.intp), axis=1)
    else:
        v = lo + c.astype(np.float64) * (hi - lo) / top
    if missing is not None:
        v[np.asarray(missing, dtype=bool)] = np.nan
    return v


def max_error(lo, hi, bits):
    """The exact bound on |decode(encode(v)) - v| for lo <= v <= hi: half a step."""
    return (np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)) / (2.0 * levels(bits))


def unwrap_deg(values, wrap=None):
    """Unwrap angle rows (degrees) along time: each value + k*360 nearest the previous one.

    The vectorised twin of staffcodec.Unwrapper: k = floor((v - prev + 180) / 360) per step,
    accumulated, missing (NaN) values skipped. Rows with wrap False pass through.
    """
    v = np.array(values, dtype=np.float64, copy=True)
    rows = range(v.shape[0]) if wrap is None else [i for i, w in enumerate(wrap) if w]
    for r in rows:
        ok = ~np.isnan(v[r])
        x = v[r, ok]
        if x.size < 2:
            continue
        k = np.floor((np.diff(x) + 180.0) / 360.0)
        if not k.any():
            continue
        x[1:] -= 360.0 * np.cumsum(k)
        v[r, ok] = x
    return v


FIT_SLACK_CODES = 2.0         # codes a fitted range leaves free so its lo can be a short number


def fit_ranges(values, bits, min_span=None):
    """Per-row (lo, hi) fitted to the data, on the header's binary grid (protocol/staffranges.py).

    step = the grid step at or above span / (top - 2) (a 5-bit mantissa: at most 1/32 coarser),
    lo = the coarsest dyadic number that keeps every value inside with half a step to spare,
    hi = lo + top * step: every value is inside (so the half-step bound holds), the span is at
    most 4% wider than the data's (2-3% typically), and the header stores the row in about
    2 bytes. A constant row v gets lo = v (v is then exact) and a step of 1 / top (or 1e-6 |v|);
    min_span, an optional (rows,) array, sets the smallest span per row.
    """
    top = levels(bits)
    v = np.asarray(values, dtype=np.float64)
    empty = np.isnan(v).all(axis=1) if v.shape[1] else np.ones(v.shape[0], bool)
    with np.errstate(all="ignore"):
        lo = np.where(empty, 0.0, np.min(np.where(np.isnan(v), np.inf, v), axis=1, initial=np.inf))
        hi = np.where(empty, 0.0, np.max(np.where(np.isnan(v), -np.inf, v), axis=1, initial=-np.inf))
    span = hi - lo
    floor_span = np.maximum(1e-6, np.abs(lo) * 1e-9)
    if min_span is not None:
        floor_span = np.maximum(floor_span, np.asarray(min_span, dtype=np.float64))
    grow = np.maximum(floor_span - span, 0.0)
    vmin = lo
    lo, hi = lo - grow / 2.0, hi + grow / 2.0
    out_lo, out_hi = np.empty_like(lo), np.empty_like(hi)
    for i in range(len(lo)):
        if span[i] == 0.0 and min_span is None:
            # a constant row: lo = v stores v exactly as code 0
            s = staffranges.step_up(max(1.0, abs(vmin[i]) * 1e-6) / top)
            out_lo[i] = vmin[i]
        else:
            a, b = float(lo[i]), float(hi[i])
            s = staffranges.step_up((b - a) / (top - FIT_SLACK_CODES))
            # every value in [lo, lo + (top - 0.5) step]: the last code keeps half a step spare
            out_lo[i] = staffranges.coarse(b - (top - 0.5) * s, a)
        out_hi[i] = out_lo[i] + s * top
    return out_lo, out_hi


def skeleton_ranges(skeleton, names):
    """Per-row (lo, hi) from a skeleton's dof limits for the rows named `names`."""
    lo = np.empty(len(names))
    hi = np.empty(len(names))
    for i, n in enumerate(names):
        try:
            d = skeleton.dofs[skeleton.dof_index(n)]
        except (KeyError, ValueError, IndexError):
            raise FormatError("row %r: the skeleton has no dof of that name" % n)
        lo[i], hi[i] = float(d.lo), float(d.hi)
        if not hi[i] > lo[i]:
            raise FormatError("dof %r: range [%g, %g] is empty" % (n, lo[i], hi[i]))
    return lo, hi


def _skeleton_dict(skeleton):
    """The skeleton's JSON dict without fields equal to the loader's defaults (a smaller header)."""
    if skeleton is None:
        return None
    d = dict(skeleton) if isinstance(skeleton, dict) else skeleton.to_dict()
    zero3, zero6 = [0.0] * 3, [0.0] * 6
    links = []
    for e in d.get("links", []):
        e = dict(e)
        for k, default in (("com", zero3), ("inertia", zero6), ("mass", 0.0), ("offset", zero3)):
            if k in e and e[k] == default:
                del e[k]
        links.append(e)
    dofs = []
    for e in d.get("dofs", []):
        e = dict(e)
        if e.get("home") == min(max(0.0, e.get("min", 0.0)), e.get("max", 0.0)):
            del e["home"]
        dofs.append(e)
    d["links"], d["dofs"] = links, dofs
    if not d.get("features"):
        d.pop("features", None)
    return d


class Staff:
    """A motion staff in memory: values (rows, frames) float64 with NaN = missing, and its rows."""

    def __init__(self, values, rows, fps=30.0, bits=8, skeleton=None, meta=None):
        v = np.array(values, dtype=np.float64, order="C")
        if v.ndim == 1:
            v = v[None, :]
        if v.ndim != 2:
            raise ValueError("staff values must be (rows, frames), not shape %r" % (v.shape,))
        rows = [r if isinstance(r, Row) else Row(**r) for r in rows]
        if len(rows) != v.shape[0]:
            raise ValueError("staff has %d rows of values but %d row descriptions" % (v.shape[0], len(rows)))
        if bits not in (8, 16):
            raise ValueError("bits must be 8 or 16, not %r" % (bits,))
        if not (fps > 0 and np.isfinite(fps)):
            raise ValueError("fps must be > 0, not %r" % (fps,))
        self.values = v
        self.rows = rows
        self.fps = float(fps)
        self.bits = int(bits)
        self.skeleton = skeleton
        self.meta = dict(meta or {})

    # --- shape -----------------------------------------------------------------------------
    @property
    def frames(self):
        return self.values.shape[1]

    @property
    def nrows(self):
        return self.values.shape[0]

    @property
    def duration_s(self):
        return self.frames / self.fps

    @property
    def names(self):
        return [r.name for r in self.rows]

    @property
    def lo(self):
        return np.array([r.lo for r in self.rows], dtype=np.float64)

    @property
    def hi(self):
        return np.array([r.hi for r in self.rows], dtype=np.float64)

    def row_index(self, name):
        for i, r in enumerate(self.rows):
            if r.name == name:
                return i
        raise KeyError("no row named %r" % (name,))

    def max_error(self):
        """(rows,) exact bound on the quantisation error of each row."""
        return max_error(self.lo, self.hi, self.bits)

    # --- codes -----------------------------------------------------------------------------
    def codes(self):
        """(codes uint8|uint16 (rows, frames), missing bool (rows, frames))."""
        return encode(self.values, self.lo, self.hi, self.bits)

    @classmethod
    def from_codes(cls, codes, mask, rows, fps=30.0, bits=8, skeleton=None, meta=None):
        rows = [r if isinstance(r, Row) else Row(**r) for r in rows]
        lo = np.array([r.lo for r in rows])
        hi = np.array([r.hi for r in rows])
        return cls(decode(codes, lo, hi, bits, mask), rows, fps, bits, skeleton, meta)

    def quantised(self):
        """The staff as a reader of its file sees it: values replaced by decode(encode(values))."""
        c, m = self.codes()
        return Staff.from_codes(c, m, self.rows, self.fps, self.bits, self.skeleton, self.meta)

    def header(self):
        """The staff header dict (protocol/staffheader.py) describing this staff."""
        return staffheader.make(rows=[r.to_dict() for r in self.rows], fps=self.fps, bits=self.bits,
                                frames=self.frames, skeleton=_skeleton_dict(self.skeleton),
                                source=str(self.meta.get("source", "")),
                                captured=str(self.meta.get("captured", "")),
                                max_error_mm=self.meta.get("max_error_mm"),
                                max_error_bound=self.meta.get("max_error_bound"))

    # --- derived staffs ----------------------------------------------------------------------
    def copy(self):
        return Staff(self.values.copy(), list(self.rows), self.fps, self.bits, self.skeleton,
                     dict(self.meta))

    def with_bits(self, bits):
        """A copy stored at another bit depth (8 or 16); the values are unchanged."""
        levels(bits)
        st = self.copy()
        if int(bits) != st.bits:
            st.meta.pop("max_error_mm", None)      # a budget holds for the depth it was made at
            st.meta.pop("max_error_bound", None)
        st.bits = int(bits)
        return st

    def refit(self, ranges="fit", min_span=None, max_error_mm=None, bits=None, bound="chain", aim_mm=None,
              aim_p99=False):
        """A copy with ranges fitted to the data ("fit"), from the skeleton ("skeleton"), or
        ("budget") each row's step for max_error_mm at every joint and 3 cm point (host/budget.py;
        8 bits when they hold it, else 16, unless bits is given; bound "measured": steps from the
        clip's own decoding errors, checked by forward kinematics; aim_mm: its codes chosen to
        put as few points as they can over aim_mm, host/budget_rounding.py; aim_p99: then rows
        coarsened while the 99th percentile stays within aim_mm, host/budget_percentile.py)."""
        meta = dict(self.meta)
        meta.pop("max_error_mm", None)
        meta.pop("max_error_bound", None)
        if ranges == "budget":
            from host.budget import budget_ranges

            lo, hi, b, how = budget_ranges(self, max_error_mm, bits=bits, bound=bound, how=True)
            if aim_mm is not None and how != "measured":
                # (the measured bound fell back to the chain's: nothing measured to aim with)
                raise FormatError("--aim-mm: this staff cannot be measured by forward kinematics "
                                  "(missing values, or rows not its skeleton's dofs), so its bound "
                                  "is the chain's and there is nothing to aim")
            rows = [r._replace(lo=float(a), hi=float(c)) for r, a, c in zip(self.rows, lo, hi)]
            meta["max_error_mm"] = float(max_error_mm)
            values = self.values.copy()
            if how == "measured":
                meta["max_error_bound"] = how
                # the codes chosen jointly per frame (host/budget_rounding.py): the values are
                # then the decoded ones, what the file will hold
                from host.budget import _skeleton
                from host.budget_rounding import joint_codes

                if aim_mm is not None and aim_p99:
                    from host.budget_percentile import coarsen_to_percentile

                    lo, hi = coarsen_to_percentile(_skeleton(self), values, lo, hi, b, max_error_mm, aim_mm)
                    rows = [r._replace(lo=float(a), hi=float(c)) for r, a, c in zip(self.rows, lo, hi)]
                codes = joint_codes(_skeleton(self), values, lo, hi, b, max_error_mm, aim_mm=aim_mm)
                if codes is not None:
                    values = decode(codes, lo, hi, b)
            from host.budget_check import stamp

            return stamp(Staff(values, rows, self.fps, b, self.skeleton, meta))
        if ranges == "fit":
            lo, hi = fit_ranges(self.values, self.bits, min_span)
        elif ranges == "skeleton":
            if self.skeleton is None:
                raise FormatError("--ranges skeleton: this staff has no skeleton")
            sk = self.skeleton
            if isinstance(sk, dict):
                from device.body.skeleton import Skeleton
                sk = Skeleton.from_dict(sk)
            lo, hi = skeleton_ranges(sk, self.names)
        else:
            raise ValueError("ranges must be 'fit', 'skeleton' or 'budget', not %r" % (ranges,))
        rows = [r._replace(lo=float(a), hi=float(b)) for r, a, b in zip(self.rows, lo, hi)]
        return Staff(self.values.copy(), rows, self.fps, self.bits, self.skeleton, meta)

    def __repr__(self):
        return "Staff(%d rows x %d frames, %g fps, %d bits)" % (self.nrows, self.frames, self.fps, self.bits)
