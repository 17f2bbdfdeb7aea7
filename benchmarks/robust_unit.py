"""Robustness of the unit itself: power cuts through the storage twin, the I2C bus budget, and
the unit's own work against a quarter of the frame period (run by benchmarks/robustness.py).

    .venv/bin/python benchmarks/robustness.py --only robust_unit [--quick]
    .venv/bin/python benchmarks/robust_unit.py [--quick]          # this section alone

(a) 100 seeded power cuts (device/hal/storage_sim.py) while the product's recorder
    (device/capture/storage.py new_recording + protocol/container.py Writer, default policy:
    synced every 1 s of frames) writes a whole-body staff at 30 Hz after two earlier
    recordings: recordings unreadable, frames lost against the policy's bound, earlier
    recordings damaged. Plus cuts through the capture loop itself (CaptureLoop, storage=twin).
    Every sync takes a microSD card's time (storage_sim.SdCardLatency: ~12 ms, 3 % stalls of
    0.1-0.5 s) on a background thread (device/capture/syncer.py): what it covers is on the card
    only when it completes, so a cut may lose the frames written meanwhile too; the bound each
    cut is checked against is the writer's frames at risk at that moment.
(b) The default config's I2C budget per bus (device/capture/busbudget.py, the unit's drivers on
    twins of its buses) at its clock, beside the same sensors on one 100 kHz bus (refused).
(c) The unit's work per frame (read, estimate, encode, record, output; not the simulated subject
    or chips, not the bus wait) from capture runs in this process, wall p99 and thread CPU p99,
    against 8.3 ms; the Raspberry Pi 4 margin from a measured interpreter ratio (see pi_ratio).
(d) A BNO055 rejoining: the default unit's l_shank_imu powered off at 2.0 s and back at 3.0 s (its
    twin boots 650 ms on the bus clock, the driver's reset waits 650 ms more, device/sensors/
    bno055_sim.py): frames that overran, the longest frame's bus time, readings the OTHER sensors
    missed, and the time from power back to the sensor's first reading (virtual time).
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

QUARTER_MS = 1000.0 / 30.0 / 4.0

# The Raspberry Pi 4's time for the Computer Language Benchmarks Game n-body program, 5 million
# steps, CPython, performance governor: 158.3 s (C: 1.74 s). Source: C. Mehta, "Performance
# Analysis of Languages on Raspberry Pi" (chaitanyamehta.github.io/projects/performance-
# analysis-of-programming-languages), Raspberry Pi 4 Model B 4 GB at 1.5 GHz.
PI4_NBODY_5M_S = 158.3


def _cuts(n, quick):
    from device.body.human import human_model
    from device.capture.loop import make_header
    from device.capture.storage import new_recording
    from device.capture.syncer import make_syncer
    from device.hal.storage_sim import PowerCut, SdCardLatency, SimStorage
    from protocol import container
    header = make_header(human_model(), 30.0)
    head = container.encode_header(header)
    rows = len(header["rows"])
    rng = np.random.default_rng(15)
    out = {"cuts": 0, "unreadable": 0, "earlier_damaged": 0, "lost_max": 0, "bound": None,
           "over_bound": 0, "no_name": 0, "lost": [], "at_risk_max": 0}
    frames = 150 if quick else 300
    for seed in range(n):
        fs = SimStorage(seed=seed, page=4096, sync_latency=SdCardLatency())
        clock = [0.0]
        now = (lambda c=clock: c[0])
        before = {}
        for _ in range(2):
            p, f = new_recording("rec", head, fs, boot="%08x" % seed)
            w = container.Writer(f, header, write_header=False, syncer=make_syncer(f, now))
            for k in range(40):
                w.write_frame([k % 256] * rows, k * 33)
                clock[0] += 1 / 30.0
            w.close()
            f.close()
            before[p] = fs.read_bytes(p)
        fs.cut_after_writes = fs.writes + int(rng.integers(1, frames + 2))
        w = None
        at_risk = 0
        try:
            p, f = new_recording("rec", head, fs, boot="%08x" % seed)
            w = container.Writer(f, header, write_header=False, syncer=make_syncer(f, now))
            for k in range(frames):
                at_risk = w.frames_at_risk + 1
                w.write_frame([(k * 3 + i) % 256 if (k + i) % 13 else None for i in range(rows)], k * 33)
                clock[0] += 1 / 30.0
            w.close()
        except PowerCut:
            pass
        out["cuts"] += 1
        fs.after_cut()
        out["earlier_damaged"] += sum(fs.read_bytes(q) != b for q, b in before.items())
        if w is None:
            out["no_name"] += 1          # the cut came before the header was on the medium
            continue
        out["bound"] = w.loss_bound_frames
        out["at_risk_max"] = max(out["at_risk_max"], w.max_frames_at_risk)
        try:
            rec = container.parse(fs.read_bytes(p), p)
        except Exception:
            out["unreadable"] += 1
            continue
        got = [fr[0] for fr in rec.frames]
        if got[:w.frames_synced] != list(range(w.frames_synced)):
            out["unreadable"] += 1
        lost = w.frames - len(got)
        out["lost"].append(lost)
        out["lost_max"] = max(out["lost_max"], lost)
        out["over_bound"] += lost > at_risk
    out["lost_mean"] = float(np.mean(out["lost"])) if out["lost"] else 0.0
    del out["lost"]
    return out


def _loop_cuts(n):
    """Cuts through the capture loop (the product path: CaptureLoop records on the twin)."""
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    from device.hal.storage_sim import PowerCut, SdCardLatency, SimStorage
    from protocol import container
    cfg = default_config(body="humanoid18", chip="mpu6050", estimator="orient")
    cfg["subject"]["max_s"] = 4.0
    res = {"cuts": 0, "unreadable": 0, "lost_max": 0, "over_bound": 0, "waited_s": 0.0, "at_risk_max": 0}
    for seed in range(n):
        fs = SimStorage(seed=100 + seed, sync_latency=SdCardLatency())
        loop = CaptureLoop(build_unit(cfg), record_dir="rec", storage=fs)
        fs.cut_after_writes = fs.writes + 20 + 7 * seed
        waited = fs.sync_wait_s
        at_risk = [0]
        write = loop.writer.write_frame

        def counted(codes, t_ms=0, w=loop.writer, write=write, at_risk=at_risk):
            at_risk[0] = w.frames_at_risk + 1
            return write(codes, t_ms)
        loop.writer.write_frame = counted
        try:
            loop.run(frames=100)
        except PowerCut:
            pass
        res["waited_s"] += fs.sync_wait_s - waited       # a frame waiting for the card (none)
        res["at_risk_max"] = max(res["at_risk_max"], loop.writer.max_frames_at_risk)
        fs.after_cut()
        res["cuts"] += 1
        try:
            rec = container.parse(fs.read_bytes(loop.record_path))
        except Exception:
            res["unreadable"] += 1
            continue
        lost = loop.writer.frames - rec.nframes
        res["lost_max"] = max(res["lost_max"], lost)
        res["over_bound"] += lost > at_risk[0]
        res["bound"] = loop.writer.loss_bound_frames
    return res


def _bus():
    from device.body.human import human_model
    from device.capture.busbudget import bus_budget, describe
    from device.capture.config import default_config, place_sensors
    cfg = default_config(body="human")
    specs = place_sensors(human_model(), buses=list(cfg["buses"]))
    rows = [dict(b, line=describe(b, 1 / 30.0)) for b in bus_budget(cfg, specs)]
    one = dict(cfg, buses={"i2c-1": "sim-i2c://1?hz=100000"})
    b1 = bus_budget(one, place_sensors(human_model(), bus="i2c-1"))[0]
    return {"buses": rows, "one_bus_100khz": dict(b1, line=describe(b1, 1 / 30.0))}


def _work(quick, camera):
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    cfg = default_config(body="human", camera=camera)
    cfg["subject"]["max_s"] = 30.0
    unit = build_unit(cfg)
    loop = CaptureLoop(unit)
    loop.run(frames=60)                            # calibration, compilation: not measured
    loop.stats = type(loop.stats)(loop.period_s, loop.stats.stages)
    loop.run(frames=loop.frame_index + (150 if quick else 450))
    s = loop.stats.summary()
    return {k: s[k] for k in ("busy_mean_ms", "busy_p99_ms", "cpu_mean_ms", "cpu_p99_ms", "bus_p99_ms",
                              "read_p99_ms", "estimate_p99_ms", "simulate_mean_ms", "frames", "overruns")}


def _rejoin(quick):
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    cfg = default_config(body="human")
    cfg["subject"]["max_s"] = 10.0
    name, off_s, on_s = "l_shank_imu", 2.0, 3.0
    cfg["subject"]["outages"] = [{"sensor": name, "start_s": off_s, "end_s": on_s}]
    unit = build_unit(cfg)
    loop = CaptureLoop(unit)
    slot = [s for s in unit.slots if s.name == name][0]
    others = [s for s in unit.slots if s is not slot]
    stale0 = sum(s.stale_frames for s in others)
    back_s = None
    n = int(round((5.0 if quick else 6.0) * loop.rate_hz))
    for k in range(n):
        loop.step()
        if back_s is None and k / loop.rate_hz >= on_s and slot.samples and slot.alive and slot.rejoins:
            back_s = k / loop.rate_hz - on_s
    st = loop.stats
    return {"frames": st.frames, "overruns": st.overruns, "bus_max_ms": max(st.bus_s) * 1e3,
            "others_missed": sum(s.stale_frames for s in others) - stale0, "rejoins": slot.rejoins,
            "back_s": back_s, "stale_frames": slot.stale_frames}


def nbody_s(steps):
    """Seconds for `steps` steps of the n-body benchmark (the Benchmarks Game's algorithm: five
    bodies, symplectic Euler, dt 0.01), pure CPython: the interpreter-speed anchor."""
    pi, days = 3.141592653589793, 365.24
    sm = 4 * pi * pi
    bodies = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, sm],
              [4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
               1.66007664274403694e-03 * days, 7.69901118419740425e-03 * days,
               -6.90460016972063023e-05 * days, 9.54791938424326609e-04 * sm],
              [8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
               -2.76742510726862411e-03 * days, 4.99852801234917238e-03 * days,
               2.30417297573763929e-05 * days, 2.85885980666130812e-04 * sm],
              [1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
               2.96460137564761618e-03 * days, 2.37847173959480950e-03 * days,
               -2.96589568540237556e-05 * days, 4.36624404335156298e-05 * sm],
              [1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
               2.68067772490389322e-03 * days, 1.62824170038242295e-03 * days,
               -9.51592254519715870e-05 * days, 5.15138902046611451e-05 * sm]]
    pairs = [(bodies[i], bodies[j]) for i in range(5) for j in range(i + 1, 5)]
    dt = 0.01
    t0 = time.process_time()
    for _ in range(steps):
        for b1, b2 in pairs:
            dx, dy, dz = b1[0] - b2[0], b1[1] - b2[1], b1[2] - b2[2]
            mag = dt * (dx * dx + dy * dy + dz * dz) ** -1.5
            m1, m2 = b1[6] * mag, b2[6] * mag
            b1[3] -= dx * m2
            b1[4] -= dy * m2
            b1[5] -= dz * m2
            b2[3] += dx * m1
            b2[4] += dy * m1
            b2[5] += dz * m1
        for b in bodies:
            b[0] += dt * b[3]
            b[1] += dt * b[4]
            b[2] += dt * b[5]
    return time.process_time() - t0


def pi_ratio(quick):
    """Pi 4 time / this machine's time for the same n-body run (ours measured, the Pi's cited)."""
    steps = 100000 if quick else 300000
    here = min(nbody_s(steps) for _ in range(3)) * (5e6 / steps)
    return {"nbody_5M_here_s": here, "nbody_5M_pi4_s": PI4_NBODY_5M_S, "ratio": PI4_NBODY_5M_S / here}


def run(quick=False):
    try:
        os.nice(-5)                                # measure with priority where allowed
    except (OSError, AttributeError):
        pass
    res = {"cuts": _cuts(40 if quick else 100, quick), "loop_cuts": _loop_cuts(3 if quick else 8),
           "bus": _bus()}
    runs = [_work(quick, False) for _ in range(2 if quick else 3)]
    res["work"] = runs
    res["work_camera"] = _work(quick, True)
    res["pi"] = pi_ratio(quick)
    res["rejoin"] = _rejoin(quick)
    return res


def table(r):
    c, lc = r["cuts"], r["loop_cuts"]
    out = ["## Unit robustness (benchmarks/robust_unit.py)", "",
           "### (a) Power cuts through the storage twin", "",
           "Syncs take a microSD card's time (storage_sim.SdCardLatency, a model: ~12 ms, 3 % stalls "
           "of 0.1-0.5 s) on the recorder's background thread. A cut loses at most the frames at risk "
           "(written since the start of the last completed sync): the policy's, plus those written while "
           "a sync was under way. Over bound: a cut that lost more than the frames at risk at its moment.", "",
           "| path | cuts | recordings unreadable | earlier recordings damaged | frames lost max | mean | policy bound | at risk max (policy + sync under way) | over bound | frames waiting for the card, s | cut before the header: no name |",
           "|---|---|---|---|---|---|---|---|---|---|---|",
           "| Writer + new_recording, human48 staff, 30 Hz | %d | %d | %d | %d | %.1f | %s | %d | %d | - | %d |"
           % (c["cuts"], c["unreadable"], c["earlier_damaged"], c["lost_max"], c["lost_mean"], c["bound"],
              c["at_risk_max"], c["over_bound"], c["no_name"]),
           "| CaptureLoop (humanoid18, orient) | %d | %d | - | %d | - | %s | %d | %d | %.3f | - |"
           % (lc["cuts"], lc["unreadable"], lc["lost_max"], lc.get("bound"), lc["at_risk_max"], lc["over_bound"],
              lc["waited_s"]),
           "", "### (b) I2C bus budget of the default config (30 Hz: 33.3 ms frame)", "",
           "| bus | sensors | bytes a frame | mux writes | clock kHz | stretch ms | bus ms | fits |",
           "|---|---|---|---|---|---|---|---|"]
    for b in r["bus"]["buses"] + [r["bus"]["one_bus_100khz"]]:
        out.append("| %s | %d | %d | %d | %g | %.2f | %.2f | %s |" % (
            b["bus"] + (" (all 22 on one bus)" if b is r["bus"]["one_bus_100khz"] else ""), b["sensors"],
            b["bytes"], b["mux_writes"], b["hz"] / 1000.0, b["stretch_s"] * 1e3, b["s"] * 1e3,
            "yes" if b["s"] <= 1 / 30.0 else "no: refused"))
    out += ["", "### (c) The unit's work per frame (not the simulated subject, chips or bus wait)", "",
            "| run | frames | wall mean ms | wall p99 ms | CPU mean ms | CPU p99 ms | quarter period ms | CPU p99 fits | bus p99 ms | overruns |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for i, w in enumerate(r["work"] + [r["work_camera"]]):
        name = "default (human48, 22 BNO055) #%d" % (i + 1) if i < len(r["work"]) else "+ camera, 46 markers"
        out.append("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %.1f | %d |" % (
            name, w["frames"], w["busy_mean_ms"], w["busy_p99_ms"], w["cpu_mean_ms"], w["cpu_p99_ms"],
            QUARTER_MS, "yes" if w["cpu_p99_ms"] < QUARTER_MS else "no", w["bus_p99_ms"], w["overruns"]))
    j = r["rejoin"]
    out += ["", "### (d) A BNO055 rejoining (simulation: the twin's boot and the driver's waits on the bus clock)", "",
            "| frames | overruns | longest frame's bus ms | other sensors' readings missed | power back to first reading s | sensor stale frames | rejoins |",
            "|---|---|---|---|---|---|---|",
            "| %d | %d | %.1f | %d | %s | %d | %d |" % (
                j["frames"], j["overruns"], j["bus_max_ms"], j["others_missed"],
                "%.2f" % j["back_s"] if j["back_s"] is not None else "never", j["stale_frames"], j["rejoins"]),
            "", "The re-initialisation runs step by step on the bus clock (device/sensors/health.py). Before "
            "it (commit ada12e4: init() blocking in the capture loop, the same twin) the quick run gave 35 "
            "overruns and 688 ms of bus in one frame (about 20 frames of a real unit's 30 Hz); the twin "
            "before that (no boot or reset time) 0 overruns and the sensor back 0.03 s after power."]
    p = r["pi"]
    cpu = float(np.median([w["cpu_p99_ms"] for w in r["work"]]))
    out += ["", "Raspberry Pi 4 margin: n-body (5M steps, CPython) %.1f s here (measured, CPU time), "
            "%.1f s on a Pi 4 at 1.5 GHz (cited: C. Mehta, chaitanyamehta.github.io): ratio %.1fx. "
            "The default unit's CPU p99 %.2f ms x %.1f = %.1f ms on a Pi 4 against the %.1f ms quarter "
            "period and the %.1f ms frame (the ratio is the interpreter's; the EKF's BLAS share may "
            "scale differently). The bus wait (%.1f ms p99) is apart: reads on the five buses run "
            "in parallel threads on a Pi." % (p["nbody_5M_here_s"], p["nbody_5M_pi4_s"], p["ratio"], cpu,
                                            p["ratio"], cpu * p["ratio"], QUARTER_MS, 1000 / 30.0,
                                            r["work"][0]["bus_p99_ms"])]
    return "\n".join(out)


if __name__ == "__main__":
    if "--rejoin" in sys.argv:                     # section (d) alone
        print(_rejoin("--quick" in sys.argv))
        sys.exit(0)
    res = run("--quick" in sys.argv)
    print(table(res))
