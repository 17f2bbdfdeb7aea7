"""Gestures and the gesture library file (one JSON document).

    from device.gestures.library import Gesture, load_library, save_library
    lib = load_library("gestures.json")          # [] if the file does not exist and missing_ok
    g = lib[0]; g.name, g.command, g.space, g.rows, g.threshold, len(g.templates)
    save_library("gestures.json", lib)

The file:

    {"format": "motionstaff-gestures", "version": 1, "gestures": [
      {"name": "kick", "command": "osc:/tv/power 1",
       "space": "body",                 # "body": device.gestures.features names; "rows": staff rows
       "rows": ["r_hip_flex_deg", "r_knee_deg", "r_foot_h_leg"],
       "scales": [30.0, 30.0, 0.25],    # typical size per row; distances are in these units
       "fps": 30.0, "threshold": 0.61, "hold_frames": 1,
       "templates": [{"source": "kick.bvh@1.70:2.50", "values": [[...per row...], ...per frame],
                      "threshold": 0.58, "amplitude": 1.0}],
       "learned": {"positive": [...distances], "negative_min": 1.4}}]}

A template is a short staff written as frames x rows (the selected rows only). A template may
carry its own "threshold" (else the gesture's applies) and the "amplitude" factor it was made
with (an amplitude-scaled copy of an example, see host/gestures/learn.py). Bad documents raise
FormatError naming the field.
"""

import json
import os

import numpy as np

from protocol.errors import FormatError

FORMAT = "motionstaff-gestures"
VERSION = 1


class Gesture:
    """A named gesture: templates (frames x rows arrays), its rows, threshold and command."""

    def __init__(self, name, rows, scales, templates, threshold, command="", space="body",
                 fps=30.0, hold_frames=1, sources=None, learned=None, thresholds=None,
                 amplitudes=None):
        self.name = str(name)
        self.rows = list(rows)
        self.scales = np.asarray(scales, float).reshape(-1)
        self.templates = [np.asarray(t, float) for t in templates]
        self.threshold = float(threshold)
        self.command = command or ""
        self.space = space
        self.fps = float(fps)
        self.hold_frames = int(hold_frames)
        self.sources = list(sources or [""] * len(self.templates))
        self.learned = dict(learned or {})
        n = len(self.templates)
        self.thresholds = [self.threshold if t is None else float(t)
                           for t in (thresholds if thresholds is not None else [None] * n)]
        self.amplitudes = [1.0 if a is None else float(a)
                           for a in (amplitudes if amplitudes is not None else [None] * n)]
        self.check()

    def check(self, where="gesture"):
        w = "%s %r" % (where, self.name)
        if not self.name:
            raise FormatError("%s: 'name' is empty" % where)
        if self.space not in ("body", "rows"):
            raise FormatError("%s: 'space' must be 'body' or 'rows', not %r" % (w, self.space))
        if not self.rows:
            raise FormatError("%s: 'rows' is empty" % w)
        if len(self.scales) != len(self.rows) or not (self.scales > 0).all():
            raise FormatError("%s: 'scales' must be %d positive numbers" % (w, len(self.rows)))
        if not self.templates:
            raise FormatError("%s: no templates" % w)
        for k, t in enumerate(self.templates):
            if t.ndim != 2 or t.shape[1] != len(self.rows) or t.shape[0] < 2:
                raise FormatError("%s: template %d must be frames x %d rows with at least 2 frames"
                                  % (w, k, len(self.rows)))
            if not np.isfinite(t).all():
                raise FormatError("%s: template %d has values that are not finite" % (w, k))
        if not (self.threshold > 0 and np.isfinite(self.threshold)):
            raise FormatError("%s: 'threshold' must be > 0" % w)
        if len(self.thresholds) != len(self.templates) or len(self.amplitudes) != len(self.templates):
            raise FormatError("%s: one threshold and amplitude per template" % w)
        for k, t in enumerate(self.thresholds):
            if not (t > 0 and np.isfinite(t)):
                raise FormatError("%s: template %d: 'threshold' must be > 0" % (w, k))
        if not (self.fps > 0 and np.isfinite(self.fps)):
            raise FormatError("%s: 'fps' must be > 0" % w)
        if self.hold_frames < 0:
            raise FormatError("%s: 'hold_frames' must be >= 0" % w)

    def to_dict(self):
        return {"name": self.name, "command": self.command, "space": self.space, "rows": self.rows,
                "scales": [round(float(s), 6) for s in self.scales], "fps": self.fps,
                "threshold": round(self.threshold, 6), "hold_frames": self.hold_frames,
                "templates": [{"source": s, "values": np.round(t, 4).tolist(),
                               "threshold": round(th, 6), "amplitude": round(a, 4)}
                              for s, t, th, a in zip(self.sources, self.templates, self.thresholds,
                                                     self.amplitudes)],
                "learned": self.learned}

    @classmethod
    def from_dict(cls, d, where="gesture"):
        if not isinstance(d, dict):
            raise FormatError("%s: must be an object" % where)
        try:
            tpls = d["templates"]
            if not isinstance(tpls, list):
                raise FormatError("%s: 'templates' must be a list" % where)
            return cls(d["name"], d["rows"], d["scales"], [t["values"] for t in tpls],
                       d["threshold"], d.get("command", ""), d.get("space", "body"),
                       d.get("fps", 30.0), d.get("hold_frames", 1),
                       [t.get("source", "") for t in tpls], d.get("learned"),
                       [t.get("threshold") for t in tpls], [t.get("amplitude") for t in tpls])
        except KeyError as e:
            raise FormatError("%s: missing field %s" % (where, e)) from None
        except (TypeError, ValueError) as e:
            if isinstance(e, FormatError):
                raise
            raise FormatError("%s: bad value (%s)" % (where, e)) from None

    def __repr__(self):
        return "Gesture(%r, %d rows, %d templates, threshold %.3g)" % (
            self.name, len(self.rows), len(self.templates), self.threshold)


def library_to_dict(gestures):
    return {"format": FORMAT, "version": VERSION, "gestures": [g.to_dict() for g in gestures]}


def library_from_dict(d, where="library"):
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise FormatError("%s: not a gesture library ('format' must be %r)" % (where, FORMAT))
    if d.get("version") != VERSION:
        raise FormatError("%s: 'version' %r is not supported (expected %d)" % (where, d.get("version"), VERSION))
    gs = d.get("gestures")
    if not isinstance(gs, list):
        raise FormatError("%s: 'gestures' must be a list" % where)
    out = [Gesture.from_dict(g, "%s: gestures[%d]" % (where, i)) for i, g in enumerate(gs)]
    names = [g.name for g in out]
    if len(set(names)) != len(names):
        raise FormatError("%s: gesture names repeat" % where)
    return out


def load_library(path, missing_ok=False):
    """The gestures of a library file ([] if it does not exist and missing_ok)."""
    if missing_ok and not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        raw = f.read(64 << 20)
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError("%s: not JSON (%s)" % (path, e)) from None
    return library_from_dict(d, str(path))


def save_library(path, gestures):
    """Write the library atomically (a temporary file renamed over the old one)."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        with open(tmp, "w") as f:
            json.dump(library_to_dict(gestures), f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:                # name the library, not the temporary file
        if os.path.exists(tmp):
            os.remove(tmp)
        raise OSError(e.errno, e.strerror, os.fspath(path)) from None
