"""The emulated-RP2040 section of benchmarks/micropython.py: our firmware on the real rp2 port.

    python benchmarks/micropython.py --pico-only [--fuzz N]
    python benchmarks/micropython.py --pico-only --receiver-only   # the receiver rows, ~3 min

Everything runs on MicroPython 1.27's rp2 port (RPI_PICO UF2) booted on rp2040js, with the
files `deploy` writes (tools/mpy/pico.py). Times are emulated microseconds at 125 MHz, read by
the firmware's own time.ticks_us: deterministic run to run. Heap: gc.mem_alloc deltas with the
collector off. Wall time per emulated second is this machine's (2 cores shared).
"""

import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from protocol import packets as pk  # noqa: E402
from tools.mpy import pico  # noqa: E402

NSERVO = 18
FRAME_MS = 20


def _header(n, lo=-90.0, hi=90.0):
    return {"format": "motionstaff", "version": 1, "fps": 50.0, "bits": 8, "frames": 0,
            "rows": [{"name": "r%d" % i, "unit": "deg", "lo": lo, "hi": hi, "wrap": False}
                     for i in range(n)], "skeleton": None, "source": "", "captured": ""}


def kernels(receiver_only=False):
    enc = pk.Encoder(clock_us=lambda: 0)
    fr = [enc.frame([(k * 13 + j * 7) & 255 for j in range(NSERVO)]) for k in range(70)]
    uart = [(1.0, b"".join(enc.header(_header(NSERVO))))]
    uart += [(1.2 + FRAME_MS / 1000.0 * k, f) for k, f in enumerate(fr)]
    code = "import pico_bench\npico_bench.receiver(%d, 30, %d)\n" % (NSERVO, min(len(f) for f in fr))
    if not receiver_only:
        code += "pico_bench.codec()\npico_bench.ekf(6, 2)\npico_bench.ekf(48, 1)\n"
    t = time.time()
    out, res = pico.bench_script(code, uart=uart, until_s=90)
    out["wall_per_s"] = (time.time() - t) / (res["end_ns"] / 1e9)
    return out


def duty(nservo=NSERVO, seconds=2.0):
    """Share of the RP2040's time the product firmware (main.py) is busy: idle, and with a
    50 Hz stream; from the emulator's executed-cycle count over the window (deterministic)."""
    cfg = {"format": "motionstaff-receiver", "version": 1,
           "failsafe": {"timeout_ms": 500, "action": "hold"}, "heartbeat_ms": 0,
           "servos": [{"name": "s%d" % i, "pin": 2 + i, "row": "r%d" % i, "neutral_us": 1500,
                       "us_per_deg": 10.0, "min_us": 600, "max_us": 2400, "max_vel_dps": 360.0}
                      for i in range(nservo)]}
    files = pico.receiver_files(cfg)
    enc = pk.Encoder(clock_us=lambda: 0)
    head = [(0.5, b"".join(enc.header(_header(nservo))))]
    t0 = 0.7
    frames = [(t0 + FRAME_MS / 1000.0 * k, enc.frame([(k * 13 + j * 7) & 255 for j in range(nservo)]))
              for k in range(int(seconds * 1000 / FRAME_MS))]
    base = pico.run(files, uart=head, until_s=t0)["busy_ns"]
    idle = pico.run(files, uart=head, until_s=t0 + seconds)
    busy = pico.run(files, uart=head + frames, until_s=t0 + seconds)
    return ((idle["busy_ns"] - base) / (seconds * 1e9), (busy["busy_ns"] - base) / (seconds * 1e9),
            busy["overruns"])


def failsafe(action):
    """(last valid frame s, first pulse change after it s or None, heartbeat state after)."""
    cfg = {"format": "motionstaff-receiver", "version": 1,
           "failsafe": {"timeout_ms": 100, "action": action}, "heartbeat_ms": 0,
           "servos": [{"name": "s%d" % i, "pin": 2 + i, "row": "r%d" % i, "neutral_us": 1500,
                       "us_per_deg": 10.0, "min_us": 700, "max_us": 2300, "home_deg": 30.0,
                       "max_vel_dps": 100000.0} for i in range(4)]}
    enc = pk.Encoder(clock_us=lambda: 0)
    uart = [(0.35, b"".join(enc.header(_header(4))))]
    frames = [(0.5 + 0.05 * k, enc.frame([(40 + 30 * k + i) & 255 for i in range(4)])) for k in range(6)]
    uart += frames + [(1.0, enc.hello())]
    res = pico.run(pico.receiver_files(cfg), uart=uart, until_s=1.1)
    last = frames[-1][0]
    after = [t / 1e9 for t, p, w in res["pulses"] if t / 1e9 > last + 0.03]
    beats = [p for p in pk.Decoder().feed(b"".join(d for _, d in res["tx"])) if p.name == "HEARTBEAT"]
    return last, (min(after) if after else None), beats[-1].fields["state"] if beats else None, res


def fuzz(n, seed=11):
    """n fuzzed packets (seed) into one boot of the emulated Pico, its pulses against the twin's."""
    from tools import linkfuzz

    cfg = linkfuzz.config("hold")
    cfg["heartbeat_ms"] = 0
    pins = list(range(2, 2 + linkfuzz.NSERVO))
    for s, pin in zip(cfg["servos"], pins):
        s["pin"], s["max_vel_dps"] = pin, 100000.0
    enc = pk.Encoder(clock_us=lambda: 0)
    head = b"".join(enc.header(_header(14)))
    uart = [(0.35, head)]
    fz, t_end = pico.fuzz_uart(n, seed=seed, t0_s=0.45)
    uart += fz + [(t_end + 0.1, head), (t_end + 0.2, enc.frame([200] * 14)), (t_end + 0.3, enc.hello())]
    t = time.time()
    res = pico.run(pico.receiver_files(cfg), uart=uart, until_s=t_end + 0.45, timeout=7200)
    wall = time.time() - t
    twin = pico.twin_pulses(cfg, uart, t_end + 0.45)
    ok_pins = 0
    for pin in pins:
        got = [w for _, p, w in res["pulses"] if p == pin]
        want = [d for _, p, d in twin if p == pin]
        ok_pins += bool(got) and pico.is_subsequence(got, want, 500)
    alive = [p for p in pk.Decoder().feed(b"".join(d for t, d in res["tx"] if t > (t_end + 0.3) * 1e9))
             if p.name == "HEARTBEAT"]
    nbytes = sum(len(d) for _, d in fz)
    return {"seed": seed, "packets": n, "bytes": nbytes, "emulated_s": t_end, "pins_equal": ok_pins, "pins": len(pins),
            "alive": len(alive) == 1, "overruns": res["overruns"], "wall_s": wall,
            "traceback": "Traceback" in res["usb"]}


def golden():
    sys.path.insert(0, os.path.join(REPO, "tools", "mpy"))
    import golden_cases
    from tools import gen_golden

    names = [n for n, _ in golden_cases.CASES]
    got = pico.golden(names)
    rows = []
    for name in names:
        want = gen_golden.normalise(dict(golden_cases.CASES)[name]())
        r, ms, heap = got[name]
        rows.append((name, r == want, ms, heap))
    return rows


def main(nfuzz, receiver_only=False, seeds=(11,)):
    print()
    print("== the same firmware on the real MicroPython rp2 port (v1.27, RPI_PICO), emulated RP2040 ==")
    print("   rp2040js 1.4.1 at 125 MHz, cycle-counted; times in emulated us read by time.ticks_us")
    k = kernels(receiver_only)
    rc = k["receiver"]
    nfr = float(len(rc["us"]))               # polls that used exactly one frame
    per_frame = sum(rc["us"]) / nfr
    heap_frame = sum(rc["heap"]) / nfr
    idles = [x for x in rc["idle_us"] if x >= 0]
    idle = sum(idles) / float(len(idles)) if idles else float("nan")
    print()
    print("%-56s %10s %10s" % ("kernel (emulated RP2040)", "us", "heap B"))
    print("%-56s %10.0f %10.1f" % ("receiver chain per frame, %d servos (UART0 -> PWM)" % NSERVO, per_frame, heap_frame))
    if idles:
        print("%-56s %10.0f %10s" % ("receiver idle poll, %d servos (nothing waiting)" % NSERVO, idle, "0"))
    if "codec" in k:                          # not with --receiver-only
        print("%-56s %10.0f %10.1f" % ("staff frame encode + packet, 48 rows (floats: boxed)",
                                       k["codec"]["us"], k["codec"]["heap"]))
    for d in (6, 48) if "codec" in k else ():
        e = k["ekf%d" % d]
        heap = "%d" % e["heap"] if e["heap"] is not None else "> %d" % e["free"]
        print("%-56s %10.0f %10s" % ("fixed-point EKF step, %d joints (Q20/Q30/Q40: long ints)" % d,
                                     min(e["us"]), heap))
    print("  (%d polls timed that used exactly one frame; per frame: min %d, max %d us)"
          % (nfr, min(rc["us"]), max(rc["us"])))
    print("receiver chain at 50 Hz: %.1f ms per 20 ms frame = %.0f%% of the RP2040 "
          "(goal < 20%%, < 4 ms): %s; heap per frame %.0f B (goal 0): %s"
          % (per_frame / 1000.0, 100 * per_frame / 20000.0, "yes" if per_frame < 4000 else "NO",
             heap_frame, "yes" if heap_frame == 0 else "NO"))
    d_idle, d_busy, over = duty()
    print("product main.py, %d servos: the RP2040 is busy %.0f%% of the time idle (its poll loop), "
          "%.0f%% with a 50 Hz stream (overruns %d)" % (NSERVO, 100 * d_idle, 100 * d_busy, over))
    print("wall time per emulated second (this machine, kernels run): %.1f s" % k["wall_per_s"])
    if receiver_only:
        return 0
    print()
    print("failsafe (4 servos, timeout 100 ms, 50 Hz PWM): first pulse change after the last frame")
    for action in ("hold", "home", "release"):
        last, first, state, res = failsafe(action)
        bound = last + 0.100 + 0.020
        if action == "hold":
            print("  %-8s pulses unchanged (holds), heartbeat state %s (2 = failsafe): %s"
                  % (action, state, "yes" if first is None and state == pk.STATE_FAILSAFE else "NO"))
        else:
            print("  %-8s %+.1f ms after the last frame (bound timeout + one period = 120 ms): %s"
                  % (action, (first - last) * 1000 if first else float("nan"),
                     "yes" if first is not None and first <= bound + 0.002 else "NO"))
    print()
    for seed in seeds:                       # one boot per seed
        f = fuzz(nfuzz, seed)
        print("fuzz (seed %d): %d packets (%d bytes, %.1f s emulated, paced to 1.5 B/ms) into the "
              "emulated Pico: alive after: %s, traceback: %s, UART overruns: %d; pins whose every "
              "pulse is the CPython twin's (in order): %d/%d; wall %.0f s"
              % (seed, f["packets"], f["bytes"], f["emulated_s"], f["alive"], f["traceback"],
                 f["overruns"], f["pins_equal"], f["pins"], f["wall_s"]))
    print()
    rows = golden()
    print("golden vectors on the rp2 port (one boot):")
    for name, eq, ms, heap in rows:
        print("  %-12s %-9s %8d ms emulated %8d B heap taken (garbage included)" % (name, "EQUAL" if eq else "differs", ms, heap))
    print("  equal: %d/%d (staffcodec: codes equal, its floats are single precision on the Pico)"
          % (sum(1 for r in rows if r[1]), len(rows)))
    return 0
