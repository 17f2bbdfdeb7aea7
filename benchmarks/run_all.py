"""One results table: run every benchmark script and the demo, write docs/results.md.

    .venv/bin/python benchmarks/run_all.py            # full runs (tens of minutes)
    .venv/bin/python benchmarks/run_all.py --quick    # each script's quick mode (a few minutes)
    .venv/bin/python benchmarks/run_all.py --only link,demo --out /tmp/results.md

Each script (benchmarks/<name>.py, whichever exist) runs in its own process with one BLAS
thread and a timeout; its tables (anchors measured side by side, in the same run) go into the
page verbatim, a failure or timeout as a one-line note. The demo runs twice - clean, and with a
damaged link (0.5% of bytes, port unplugged for 1 s) - and its figures head the page beside
their goals and anchors. The page starts with the date and the machine (CPU model, cores,
Python, numpy, scipy).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# name -> (full argv, quick argv, full timeout s, quick timeout s)
SCRIPTS = [
    ("compression", [], ["--quick"], 1800, 600),
    ("link", [], ["--quick"], 1200, 300),
    ("estimation", [], ["--seconds", "3"], 2400, 900),
    ("capture", [], ["--quick"], 1200, 400),
    ("editing", [], ["--minutes", "10", "--repeat", "1"], 600, 200),
    ("editing", ["--repair"], ["--repair"], 600, 300),
    ("gestures", [], [], 900, 400),
    ("micropython", ["--fuzz", "1000"], ["--fuzz", "40"], 3600, 1500),   # + the emulated RP2040
    ("kinematics", [], ["600"], 600, 200),
    ("realimu", [], ["--no-sim"], 1800, 900),
    ("camera_latency", [], ["--seconds", "3", "--seeds", "1"], 900, 300),
]


# where each issue's goals are shown (the sections below hold the figures and their anchors)
GOALS = [
    ("2 foundation", "staff PNG bytes and error vs gzip -9 BVH and float32; decode 1 h < 1 s; FK of 1 h < 10 s",
     "compression, kinematics"),
    ("3 serial link", "<= 60 bytes per 48-joint frame; frames/s per controller vs the vendor SDK; decoder >= 2 MB/s "
     "on a 10%-damaged stream with 0 corrupted packets", "link"),
    ("4 estimator", "RMS <= 2 deg on the real clips; EKF >= 20% below constant velocity on fast clips; EKF step vs "
     "filterpy; fixed point >= 300 steps/s; real IMU vs imufusion and vqf", "estimation, micropython"),
    ("5 capture unit", "30 Hz whole body with >= 50% spare; 100 Hz with 18 dofs; held-out RMS <= 2 deg", "capture"),
    ("6 host tools", "despike + fill + smooth of 1 h of 48 rows < 2 s vs plain scipy; repair of spikes (1% of "
     "pixels) and gaps (5% of frames) within 2x the clean 8-bit quantisation error", "editing"),
    ("7 MicroPython", "fixed-point EKF and receiver chain, CPython vs MicroPython (wasm), >= 30 fps for 18 servos",
     "micropython"),
    ("8 main job", "demo RMS <= 2 deg, latency p99 < 10 ms, 0 corrupted frames under faults; robustness",
     "the main job, robustness"),
    ("9 gestures", "precision and recall >= 0.9, decision within 100 ms of the gesture's end", "gestures"),
]


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy
    import scipy
    aff = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": os.cpu_count(), "cores_usable": aff,
            "os": "%s %s" % (platform.system(), platform.release()),
            "python": platform.python_version(), "numpy": numpy.__version__, "scipy": scipy.__version__,
            "load_avg": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None}


def _env():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_script(name, argv, timeout_s, scratch):
    """(markdown text, status, seconds) of one benchmark script."""
    path = os.path.join(REPO, "benchmarks", name + ".py")
    if name == "compression":                 # keep its own docs page untouched: write to scratch
        argv = argv + ["--out", os.path.join(scratch, "compression.md")]
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, path] + argv, capture_output=True, text=True,
                           timeout=timeout_s, cwd=REPO, env=_env())
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return out, "timed out after %d s (partial output above)" % timeout_s, time.perf_counter() - t0
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        tail = [ln for ln in p.stderr.strip().splitlines() if ln.strip()][-1:] or ["(no stderr)"]
        return p.stdout, "failed (exit %d): %s" % (p.returncode, tail[0][:300]), dt
    return p.stdout, "ok", dt


def run_demo(scratch, extra, timeout_s, tag=None):
    out = os.path.join(scratch, "demo" + (tag or ("-faults" if extra else "")))
    cmd = [sys.executable, "-m", "host.cli", "demo", "--json", "--out", out] + extra
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=REPO, env=_env())
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout_s, time.perf_counter() - t0
    if p.returncode != 0:
        return None, "failed (exit %d): %s" % (p.returncode, p.stderr.strip()[-300:]), time.perf_counter() - t0
    return json.loads(p.stdout.strip().splitlines()[-1]), "ok", time.perf_counter() - t0


def _v(x, fmt="%.2f"):
    return "null (not measured)" if x is None else (fmt % x if isinstance(x, float) else str(x))


def demo_table(d, f):
    """Headline rows: figure | measured | anchor (same run) | goal."""
    b = d["bytes_per_frame_detail"]
    o = d.get("anchor_orient")
    rows = [
        ("joint-angle RMS error vs truth, recorded 8-bit staff, estimator %s (deg)" % d["estimator"],
         _v(d["rms_deg"]), "8-bit quantisation alone: %s" % _v(d.get("rms_quantisation_deg")), "<= 2"),
    ]
    if o is not None:
        rows += [("  anchor: the unit's per-segment orientation filter + IK (`orient`), same clip",
                  _v(o["rms_deg"]), "latency p50 / p99 %s / %s ms" % (_v(o["latency_p50_ms"]),
                                                                    _v(o["latency_p99_ms"])), "")]
    rows += [
        ("  same, live estimate / after despike + 6 Hz smooth (deg)",
         "%s / %s" % (_v(d["rms_live_deg"]), _v(d["rms_edited_deg"])), "", ""),
        ("  root orientation, geodesic (deg)", "n/a: fixed-base body (no root rows)"
         if d.get("rms_root_orientation_deg") is None else _v(d["rms_root_orientation_deg"]), "", ""),
        ("latency sensor sample -> servo bytes, median (ms, processing)", _v(d["latency_p50_ms"]),
         "frame period %.1f ms" % (1000.0 / d["rate_hz"]), ""),
        ("latency sensor sample -> servo bytes, p99 (ms, processing)", _v(d["latency_p99_ms"]),
         "frame period %.1f ms" % (1000.0 / d["rate_hz"]), "< 10"),
        ("  of which the unit's work (read, estimate, encode, record, stream), p99 / robot end p99",
         "%s / %s" % (_v(d.get("unit_busy_p99_ms")), _v(d.get("latency_robot_end_p99_ms"))), "", ""),
        ("frames captured / streamed / delivered to the robot",
         "%d / %d / %d" % (d["frames_captured"], d["frames_streamed"], d["frames_delivered"]), "", "all"),
        ("bytes per frame on the link (FRAME packet, %d rows)" % d["rows"], _v(b["link_frame_packet"]),
         "raw codes %d, float32 %d" % (b["raw_codes"], 4 * d["rows"]), ""),
        ("bytes per frame: container / Maestro commands", "%s / %s" % (_v(b["container"]), _v(b["maestro"])),
         "", ""),
        ("demo wall time (s)", _v(d["timings_s"]["total_s"], "%.1f"), "", "< 60"),
    ]
    if f is not None:
        r = f["link"]["relay"]
        rows += [
            ("damaged link (0.5% bytes, 1 s unplugged): corrupted frames delivered",
             str(f["corrupted_frames_delivered"]), "frames damaged or lost: %d of %d streamed"
             % (f["frames_streamed"] - f["frames_delivered"], f["frames_streamed"]), "0"),
            ("  servo commands equal to the limiter's output",
             "%d of %d" % (f["checks"]["servo_commands_checked"] - f["checks"]["servo_commands_mismatched"],
                           f["servo_commands"]), "", "all"),
            ("  errors counted: decoder drops / failed writes / failsafe engaged, released",
             "%d / %d / %d, %d" % (r["decoder_dropped"], f["link"]["write_errors"], r["failsafe_engaged"],
                                   r["failsafe_released"]), "", ""),
        ]
    lines = ["| figure | measured | anchor (same run) | goal |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % r for r in rows]
    return "\n".join(lines)


def robustness_figures(scratch):
    """The robustness scenarios' own figures (tools/robust.py), as markdown rows."""
    sys.path.insert(0, REPO)
    from tools import robust
    rows = []
    d = os.path.join(scratch, "powercut")
    os.makedirs(d, exist_ok=True)
    r = robust.power_cut(d, trials=50, seed=8)
    rows.append(("power cut: capture process SIGKILLed at %d seeded moments" % r["trials"],
                 "%d of %d written frames recovered exactly (%d lost, %d differ, %d torn prefixes); "
                 "%d more frames recovered than reported" % (
                     r["frames_written"] - r["written_lost"] - r["written_differ"], r["frames_written"],
                     r["written_lost"], r["written_differ"], r["not_a_prefix"], r["extra_recovered"]),
                 "every written frame"))
    d = os.path.join(scratch, "outage")
    os.makedirs(d, exist_ok=True)
    o = robust.imu_outage(d)
    rows.append(("IMU %s off 3.0-4.0 s: segment RMS before / during / after (deg)" % o["sensor"],
                 "%.2f / %.2f / %.2f; other joints during %.2f; frames %d captured, %d streamed, "
                 "%d delivered, %d skipped" % (o["err_before_deg"], o["err_during_deg"], o["err_after_deg"],
                                               o["others_during_deg"], o["frames_captured"],
                                               o["frames_streamed"], o["frames_delivered"], o["skipped"]),
                 "degrades, recovers, nothing stops"))
    d = os.path.join(scratch, "badfiles")
    os.makedirs(d, exist_ok=True)
    t0 = time.perf_counter()
    b = robust.bad_files(d, n_mutations=1000)
    if b is None:
        rows.append(("bad files", "HUNG (killed after the time limit)", "no hang"))
    else:
        c = b["counts"]
        rows.append(("bad files: hand-made + %d mutated real files through every reader" % c.get("mutations", 0),
                     "%d calls: %d exit 2 with one line, %d worked, %d misbehaved; RLIMIT_AS %d GiB; %.0f s"
                     % (c["calls"], c.get("exit2", 0), c.get("ok", 0), len(b["bad"]),
                        b.get("memory_limit_bytes", 0) >> 30, time.perf_counter() - t0),
                     "0 misbehaved"))
    lines = ["| scenario | measured | goal |", "|---|---|---|"]
    return "\n".join(lines + ["| %s | %s | %s |" % x for x in rows])


def robustness(timeout_s):
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + sorted(
        os.path.join("tests", n) for n in os.listdir(os.path.join(REPO, "tests"))
        if n.startswith("test_e2e_") and n.endswith(".py"))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=REPO, env=_env())
    except subprocess.TimeoutExpired:
        return "timed out after %d s" % timeout_s
    lines = [ln for ln in p.stdout.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output (exit %d)" % p.returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="each script's quick mode")
    ap.add_argument("--only", help="comma-separated: script names, demo, robustness")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "results.md"))
    a = ap.parse_args(argv)
    only = set(a.only.split(",")) if a.only else None
    want = lambda n: only is None or n in only
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    m = machine()
    scratch = tempfile.mkdtemp(prefix="motionstaff-results-")
    parts, index = [], []
    demo = faults = None
    if want("demo"):
        print("demo ...", file=sys.stderr, flush=True)
        demo, st, dt = run_demo(scratch, [], 300)
        index.append(("demo", st, dt))
        faults, st2, dt2 = run_demo(scratch, ["--faults", "0.005", "--unplug", "5:6", "--no-render"], 300)
        index.append(("demo --faults 0.005 --unplug 5:6", st2, dt2))
        if demo is not None and demo["estimator"] != "orient":
            orient, st3, dt3 = run_demo(scratch, ["--estimator", "orient", "--no-render"], 300,
                                        "-orient")
            index.append(("demo --estimator orient (anchor)", st3, dt3))
            if orient is not None:
                demo["anchor_orient"] = dict((k, orient[k]) for k in (
                    "rms_deg", "rms_live_deg", "latency_p50_ms", "latency_p99_ms", "unit_busy_p99_ms"))
    rob = rob_table = None
    if want("robustness"):
        print("robustness scenarios ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            rob_table = robustness_figures(scratch)
            index.append(("robustness scenarios (tools/robust.py)", "ok", time.perf_counter() - t0))
        except Exception as e:          # a broken scenario is a note on the page, not a crash
            index.append(("robustness scenarios", "failed: %s: %s" % (e.__class__.__name__, e),
                          time.perf_counter() - t0))
        print("robustness tests ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        rob = robustness(600)
        index.append(("tests/test_e2e_*.py", rob, time.perf_counter() - t0))
    for name, full, quick, t_full, t_quick in SCRIPTS:
        if not want(name) or not os.path.exists(os.path.join(REPO, "benchmarks", name + ".py")):
            continue
        argv_s = quick if a.quick else full
        print("benchmarks/%s.py %s ..." % (name, " ".join(argv_s)), file=sys.stderr, flush=True)
        text, st, dt = run_script(name, argv_s, t_quick if a.quick else t_full, scratch)
        index.append(("benchmarks/%s.py %s" % (name, " ".join(argv_s)), st, dt))
        body = text.strip() or "(no output)"
        lines = body.splitlines()
        tops = [i for i, ln in enumerate(lines) if ln.startswith("# ")]
        if tops and tops[-1] > 0:            # progress tables, then the whole page: keep the page
            body = "\n".join(lines[tops[-1]:])
        if not any(ln.startswith("|") for ln in body.splitlines()):
            body = "```text\n%s\n```" % body              # a plain-text table: keep its columns
        else:                                               # its headings go under this section
            body = "\n".join(("##" + ln) if ln.startswith("#") else ln for ln in body.splitlines())
        parts.append("## benchmarks/%s.py %s\n\n%s\n\n%s\n" % (
            name, " ".join(argv_s), "" if st == "ok" else "**%s**" % st, body))
    out = ["# motionstaff results", "",
           "Written by `benchmarks/run_all.py%s` on %s. Every anchor below was measured in the same "
           "run, on the same machine, as the figure beside it." % (" --quick" if a.quick else "", started), "",
           "Machine: %s, %d cores (%s usable), %s, Python %s, numpy %s, scipy %s; load average at "
           "start %s (a shared machine: timings are upper bounds)." % (
               m["cpu"], m["cores"], m["cores_usable"], m["os"], m["python"], m["numpy"], m["scipy"],
               m["load_avg"]), ""]
    out += ["| issue | goals | shown in |", "|---|---|---|"]
    out += ["| %s | %s | %s |" % g for g in GOALS] + [""]
    if want("demo"):
        out += ["## The main job: `motionstaff demo`", ""]
        if demo is None:
            out += ["**demo: %s**" % index[0][1], ""]
        else:
            out += ["%s, %g s of motion at %g Hz, %d rows, %d IMUs%s, estimator `%s`, robot `%s`." % (
                os.path.basename(demo["clip"]), demo["seconds_of_motion"], demo["rate_hz"], demo["rows"],
                demo["imus"], " + camera markers" if demo["camera"] else "", demo["estimator"], demo["robot"]),
                "", demo_table(demo, faults), ""]
            for k, v in sorted(demo["not_measured"].items()):
                out.append("* not measured / note (%s): %s" % (k, v))
            out += ["", "<details><summary>demo report (JSON)</summary>", "", "```json",
                    json.dumps(demo, indent=1, default=str), "```", "</details>", ""]
    if rob is not None:
        out += ["## Robustness", "", "The damaged serial link is the demo's second run above.", ""]
        if rob_table:
            out += [rob_table, ""]
        out += ["The same scenarios as tests (tests/test_e2e_*.py): `%s`" % rob, ""]
    out += ["## Runs", "", "| run | status | seconds |", "|---|---|---|"]
    out += ["| %s | %s | %.1f |" % (n, s, t) for n, s, t in index]
    out += [""] + parts
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s" % a.out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
