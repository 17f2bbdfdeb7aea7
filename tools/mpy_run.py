"""Run code under the MicroPython WebAssembly port (Node.js) from CPython: tests, benchmarks, tools.

    from tools.mpy_run import run, MpySession
    out = run("from protocol import staffcodec as sc\\nprint(sc.encode(45.0, -90.0, 90.0, 8))")
    with MpySession() as mp:          # one Node process, many scripts
        mp.run("print(1 + 1)")        # -> "2\\n"; raises MpyError with the traceback on failure

The board's filesystem holds the MicroPython part listed in tools/mpy/manifest.json under /lib.
`tools/setup_mpy.sh` installs the npm package. In CI a missing Node or package is an error; the
pytest fixture `mpy` skips only when MOTIONSTAFF_ALLOW_NO_MPY=1 is set.
"""

import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPY_DIR = os.path.join(REPO, "tools", "mpy")
RUNNER = os.path.join(MPY_DIR, "run.mjs")
PACKAGE = "@micropython/micropython-webassembly-pyscript"
ALLOW_ENV = "MOTIONSTAFF_ALLOW_NO_MPY"


class MpyError(RuntimeError):
    """A script failed under MicroPython: .stdout, .error (traceback text), .type."""

    def __init__(self, message, stdout="", error="", type_=""):
        RuntimeError.__init__(self, message)
        self.stdout = stdout
        self.error = error
        self.type = type_


def manifest_files(repo=REPO):
    """Repo-relative paths of the MicroPython part (the same list run.mjs loads)."""
    with open(os.path.join(MPY_DIR, "manifest.json")) as f:
        man = json.load(f)
    exclude = set(os.path.normpath(p) for p in man.get("exclude", []))
    out = []
    for rel in man["paths"]:
        path = os.path.join(repo, rel)
        if os.path.isdir(path):
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
                found += [os.path.join(root, n) for n in sorted(files) if n.endswith(".py")]
        elif os.path.isfile(path):
            found = [path]
        else:
            continue
        for p in found:
            r = os.path.relpath(p, repo)
            if os.path.normpath(r) not in exclude:
                out.append(r)
    return out


def node_binary():
    return shutil.which("node")


def available():
    """(True, "") when Node and the npm package are installed, else (False, reason)."""
    if node_binary() is None:
        return False, "node is not on PATH (install Node.js >= 18)"
    pkg = os.path.join(MPY_DIR, "node_modules", *PACKAGE.split("/"))
    if not os.path.isfile(os.path.join(pkg, "micropython.mjs")):
        return False, "%s is not installed in tools/mpy (run tools/setup_mpy.sh)" % PACKAGE
    return True, ""


def _files_args(files):
    args = []
    for dest, src in (files or {}).items():
        args += ["--file", "%s=%s" % (dest, src)]
    return args


def run(code, files=None, timeout=300, heap=None):
    """Run one script in a fresh MicroPython; its stdout, or MpyError on any exception/exit != 0.

    files: {dest under /lib: source path on this machine} added beside the manifest.
    """
    ok, why = available()
    if not ok:
        raise MpyError(why)
    cmd = [node_binary(), RUNNER] + _files_args(files)
    if heap:
        cmd += ["--heap", str(int(heap))]
    try:
        p = subprocess.run(cmd + ["-"], input=code.encode("utf-8"), capture_output=True,
                           timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        raise MpyError("MicroPython script timed out after %s s" % timeout)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        raise MpyError("MicroPython exited %d:\n%s%s" % (p.returncode, out, err), out, err)
    return out


class MpySession:
    """One Node process running MicroPython; run() scripts in it one after another."""

    def __init__(self, files=None, heap=None):
        ok, why = available()
        if not ok:
            raise MpyError(why)
        cmd = [node_binary(), RUNNER, "--serve"] + _files_args(files)
        if heap:
            cmd += ["--heap", str(int(heap))]
        self._cmd = cmd
        self._p = None
        self._n = 0
        self._start()

    def _start(self):
        # stderr goes to a file, so a chatty runner can never block on a full pipe
        import tempfile

        self._err = tempfile.TemporaryFile()
        self._p = subprocess.Popen(self._cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=self._err, cwd=REPO)

    def _kill(self):
        self._p.kill()
        self._p.wait()
        self._p.stdin.close()
        self._p.stdout.close()
        self._err.seek(0)
        err = self._err.read().decode("utf-8", "replace")
        self._err.close()
        self._p = None
        return err

    def run(self, code, name="<test>", fresh=False, timeout=300):
        """Run code with fresh globals; returns its stdout or raises MpyError.

        A script that hangs (e.g. dies uncaught with micropython.heap_lock() held) is killed
        after timeout seconds, and the next run() starts a new MicroPython.
        """
        import select

        if self._p is None:
            if self._cmd is None:
                raise MpyError("session closed")
            self._start()
        self._n += 1
        req = {"id": self._n, "code": code, "name": name, "fresh": bool(fresh)}
        self._p.stdin.write((json.dumps(req) + "\n").encode("utf-8"))
        self._p.stdin.flush()
        ready, _, _ = select.select([self._p.stdout], [], [], timeout)
        if not ready:
            self._kill()
            raise MpyError("MicroPython script %s timed out after %s s (runner restarted)" % (name, timeout))
        line = self._p.stdout.readline()
        if not line:
            err = self._kill()
            raise MpyError("MicroPython runner died: %s" % err)
        rep = json.loads(line.decode("utf-8"))
        if not rep["ok"]:
            raise MpyError("%s under MicroPython:\n%s%s" % (rep["type"], rep["stdout"], rep["error"]),
                           rep["stdout"], rep["error"], rep["type"])
        return rep["stdout"]

    def close(self):
        self._cmd = None
        if self._p is not None:
            try:
                self._p.stdin.close()
                self._p.wait(timeout=30)
            except Exception:
                self._p.kill()
                self._p.wait()
            self._p.stdout.close()
            self._err.close()
            self._p = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# test helpers put beside the manifest in the shared session: the simulated `machine` module and
# the golden cases (both MicroPython-safe)
SESSION_FILES = {"machine.py": os.path.join(MPY_DIR, "sim_machine.py"),
                 "golden_cases.py": os.path.join(MPY_DIR, "golden_cases.py"),
                 "fw_harness.py": os.path.join(MPY_DIR, "fw_harness.py")}


def require_or_skip():
    """In tests: skip only when MOTIONSTAFF_ALLOW_NO_MPY=1, otherwise fail if MicroPython is missing."""
    import pytest

    ok, why = available()
    if ok:
        return
    if os.environ.get(ALLOW_ENV) == "1":
        pytest.skip("MicroPython wasm unavailable (%s=1): %s" % (ALLOW_ENV, why))
    pytest.fail("MicroPython wasm runner unavailable: %s. Run tools/setup_mpy.sh, or set %s=1 "
                "to skip locally." % (why, ALLOW_ENV), pytrace=False)


try:
    import pytest as _pytest
except ImportError:  # not under pytest
    _pytest = None

if _pytest is not None:

    @_pytest.fixture(scope="session")
    def mpy():
        """A MicroPython wasm session shared by the whole test run (with the simulated machine)."""
        require_or_skip()
        files = dict((k, v) for k, v in SESSION_FILES.items() if os.path.isfile(v))
        s = MpySession(files=files)
        yield s
        s.close()


if __name__ == "__main__":
    src = sys.stdin.read() if len(sys.argv) < 2 or sys.argv[1] == "-" else open(sys.argv[1]).read()
    try:
        sys.stdout.write(run(src))
    except MpyError as e:
        sys.stderr.write("%s\n" % e)
        sys.exit(1)
