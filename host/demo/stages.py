"""The demo's host-side stages after capture: download, convert + edit, render, report.

    from host.demo import stages
    host_rec, dl = stages.download("out/unit/recording.msr", "out/recording.msr", notes)
    files, staffs = stages.convert_and_edit(host_rec, "out/", cap)   # staff.png, edited.png, truth.png
    stages.render(staffs, "out/compare.gif", files, notes)
    report = stages.report(cap, dl, files, staffs, notes, clip, seconds)

A stage whose part is not in the tree records None for its figures and the reason in notes
(report["not_measured"]); nothing is estimated or made up.
"""

import os
import shutil
import time

import numpy as np

from protocol import packets as pk


def download(unit_path, host_path, notes):
    """The recording from the unit over the serial link (host/download.py against the unit's
    download server, device/download.py, over a pty). Returns (path the host reads, {bytes,
    seconds, identical, ...}); if the download cannot run, (the unit's file, None) and the reason
    in notes - the rest of the demo then reads the unit's file directly, and says so."""
    t0 = time.perf_counter()
    try:
        from host.demo.fetch import fetch_over_pty
        info = fetch_over_pty(unit_path, host_path)
    except (ImportError, OSError, ValueError, KeyError) as e:
        notes["download"] = ("not measured: the serial download failed or is not available "
                             "(%s: %s); the host read the unit's file directly"
                             % (e.__class__.__name__, str(e)[:200]))
        shutil.copyfile(unit_path, host_path)
        return host_path, None
    info["seconds"] = round(time.perf_counter() - t0, 3)
    with open(unit_path, "rb") as a, open(host_path, "rb") as b:
        info["identical"] = a.read() == b.read()
    return host_path, info


def _truth_staff(cap, fps, bits=16):
    from host.staff import Row, Staff
    h = cap["loop"].header
    rows = [Row(r["name"], r["unit"], r["lo"], r["hi"], r["wrap"]) for r in h["rows"]]
    v = cap["loop"].truth_values().T
    return Staff(v, rows, fps, bits, cap["unit"].skeleton,
                 {"source": "truth", "captured": h.get("captured", "")})


def convert_and_edit(rec_path, out_dir, cap):
    """Container -> staff.png (as recorded), edited.png (despike + smooth), truth.png."""
    from host.edit import despike, smooth
    from host.formats import read_motion
    from host.stafffile import write_staff
    files = {"recording": rec_path}
    staff = read_motion(rec_path)
    files["staff"] = os.path.join(out_dir, "staff.png")
    write_staff(files["staff"], staff)
    edited = smooth(despike(staff), "butter", cutoff_hz=6.0)
    edited.meta["source"] = "estimated (despiked, smoothed)"
    files["edited"] = os.path.join(out_dir, "edited.png")
    write_staff(files["edited"], edited)
    truth = _truth_staff(cap, staff.fps)
    files["truth"] = os.path.join(out_dir, "truth.png")
    write_staff(files["truth"], truth)
    files["servo_log"] = os.path.join(out_dir, "servos.csv")
    cap["emulator"].write_log(files["servo_log"])
    from host.stafffile import read_staff
    return files, {"recorded": staff, "edited": read_staff(files["edited"]), "truth": truth}


def render(staffs, gif_path, files, notes, max_frames=120, robot_run=None):
    try:
        from host.render import render_gif
    except ImportError as e:                      # SEAM: host/render not in the tree
        notes["gif"] = "not rendered: host/render is not available (%s)" % e
        return
    if robot_run is not None and _render_with_robot(staffs, gif_path, robot_run, notes, max_frames):
        files["gif"] = gif_path
        return
    render_gif(staffs["edited"], gif_path, compare=staffs["truth"], fps=10.0, max_frames=max_frames,
               size_px=(640, 480))
    files["gif"] = gif_path


def _render_with_robot(staffs, gif_path, run, notes, max_frames):
    """The person (estimated beside true) and the simulated robot beside them, one GIF."""
    from host.physics.render import beside, frames_at
    from host.render.figure import frame_times, render_frames, write_gif
    idx = frame_times(staffs["edited"], 10.0, 1.0, max_frames)
    try:
        robot = frames_at(run, idx, (256, 384))
        people = render_frames(staffs["edited"], compare=staffs["truth"], fps=10.0, max_frames=max_frames,
                               size_px=(640, 480))
        write_gif(beside(robot, people, (320, 480)), gif_path, 10.0)
    except OSError as e:                          # no offscreen GL: the person alone
        notes["robot_gif"] = "robot not rendered: %s" % str(e).splitlines()[0][:160]
        return False
    return True


def _pct(xs, q):
    return round(float(np.percentile(np.asarray(xs), q)), 3) if len(xs) else None


def report(cap, dl, files, staffs, notes, clip, seconds):
    from host.demo.pipeline import rms_vs_truth, root_error_deg
    unit, loop, relay, streamer = cap["unit"], cap["loop"], cap["relay"], cap["streamer"]
    end, lc = cap["robot_end"], streamer.counts()
    sk = unit.skeleton
    start = int(round(unit.rate_hz * 1.6))            # after calibration (1 s) and blend-in (0.5 s)
    truth = loop.truth_values()
    rms_live, _ = rms_vs_truth(cap["values"], truth, sk, start)
    rms_rec, miss = rms_vs_truth(staffs["recorded"].values.T, truth, sk, start)
    rms_edit, _ = rms_vs_truth(staffs["edited"].values.T, truth, sk, start)
    rms_rows, _ = rms_vs_truth(staffs["recorded"].values.T, truth, sk, start, joints_only=False)
    root = root_error_deg(staffs["recorded"].values.T, truth, sk, start)
    rec8 = staffs["recorded"]
    tq = type(rec8)(truth.T, rec8.rows, rec8.fps, rec8.bits).quantised().values.T
    rms_q, _ = rms_vs_truth(tq, truth, sk, start)          # the anchor: 8-bit quantisation alone
    lat = cap["latency_ms"]
    st = loop.stats.summary()
    nrows = len(loop.header["rows"])
    rec_bytes = os.path.getsize(cap["record"])
    fb = [len(pk.encode("FRAME8" if loop.bits == 8 else "FRAME16", 0, 0, (), b"\x01" * (nrows * loop.bits // 8)))]
    servo_frames = max(1, len(end.commands))
    out = {
        "clip": os.path.abspath(clip), "seconds_of_motion": seconds, "rate_hz": unit.rate_hz,
        "rows": nrows, "imus": len(unit.slots), "camera": unit.camera is not None,
        "estimator": cap["estimator"], "robot": cap["robot"].name,
        "rms_deg": None if rms_rec is None else round(rms_rec, 3),
        "rms_live_deg": None if rms_live is None else round(rms_live, 3),
        "rms_edited_deg": None if rms_edit is None else round(rms_edit, 3),
        "rms_values_missing": miss,
        "rms_definition": "rotation rows of the joints (root link's rows excluded), recorded "
                          "8-bit staff vs truth, from 1.6 s (after calibration and blend-in)",
        "rms_quantisation_deg": None if rms_q is None else round(rms_q, 3),
        "rms_edited_note": "despike + smooth also remove the glitches of the clip's own hand "
                           "channels, which the truth keeps",
        "rms_root_orientation_deg": None if root is None else round(root, 3),
        "rms_all_rotation_rows_deg": None if rms_rows is None else round(rms_rows, 3),
        "frames_captured": loop.frame_index,
        "frames_streamed": streamer.frames,
        "frames_delivered": relay.counts["frames"],
        "frames_skipped": lc["frames_skipped"],
        "servo_commands": sum(len(c[2]) for c in end.commands),
        "latency_p50_ms": _pct(lat, 50), "latency_p99_ms": _pct(lat, 99),
        "latency_max_ms": round(max(lat), 3) if lat else None, "latency_samples": len(lat),
        "latency_definition": "sample -> servo bytes at the robot end: the frame's bus wait and "
                              "unit CPU (measured) + its time on the paced 115200-baud line and "
                              "in the driver's queue (simulated, in steps of 1/(%d x rate))" % cap.get("line_steps", 1),
        "latency_wall_processing_p50_ms": _pct(cap.get("latency_wall_ms", []), 50),
        "latency_wall_processing_p99_ms": _pct(cap.get("latency_wall_ms", []), 99),
        "latency_robot_end_p50_ms": _pct(cap["latency_robot_ms"], 50),
        "latency_robot_end_p99_ms": _pct(cap["latency_robot_ms"], 99),
        "unit_busy_mean_ms": _r(st.get("busy_mean_ms")), "unit_busy_p99_ms": _r(st.get("busy_p99_ms")),
        "unit_cpu_p99_ms": _r(st.get("cpu_p99_ms")), "bus_p99_ms": _r(st.get("bus_p99_ms")),
        "overruns": st.get("overruns"), "skipped": st.get("skipped"),
        "simulator_mean_ms": _r(st.get("simulate_mean_ms")),
        "unit_stage_ms": dict((k[:-3], _r(v)) for k, v in st.items()
                              if k.endswith(("_mean_ms", "_p99_ms")) and not k.startswith(("busy", "latency", "period"))),
        "bytes_per_frame": round(sum(fb) / len(fb), 2) if fb else None,
        "bytes_per_frame_detail": {
            "link_frame_packet": round(sum(fb) / len(fb), 2) if fb else None,
            "link_incl_headers": round(lc["bytes"] / max(1, streamer.frames), 2),
            "container": round((rec_bytes - _header_len(cap["record"])) / max(1, loop.frame_index), 2),
            "maestro": round(end.raw_driver.stats["bytes"] / servo_frames, 2),
            "raw_codes": nrows * (loop.bits // 8)},
        "link": {"write_errors": lc["write_errors"], "faults": dict(cap["faults"].counts),
                 "streamer": lc, "line": dict(cap["twin"].counts), "relay": relay.summary()},
        "download": dl,
        "file_bytes": dict((k, os.path.getsize(v)) for k, v in files.items() if os.path.exists(v)),
        "files": dict((k, os.path.abspath(v)) for k, v in files.items()),
    }
    out["file_bytes"]["unit_recording"] = rec_bytes
    nm = dict(notes)
    if dl is None:
        out["download"] = None
    out["not_measured"] = nm
    return out


def _r(v):
    return None if v is None or v != v else round(float(v), 3)


def _header_len(path):
    from protocol import container
    with open(path, "rb") as f:
        head = f.read(14)
    import struct
    if len(head) < 14 or not head.startswith(container.MAGIC):
        return 0
    return 14 + struct.unpack(">I", head[10:14])[0] + 4
