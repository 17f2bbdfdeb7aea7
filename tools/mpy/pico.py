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
