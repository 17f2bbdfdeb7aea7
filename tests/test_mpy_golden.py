"""The MicroPython part gives bit-identical results on MicroPython (wasm port 1.27) and CPython.

tools/mpy/golden_cases.py runs under both; tests/golden/*.json hold CPython's outputs
(regenerate with `python tools/gen_golden.py` when a change is intended, and review the diff).
"""

import json
import os
import sys

import pytest

from tools import gen_golden

sys.path.insert(0, os.path.join(gen_golden.HERE, "mpy"))
import golden_cases  # noqa: E402

NAMES = [name for name, _ in golden_cases.CASES]


@pytest.fixture(scope="module")
def on_micropython(mpy):
    out = mpy.run("import json, golden_cases\nprint(json.dumps(golden_cases.run_all()))",
                  name="golden", fresh=True)
    return json.loads(out)


@pytest.fixture(scope="module")
def on_cpython():
    return dict((k, gen_golden.normalise(v)) for k, v in golden_cases.run_all().items())


@pytest.mark.parametrize("name", NAMES)
def test_micropython_bit_identical_to_cpython(name, on_micropython, on_cpython):
    if on_cpython[name] is None:
        pytest.skip("module for golden case %r is not written yet" % name)
    assert on_micropython[name] == on_cpython[name]


@pytest.mark.parametrize("name", NAMES)
def test_golden_files_match(name, on_cpython):
    path = gen_golden.path_of(name)
    if on_cpython[name] in (None, {}):
        pytest.skip("module for golden case %r is not written yet" % name)
    if not os.path.isfile(path):
        pytest.fail("%s missing: run python tools/gen_golden.py %s" % (path, name))
    with open(path) as f:
        want = json.load(f)
    assert on_cpython[name] == want, "behaviour changed: if intended, run tools/gen_golden.py %s" % name


def test_micropython_matches_golden_files(on_micropython):
    checked = 0
    for name in NAMES:
        path = gen_golden.path_of(name)
        if os.path.isfile(path) and on_micropython.get(name) not in (None, {}):
            with open(path) as f:
                assert on_micropython[name] == json.load(f), name
            checked += 1
    assert checked >= 4  # fxp, ekf_q, staffcodec, staffheader at least
