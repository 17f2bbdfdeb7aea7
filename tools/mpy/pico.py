"""Run our firmware on the emulated Pico (tools/mpy/pico.mjs) from Python: tests and benchmarks.

    from tools.mpy import pico
    res = pico.run(pico.receiver_files(cfg), uart=[(t_s, wire_bytes), ...], until_s=3.0)
    res["pulses"]     # [(t_ns, pin, width_ns)] one row per pulse-width change (0: pulses stopped)
    res["usb"]        # what the board printed (USB CDC); res["tx"] [(t_ns, bytes)] UART0 output
    out = pico.run_script("print(1/3)")["usb"]    # any script, as /main.py, beside our modules

The board's filesystem is the LittleFS image `deploy` would write (host/pico_image.py): the same
mpy-cross-compiled modules, receiver.json and main.py. Emulated time is deterministic.
"""

import json
import os
import subprocess
import tempfile

from host import pico_emulator as pe
from host import pico_image as pi

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
END = "@@END@@"
REPL = 'Type "help()"'          # the REPL banner: main.py has ended (or died)
ALLOW_ENV = "MOTIONSTAFF_ALLOW_NO_MPY"
_mpy_cache = {}


class PicoError(RuntimeError):
    pass


def _compiled(rel):
    if rel not in _mpy_cache:
        with tempfile.TemporaryDirectory() as tmp:
            _mpy_cache[rel] = pi.compile_mpy(rel, tmp)
    return _mpy_cache[rel]


def receiver_files(cfg, main=None):
    """What `deploy --receiver --config` puts on the board (main.py replaced by `main` if given)."""
    from host.commands import deploy

    out = []
    for src, dest, how in deploy.plan(True):
        data = _compiled(src) if how == "mpy" else open(os.path.join(REPO, src), "rb").read()
        if dest == "/main.py" and main is not None:
            data = main.encode("utf-8")
        out.append((dest, data))
    out.append(("/receiver.json", json.dumps(cfg, indent=1).encode("utf-8")))
    return sorted(out)


def part_files(extra=()):
    """The whole MicroPython part (tools/mpy/manifest.json) compiled to /lib/*.mpy, + extra files."""
    from tools.mpy_run import manifest_files

    out = [("/lib/" + rel[:-3] + ".mpy", _compiled(rel)) for rel in manifest_files(REPO)]
    return sorted(out + list(extra))


def available():
    try:
        pe.locate()
    except OSError as e:
        return False, str(e)
    return True, ""


def require():
    """In tests: fail (not skip) when the emulator is missing, unless MOTIONSTAFF_ALLOW_NO_MPY=1."""
    import pytest

    ok, why = available()
    if ok:
        return
    if os.environ.get(ALLOW_ENV) == "1":
        pytest.skip("emulated Pico unavailable (%s=1): %s" % (ALLOW_ENV, why))
    pytest.fail("emulated Pico unavailable: %s" % why, pytrace=False)


def run(files, uart=(), usb=(), until_s=5.0, stop_text=None, baud=115200, timeout=600):
    """Boot the Pico with files [(board path, bytes)]; uart [(t_s, bytes)] into UART0; a dict."""
    where = pe.locate()
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "fs.img")
        with open(img, "wb") as f:
            f.write(pi.littlefs_image(files))
        job = {"uart": [[int(round(t * 1e9)), bytes(b).hex()] for t, b in uart],
               "usb": [[int(round(t * 1e9)), s] for t, s in usb],
               "until_ns": int(until_s * 1e9), "baud": baud, "stop_text": stop_text}
        jp = os.path.join(tmp, "job.json")
        with open(jp, "w") as f:
            json.dump(job, f)
        p = subprocess.run(where.argv() + ["--fs", img, "--job", jp], capture_output=True,
                           timeout=timeout)
    if p.returncode != 0:
        raise PicoError("pico.mjs exited %d: %s" % (p.returncode, p.stderr.decode("utf-8", "replace")[-2000:]))
    res = json.loads(p.stdout.decode("utf-8"))
    res["usb"] = res["usb"].replace("\r\n", "\n")
    res["pulses"] = [tuple(e) for e in res["pulses"]]
    res["tx"] = [(t, bytes.fromhex(h)) for t, h in res["tx"]]
    return res


def run_script(code, extra=(), until_s=60.0, **kw):
    """Run code as /main.py beside the compiled MicroPython part; stops when it prints END or ends.

    Raises PicoError with the board's output when the script raised (a traceback was printed).
    """
    # USB CDC output before the host has enumerated the port is lost: wait 50 ms first
    code = "import time\ntime.sleep_ms(50)\n" + code
    files = part_files(list(extra) + [("/main.py", (code + "\nprint(%r)\n" % END).encode("utf-8"))])
    res = run(files, until_s=until_s, stop_text=kw.pop("stop_text", [END, REPL]), **kw)
    if END not in res["usb"]:
        raise PicoError("script did not finish on the Pico (stopped: %s):\n%s" % (res["stopped"], res["usb"][-3000:]))
    res["out"] = res["usb"].split(END)[0]
    return res


def golden(names):
    """{name: (result, emulated ms, heap bytes kept)} of golden cases run on the emulated Pico."""
    extra = [("/golden_cases.py", open(os.path.join(HERE, "golden_cases.py"), "rb").read()),
             ("/pico_golden.py", open(os.path.join(HERE, "pico_golden.py"), "rb").read())]
    res = run_script("import pico_golden\npico_golden.main(%r)\n" % list(names), extra=extra, until_s=120)
    out = {}
    for line in res["out"].splitlines():
        if line.startswith("@@ "):
            _, name, ms, rest = line.split(" ", 3)
            if ms == "ERR":
                raise PicoError("golden case %s on the Pico: %s" % (name, rest))
            heap, text = rest.split(" ", 1)
            out[name] = (json.loads(text), int(ms), int(heap))
    return out


def twin_pulses(cfg, uart, until_s, poll_ms=1, baud=115200):
    """The CPython twin (device/servo/emulate/native.py: the same firmware on a stand-in board)
    fed the same timeline, bytes landing at the line rate: [(t_ms, pin, duty_ns)] changes."""
    from device.servo.emulate.native import NativeEmulator

    now = [0.0]
    emu = NativeEmulator(clock=lambda: now[0], config=json.loads(json.dumps(cfg)))
    emu.t0 = 0.0
    byte_s = 10.0 / baud
    arrivals = []
    busy = 0.0
    for t, data in sorted(uart, key=lambda x: x[0]):
        start = max(t, busy)
        for i in range(len(data)):
            arrivals.append((start + (i + 1) * byte_s, data[i]))
        busy = start + len(data) * byte_s
    pins = [s["pin"] for s in emu.config["servos"]]
    last = [None] * len(pins)
    out = []
    k = 0
    for step in range(int(until_s * 1000 / poll_ms) + 1):
        now[0] = step * poll_ms / 1000.0
        j = k
        while j < len(arrivals) and arrivals[j][0] <= now[0]:
            j += 1
        if j > k:
            emu.feed(bytes(b for _, b in arrivals[k:j]))
            k = j
        else:
            emu.poll()
        for i, d in enumerate(emu.pulses_ns()):
            if d != last[i]:
                last[i] = d
                out.append((now[0] * 1000, pins[i], d))
    return out


def is_subsequence(pico_widths, twin_widths, tol_ns):
    """True if every width the Pico put out appears, in order, among the twin's duties (+-tol)."""
    j = 0
    for w in pico_widths:
        while j < len(twin_widths) and abs(twin_widths[j] - w) > tol_ns:
            j += 1
        if j == len(twin_widths):
            return False
    return True


def fuzz_uart(n, seed, t0_s, bytes_per_ms=1.5):
    """n fuzzed link packets (tools/linkfuzz.py: spliced headers, wrong row counts, garbage, ...)
    as a UART timeline from t0_s, paced to bytes_per_ms on average (the Pico's Python decodes
    about 4 bytes per ms; faster, its 1 KB ring overflows and the twins would see other bytes)."""
    from tools.linkfuzz import _Gen

    gen = _Gen(seed)
    t = t0_s
    out = []
    for _ in range(n):
        p = gen.packet()
        out.append((t, p))
        t += len(p) / (bytes_per_ms * 1000.0)
    return out, t


def bench_script(code, uart=(), until_s=120):
    """Run code using tools/mpy/pico_bench.py on the Pico; {tag: parsed JSON} of its @@ lines."""
    extra = [("/pico_bench.py", open(os.path.join(HERE, "pico_bench.py"), "rb").read())]
    res = run_script(code, extra=extra, uart=uart, until_s=until_s)
    out = {}
    for line in res["out"].splitlines():
        if line.startswith("@@") and " " in line:
            tag, text = line[2:].split(" ", 1)
            out[tag] = json.loads(text)
    return out, res
