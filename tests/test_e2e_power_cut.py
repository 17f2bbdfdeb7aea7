"""Power cut while recording: the capture process (the simulated unit running the CaptureLoop and
recording the crash-safe container) is killed with SIGKILL at 50 seeded random moments; every
frame it had written before the kill is recovered, byte for byte, in order.

tests/test_container_kill.py kills a bare container writer; this kills the whole capture
process (sensors, estimator, encoder, recorder): tools/robust.py power_cut, synchronised on
data (the child reports each flushed frame on a pipe), never on sleeps."""

import os

import pytest

from tools import robust


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_capture_killed_at_50_random_moments_keeps_every_written_frame(tmp_path):
    r = robust.power_cut(str(tmp_path), trials=50, seed=8)
    assert r["trials"] == 50 and r["frames_written"] >= 50
    assert r["written_lost"] == 0 and r["written_differ"] == 0, r
    assert r["not_a_prefix"] == 0, r                   # what is recovered is a clean prefix
    assert r["frames_recovered"] >= r["frames_written"]
