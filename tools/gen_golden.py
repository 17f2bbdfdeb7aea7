"""Write the golden vectors: CPython's outputs of tools/mpy/golden_cases.py, one JSON per case.

    python tools/gen_golden.py            # all cases -> tests/golden/<case>.json
    python tools/gen_golden.py fxp crc    # only these; --check compares instead of writing

tests/test_mpy_golden.py runs the same cases under the MicroPython WebAssembly port and compares
them bit for bit with these files; tests/test_mpy_golden.py also re-runs them on CPython, so a
change of behaviour shows up as a diff to review here. A case whose module does not exist yet
is not written.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GOLDEN_DIR = os.path.join(REPO, "tests", "golden")


def _cases():
    for p in (REPO, os.path.join(HERE, "mpy")):
        if p not in sys.path:
            sys.path.insert(0, p)
    import golden_cases

    return golden_cases


def compute(names=None):
    """{case: result} on this interpreter (absent modules dropped)."""
    res = _cases().run_all(names)
    return dict((k, v) for k, v in res.items() if v is not None and v != {})


def normalise(v):
    """JSON round trip, so tuples and lists compare equal."""
    return json.loads(json.dumps(v))


def path_of(name):
    return os.path.join(GOLDEN_DIR, "%s.json" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("-")] or None
    res = compute(names)
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    bad = 0
    for name in sorted(res):
        text = json.dumps(normalise(res[name]), indent=1, sort_keys=True) + "\n"
        p = path_of(name)
        if check:
            old = open(p).read() if os.path.isfile(p) else None
            if old != text:
                print("differs: %s" % os.path.relpath(p, REPO))
                bad += 1
        else:
            with open(p, "w") as f:
                f.write(text)
            print("wrote %s" % os.path.relpath(p, REPO))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
