"""tools/check_micropython.py: the static check of the MicroPython part, and mpy-cross."""

import os

import pytest

from tools import check_micropython as cm

BAD = [
    ("x = f'{a}'\n", "f-string"),
    ("x = [*a, 1]\n", "*unpacking"),
    ("x = {**a}\n", "**unpacking"),
    ("match x:\n    case 1:\n        pass\n", "match"),
    ("def f(a, /, b):\n    pass\n", "positional-only"),
    ("import numpy as np\n", "numpy"),
    ("from dataclasses import dataclass\n", "dataclasses"),
    ("from typing import List\n", "typing"),
    ("import enum\n", "enum"),
    ("n = x.bit_length()\n", "bit_length"),
    ("import math\nr = math.isqrt(5)\n", "math.isqrt"),
    ("b = v.to_bytes(2, 'little', signed=True)\n", "signed"),
    ("v = int.from_bytes(b, 'little', True)\n", "signed"),
    ("import micropython\n@micropython.native\ndef f():\n    pass\n", "decorator"),
    ("import struct\nstruct.pack('HH', 1, 2)\n", "byte order"),
    ("import struct\nstruct.pack('<H H', 1, 2)\n", "spaces"),
    ("import struct\nS = struct.Struct('<H')\n", "Struct"),
    ("import serial\n", "serial"),
    ("import host.staff\n", "host.staff"),
]

GOOD = """
try:
    from typing import List
except ImportError:
    pass
import struct
from protocol import crc
x = [1, 2]
a, *rest = x
print('%d' % len(rest), struct.pack('<H', 3))
if (n := 3):
    pass
def f(*args, **kw):
    return g(*args, **kw)
"""


@pytest.mark.parametrize("src,needle", BAD)
def test_flags_what_micropython_lacks(src, needle):
    problems = cm.check_source(src, "bad.py", {"protocol", "protocol.crc"})
    assert problems, src
    assert any(needle in p for p in problems), problems


def test_accepts_what_micropython_has():
    assert cm.check_source(GOOD, "good.py", {"protocol", "protocol.crc"}) == []


def test_the_part_passes_and_compiles_with_mpy_cross():
    files = cm.part_files()
    assert "device/core/ekf_q.py" in files and "protocol/staffcodec.py" in files
    assert cm.check_files(files) == []


def test_mpy_cross_reports_errors(tmp_path):
    p = tmp_path / "broken.py"
    p.write_text("def f(:\n")
    assert cm.mpy_cross(str(p)) != ""
    ok = tmp_path / "ok.py"
    ok.write_text("x = 1\n")
    assert cm.mpy_cross(str(ok)) == ""


def test_command_line(capsys):
    assert cm.main([os.path.join(cm.REPO, "device", "core", "fxp.py")]) == 0
    assert "0 problems" in capsys.readouterr().out
