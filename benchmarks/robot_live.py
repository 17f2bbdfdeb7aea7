"""The demo's live robot end on recorded and estimated motion: does the OP3 twin stand?

    python benchmarks/robot_live.py                       # demo variants + the 13 clips' first 10 s
    python benchmarks/robot_live.py --no-clips            # only the demo clip's variants
    python benchmarks/robot_live.py --out docs/benchmarks/robot_live.txt

Each staff of the person's rows (the built-in human model's) goes through tools/replay_live.py:
the product's LinkStreamer encodes the frames, host.physics.live.TwinEnd receives them as in
`motionstaff demo` (LinkBridge -> host/retarget/live.py LiveRetargeter, causal, no retiming ->
Player and limiter -> Dynamixel driver -> emulator -> OP3 twin, XM430 servo models), once with
the IMU feedback (the twin's torso IMU as the OP3's own, host/retarget/stabilise.py) and once
as the live balance was before it (the anchor: no IMU, LIFT_COMMIT_S 0, TRUNK_TAU_S 0, no
SWING_REACH_M, no STANCE_PITCH_DPS). Rows:
  demo variants: CMU 131_03 (10 s, the demo's clip with ../shared) and the bundled 131_03_short
      (the demo without ../shared) as the demo's unit estimated them (tests/data/live/*_estimate.png,
      simulated IMUs and markers, 8-bit staff) and their true motion (*_truth.png); the estimate
      with +-1 code on 20 % of the samples (seeds 1-5), +-2 codes, and the twin's seeds 1 and 2.
  clips: the first 10 s of every BVH and C3D in ../shared/data, through the human model (BVH:
      device.capture.retarget; C3D: the markers' IK), 8-bit.
Columns: fell / fall time (s of the run), pose error (median angle between the person's and the
robot's segments, deg), stance-foot slip (mm, until a fall), self-collision frames. All
simulation driven by real recordings (CMU, Bandai-Namco, C3D), none from a real robot.
"""

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tools.replay_live import noisy, replay                      # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(REPO, "tests", "data", "live")
FPS = 30.0


def demo_variants():
    from host.formats import read_motion
    out = []
    for clip in ("131_03", "131_03_short"):
        est = read_motion(os.path.join(DATA, clip + "_estimate.png"))
        out.append((clip + " estimate", est, 0))
        out.append((clip + " truth", read_motion(os.path.join(DATA, clip + "_truth.png")), 0))
    est = out[0][1]
    for seed in (1, 2, 3, 4, 5):
        out.append(("131_03 estimate +-1 code, seed %d" % seed, noisy(est, 1, seed=seed), 0))
    out.append(("131_03 estimate +-2 codes, seed 1", noisy(est, 2, seed=1), 0))
    out.append(("131_03_short estimate +-1 code, seed 1", noisy(out[2][1], 1, seed=1), 0))
    for seed in (1, 2):
        out.append(("131_03 estimate, twin seed %d" % seed, est, seed))
    return out


def human_staff(path, max_s):
    """The clip's first max_s seconds as the built-in human model's rows (8-bit staff)."""
    import numpy as np
    from device.body.human import human_model
    from host.staff import Row, Staff
    sk = human_model()
    if path.lower().endswith(".bvh"):
        from device.capture.bvhclip import load_bvh
        from device.capture.retarget import retarget_clip
        q = retarget_clip(load_bvh(path), sk, max_s=max_s, fps=FPS).q_frames
        rows = [Row(d.name, "deg", d.lo, d.hi, True) for d in sk.dofs]
        return Staff(np.asarray(q, float).T.copy(), rows, FPS, 8, None, {"source": path})
    from host.formats import read_motion
    st = read_motion(path)
    n = min(st.frames, int(round(max_s * st.fps)))
    return Staff(st.values[:, :n].copy(), list(st.rows), st.fps, 8, st.skeleton, dict(st.meta))


def clips(max_s):
    for p in (os.path.join(REPO, "..", "shared", "data"), os.path.join(REPO, "..", "..", "shared", "data")):
        if os.path.isdir(p):
            files = sorted(glob.glob(os.path.join(p, "bvh", "*.bvh"))) + sorted(glob.glob(os.path.join(p, "c3d", "*.c3d")))
            return [(os.path.basename(f), f) for f in files]
    return []


def replay_before(st, seed):
    """The live balance as it was before the IMU feedback (the anchor)."""
    from host.retarget import live
    old = (live.LIFT_COMMIT_S, live.TRUNK_TAU_S, live.SWING_REACH_M, live.STANCE_PITCH_DPS)
    try:
        live.LIFT_COMMIT_S, live.TRUNK_TAU_S, live.SWING_REACH_M, live.STANCE_PITCH_DPS = 0.0, 0.0, None, None
        return replay(st, seed=seed, imu=False)
    finally:
        live.LIFT_COMMIT_S, live.TRUNK_TAU_S, live.SWING_REACH_M, live.STANCE_PITCH_DPS = old


def fmt(rep):
    fell = "%.2f" % rep["fall_time_s"] if rep["fell"] else "no"
    pe = rep.get("pose_error_deg")
    return "%s / %s / %s / %d" % (fell, "-" if pe is None else "%.1f" % pe,
                                  "%.1f" % rep["foot_slip_mm"], rep["self_collision_frames"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-clips", action="store_true")
    ap.add_argument("--max-s", type=float, default=10.0)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    t0, c0 = time.time(), time.process_time()
    say("live robot end (tools/replay_live.py; simulation): fell at s or no / pose error deg / "
        "slip mm / self-collision frames")
    say("| staff | IMU balance (this) | before: no IMU (anchor) |")
    say("|---|---|---|")
    tally = {"imu": [0, 0], "none": [0, 0]}
    rows = [(n, st, seed) for n, st, seed in demo_variants()]
    if not a.no_clips:
        for n, f in clips(a.max_s):
            try:
                rows.append(("%s (first %g s)" % (n, a.max_s), human_staff(f, a.max_s), 0))
            except Exception as e:          # a clip the human model cannot take: say so
                say("| %s | not run: %s | |" % (n, str(e).splitlines()[0][:80]))
    for name, st, seed in rows:
        r1 = replay(st, seed=seed)
        r0 = replay_before(st, seed)
        for k, r in (("imu", r1), ("none", r0)):
            tally[k][0] += r["fell"]
            tally[k][1] += 1
        say("| %s | %s | %s |" % (name, fmt(r1), fmt(r0)))
    say()
    say("fell: with the IMU balance %d of %d staffs, before it %d of %d"
        % (tally["imu"][0], tally["imu"][1], tally["none"][0], tally["none"][1]))
    say("took %.0f s wall, %.0f s CPU" % (time.time() - t0, time.process_time() - c0))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
