"""Robustness of the live link, on the product's code over the serial twin (a section of
benchmarks/robustness.py; also runnable alone).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/robust_link.py [--quick]

(a) The demo's link: host.demo.pipeline.capture (the unit's PacketOutput, paced, over the serial
    twin: a pty at 115200 baud of simulated time, 4 KiB driver buffer) to the robot end (the
    product's LinkBridge + Player + emulated Maestro), 0.5% of the line's bytes damaged (bit
    flips, drops, garbage) and the cable pulled for 1 s. Counted: corrupted frames delivered
    (goal 0); of the frames sent after the robot first held a header, those the line's faults
    did not touch (no damaged byte in the packet or its delimiter, not in the unplug) and that
    were not played (goal 0), beside those the faults did touch (lost, as they must be).
(b) Receiver reset: the firmware receiver (device/firmware, run on CPython by the native
    emulator) reboots 20 times on the same damaged line; seconds until it holds the unit's
    header again (goal < 1 s; the sender repeats it every 1 s and at once on a REQUEST).
(c) Fuzz: 10^6 fuzzed link packets (tools/linkfuzz.py: spliced and forged headers, wrong row
    counts and depths, garbage, truncated packets, stream stops) into the firmware receiver:
    exits, caught errors, failsafe engaged late, pulses out of limits or too fast (goal 0 each).
--quick: 4 s of demo instead of 10, 5 resets, 2*10^4 packets.
"""

import argparse
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

RATE = 0.005
BAUD = 115200


def demo_link(seconds, seed=1):
    from device.servo.emulate.serialtwin import LineFaults
    from host.demo.checks import link_checks
    from host.demo.pipeline import capture, default_clip
    unplug = (seconds / 2.0, seconds / 2.0 + 1.0)
    faults = LineFaults(rate=RATE, seed=seed, unplug=[unplug], keep_hits=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        cap = capture(d, default_clip(), seconds, estimator="ekf", camera=False, faults=faults)
    wall = time.perf_counter() - t0
    c = link_checks(cap)
    end, st = cap["robot_end"], cap["streamer"]
    sent, offsets = st.link.sent, st.link.offsets
    played = set(k for k, _ in end.delivered)
    first_header_s = end.bridge.started_at if end.bridge.player is not None else None
    hits = sorted(set(faults.hits))
    import bisect

    def touched(key):
        a, b = offsets[key]
        i = bisect.bisect_left(hits, a)
        return i < len(hits) and hits[i] < b
    # frames sent after the robot held a header (the 24-bit stamp is the capture time; < 16 s)
    after = [k for k in sent if first_header_s is not None and k[1] / 1e6 >= first_header_s]
    clean = [k for k in after if not touched(k)]
    hit = [k for k in after if touched(k)]
    lc = st.counts()
    return {"seconds": seconds, "damage_rate": RATE, "unplug_s": list(unplug), "baud": BAUD,
            "frames_captured": cap["loop"].frame_index, "frames_sent": lc["frames_sent"],
            "frames_skipped": lc["frames_skipped"], "header_repeats": lc["header_repeats"],
            "header_requests": lc["header_requests"],
            "first_header_s": None if first_header_s is None else round(first_header_s, 3),
            "after_header": len(after), "after_header_untouched": len(clean),
            "untouched_not_played": sum(1 for k in clean if k not in played),
            "touched": len(hit), "touched_played": sum(1 for k in hit if k in played),
            "corrupted_frames_delivered": c["corrupted_frames_delivered"],
            "limiter_replay_mismatched": c["limiter_replay_mismatched"],
            "servo_commands_over_velocity": c["servo_commands_over_velocity"],
            "servo_commands_out_of_limits": c["servo_commands_out_of_limits"],
            "overrun_bytes": cap["twin"].counts["overrun_bytes"],
            "max_buffer_fill": cap["twin"].counts["max_fill"],
            "decoder_dropped": cap["relay"].decoder.dropped(),
            "failsafe_engaged": cap["relay"].counts["failsafe_engaged"],
            "faults": dict(faults.counts), "wall_s": round(wall, 2)}


def receiver_resets(n, seed=2, rate_hz=30.0, sub=4):
    import serial
    from device.capture.outputs import PacketOutput
    from device.servo.emulate.native import NativeEmulator, default_config
    from device.servo.emulate.serialtwin import LineFaults, SerialTwin
    from protocol import staffheader
    rng = random.Random(seed)
    t = [0.0]
    clock = lambda: t[0]
    twin = SerialTwin(baud=BAUD, clock=clock, faults=LineFaults(rate=RATE, seed=seed))
    port = serial.serial_for_url(twin.path, baudrate=BAUD, timeout=0, write_timeout=0)
    header = staffheader.make([{"name": "j%d" % i, "unit": "deg", "lo": -90.0, "hi": 90.0}
                               for i in range(48)], fps=rate_hz, bits=8)
    out = PacketOutput(port, header, bits=8, baud=BAUD, clock=clock)
    times = []
    k = 0
    for _ in range(n):
        emu = NativeEmulator(clock=clock, config=default_config(48))
        # reset at a random moment of the header schedule
        t_reset = t[0]
        deadline = t_reset + 5.0
        while emu.receiver.header_id != out.link.header_id and t[0] < deadline:
            out(k, t[0], None, [rng.randrange(256) for _ in range(48)])
            k += 1
            for _j in range(sub):
                t[0] += 1.0 / rate_hz / sub
                twin.send_back(emu.feed(twin.pump()))
        times.append(t[0] - t_reset if emu.receiver.header_id == out.link.header_id else None)
        for _j in range(rng.randrange(5, 40)):            # run a while holding it
            out(k, t[0], None, [rng.randrange(256) for _ in range(48)])
            k += 1
            for _i in range(sub):
                t[0] += 1.0 / rate_hz / sub
                twin.send_back(emu.feed(twin.pump()))
    port.close()
    twin.close()
    ok = [x for x in times if x is not None]
    return {"resets": n, "recovered": len(ok), "max_s": round(max(ok), 3) if ok else None,
            "mean_s": round(sum(ok) / len(ok), 3) if ok else None, "damage_rate": RATE,
            "requests": out.counts()["header_requests"]}


def fuzz(packets):
    from tools.linkfuzz import fuzz as run_fuzz
    t0 = time.perf_counter()
    r = run_fuzz(packets=packets, seed=1)
    r["wall_s"] = round(time.perf_counter() - t0, 1)
    return r


def run(quick=False):
    return {"demo_link": demo_link(4.0 if quick else 10.0),
            "receiver_reset": receiver_resets(5 if quick else 20),
            "fuzz": fuzz(20000 if quick else 1000000)}


def table(res):
    a, b, c = res["demo_link"], res["receiver_reset"], res["fuzz"]
    L = ["Live link robustness (product streamer -> serial twin -> product receivers; simulation)",
         "(a) demo link: %g s at %d baud, %.1f%% of line bytes damaged, cable out %g..%g s"
         % (a["seconds"], a["baud"], 100 * a["damage_rate"], a["unplug_s"][0], a["unplug_s"][1]),
         "  %-58s %10s %8s" % ("", "measured", "goal"),
         "  %-58s %10d %8s" % ("corrupted frames delivered", a["corrupted_frames_delivered"], "0"),
         "  %-58s %10d %8s" % ("frames after the first header, untouched by faults, not played",
                               a["untouched_not_played"], "0"),
         "  %-58s %10s %8s" % ("  of frames after the first header (untouched)",
                               "%d (%d)" % (a["after_header"], a["after_header_untouched"]), ""),
         "  %-58s %10s %8s" % ("  touched by faults (played anyway)", "%d (%d)" % (a["touched"], a["touched_played"]), ""),
         "  %-58s %10s %8s" % ("first header held by the robot at (s)", a["first_header_s"], ""),
         "  %-58s %10d %8s" % ("frames skipped by the pacer (of %d captured)" % a["frames_captured"],
                               a["frames_skipped"], ""),
         "  %-58s %10d %8s" % ("bytes beyond the 4 KiB driver buffer", a["overrun_bytes"], "0"),
         "  %-58s %10d %8s" % ("servo moves over the velocity limit (send clock)",
                               a["servo_commands_over_velocity"], "0"),
         "  %-58s %10d %8s" % ("commands differing from a limiter replay of the unit's codes",
                               a["limiter_replay_mismatched"], "0"),
         "  %-58s %10s %8s" % ("header repeats / requests answered",
                               "%d / %d" % (a["header_repeats"], a["header_requests"]), ""),
         "(b) receiver firmware reset on the damaged line: %d resets, %d recovered"
         % (b["resets"], b["recovered"]),
         "  %-58s %10s %8s" % ("seconds to hold the header again: max (mean)",
                               "%s (%s)" % (b["max_s"], b["mean_s"]), "< 1"),
         "(c) fuzz: %d packets into the firmware receiver (%d stops), %.0f s"
         % (c["packets"], c["stops"], c["wall_s"])]
    for k, label in (("exits", "exits (an exception out of poll)"),
                     ("errors", "exceptions caught inside the receiver"),
                     ("failsafe_late", "stops where the failsafe engaged late"),
                     ("pulse_out_of_limits", "pulses outside the servo's limits"),
                     ("too_fast", "pulse steps above the velocity limit")):
        L.append("  %-58s %10d %8s" % (label, c[k], "0"))
    L.append("  (paths reached: %d frames used, %d wrong row counts, %d bad headers, %d packets "
             "dropped, %d torque-offs, %d failsafes with no header ever)"
             % (c["frames_used"], c["wrong_rows"], c["bad_headers"], c["dropped"], c["released"],
                c["never_headed_failsafes"]))
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    print(table(run(args.quick)))


if __name__ == "__main__":
    main()
