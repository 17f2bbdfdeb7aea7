"""Replay a staff of the person's rows through the demo's live robot end, quickly: the product's
LinkStreamer encodes each frame as the unit sends it, host.physics.live.TwinEnd (LinkBridge ->
LiveRetargeter -> Player -> Dynamixel driver -> emulator -> OP3 twin) receives it on the link's
clock, as `motionstaff demo` does, without the capture, the pty or the GIF.

    python tools/replay_live.py motionstaff-demo/staff.png            # one line of JSON
    python tools/replay_live.py staff.png --noise 1 --seed 3          # +-1 code on random rows
    from tools.replay_live import replay
    rep = replay(staff)            # fell, fall_time_s, pose_error_deg, foot_slip_mm, ...

The line is paced as the demo's serial twin paces it (115200 baud, bytes leave a FIFO in their
wire time); line faults and the pty are not modelled.
"""

import argparse
import json
import os
import sys

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LINE_STEPS = 4          # as host/demo/pipeline.py: the robot acts this many times per frame period


class _Line:
    """The serial line as device/servo/emulate/serialtwin.py paces it (its WireFifo): what is
    written waits and leaves at baud / 10 bytes per second of the clock (take() at each robot
    step); written bytes join the line at the next step, as the twin reads a pty then."""

    def __init__(self, clock, baud=115200):
        from device.servo.emulate.serialtwin import WireFifo
        self.clock = clock
        self.wire = WireFifo(baud / 10.0)
        self.new = bytearray()
        self.t = None
        self.in_waiting = 0

    def write(self, b):
        self.new += bytes(b)
        return len(b)

    def flush(self):
        pass

    def read(self, n=0):
        return b""

    def take(self):
        now = self.clock()
        dt = 0.0 if self.t is None or now < self.t else now - self.t
        self.t = now
        # what the line carried since the last step, then what was written joins the FIFO
        out = self.wire.carry(dt)
        self.wire.fifo += self.new
        self.new = bytearray()
        return out


def noisy(staff, codes_step=1, frac=0.2, seed=0):
    """The staff with +-codes_step on a random frac of its rows' codes (seeded), clipped."""
    from host.staff import Staff, decode
    rng = np.random.default_rng(seed)
    st = staff.copy()
    lo, hi = np.asarray(st.lo, float), np.asarray(st.hi, float)
    c, miss = st.codes()
    hit = rng.random(c.shape) < frac
    c = np.clip(c.astype(np.int64) + hit * rng.choice([-codes_step, codes_step], c.shape),
                0, (1 << st.bits) - 1)
    return Staff(decode(c, lo, hi, st.bits, miss), list(st.rows), st.fps, st.bits, st.skeleton,
                 dict(st.meta))


def replay(staff, robot="op3-dynamixel", seed=0, settle_s=0.5, max_s=None, imu=True, end_out=None):
    """Play staff (the person's rows) through the live robot end; the report dict (end_out, a
    list, gets the TwinEnd: its .retargeter, .twin, .run)."""
    from device.servo.linkstream import LinkStreamer
    from host.physics.live import TwinEnd
    sim = [0.0]
    clock = lambda: sim[0]
    fps = float(staff.fps)
    end = TwinEnd(robot, clock, seed=seed, fps=fps, imu=imu)
    line = _Line(clock)
    link = LinkStreamer(line, staff.header(), staff.bits, clock=clock)
    F = staff.frames if max_s is None else min(staff.frames, int(round(max_s * fps)))
    codes, miss = staff.codes()
    for k in range(F + int(round(settle_s * fps))):
        sim[0] = k / fps
        if k < F:
            link.frame([None if miss[r, k] else int(codes[r, k]) for r in range(staff.nrows)], sim[0])
        for j in range(LINE_STEPS):
            sim[0] = (k + (j + 1.0) / LINE_STEPS) / fps
            end.step(line.take())
        end.sample()
    run = end.finish(fps)
    end.close()
    if end_out is not None:
        end_out.append(end)
    return run.report


def main(argv=None):
    from host.formats import read_motion
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("staff")
    ap.add_argument("--noise", type=int, default=0, help="+-N codes on 20%% of the samples (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-s", type=float)
    ap.add_argument("--no-imu", action="store_true", help="the live balance without the IMU feedback")
    a = ap.parse_args(argv)
    st = read_motion(a.staff)
    if a.noise:
        st = noisy(st, a.noise, seed=a.seed)
    rep = replay(st, seed=a.seed, max_s=a.max_s, imu=not a.no_imu)
    rep.pop("infeasible", None)
    print(json.dumps(rep))


if __name__ == "__main__":
    main()
