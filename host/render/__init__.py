"""Replay in 3D: decode, forward kinematics, an outline body, matplotlib frames -> GIF / MP4.

    from host.render import render_gif, render_video, render
    render_gif(staff, "walk.gif", compare=other, fps=20, max_frames=300)
    render(staff, "walk.mp4", speed=0.5, view=(30, 15))     # by extension
"""

import os

from host.render.figure import Body, frame_times, render_frames, render_gif, render_video
from host.render.outline import default_outline, load_outline
from protocol.errors import FormatError


def render(staff, out_path, **kw):
    """GIF or MP4 by the output's extension; returns frames written."""
    ext = os.path.splitext(str(out_path))[1].lower()
    if ext == ".gif":
        return render_gif(staff, out_path, **kw)
    if ext in (".mp4", ".m4v", ".mov"):
        return render_video(staff, out_path, **kw)
    raise FormatError("%s: render writes .gif or .mp4, not %r" % (out_path, ext or "no extension"))


__all__ = ["render", "render_gif", "render_video", "render_frames", "frame_times", "Body",
           "default_outline", "load_outline"]
