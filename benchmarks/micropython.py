"""MicroPython vs CPython, side by side: the fixed-point EKF, frame encoding, the receiver chain;
then the same firmware on the real rp2 port, on an emulated RP2040 (rp2040js, 125 MHz).

    python benchmarks/micropython.py            # needs tools/setup_mpy.sh (Node + the npm port)
    python benchmarks/micropython.py --pico-only --fuzz 5000 --fuzz-seeds 11 12

The same kernels (tools/mpy/bench_cases.py) run on CPython (this process) and on the
MicroPython WebAssembly port 1.27 (Node), best of 3. Prints us per operation, the ratio, and the
rate each would sustain; the receiver's heap use per steady-state frame (gc.mem_alloc deltas,
with micropython.heap_lock held). The float twin of the EKF on CPython is the anchor row.
The wasm port is not a Pico: it has no small RAM and double floats, and runs on a PC's CPU.
"""

import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tools", "mpy"))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

from tools.mpy_run import MpySession, SESSION_FILES, available  # noqa: E402
import sim_machine  # noqa: E402

sys.modules.setdefault("machine", sim_machine)
import bench_cases  # noqa: E402

FILES = dict(SESSION_FILES, **{"bench_cases.py": os.path.join(REPO, "tools", "mpy", "bench_cases.py")})


def float_twin_48(reps=3, n=20):
    from device.estimate.ekf_joint_float import EkfJointFloat

    f = EkfJointFloat(48, 1.0 / 128, c=0.125, g_nm=1.0)
    zs = [[(k * (j + 1)) / 256.0 - j / 32.0 for j in range(48)] for k in range(8)]
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        for k in range(n):
            f.step(zs[k & 7])
        dt = (time.perf_counter() - t0) / n * 1e6
        best = dt if best is None else min(best, dt)
    return best


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--pico-only", action="store_true", help="only the emulated RP2040 section")
    ap.add_argument("--receiver-only", action="store_true",
                    help="with --pico-only: only the receiver rows (kernel and duty)")
    ap.add_argument("--fuzz", type=int, default=1000, help="fuzzed packets into the emulated Pico (per seed)")
    ap.add_argument("--fuzz-seeds", type=int, nargs="+", default=[11],
                    help="one boot of the emulated Pico per seed (10^4 packets: --fuzz 5000 --fuzz-seeds 11 12)")
    a = ap.parse_args(argv)
    ok, why = available()
    if not ok:
        print("benchmarks/micropython.py: %s" % why)
        return 1
    if not a.pico_only:
        wasm_section()
    import pico_section

    return pico_section.main(a.fuzz, a.receiver_only, a.fuzz_seeds)


def wasm_section():
    cpy = {"ekf48": bench_cases.ekf48(), "encode48": bench_cases.encode48(),
           "receiver18": bench_cases.receiver18()[0]}
    with MpySession(files=FILES) as mp:
        out = mp.run("import json, bench_cases\n"
                     "r = {'ekf48': bench_cases.ekf48(), 'encode48': bench_cases.encode48(),\n"
                     "     'receiver18': bench_cases.receiver18()[0], 'heap': bench_cases.heap_per_frame()}\n"
                     "print(json.dumps(r))", name="bench", timeout=600)
    mpy = json.loads(out)
    rows = [("fixed-point EKF step, 48 dofs", "ekf48", "steps/s"),
            ("staff frame encode + packet, 48 rows", "encode48", "frames/s"),
            ("receiver chain, 18 servos (UART->PWM)", "receiver18", "frames/s")]
    print("%-40s %12s %12s %7s %12s %12s" % ("kernel", "CPython us", "MP-wasm us", "ratio",
                                            "CPython /s", "MP-wasm /s"))
    for label, key, unit in rows:
        a, b = cpy[key], mpy[key]
        print("%-40s %12.1f %12.1f %6.1fx %12.0f %12.0f  %s" % (label, a, b, b / a, 1e6 / a, 1e6 / b, unit))
    tw = float_twin_48()
    print("%-40s %12.1f %12s %7s %12.0f %12s  steps/s (anchor)" % ("float twin EKF step, 48 dofs (CPython)",
                                                                  tw, "-", "-", 1e6 / tw, "-"))
    heap, locked = mpy["heap"]
    print()
    print("receiver heap per steady-state frame (MP-wasm): %.1f bytes (heap_lock held: %s)" % (heap, locked))
    print("goals: EKF >= 300 steps/s on CPython: %s; receiver >= 30 fps on MP-wasm: %s"
          % ("yes" if 1e6 / cpy["ekf48"] >= 300 else "NO", "yes" if 1e6 / mpy["receiver18"] >= 30 else "NO"))


if __name__ == "__main__":
    sys.exit(main())
