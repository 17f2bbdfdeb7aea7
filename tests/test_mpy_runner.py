"""tools/mpy: the MicroPython WebAssembly runner and its Python wrapper."""

import os
import subprocess

import pytest

from tools import mpy_run


def test_every_module_of_the_part_imports_on_micropython(mpy):
    mods = []
    for rel in mpy_run.manifest_files():
        mod = rel[:-3].replace(os.sep, ".")
        if mod.endswith(".__init__"):
            mod = mod[: -len(".__init__")]
        if mod.startswith("device.firmware.main"):
            continue  # main.py runs the receiver forever: imported by the firmware tests instead
        mods.append(mod)
    assert "protocol.staffcodec" in mods and "device.core.ekf_q" in mods
    code = "import sys\nfor m in %r:\n    __import__(m)\nprint(sys.implementation.name)\n" % (mods,)
    assert mpy.run(code, fresh=True).strip() == "micropython"


def test_session_reports_exceptions_and_failed_checks(mpy):
    assert mpy.run("print(6 * 7)") == "42\n"
    with pytest.raises(mpy_run.MpyError) as e:
        mpy.run("print('before')\nassert 1 == 2, 'the check failed'", name="chk.py")
    assert e.value.type == "AssertionError"
    assert "the check failed" in e.value.error and "chk.py" in e.value.error
    assert e.value.stdout == "before\n"
    with pytest.raises(mpy_run.MpyError):
        mpy.run("import sys\nsys.exit(3)")
    assert mpy.run("import sys\nsys.exit(0)") == ""
    # the session survives errors
    assert mpy.run("print('still here')") == "still here\n"


def test_one_shot_runner_exit_codes():
    mpy_run.require_or_skip()
    assert mpy_run.run("print('ok')") == "ok\n"
    with pytest.raises(mpy_run.MpyError) as e:
        mpy_run.run("raise ValueError('bad thing')")
    assert "ValueError: bad thing" in str(e.value)
    node = mpy_run.node_binary()
    p = subprocess.run([node, mpy_run.RUNNER, "-"], input=b"import sys\nprint('x')\nsys.exit(4)\n",
                       capture_output=True)
    assert p.returncode == 4 and p.stdout == b"x\n"
    p = subprocess.run([node, mpy_run.RUNNER, "-"], input=b"raise KeyError(1)\n", capture_output=True)
    assert p.returncode == 1 and b"KeyError" in p.stderr
    p = subprocess.run([node, mpy_run.RUNNER], capture_output=True)
    assert p.returncode == 2 and b"usage" in p.stderr


def test_it_is_really_micropython(mpy):
    out = mpy.run("import sys\nprint(sys.implementation.name, sys.implementation.version[:2], "
                  "sys.maxsize)\nprint(hasattr(int, 'bit_length'))")
    assert out.split("\n")[0] == "micropython (1, 27) 2147483647"
    assert out.split("\n")[1] == "False"


def test_missing_micropython_fails_unless_allowed(monkeypatch):
    monkeypatch.setattr(mpy_run, "available", lambda: (False, "node is not on PATH"))
    monkeypatch.delenv(mpy_run.ALLOW_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception):
        mpy_run.require_or_skip()
    monkeypatch.setenv(mpy_run.ALLOW_ENV, "1")
    with pytest.raises(pytest.skip.Exception):
        mpy_run.require_or_skip()
    with pytest.raises(mpy_run.MpyError):
        mpy_run.run("print(1)")


def test_a_hung_script_is_killed_and_the_session_recovers():
    mpy_run.require_or_skip()
    with mpy_run.MpySession() as s:
        # an uncaught MemoryError with the heap locked hangs the wasm port: timeout, restart
        with pytest.raises(mpy_run.MpyError, match="timed out"):
            s.run("import micropython\nmicropython.heap_lock()\nx = [1, 2, 3]", timeout=5)
        assert s.run("print('again')") == "again\n"


def test_serve_mode_isolates_globals_and_can_forget_modules(mpy):
    mpy.run("leak = 1")
    assert mpy.run("print('leak' in globals())") == "False\n"
    mpy.run("import device.core.fxp as f\nf.EXTRA = 5")
    assert mpy.run("import device.core.fxp as f\nprint(hasattr(f, 'EXTRA'))", fresh=True) == "False\n"
