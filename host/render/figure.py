"""Render a staff as a moving 3D figure beside its staff image with a playhead (GIF or MP4).

    from host.render import render_gif, render_video
    render_gif(staff, "walk.gif")                               # <= 300 frames, 20 fps
    render_gif(estimated, "cmp.gif", compare=truth, max_frames=300)   # two bodies side by side
    render_video(staff, "walk.mp4", speed=0.5, view=(60, 20))   # ffmpeg when installed

Decode -> forward kinematics -> the body's outline (host/render/outline.py) placed on every
frame; matplotlib (Agg) draws one figure whose artists are updated in place per frame (no
re-plotting), Pillow writes the GIF, ffmpeg (a pipe of raw RGB frames) the MP4. The skeleton's
gravity says which way is up (BVH is Y-up, the human model Z-up).
"""

import shutil
import subprocess

import numpy as np

from host.edit._base import as_skeleton, fill_nan_linear
from host.render.outline import default_outline, local_segments, world_segments
from protocol.errors import FormatError


def staff_q(staff, skeleton):
    """(frames, ndof) joint values for FK: rows matched to dofs by name, gaps bridged, others home."""
    q = np.repeat(skeleton.home[None, :], staff.frames, axis=0)
    v = fill_nan_linear(staff.values)
    allnan = np.isnan(staff.values).all(axis=1)
    for r, name in enumerate(staff.names):
        if name in skeleton._dof_index and not allnan[r]:
            q[:, skeleton.dof_index(name)] = v[r]
    return q


def up_rotation(skeleton):
    """3x3 rotation taking the skeleton's up (-gravity) to +Z for display."""
    g = np.asarray(skeleton.gravity, float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    z = np.array([0.0, 0.0, 1.0])
    v, c = np.cross(up, z), float(np.dot(up, z))
    if np.linalg.norm(v) < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + K + K @ K * (1.0 / (1.0 + c))


class Body:
    """A staff's figure ready to draw: world segments (F, S, 2, 3) in display axes (Z up)."""

    def __init__(self, staff, shapes=None):
        from device.body.kinematics import forward_kinematics
        sk = as_skeleton(staff.skeleton)
        if sk is None:
            raise FormatError("the staff has no skeleton to draw (rows alone do not make a body)")
        self.staff, self.skeleton = staff, sk
        self.local = local_segments(shapes or default_outline(sk), sk)
        self.radius_m, self.colours = self.local[3], self.local[4]
        self.pose = forward_kinematics(sk, staff_q(staff, sk))
        W = up_rotation(sk)
        self.segments = world_segments(self.local, self.pose) @ W.T      # (F, S, 2, 3)

    def bounds(self):
        """(centre (F, 3), half): a cube that holds the body on every frame. When the body
        travels further than its own size the cube follows it horizontally."""
        pts = self.segments.reshape(self.segments.shape[0], -1, 3)
        lo_f, hi_f = np.nanmin(pts, axis=1), np.nanmax(pts, axis=1)          # (F, 3)
        size = float(np.max(hi_f - lo_f)) / 2 * 1.1
        lo, hi = lo_f.min(axis=0), hi_f.max(axis=0)
        half = max(float(np.max(hi - lo)) / 2 * 1.05, 1e-3)
        centre = np.repeat(((lo + hi) / 2)[None], pts.shape[0], axis=0)
        if half > 1.6 * size:                    # travels: follow the body's middle in x, y
            from scipy import ndimage
            mid = (lo_f + hi_f) / 2
            centre[:, :2] = ndimage.uniform_filter1d(mid[:, :2], max(1, int(self.staff.fps)), axis=0,
                                                     mode="nearest")
            half = max(size, 1e-3)
        self.floor_z = float(lo[2])
        return centre, half


def frame_times(staff, out_fps, speed, max_frames):
    """Staff frame index for every output frame (playing at `speed`, at most max_frames)."""
    if not speed > 0:
        raise FormatError("--speed must be > 0")
    n = int(np.floor(staff.duration_s / speed * out_fps))
    n = max(1, n)
    step = max(1.0, n / float(max_frames)) if max_frames else 1.0
    k = np.arange(0, n, step)
    return np.minimum((k / out_fps * speed * staff.fps).astype(int), staff.frames - 1)


class Scene:
    """The matplotlib figure: 3D axes (one per body) above the staff image with a playhead."""

    def __init__(self, bodies, titles, view=(-60.0, 15.0), size_px=(800, 600), dpi=80):
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot as plt
        from mpl_toolkits.mplot3d.art3d import Line3DCollection

        self.plt = plt
        w, h = size_px
        self.fig = plt.figure(figsize=(w / dpi, h / dpi), dpi=dpi)
        gs = self.fig.add_gridspec(2, len(bodies), height_ratios=[3.2, 1.0], hspace=0.12,
                                   left=0.08, right=0.98, top=0.95, bottom=0.08)
        self.bodies, self.colls, self.axes = bodies, [], []
        for i, (b, title) in enumerate(zip(bodies, titles)):
            ax = self.fig.add_subplot(gs[0, i], projection="3d")
            centre, half = b.bounds()
            b.centre, b.half = centre, half
            self._limits(ax, np.zeros(3), half)          # the body is drawn relative to centre
            ax.set_box_aspect((1, 1, 1), zoom=1.35)
            ax.view_init(elev=view[1], azim=view[0])
            ax.set_axis_off()                    # panes and ticks cost most of a 3D draw
            ax.set_title(title, fontsize=9)
            # a floor grid (0.5 m squares for a human-sized scene), following the body
            b.grid = 10.0 ** np.round(np.log10(half)) / 2
            g = np.arange(-6, 7) * b.grid
            lines = [[(x, g[0], 0), (x, g[-1], 0)] for x in g] + [[(g[0], y, 0), (g[-1], y, 0)] for y in g]
            b.floor = np.array(lines, float)
            floor = Line3DCollection(self._floor(b, 0), colors="#c8c8c8", linewidths=0.6, animated=True)
            ax.add_collection3d(floor)
            b.floor_coll = floor
            # line width in points for a radius in metres: the axes' pixel size over the scene
            px = self.fig.get_size_inches()[0] * dpi / len(bodies) * 0.55
            lw = np.clip(0.8 * 2 * b.radius_m * px / (2 * half) * 72.0 / dpi, 1.0, 9.0)
            coll = Line3DCollection(b.segments[0] - centre[0], colors=b.colours, linewidths=lw,
                                    capstyle="round", animated=True)
            ax.add_collection3d(coll)
            self.colls.append(coll)
            self.axes.append(ax)
        st = bodies[0].staff
        self.ax_staff = self.fig.add_subplot(gs[1, :])
        span = (st.hi - st.lo)
        span[span == 0] = 1.0
        img = np.ma.masked_invalid((st.values - st.lo[:, None]) / span[:, None])
        cmap = matplotlib.colormaps["gray"].with_extremes(bad="#ff00ff")
        self.ax_staff.imshow(img, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0, vmax=1,
                             extent=(0, st.duration_s, st.nrows, 0))
        self.ax_staff.set_yticks([])
        self.ax_staff.set_xlabel("s", fontsize=8, labelpad=0)
        self.ax_staff.tick_params(labelsize=7)
        self.playhead = self.ax_staff.axvline(0.0, color="#ff3030", linewidth=1.5, animated=True)
        self.label = self.fig.text(0.01, 0.01, "", fontsize=8, animated=True)
        # everything that does not move is drawn once; each frame restores it and draws the
        # moving artists on top (blitting), so a frame costs a few milliseconds
        self.fig.canvas.draw()
        self.background = self.fig.canvas.copy_from_bbox(self.fig.bbox)

    @staticmethod
    def _limits(ax, c, half):
        ax.set_xlim(c[0] - half, c[0] + half)
        ax.set_ylim(c[1] - half, c[1] + half)
        ax.set_zlim(c[2] - half, c[2] + half)

    @staticmethod
    def _floor(b, f):
        """Floor grid lines of frame f relative to the view's centre (they slide as it follows)."""
        fl = b.floor.copy()
        c = b.centre[f]
        g = b.grid
        fl[:, :, 0] = np.clip(fl[:, :, 0] + np.round(c[0] / g) * g - c[0], -b.half, b.half)
        fl[:, :, 1] = np.clip(fl[:, :, 1] + np.round(c[1] / g) * g - c[1], -b.half, b.half)
        fl[:, :, 2] = b.floor_z - c[2]
        return fl

    def draw(self, frame):
        """RGB uint8 (H, W, 3) of the scene at a staff frame index."""
        canvas = self.fig.canvas
        canvas.restore_region(self.background)
        for b, coll, ax in zip(self.bodies, self.colls, self.axes):
            f = min(frame, b.segments.shape[0] - 1)
            b.floor_coll.set_segments(self._floor(b, f))
            coll.set_segments(b.segments[f] - b.centre[f])
            for art in (b.floor_coll, coll):
                art.do_3d_projection()
                ax.draw_artist(art)
        st = self.bodies[0].staff
        t = frame / st.fps
        self.playhead.set_xdata([t, t])
        self.label.set_text("t = %.2f s   frame %d / %d" % (t, frame, st.frames))
        self.ax_staff.draw_artist(self.playhead)
        self.fig.draw_artist(self.label)
        return np.asarray(canvas.buffer_rgba())[:, :, :3].copy()

    def close(self):
        self.plt.close(self.fig)


def _scene(staff, compare, body, compare_body, view, size_px):
    bodies = [Body(staff, body)]
    titles = [str(staff.meta.get("source") or "staff")[-40:]]
    if compare is not None:
        bodies.append(Body(compare, compare_body))
        titles.append(str(compare.meta.get("source") or "compare")[-40:])
    return Scene(bodies, titles, view=view, size_px=size_px)


def render_frames(staff, compare=None, fps=20.0, speed=1.0, max_frames=300, body=None,
                  compare_body=None, view=(-60.0, 15.0), size_px=(800, 600)):
    """Yield RGB frames of the rendering (see render_gif)."""
    scene = _scene(staff, compare, body, compare_body, view, size_px)
    try:
        for f in frame_times(staff, fps, speed, max_frames):
            yield scene.draw(int(f))
    finally:
        scene.close()


def render_gif(staff, out_path, compare=None, fps=20.0, max_frames=300, speed=1.0, body=None,
               compare_body=None, view=(-60.0, 15.0), size_px=(800, 600)):
    """Write an animated GIF; returns the number of frames written."""
    return write_gif(render_frames(staff, compare, fps, speed, max_frames, body, compare_body, view, size_px),
                     out_path, fps)


def write_gif(frames_rgb, out_path, fps):
    """An animated GIF of RGB uint8 frames (one palette from the first); returns frames written."""
    from PIL import Image
    frames, palette = [], None
    for rgb in frames_rgb:
        im = Image.fromarray(rgb)
        if palette is None:
            palette = im.quantize(colors=128, method=Image.Quantize.MEDIANCUT)
        frames.append(im.quantize(palette=palette, dither=Image.Dither.NONE))
    duration_ms = int(round(1000.0 / fps))
    frames[0].save(out_path, save_all=True, append_images=frames[1:], duration=duration_ms, loop=0,
                   optimize=False, disposal=1)
    return len(frames)


def render_video(staff, out_path, compare=None, fps=30.0, max_frames=None, speed=1.0, body=None,
                 compare_body=None, view=(-60.0, 15.0), size_px=(800, 600)):
    """Write an MP4 through ffmpeg; FormatError with what to do when ffmpeg is not installed."""
    return write_mp4(render_frames(staff, compare, fps, speed, max_frames, body, compare_body, view, size_px),
                     out_path, fps, size_px)


def write_mp4(frames_rgb, out_path, fps, size_px):
    """An MP4 (H.264 through ffmpeg) of RGB uint8 frames of size_px; returns frames written."""
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise FormatError("ffmpeg is not installed: install it (Debian: apt-get install ffmpeg) "
                          "or render to .gif")
    w, h = size_px
    cmd = [exe, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "%dx%d" % (w, h),
           "-r", "%g" % fps, "-i", "-", "-an", "-c:v", "libx264", "-pix_fmt", "yuv420p",
           "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", str(out_path)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    n = 0
    try:
        for rgb in frames_rgb:
            proc.stdin.write(rgb.tobytes())
            n += 1
        proc.stdin.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode("utf-8", "replace").strip()
    if proc.wait() != 0:
        raise FormatError("ffmpeg failed: %s" % (err.splitlines()[-1] if err else "exit %d" % proc.returncode))
    return n
