"""Bad files for every command that reads files: real seeds, hand-made bad ones, seeded mutations,
and an in-process runner of host.cli.main (stderr captured, an alarm per call).

    from tools.badfiles import run_cases
    res = run_cases(tmp_dir, n_mutations=1000)     # {"counts": {...}, "bad": [{case, argv, problem}]}
    rc, out, err, exc = call_cli(["info", path], timeout_s=20)

Seeds (real files): a PNG staff and a BVH (the bundled CMU clip cut to 20 frames), a recording
container, the human skeleton JSON, the khr17-maestro robot description, a unit configuration.
A call behaves when it succeeds, or exits 2 with exactly one stderr line "motionstaff: ..." and
no traceback (verdict). Run it in a child with RLIMIT_AS set to bound memory (tools/robust.py).
"""

import contextlib
import io
import json
import os
import signal
import struct
import zlib

import numpy as np


HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED_BVH = os.path.join(os.path.dirname(HERE), "host", "data", "131_03_short.bvh")
SLOW_CHECKED = ("huge.png", "huge_real.png", "wide.png", "bomb.png", "bad_header.png", "truncated.png")


class Hang(BaseException):
    """Raised by the alarm inside a call that took too long (BaseException: commands catch Exception)."""


def small_bvh(src, dst, frames=20):
    """A real BVH cut to its first `frames` frames (still a real file, quick to parse)."""
    with open(src) as f:
        lines = f.read().splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("Frames:"))
    head = lines[:i] + ["Frames: %d" % frames] + [lines[i + 1]]
    with open(dst, "w") as f:
        f.write("\n".join(head + lines[i + 2:i + 2 + frames]) + "\n")
    return dst


def make_seeds(d, bvh_src):
    from device.body.human import human_model
    from host.formats import read_motion, write_motion
    from protocol import container, staffheader
    seeds = {"bvh": small_bvh(bvh_src, os.path.join(d, "clip.bvh"))}
    staff = read_motion(seeds["bvh"])
    seeds["png"] = os.path.join(d, "staff.png")
    write_motion(seeds["png"], staff)
    rows = [{"name": "r%d" % i, "unit": "deg", "lo": -90.0, "hi": 90.0} for i in range(12)]
    seeds["msr"] = os.path.join(d, "rec.msr")
    with container.Writer(seeds["msr"], staffheader.make(rows=rows, fps=30.0)) as w:
        for k in range(20):
            w.write_frame([None if (k + i) % 7 == 0 else (k * 13 + i) % 256 for i in range(12)], k * 33)
    seeds["skeleton"] = os.path.join(d, "body.json")
    human_model().save(seeds["skeleton"])
    from device.capture.config import default_config
    seeds["config"] = os.path.join(d, "unit.json")
    with open(seeds["config"], "w") as f:
        json.dump(default_config(body="human"), f, indent=1)
    from device.servo.robot import HERE
    seeds["robot"] = os.path.join(d, "robot.json")
    with open(os.path.join(HERE, "khr17-maestro.json"), "rb") as a, open(seeds["robot"], "wb") as b:
        b.write(a.read())
    seeds["mapping"] = os.path.join(d, "map.json")
    with open(seeds["mapping"], "w") as f:
        json.dump({"format": "motionstaff-retarget", "version": 1,
                   "joints": [{"target": "l_knee_flex", "source": "LeftKnee.Xrotation"},
                              {"target": "r_knee_flex", "source": "RightKnee.Xrotation"}]}, f)
    return seeds


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def handmade(d, seeds):
    """Hand-made bad files: [(name, path)] - truncated, wrong type, corrupted header, absurd sizes."""
    out = []

    def put(name, data):
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(data)
        out.append((name, p))
    png = open(seeds["png"], "rb").read()
    bvh = open(seeds["bvh"], "rb").read()
    msr = open(seeds["msr"], "rb").read()
    sig = b"\x89PNG\r\n\x1a\n"
    put("empty.png", b"")
    put("empty.bvh", b"")
    put("empty.msr", b"")
    put("truncated.png", png[:len(png) // 2])
    put("truncated_sig.png", png[:5])
    put("truncated.bvh", bvh[:len(bvh) // 3])
    put("truncated.msr", msr[:30])
    put("bvh_as.png", bvh)
    put("png_as.bvh", png)
    put("msr_as.png", msr)
    put("random.png", bytes(np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8)))
    put("text.msr", b"hello, not a recording\n" * 10)
    # a PNG claiming 100000 x 100000 pixels (16-bit grey+alpha: 40 GB if believed)
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 16, 4, 0, 0, 0)
    put("huge.png", sig + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(b"\0" * 1000))
        + png_chunk(b"IEND", b""))
    # the real staff claiming 100000 x 100000 in its IHDR, its header intact
    i = png.index(b"IHDR")
    body = struct.pack(">II", 100000, 100000) + png[i + 12:i + 4 + 13]
    put("huge_real.png", png[:i - 4] + png_chunk(b"IHDR", body) + png[i + 4 + 13 + 4:])
    # the real staff's IHDR rewritten to 100000 columns (CRC fixed, so only the size is wrong)
    i = png.index(b"IHDR")
    body = struct.pack(">I", 100000) + png[i + 8:i + 4 + 13]
    put("wide.png", png[:i - 4] + png_chunk(b"IHDR", body) + png[i + 4 + 13 + 4:])
    # a zlib bomb: a valid header chunk, IDAT inflating to 1 GB of zeros
    bomb = zlib.compress(b"\0" * (64 << 20), 9) * 16
    put("bomb.png", png[:png.index(b"IDAT") - 4] + png_chunk(b"IDAT", bomb) + png_chunk(b"IEND", b""))
    # corrupted header JSON with a correct chunk CRC
    j = png.index(b"zTXt")
    n = struct.unpack(">I", png[j - 4:j])[0]
    key_end = png.index(b"\0", j + 4)
    txt = zlib.decompress(png[key_end + 2:j + 4 + n])
    bad = txt.replace(b'"fps": 30', b'"fps": -1').replace(b'"fps":30', b'"fps":-1')
    if bad == txt:
        bad = txt[: len(txt) // 2]
    put("bad_header.png", png[:j - 4] + png_chunk(b"zTXt", png[j + 4:key_end + 2] + zlib.compress(bad))
        + png[j + 4 + n + 4:])
    put("huge_frames.bvh", bvh.replace(b"Frames: 20", b"Frames: 1000000000"))
    put("nan.bvh", bvh[:bvh.index(b"Frame Time")] + b"Frame Time: nan\n" + bvh[bvh.index(b"Frame Time"):])
    # container whose header claims 4 GB of JSON
    put("huge_json.msr", msr[:10] + struct.pack(">I", 0xFFFFFFF0) + msr[14:])
    put("bad_crc.msr", msr[:20] + bytes([msr[20] ^ 0xFF]) + msr[21:])
    return out


def mutate(data, rng):
    """One seeded random mutation of bytes."""
    b = bytearray(data)
    kind = rng.integers(0, 8)
    n = len(b)
    if n == 0:
        return bytes(rng.integers(0, 256, 16, dtype=np.uint8))
    if kind == 0:                                   # bit flips
        for _ in range(int(rng.integers(1, 9))):
            k = int(rng.integers(0, n))
            b[k] ^= 1 << int(rng.integers(0, 8))
    elif kind == 1:                                 # random bytes overwritten
        for _ in range(int(rng.integers(1, 17))):
            b[int(rng.integers(0, n))] = int(rng.integers(0, 256))
    elif kind == 2:                                 # truncated
        b = b[:int(rng.integers(0, n))]
    elif kind == 3:                                 # inserted garbage
        k = int(rng.integers(0, n))
        b[k:k] = bytes(rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8))
    elif kind == 4:                                 # a span deleted
        k = int(rng.integers(0, n))
        del b[k:k + int(rng.integers(1, 256))]
    elif kind == 5:                                 # a span duplicated
        k = int(rng.integers(0, n))
        b[k:k] = b[k:k + int(rng.integers(1, 256))]
    elif kind == 6:                                 # a span zeroed / 0xFF'd
        k = int(rng.integers(0, n))
        m = int(rng.integers(1, 64))
        b[k:k + m] = bytes([0xFF if rng.integers(0, 2) else 0]) * len(b[k:k + m])
    else:                                           # a number made absurd (text) or a u32 (binary)
        digits = [k for k in range(n) if 48 <= b[k] <= 57]
        if digits and rng.integers(0, 2):
            k = digits[int(rng.integers(0, len(digits)))]
            b[k:k + 1] = rng.choice([b"99999999999", b"-1", b"1e308", b"nan", b"0"])
        else:
            k = int(rng.integers(0, max(1, n - 4)))
            b[k:k + 4] = struct.pack(">I", int(rng.choice([0, 0x7FFFFFFF, 0xFFFFFFFF, 100000])))
    return bytes(b)


def call_cli(argv, timeout_s=20.0):
    """host.cli.main(argv) in-process: (rc, stdout, stderr, escaped exception or None)."""
    from host.cli import main

    def alarm(signum, frame):
        raise Hang("no answer within %g s" % timeout_s)
    old = signal.signal(signal.SIGALRM, alarm)
    out, err = io.StringIO(), io.StringIO()
    exc = None
    rc = None
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(list(argv))
    except Hang as e:
        exc = "hang: %s" % e
    except SystemExit as e:             # argparse
        rc = e.code
    except BaseException as e:          # an escaped exception is a traceback for the user
        exc = "%s: %s" % (e.__class__.__name__, str(e)[:200])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return rc, out.getvalue(), err.getvalue(), exc


def verdict(rc, err, exc):
    """None if the call behaved (success, or exit 2 with one stderr line and no traceback)."""
    if exc is not None:
        return exc
    if "Traceback" in err:
        return "traceback on stderr"
    if rc == 0:
        return None
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc != 2:
        return "exit status %r (%s)" % (rc, lines[-1][:120] if lines else "")
    if len(lines) != 1:
        return "%d stderr lines: %r" % (len(lines), [ln[:100] for ln in lines[:3]])
    if not lines[0].startswith("motionstaff: "):
        return "stderr line does not start with 'motionstaff: ': %r" % lines[0][:120]
    return None


def commands_for(kind, path, out):
    """The commands that read a file of this kind (argv lists); `out` is a scratch prefix."""
    if kind == "skeleton":
        return [["retarget", out["png"], out["mapping"], out["dst"] + ".png", "--target", path]]
    if kind == "robot":
        return [["robots", path]]
    if kind == "config":
        return [["capture", "--config", path, "--duration", "0.1", "--record", out["dst"] + ".msr"]]
    cmds = [["info", path], ["convert", path, out["dst"] + ".csv"], ["diff", path, out["png"]],
            ["edit", path, out["dst"] + ".png", "despike"]]
    return cmds


def slow_commands(path, out):
    return [["show", path, "-o", out["dst"] + "_show.png"],
            ["render", path, "-o", out["dst"] + ".gif", "--max-frames", "3", "--size", "160x120"],
            ["play", path, "--port", "loop://", "--robot", "khr17-maestro", "--no-progress",
             "--speed", "1000", "--to", "0.2"]]


def _ext(kind):
    return {"png": ".png", "bvh": ".bvh", "msr": ".msr"}.get(kind, ".json")


def cases(d, seeds, rng, n_mutations=1000):
    """(label, argv) for every call: hand-made files x commands, then the mutations."""
    out = {"dst": os.path.join(d, "out"), "png": seeds["png"], "mapping": seeds["mapping"]}
    cases = []
    for name, path in handmade(d, seeds):
        kind = {".png": "png", ".bvh": "bvh", ".msr": "msr"}[os.path.splitext(name)[1]]
        for argv in commands_for(kind, path, out):
            cases.append((name, argv))
        if kind == "png" and name in SLOW_CHECKED:
            cases += [(name, argv) for argv in slow_commands(path, out)]
    cases.append(("missing file", ["info", os.path.join(d, "nope.png")]))
    cases.append(("a directory", ["convert", d + os.sep, out["dst"] + ".png"]))
    kinds = ["png", "bvh", "msr", "skeleton", "png", "bvh", "msr", "robot", "config"]
    raw = dict((k, open(seeds[k], "rb").read()) for k in kinds)
    for i in range(n_mutations):
        kind = kinds[i % len(kinds)]
        data = mutate(raw[kind], rng)
        path = os.path.join(d, "m%04d%s" % (i, _ext(kind)))
        with open(path, "wb") as f:
            f.write(data)
        cmds = commands_for(kind, path, out)
        argv = cmds[(i // len(kinds)) % len(cmds)]
        if kind == "png" and i % 45 == 0:           # the slow readers now and then
            argv = slow_commands(path, out)[(i // 45) % 3]
        cases.append(("mutation %d of %s" % (i, kind), argv))
    return cases


def run_cases(d, n_mutations=1000, seed=2026, timeout_s=30.0):
    """Every case in-process; {"counts": {calls, ok, exit2, other}, "bad": [...]}."""
    rng = np.random.default_rng(seed)
    seeds = make_seeds(d, BUNDLED_BVH)
    bad = []
    counts = {"calls": 0, "ok": 0, "exit2": 0, "other": 0, "mutations": n_mutations}
    for label, argv in cases(d, seeds, rng, n_mutations):
        rc, _out, err, exc = call_cli(argv, timeout_s=timeout_s)
        counts["calls"] += 1
        counts["ok" if rc == 0 and exc is None else "exit2" if rc == 2 else "other"] += 1
        v = verdict(rc, err, exc)
        if v is not None:
            bad.append({"case": label, "argv": argv[0], "problem": v})
    return {"counts": counts, "bad": bad}
