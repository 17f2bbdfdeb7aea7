"""Power cut while recording: the capture process (the simulated unit running the CaptureLoop,
recording the crash-safe container) is killed with SIGKILL at 50 seeded random moments; every
frame it had written before the kill is recovered, byte for byte, in order.

tests/test_container_kill.py kills a bare container writer; this kills the whole capture
process (sensors, estimator, encoder, recorder). The child is forked after the imports, reports
each flushed frame (index and codes) on a pipe, and the parent kills it after a seeded number
of frames: synchronised on data, never on sleeps."""

import os
import random
import signal

import pytest

from host.demo.pipeline import default_clip
from protocol import container


def _child(path, wfd, seed):
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    cfg = default_config(seed=seed)
    clip = default_clip()
    cfg["subject"]["clip"] = clip
    loop = CaptureLoop(build_unit(cfg, clip_path=clip), record=path)
    out = os.fdopen(wfd, "w")

    def report(k, t_s, values, codes):
        if loop.writer.frames_flushed == loop.writer.frames:
            out.write("%d %s\n" % (k, ",".join("-" if c is None else str(c) for c in codes)))
            out.flush()
    loop.outputs.append(report)
    loop.run(frames=100000)


def _codes(text):
    return [None if c == "-" else int(c) for c in text.split(",")]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_capture_killed_at_50_random_moments_keeps_every_written_frame(tmp_path):
    rng = random.Random(8)
    totals = []
    for trial in range(50):
        path = str(tmp_path / ("cut%d.msr" % trial))
        target = rng.randint(0, 75)              # calibration (30 frames) and estimation both
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                             # the unit
            os.close(r)
            try:
                _child(path, w, trial)
            finally:
                os._exit(0)
        os.close(w)
        written = {}
        with os.fdopen(r) as f:
            for line in f:
                k, codes = line.split()
                written[int(k)] = _codes(codes)
                if int(k) >= target:
                    os.kill(pid, signal.SIGKILL)     # the power cut
                    break
        os.waitpid(pid, 0)
        assert len(written) == target + 1, trial
        rec = container.read(path)
        got = dict((k, list(c)) for k, _t, c in rec.frames)
        assert sorted(got) == list(range(len(got))), trial         # a clean prefix, in order
        for k, codes in written.items():
            assert got.get(k) == codes, (trial, k)
        totals.append(len(got) - len(written))
    assert len(totals) == 50
