"""The main job end to end on the simulated unit: capture -> record + stream -> robot -> download
-> PNG staff -> despike + smooth -> GIF, and a report of what was measured.

    from host.demo.pipeline import run_pipeline
    report = run_pipeline("out/", clip=None, seconds=10.0, faults=None, progress=True)
    report["rms_deg"], report["latency_p99_ms"], report["files"]

Stages (each times itself; a stage whose part is missing records null and the reason in
report["not_measured"], never a made-up number):
 1. capture: a simulated subject performs the clip wearing one IMU per segment (BNO055 twins
    behind TCA9548A multiplexers on a sim I2C bus) and camera markers; the CaptureLoop estimates
    (`estimator`, default the torque-state EKF "ekf", see the estimator SEAM below), writes the crash-safe
    container (protocol/container.py) and streams every frame through the product's own output
    (device/capture/outputs.py PacketOutput: paced, compact header every second and on request)
    over the serial twin (device/servo/emulate/serialtwin.py: a pty paced at 115200 baud of
    simulated time, 4 KiB driver buffer, optional line faults) to the robot end
    (host/demo/robot_end.py: the product's LinkBridge + Player), which drives an emulated
    Pololu Maestro (device/servo/emulate, PtyServer) for the khr17-maestro humanoid.
 2. download: the recording comes back over a second pty from the unit's download server
    (host/download.py), else null with the reason.
 3. convert + edit: container -> PNG staff -> despike (Hampel) -> Butterworth 6 Hz -> PNG.
 4. render: GIF of the estimated figure beside the true one, the staff under it (host/render).
 5. report: RMS error against the truth, frames, latency sample -> servo bytes, bytes, files.
"""

import os
import time

import numpy as np

from host.demo import checks
from host.demo.robot_end import open_robot_end, open_twin_end

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED_CLIP = os.path.join(REPO, "..", "shared", "data", "bvh", "131_03.bvh")
BUNDLED_CLIP = os.path.join(REPO, "host", "data", "131_03_short.bvh")
ROBOT = "khr17-maestro"
LINK_BAUD = 115200
LINE_STEPS = 4          # the line and the robot run this many times per frame period
# SEAM (estimator): the capture unit takes make_estimator() names; if the chosen estimator (the
# torque-state EKF by default) raises during capture, the demo starts again with the unit's
# "orient" estimator and says so in report["not_measured"]["estimator"].
FALLBACK_ESTIMATOR = "orient"


def default_clip():
    return os.path.normpath(SHARED_CLIP) if os.path.exists(SHARED_CLIP) else BUNDLED_CLIP


class _Progress:
    def __init__(self, enabled, total):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
                import sys
                self.bar = tqdm(total=total, unit="frame", file=sys.stderr, leave=False,
                                desc="capture+stream")
            except ImportError:
                self.bar = None

    def stage(self, name):
        if self.bar is not None:
            self.bar.set_description(name)

    def update(self, n=1):
        if self.bar is not None:
            self.bar.update(n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _build_unit(clip, estimator, rate_hz, seed, camera, configure=None, seconds=None):
    from device.capture.config import default_config
    from device.capture.unit import build_unit
    cfg = default_config(estimator=estimator, rate_hz=rate_hz, seed=seed, camera=camera)
    cfg["subject"]["clip"] = clip
    if seconds is not None:
        cfg["subject"]["max_s"] = float(seconds) + 0.5   # retarget only what will be performed
    if configure is not None:
        configure(cfg)                 # tests: outages, noise, ...
    return build_unit(cfg, clip_path=clip)


def capture(out_dir, clip, seconds, estimator="ekf", rate_hz=30.0, seed=1, camera=True,
            faults=None, progress=None, notes=None, configure=None, robot_mapping="pose"):
    """Stage 1. Returns a dict with the loop, unit, streamer, relay, emulator and measurements."""
    import serial
    from device.capture.loop import CaptureLoop
    from device.capture.outputs import PacketOutput
    from device.servo.emulate import make_emulator
    from device.servo.emulate.pty import PtyServer
    from device.servo.emulate.serialtwin import LineFaults, SerialTwin
    from device.servo.robot import load_robot

    notes = notes if notes is not None else {}
    unit = _build_unit(clip, estimator, rate_hz, seed, camera, configure, seconds)
    calib_s = unit.cfg["subject"].get("calib_s", 1.0) + unit.cfg["subject"].get("blend_s", 0.5)
    dur = seconds + calib_s
    if unit.subject is not None and np.isfinite(unit.subject.duration_s):
        dur = min(dur, unit.subject.duration_s + calib_s)
    nframes = int(round(dur * unit.rate_hz))
    rec_path = os.path.join(out_dir, "unit", "recording.msr")
    os.makedirs(os.path.dirname(rec_path), exist_ok=True)
    if os.path.exists(rec_path):
        os.remove(rec_path)
    loop = CaptureLoop(unit, record=rec_path, truth=True,
                       captured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    read_start = {}
    orig_read = unit.read

    def timed_read(t_s):
        read_start[loop.frame_index] = time.perf_counter()
        return orig_read(t_s)
    unit.read = timed_read

    robot = load_robot(ROBOT)
    # the Maestro as docs/robots.md has its owner set it (Min/Max per channel in Control Center)
    from device.servo.maestro import maestro_limits
    emu = make_emulator(robot.controller, limits_qus=maestro_limits(robot.servos))
    srv = PtyServer(emu).start()
    sim = [0.0]
    clock = lambda: sim[0]
    end = open_robot_end(robot, srv.path, clock)
    # the simulated OP3 listening on the same line, retargeting the person live by pose
    body = open_twin_end(clock, notes, robot_mapping, unit.rate_hz)
    twin = SerialTwin(baud=LINK_BAUD, buffer_bytes=4096, clock=clock, faults=faults or LineFaults())
    port = serial.serial_for_url(twin.path, baudrate=LINK_BAUD, timeout=0, write_timeout=0)
    streamer = PacketOutput(port, loop.header, bits=loop.bits, baud=LINK_BAUD, clock=clock,
                            record=True)
    values = []
    keys = []                       # (seq, time_us) of frame k on the link, None if skipped

    def record_values(k, t_s, vals, codes):
        values.append([np.nan if v is None else v for v in vals])
    loop.outputs.append(record_values)
    loop.outputs.append(streamer)
    written_at = {}
    sim_s = []
    est_fallback = None
    done = False
    try:
        for k in range(nframes):
            t_s = k / unit.rate_hz
            sim[0] = t_s
            sent_before = streamer.frames
            try:
                loop.step()
            except Exception as e:          # the estimator failed (see the estimator SEAM)
                if estimator == FALLBACK_ESTIMATOR or est_fallback is not None:
                    raise
                est_fallback = "%s: %s" % (e.__class__.__name__, str(e).splitlines()[0][:160])
                break
            key = next(reversed(streamer.link.sent)) if streamer.frames > sent_before else None
            keys.append(key)
            written_at[key] = time.perf_counter()
            sim_s.append(getattr(unit, "sim_s", 0.0) or 0.0)
            for j in range(LINE_STEPS):     # the line carries bytes in their time; the robot acts
                sim[0] = (k + (j + 1.0) / LINE_STEPS) / unit.rate_hz
                data = twin.pump()
                twin.send_back(end.step(data))
                if body is not None:
                    body.step(data)
            if body is not None:
                body.sample()
            if progress is not None:
                progress.update()
        done = est_fallback is None
        if done:                            # the frames still on the line arrive (at most 1 s)
            for _ in range(int(unit.rate_hz * LINE_STEPS)):
                if twin.idle():
                    break
                sim[0] += 1.0 / unit.rate_hz / LINE_STEPS
                data = twin.pump()
                twin.send_back(end.step(data))
                if body is not None:
                    body.step(data)
    finally:
        loop.close()
        end.close()
        if body is not None:
            body.close()
        twin.close()
        if not done:
            srv.stop()
    if est_fallback is not None:
        notes["estimator"] = ("%r failed during capture, fell back to %r: %s"
                              % (estimator, FALLBACK_ESTIMATOR, est_fallback))
        if progress is not None and progress.bar is not None:
            progress.bar.reset()
        return capture(out_dir, clip, seconds, FALLBACK_ESTIMATOR, rate_hz, seed, camera, faults,
                       progress, notes, configure, robot_mapping)
    n_cmd = sum(len(c[2]) for c in end.commands)
    emu.wait_for(lambda e: e.commands >= n_cmd, 10.0)
    srv.stop()
    # latency, sensor sample -> servo bytes written at the robot end: the frame's bus wait and
    # the unit's CPU time (measured), then its time on the paced line and in the driver's queue
    # (simulated: when the robot end acted on it, on the demo's clock, which the line follows in
    # steps of 1 / (rate x LINE_STEPS))
    lat = []
    lat_wall = []                   # wall clock of this one process (the robot twin's physics in it)
    lat_robot = []                  # from the unit's write to the servo bytes (the robot end)
    cmd_at = dict((c[1], c[3]) for c in end.commands if c[1] is not None)
    cmd_sim = dict((c[1], c[0]) for c in end.commands if c[1] is not None)
    st = loop.stats
    for k, key in enumerate(keys):
        w = cmd_at.get(key)
        if key is not None and w is not None and k in read_start:
            unit_s = (st.bus_s[k] if k < len(st.bus_s) else 0.0) + (st.cpu_s[k] if k < len(st.cpu_s) else 0.0)
            lat.append((cmd_sim[key] - k / unit.rate_hz + unit_s) * 1000.0)
            lat_wall.append((w - read_start[k] - (sim_s[k] if k < len(sim_s) else 0.0)) * 1000.0)
            lat_robot.append((w - written_at[key]) * 1000.0)
    return {"unit": unit, "loop": loop, "relay": end.bridge, "robot_end": end, "streamer": streamer,
            "twin": twin, "faults": twin.faults, "emulator": emu, "robot": robot, "record": rec_path,
            "values": np.array(values), "keys": keys, "latency_ms": lat, "latency_robot_ms": lat_robot,
            "latency_wall_ms": lat_wall, "line_steps": LINE_STEPS,
            "estimator": estimator, "notes": notes, "frames_planned": nframes,
            "robot_twin": body.finish(unit.rate_hz) if body is not None else None}


def _root_dofs(skeleton):
    return np.array([skeleton.links[d.link].parent < 0 for d in skeleton.dofs])


def rms_vs_truth(est, truth, skeleton, start, joints_only=True):
    """RMS (deg) over rotation rows from frame `start`, differences wrapped to +-180; with
    joints_only the root link's rows (its world orientation, whose Euler triple is not unique)
    are left out: see root_error_deg. Returns (rms or None, values missing)."""
    rot = np.array([d.kind == "rotation" for d in skeleton.dofs])
    if joints_only:
        rot &= ~_root_dofs(skeleton)
    e, t = np.asarray(est, float)[start:, rot], np.asarray(truth, float)[start:, rot]
    n = min(len(e), len(t))
    d = (e[:n] - t[:n] + 180.0) % 360.0 - 180.0
    ok = np.isfinite(d)
    if not ok.any():
        return None, 0
    return float(np.sqrt(np.mean(d[ok] ** 2))), int((~ok).sum())


def root_error_deg(est, truth, skeleton, start):
    """RMS geodesic angle (deg) between the estimated and true root orientation (by forward
    kinematics, so an equivalent Euler triple is no error); None for a fixed-base body."""
    from device.body.kinematics import forward_kinematics
    root = _root_dofs(skeleton)
    rot = np.array([d.kind == "rotation" for d in skeleton.dofs])
    if not (root & rot).any():
        return None
    e, t = np.asarray(est, float)[start:], np.asarray(truth, float)[start:]
    n = min(len(e), len(t))
    e, t = e[:n].copy(), t[:n].copy()
    ok = np.isfinite(e[:, root & rot]).all(axis=1)
    if not ok.any():
        return None
    e, t = np.where(np.isfinite(e), e, skeleton.home), np.where(np.isfinite(t), t, skeleton.home)
    k = [i for i, ln in enumerate(skeleton.links) if ln.parent < 0][0]
    Re = forward_kinematics(skeleton, e[ok]).link_rot[:, k]
    Rt = forward_kinematics(skeleton, t[ok]).link_rot[:, k]
    c = (np.einsum("fij,fij->f", Re, Rt) - 1.0) / 2.0
    ang = np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))
    return float(np.sqrt(np.mean(ang ** 2)))


def _percentile(xs, q):
    return float(np.percentile(np.asarray(xs), q)) if len(xs) else None


def run_pipeline(out_dir, clip=None, seconds=10.0, estimator="ekf", rate_hz=30.0, seed=1,
                 camera=True, faults=None, render=True, progress=True, gif_frames=120,
                 robot_mapping="pose"):
    from host.demo import stages
    clip = clip or default_clip()
    if not os.path.exists(clip):
        raise FileNotFoundError(2, "No such file or directory", clip)
    os.makedirs(out_dir, exist_ok=True)
    t_start = time.perf_counter()
    timings = {}
    notes = {}
    bar = _Progress(progress, int(round((seconds + 1.5) * rate_hz)))
    try:
        t0 = time.perf_counter()
        cap = capture(out_dir, clip, seconds, estimator, rate_hz, seed, camera, faults, bar, notes,
                      robot_mapping=robot_mapping)
        timings["capture_s"] = time.perf_counter() - t0
        bar.stage("download")
        t0 = time.perf_counter()
        host_rec, dl = stages.download(cap["record"], os.path.join(out_dir, "recording.msr"), notes)
        timings["download_s"] = time.perf_counter() - t0
        bar.stage("convert+edit")
        t0 = time.perf_counter()
        files, staffs = stages.convert_and_edit(host_rec, out_dir, cap)
        timings["convert_edit_s"] = time.perf_counter() - t0
        bar.stage("render")
        t0 = time.perf_counter()
        if render:
            stages.render(staffs, os.path.join(out_dir, "compare.gif"), files, notes, gif_frames,
                          robot_run=cap.get("robot_twin"))
        else:
            notes["gif"] = "not rendered (--no-render)"
        timings["render_s"] = time.perf_counter() - t0
    finally:
        bar.close()
    report = stages.report(cap, dl, files, staffs, notes, clip, seconds)
    if cap.get("robot_twin") is not None:
        report["robot_twin"] = cap["robot_twin"].report     # the simulated OP3 on the same line
    timings["total_s"] = time.perf_counter() - t_start
    report["timings_s"] = dict((k, round(v, 3)) for k, v in timings.items())
    report["out_dir"] = os.path.abspath(out_dir)
    report["checks"] = checks.link_checks(cap)
    report["corrupted_frames_delivered"] = report["checks"]["corrupted_frames_delivered"]
    return report
