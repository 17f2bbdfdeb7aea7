"""The robot end's own computing: CPU time per retargeted frame and per balance tick.

    python benchmarks/robot_end_cpu.py [--max-s 10] [--out docs/benchmarks/robot_end_cpu.txt]

The live robot end (`motionstaff follow`, and host/physics/live.py TwinEnd in the demo) runs
host/retarget/live.py LiveRetargeter: step() once per frame of the link (the pose IK with
balance), tick() between frames (the IMU feedback). Measured here as CPU time of this process
(time.process_time) around each call (a step split at its IMU read: "plan", the IK and
balance before it, "after", the feedback on it; "idle": the pose error's bookkeeping, which
the bridge runs after the frame's send), on the demo's
estimated 131_03 staff through
tools/replay_live.py (the product's robot end on the OP3 twin). The twin charges fixed figures
from this table on its clock (host/physics/live.py PLAN_CPU_S, STEP_AFTER_CPU_S, IDLE_CPU_S,
TICK_CPU_S): the body moves on
under the last command while the robot's computer thinks. The Raspberry Pi 4 column is a
formula, not a run: this machine's figure x 9.2 (the CPython ratio of
docs/benchmarks/robust_unit.txt).
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

PI4_RATIO = 9.2


def measure(max_s):
    from host.formats import read_motion
    from host.retarget import live
    from tools.replay_live import replay
    times = {"step": [], "plan": [], "after": [], "idle": [], "tick": []}
    o_step, o_tick = live.LiveRetargeter.step, live.LiveRetargeter.tick

    def step(self, values, t_s):
        t0 = time.process_time()
        read_at = []
        imu = self.imu
        if imu is not None:
            def timed_imu():
                read_at.append(time.process_time())
                return imu()
            self.imu = timed_imu
        try:
            out = o_step(self, values, t_s)
        finally:
            self.imu = imu
        t1 = time.process_time()
        times["step"].append(t1 - t0)
        if read_at:
            # the plan (IK, balance) before the IMU is read; the feedback and bookkeeping after
            times["plan"].append(read_at[0] - t0)
            times["after"].append(t1 - read_at[0])
        return out

    def tick(self, now_s):
        t0 = time.process_time()
        out = o_tick(self, now_s)
        if out is not None:                     # a tick that ran the feedback
            times["tick"].append(time.process_time() - t0)
        return out

    o_idle = live.LiveRetargeter.idle

    def idle(self):
        pending = self._pending is not None
        t0 = time.process_time()
        o_idle(self)
        if pending:
            times["idle"].append(time.process_time() - t0)

    live.LiveRetargeter.step, live.LiveRetargeter.tick, live.LiveRetargeter.idle = step, tick, idle
    try:
        staff = read_motion(os.path.join(ROOT, "tests", "data", "live", "131_03_estimate.png"))
        replay(staff, max_s=max_s)
    finally:
        live.LiveRetargeter.step, live.LiveRetargeter.tick, live.LiveRetargeter.idle = o_step, o_tick, o_idle
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-s", type=float, default=10.0)
    ap.add_argument("--out")
    a = ap.parse_args()
    from host.physics.live import IDLE_CPU_S, PLAN_CPU_S, STEP_AFTER_CPU_S, TICK_CPU_S
    times = measure(a.max_s)
    out = ["Robot end CPU per call (LiveRetargeter on the OP3 twin, demo estimate 131_03, %g s; ms)" % a.max_s,
           "%-6s %6s %7s %7s %7s %7s   %-18s %s" % ("call", "n", "p50", "p90", "p99", "max",
                                                   "Pi 4 p90 (x9.2)", "the twin charges")]
    for name, charged in (("step", PLAN_CPU_S + STEP_AFTER_CPU_S), ("plan", PLAN_CPU_S),
                          ("after", STEP_AFTER_CPU_S), ("idle", IDLE_CPU_S), ("tick", TICK_CPU_S)):
        v = np.array(times[name]) * 1000.0
        p = np.percentile(v, [50, 90, 99, 100]) if len(v) else [float("nan")] * 4
        out.append("%-6s %6d %7.2f %7.2f %7.2f %7.2f   %-18.1f %.2f" % (name, len(v), p[0], p[1], p[2], p[3],
                                                                      p[1] * PI4_RATIO, charged * 1000.0))
    from benchmarks.table_out import emit
    emit(out, a.out, "CPU time, so other jobs' load counts only through the caches; a frame is 33.3 ms at 30 fps")


if __name__ == "__main__":
    main()
