"""Kill the container writer at 50 seeded random moments: every frame flushed before the kill
is recovered, in order, byte for byte. Synchronised on data: the child reports each flushed
frame count on its stdout pipe; the parent kills after the count it chose."""

import os
import random
import signal
import subprocess
import sys

from protocol import container

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import sys
from protocol import container, staffheader
nrows, fpb = int(sys.argv[2]), int(sys.argv[3])
rows = [{"name": "r%d" % i, "unit": "deg", "lo": 0, "hi": 1} for i in range(nrows)]
w = container.Writer(sys.argv[1], staffheader.make(rows=rows, fps=30.0), frames_per_block=fpb)
out = sys.stdout
for k in range(1000000):
    w.write_frame([None if (k + i) % 11 == 0 else (k * 7 + i) % 256 for i in range(nrows)], t_ms=k)
    if w.frames_flushed == w.frames:
        out.write("%d\n" % w.frames_flushed)
        out.flush()
"""


def expected(k, nrows):
    return [None if (k + i) % 11 == 0 else (k * 7 + i) % 256 for i in range(nrows)]


def test_kill_writer_at_random_moments(tmp_path):
    rng = random.Random(5)
    env = dict(os.environ, PYTHONPATH=REPO)
    for trial in range(50):
        nrows = rng.choice([1, 18, 48])
        fpb = rng.choice([1, 1, 2, 5])
        target = rng.randint(0, 400)
        path = str(tmp_path / ("k%d.msr" % trial))
        p = subprocess.Popen([sys.executable, "-c", CHILD, path, str(nrows), str(fpb)],
                             stdout=subprocess.PIPE, env=env, cwd=REPO)
        flushed = 0
        for line in p.stdout:
            flushed = int(line)
            if flushed >= target:
                break
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        rec = container.read(path)
        assert rec.nframes >= flushed, (trial, rec.nframes, flushed)
        assert rec.bad_blocks == 0
        for k, (idx, t_ms, codes) in enumerate(rec.frames):
            assert idx == k and t_ms == k and codes == expected(k, nrows)
