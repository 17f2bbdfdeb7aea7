"""The simulated robot on video: MuJoCo's offscreen renderer over a recorded run.

    from host.physics.render import pick_gl, render_run
    pick_gl()                                   # before mujoco is imported: EGL, else OSMesa
    run = run_simulation(staff, "op3-dynamixel", record=True)
    render_run(run, "robot.gif", person=staff)  # person: the human figure beside it (optional)

MUJOCO_GL picks the backend; unset, EGL is tried and then OSMesa (each in a short child
process, so a failing one cannot break this process); neither working is one OSError line.
The camera follows the torso (smoothed) from the front-left; frames are RGB uint8.
"""

import os
import subprocess
import sys

import numpy as np

from protocol.errors import FormatError

PROBE = "import mujoco; m = mujoco.MjModel.from_xml_string('<mujoco/>'); mujoco.Renderer(m, 8, 8)"


def pick_gl():
    """Choose MUJOCO_GL (egl, else osmesa) if the user did not; OSError if neither renders."""
    if os.environ.get("MUJOCO_GL") and not os.environ.get("_MOTIONSTAFF_GL_DEFAULT"):
        return os.environ["MUJOCO_GL"]
    if "mujoco" in sys.modules:
        return os.environ.get("MUJOCO_GL")       # too late to choose: whatever it was set to
    tried = []
    for gl in ("egl", "osmesa"):
        env = dict(os.environ, MUJOCO_GL=gl, PYOPENGL_PLATFORM=gl)
        env.pop("_MOTIONSTAFF_GL_DEFAULT", None)
        r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
        if r.returncode == 0:
            os.environ["MUJOCO_GL"] = gl
            os.environ.pop("_MOTIONSTAFF_GL_DEFAULT", None)
            return gl
        last = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        tried.append("%s: %s" % (gl, last[:120]))
    raise OSError("offscreen rendering does not work here (%s); install EGL (libegl1) or OSMesa "
                  "(libosmesa6), or leave out -o" % "; ".join(tried))


def robot_frames(run, fps, size_px=(320, 240), speed=1.0):
    """RGB frames of the recorded run at fps (simulated time / speed)."""
    times = np.asarray(run.times_s)
    n = max(1, int(np.floor(times[-1] / speed * fps)) + 1) if len(times) else 0
    idx = [min(len(times) - 1, max(0, int(np.searchsorted(times, j * speed / fps, side="right")) - 1))
           for j in range(n)]
    return frames_at(run, idx, size_px)


def frames_at(run, indices, size_px=(320, 240)):
    """RGB frames of the run's recorded states at these indices (camera follows the torso)."""
    import mujoco
    rm = run.robot
    m = rm.model
    w, h = size_px
    m.vis.global_.offwidth = max(int(m.vis.global_.offwidth), w)
    m.vis.global_.offheight = max(int(m.vis.global_.offheight), h)
    try:
        renderer = mujoco.Renderer(m, h, w)
    except Exception as e:
        raise OSError("offscreen rendering (MUJOCO_GL=%s) failed: %s"
                      % (os.environ.get("MUJOCO_GL", ""), str(e).splitlines()[0] if str(e) else type(e).__name__))
    d = mujoco.MjData(m)
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.azimuth, cam.elevation = 150.0, -20.0
    cam.distance = 1.0 if rm.floating else 0.75
    torso = rm.model.body(rm.segments.get("torso", rm.segments.get("base"))).id
    look = None
    try:
        for k in indices:
            d.qpos[:] = run.qpos[min(int(k), len(run.qpos) - 1)]
            mujoco.mj_forward(m, d)
            p = d.xpos[torso].copy() if rm.floating else np.array([0.15, 0.0, 0.15])
            # the camera follows the torso: look <- look + 0.2 (p - look), height kept
            look = p if look is None else look + 0.2 * (p - look)
            cam.lookat[:] = [look[0], look[1], 0.18 if rm.floating else look[2]]
            renderer.update_scene(d, cam)
            flags = renderer.scene.flags
            # software GL here: shadows, reflections and the skybox cost ~10x a frame
            flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
            flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = 0
            yield renderer.render().copy()
    finally:
        renderer.close()


def _fit(rgb, size_px):
    from PIL import Image
    w, h = size_px
    if rgb.shape[1] == w and rgb.shape[0] == h:
        return rgb
    return np.asarray(Image.fromarray(rgb).resize((w, h)))


def render_run(run, out_path, person=None, fps=None, size_px=(320, 240)):
    """Write the run as .gif or .mp4 (person: the staff whose figure goes beside it)."""
    from host.render.figure import render_frames, write_gif, write_mp4
    ext = os.path.splitext(str(out_path))[1].lower()
    if ext not in (".gif", ".mp4"):
        raise FormatError("%s: -o writes .gif or .mp4, not %r" % (out_path, ext or "no extension"))
    fps = fps or (20.0 if ext == ".gif" else 25.0)
    frames = robot_frames(run, fps, size_px)
    out_size = size_px
    if person is not None:
        retimed = float(run.report.get("retimed") or 1.0)
        people = render_frames(person, fps=fps, speed=1.0 / retimed, max_frames=None, size_px=size_px)
        frames = _beside(frames, people, size_px)
        out_size = (2 * size_px[0], size_px[1])
    if ext == ".gif":
        return write_gif(frames, out_path, fps)
    return write_mp4(frames, out_path, fps, out_size)


def beside(left, right, size_px):
    """Frames of `left` (resized to size_px) beside frames of `right`, as long as `right`."""
    return _beside(right, left, size_px)


def _beside(robot, people, size_px):
    last = None
    for rgb in robot:
        try:
            last = _fit(next(people), size_px)
        except StopIteration:
            pass
        if last is None:
            last = np.full_like(rgb, 255)
        yield np.concatenate([last, rgb], axis=1)
