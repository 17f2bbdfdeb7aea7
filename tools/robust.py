"""Robustness scenarios of the main job, as functions that return their figures (the tests in
tests/test_e2e_*.py assert on them; benchmarks/run_all.py puts them in docs/results.md).

    from tools import robust
    robust.power_cut(tmp_dir, trials=50)     # kill the capture process at seeded moments
    robust.imu_outage(tmp_dir)               # an IMU stops answering mid-capture, comes back
    robust.bad_files(tmp_dir)                # bad + 1000 mutated files through every reader

power_cut and bad_files fork a child (after the imports, so it is cheap) and talk to it over a
pipe: the power cut is synchronised on data (the child reports each flushed frame, the parent
kills it after a seeded count), never on sleeps; the bad-file child runs with RLIMIT_AS.
"""

import json
import os
import random
import resource
import select
import signal

import numpy as np

LIMIT_AS = 2 << 30


def demo_unit(seed=1, estimator="ekf", seconds=None, camera=False):
    """The demo's simulated unit (default: the torque-state EKF on the human model performing
    the clip), built once; forked children each run a pristine copy of it."""
    from device.capture.config import default_config
    from device.capture.unit import build_unit
    from host.demo.pipeline import default_clip
    cfg = default_config(seed=seed, estimator=estimator, camera=camera)
    clip = default_clip()
    cfg["subject"]["clip"] = clip
    if seconds is not None:
        cfg["subject"]["max_s"] = float(seconds)
    return build_unit(cfg, clip_path=clip)


def _capture_child(unit, path, wfd):
    from device.capture.loop import CaptureLoop
    loop = CaptureLoop(unit, record=path)
    out = os.fdopen(wfd, "w")

    def report(k, t_s, values, codes):
        if loop.writer.frames_flushed == loop.writer.frames:
            out.write("%d %s\n" % (k, ",".join("-" if c is None else str(c) for c in codes)))
            out.flush()
    loop.outputs.append(report)
    loop.run(frames=100000)


def _codes(text):
    return [None if c == "-" else int(c) for c in text.split(",")]


def power_cut(d, trials=50, seed=8, max_frames=75, estimator="ekf"):
    """Kill the capture process (SIGKILL) after a seeded number of frames, `trials` times; check
    every frame it reported written is in the container it leaves, byte for byte, in order.
    The unit (the demo's: EKF, camera off) is built once here; each trial forks a fresh copy."""
    from protocol import container
    rng = random.Random(seed)
    unit = demo_unit(estimator=estimator, seconds=max_frames / 30.0 + 1.0)
    res = {"trials": trials, "estimator": estimator, "rows": unit.skeleton.ndof, "frames_written": 0, "frames_recovered": 0, "written_lost": 0,
           "written_differ": 0, "not_a_prefix": 0, "extra_recovered": 0}
    for trial in range(trials):
        path = os.path.join(d, "cut%d.msr" % trial)
        target = rng.randint(0, max_frames)        # calibration (30 frames) and estimation both
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                               # the unit
            os.close(r)
            try:
                _capture_child(unit, path, w)
            finally:
                os._exit(0)
        os.close(w)
        written = {}
        with os.fdopen(r) as f:
            for line in f:
                k, codes = line.split()
                written[int(k)] = _codes(codes)
                if int(k) >= target:
                    os.kill(pid, signal.SIGKILL)    # the power cut
                    break
        os.waitpid(pid, 0)
        rec = container.read(path)
        got = dict((k, list(c)) for k, _t, c in rec.frames)
        res["frames_written"] += len(written)
        res["frames_recovered"] += len(got)
        res["not_a_prefix"] += sorted(got) != list(range(len(got)))
        for k, codes in written.items():
            if k not in got:
                res["written_lost"] += 1
            elif got[k] != codes:
                res["written_differ"] += 1
        res["extra_recovered"] += len(set(got) - set(written))
    return res


def _err(cap, rows, a_s, b_s):
    rate = cap["unit"].rate_hz
    est, truth = cap["values"], cap["loop"].truth_values()
    a, b = int(a_s * rate), int(b_s * rate)
    d = (est[a:b, rows] - truth[a:b, rows] + 180.0) % 360.0 - 180.0
    return float(np.sqrt(np.nanmean(d ** 2)))


# power back to the sensor's first reading: its twin boots 650 ms (no acknowledge), the slot's
# backoff (up to 8 frames), the driver's reset 650 ms and mode switch 20 ms (benchmarks/
# robust_unit.py (d): 1.40 s); "after" is measured from 0.8 s past that
REJOIN_S = 1.6


def imu_outage(d, estimator="ekf", start_s=3.0, end_s=4.0, seconds=6.0, noise=None):
    """The demo's capture + stream with the left shank's IMU powered off from start_s to end_s
    (EKF: the human model performing the clip; "orient": the clip's own skeleton)."""
    sensor, link_name = ("l_shank_imu", "l_shank") if estimator != "orient" else ("LeftKnee_imu", "LeftKnee")
    from host.demo.checks import link_checks
    from host.demo.pipeline import capture, default_clip
    from protocol import container

    def configure(cfg):
        cfg["subject"]["outages"] = [{"sensor": sensor, "start_s": start_s, "end_s": end_s}]
        if noise is not None:
            cfg["subject"]["noise"] = dict(noise)
    cap = capture(d, default_clip(), seconds, estimator=estimator, camera=False, configure=configure)
    unit, loop = cap["unit"], cap["loop"]
    sk = unit.skeleton
    link = sk.link_index(link_name)
    rows = [j for j, x in enumerate(sk.dofs) if x.link == link and x.kind == "rotation"]
    near = {link} | {i for i, ln in enumerate(sk.links) if ln.parent == link}
    others = [j for j, x in enumerate(sk.dofs) if x.kind == "rotation" and x.link not in near
              and sk.links[x.link].parent >= 0]
    slot = [s for s in unit.slots if s.name == sensor][0]
    return {"sensor": sensor, "estimator": cap["estimator"], "stale_frames": slot.stale_frames, "rejoins": slot.rejoins,
            "alive_at_end": bool(slot.alive),
            "frames_planned": cap["frames_planned"], "frames_captured": loop.frame_index,
            "skipped": loop.stats.skipped, "frames_streamed": cap["streamer"].frames,
            "frames_delivered": cap["relay"].counts["frames"],
            "frames_recorded": container.read(cap["record"]).nframes,
            "corrupted_frames_delivered": link_checks(cap)["corrupted_frames_delivered"],
            "err_before_deg": _err(cap, rows, start_s - 1.0, start_s),
            "err_during_deg": _err(cap, rows, (start_s + end_s) / 2, end_s),
            "err_after_deg": _err(cap, rows, end_s + REJOIN_S + 0.8, seconds + 1.5),
            "others_during_deg": _err(cap, others, start_s, end_s)}


def _bad_child(d, wfd, n_mutations):
    from tools.badfiles import run_cases
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))
    res = run_cases(d, n_mutations)
    with os.fdopen(wfd, "w") as f:
        json.dump(res, f)


def bad_files(d, n_mutations=1000, timeout_s=900.0):
    """tools.badfiles.run_cases in a forked child with RLIMIT_AS = 2 GiB; None on a hang."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            _bad_child(d, w, n_mutations)
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    with os.fdopen(r, "rb") as f:
        while True:
            ready, _, _ = select.select([f], [], [], timeout_s)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None
            chunk = os.read(f.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"counts": {"calls": 0}, "bad": [{"case": "child", "argv": "-",
                                                 "problem": "child died (status %d)" % status}]}
    res = json.loads(data.decode())
    res["memory_limit_bytes"] = LIMIT_AS
    return res
