"""Physics twin speed: simulated seconds per wall second, and rendering time per video second.

    .venv/bin/python benchmarks/physics.py [--seconds 10] [--out docs/benchmarks/physics.txt]

Rows (all through the real Dynamixel driver -> emulator -> twin, simulated time):
  bare MuJoCo         mj_step alone on the OP3 standing (the anchor: what MuJoCo itself costs)
  twin, standing      servo models every step, zero pose held
  simulate, arms      motionstaff simulate's path: a 1 Hz arm swing staff (robot rows)
  simulate, row copy  the issue's hip/knee +-20 deg 1 Hz copy (it falls; contacts cost more)
  render              MuJoCo offscreen frames (320x240, shadows/reflections off) per video s
Figures are measured in this run on this machine (2 cores shared with other jobs), as CPU
time of this process (time.process_time), so other jobs' load does not count; not formulas.
"""

import argparse
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402


def staff_of(moves, seconds, fps=50):
    from device.servo.robot import load_robot
    from host.staff import Row, Staff
    names = [s.name for s in load_robot("op3-dynamixel").servos]
    t = np.arange(int(seconds * fps)) / fps
    vals = np.zeros((len(names), len(t)))
    for n, (amp, off) in moves.items():
        vals[names.index(n)] = off + amp * np.sin(2 * math.pi * t)
    return Staff(vals, [Row(n, "deg", -180, 180, True) for n in names], fps=fps, bits=16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--out")
    args = ap.parse_args()
    from host.physics.render import pick_gl
    gl = pick_gl()
    import mujoco
    from device.servo import dynamixel as dx
    from device.servo.emulate import make_emulator
    from host.physics.models import load_robot
    from host.physics.render import robot_frames
    from host.physics.simulate import run_simulation
    from host.physics.twin import Twin

    rm = load_robot("op3-dynamixel")
    rows = []
    sec = args.seconds

    tw = Twin(rm)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, [(i, 1) for i in tw.ids]))
    tw.advance(0.5)
    n = int(sec / tw.dt_s)
    d = mujoco.MjData(rm.model)
    d.qpos[:] = tw.data.qpos
    t0 = time.process_time()
    for _ in range(n):
        mujoco.mj_step(rm.model, d)
    rows.append(("bare MuJoCo mj_step (anchor)", sec, time.process_time() - t0, ""))
    t0 = time.process_time()
    tw.advance(sec)
    rows.append(("twin, standing (servo models)", sec, time.process_time() - t0,
                 "height %.3f m" % tw.torso_height_m()))

    arms = staff_of({"l_sho_pitch": (30, 0), "r_sho_pitch": (30, 0), "l_el": (-20, -30)}, sec)
    t0 = time.process_time()
    rep = run_simulation(arms, rm, settle_s=0.0).report
    rows.append(("simulate, arm swing", rep["sim_s"], time.process_time() - t0,
                 "fell %s, tracking %.2f deg" % (rep["fell"], rep["tracking_rms_deg"])))
    copy = staff_of({"l_hip_pitch": (20, 0), "r_hip_pitch": (-20, 0), "l_knee": (-20, -20),
                     "r_knee": (20, 20)}, sec)
    t0 = time.process_time()
    run = run_simulation(copy, rm, settle_s=0.0, record=True)
    rows.append(("simulate, hip/knee row copy", run.report["sim_s"], time.process_time() - t0,
                 "fell at %s s" % run.report["fall_time_s"]))

    fps = 20.0
    t0 = time.process_time()
    nf = 0
    for _ in robot_frames(run, fps, (320, 240)):
        nf += 1
        if nf >= int(2 * fps):
            break
    render_s = (time.process_time() - t0) / (nf / fps)

    out = ["Physics twin speed (OP3, MuJoCo %s, MUJOCO_GL=%s), %g simulated s per row" % (mujoco.__version__, gl, sec),
           "%-34s %9s %9s %11s  %s" % ("row", "sim s", "cpu s", "x realtime", "note")]
    for name, s, w, note in rows:
        out.append("%-34s %9.2f %9.3f %11.1f  %s" % (name, s, w, s / w, note))
    out.append("render 320x240 at %g fps: %.2f s cpu per video second (%d frames)" % (fps, render_s, nf))
    from benchmarks.table_out import emit
    emit(out, args.out, "the anchor row shows the contention")


if __name__ == "__main__":
    main()
