"""The recorder's fsync takes the card's time and runs off the capture loop's path.

The storage twin charges every sync a microSD card's latency (device/hal/storage_sim.py
SdCardLatency); a sync run by another thread (device/capture/syncer.py) puts its bytes on the
medium only when it completes, so a cut meanwhile loses them. The capture loop never waits for
a sync, and a cut loses at most the writer's frames_at_risk (the policy's frames plus those
written while a sync was under way).
"""

import random

import pytest
from hypothesis import given, settings, strategies as st

from device.capture.storage import new_recording
from device.capture.syncer import ThreadSyncer, TwinSyncer, make_syncer
from device.hal.storage_sim import PowerCut, SdCardLatency, SimStorage
from protocol import container, staffheader

ROWS = [{"name": "r%d" % i, "unit": "deg", "lo": 0, "hi": 180} for i in range(5)]
HEADER = staffheader.make(rows=ROWS, fps=30.0, bits=8)


def _frame(k):
    return [(k * 5 + i) % 256 for i in range(len(ROWS))]


class _Clock:
    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t


def test_sd_card_latency_is_seeded_with_its_typical_time_and_stalls():
    lat = SdCardLatency(typical_s=0.012, spike_p=0.03, spike_s=(0.1, 0.5))
    a = [lat(random.Random(4)) for _ in range(3)]
    assert a == [lat(random.Random(4)) for _ in range(3)]
    rng = random.Random(9)
    xs = [lat(rng) for _ in range(4000)]
    stalls = [x for x in xs if x >= 0.1]
    assert all(0.006 <= x <= 0.018 for x in xs if x < 0.1)
    assert all(0.1 <= x <= 0.5 for x in stalls)
    assert 0.02 < len(stalls) / len(xs) < 0.04


def test_a_synchronous_sync_charges_its_caller_the_cards_time():
    fs = SimStorage(seed=1, sync_latency=lambda rng: 0.25)
    fs.makedirs("rec")
    f = fs.open_new("rec/a.msr")
    f.write(b"x" * 100)
    f.sync()
    f.sync()
    assert fs.sync_wait_s == pytest.approx(0.5)
    assert bytes(f.m.synced) == b"x" * 100


def test_a_background_sync_is_on_the_medium_only_when_it_completes():
    fs = SimStorage(seed=2, sync_latency=lambda rng: 0.2)
    fs.makedirs("rec")
    f = fs.open_new("rec/a.msr")
    f.write(b"a" * 10)
    assert f.sync_start(1.0)
    f.write(b"b" * 10)                         # after the start: not covered
    assert not f.sync_start(1.1)               # one under way
    assert not f.sync_poll(1.19) and f.m.synced == bytearray()
    assert f.sync_poll(1.2)
    assert bytes(f.m.synced) == b"a" * 10
    assert fs.sync_wait_s == 0.0               # nobody waited for it
    # a cut: a sync done by the clock's time is on the medium, one still under way is not
    for cut_s, whole in ((2.3, True), (2.1, False)):
        fs = SimStorage(seed=2, page=4, sync_latency=lambda rng: 0.2)
        fs.makedirs("rec")
        fs.sync_dir("")
        f = fs.open_new("rec/a.msr")
        f.write(b"a" * 8)
        f.sync()
        clock = _Clock()
        fs.attach_clock(clock.now)
        f.write(b"b" * 8)
        assert f.sync_start(2.0)
        clock.t = cut_s
        fs.power_cut()
        after = fs.after_cut().read_bytes("rec/a.msr")
        assert after[:8] == b"a" * 8
        assert (after == b"a" * 8 + b"b" * 8) == whole


def _record(fs, clock, frames, sync_s, fpb, step_s=1 / 30.0):
    path, f = new_recording("rec", container.encode_header(HEADER), fs, boot="0badc0de")
    w = container.Writer(f, HEADER, frames_per_block=fpb, sync_s=sync_s, write_header=False,
                         syncer=make_syncer(f, clock.now))
    at_risk = None
    try:
        for k in range(frames):
            at_risk = w.frames_at_risk + 1      # this frame included
            w.write_frame(_frame(k), t_ms=k * 33)
            clock.t += step_s
        w.close()
        return path, w, None
    except PowerCut:
        return path, w, at_risk


@settings(max_examples=40, deadline=None, derandomize=True)
@given(cut=st.integers(1, 200), seed=st.integers(0, 2 ** 16), latency_s=st.sampled_from([0.0, 0.05, 0.3, 0.9]),
       sync_s=st.sampled_from([0.2, 1.0]), fpb=st.sampled_from([1, 4]))
def test_a_cut_loses_at_most_the_frames_at_risk(cut, seed, latency_s, sync_s, fpb):
    fs = SimStorage(seed=seed, page=512, sync_latency=lambda rng: latency_s)
    fs.makedirs("rec")
    fs.sync_dir("")
    clock = _Clock()
    fs.cut_after_writes = fs.writes + 2 + cut
    path, w, at_risk = _record(fs, clock, 150, sync_s, fpb)
    fs.after_cut()
    rec = container.parse(fs.read_bytes(path), path)
    got = [fr[0] for fr in rec.frames]
    assert got[:w.frames_synced] == list(range(w.frames_synced))
    for k, t_ms, codes in rec.frames:
        assert codes == _frame(k)
    if at_risk is None:
        assert got == list(range(150))
        return
    assert w.frames - len(got) <= at_risk                # the frame in flight included
    # the next sync starts at a block once the policy's frames are flushed and the last one is
    # done; a cut just before it completes finds that many frames, plus those written under it
    lat = int(-(-latency_s * 30.0 // 1))
    bound = max(w.sync_frames, lat) + fpb - 1 + lat + 1
    assert w.max_frames_at_risk <= bound


def test_the_capture_loop_never_waits_for_the_card():
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    cfg = default_config(body="humanoid18", chip="mpu6050", estimator="orient")
    cfg["subject"]["max_s"] = 4.0
    cfg["sync_s"] = 0.5
    fs = SimStorage(seed=3, sync_latency=lambda rng: 0.4)        # every sync a 0.4 s stall
    loop = CaptureLoop(build_unit(cfg), record_dir="rec", storage=fs)
    waited = fs.sync_wait_s                                       # the header's (creation)
    assert isinstance(loop.writer.syncer, TwinSyncer)
    loop.run(frames=90)
    assert fs.sync_wait_s == waited                              # no frame waited for a sync
    assert loop.writer.syncer.syncs >= 3
    assert loop.stats.overruns == 0
    # at risk: the 15 frames of the policy, plus the 12 of a sync under way
    assert 15 < loop.writer.max_frames_at_risk <= 15 + 12 + 1
    loop.close()
    rec = container.parse(fs.read_bytes(loop.record_path))
    assert rec.nframes == 90


def test_thread_syncer_on_a_real_file(tmp_path):
    path, f = new_recording(str(tmp_path), container.encode_header(HEADER))
    s = make_syncer(f, None)
    assert isinstance(s, ThreadSyncer)
    w = container.Writer(f, HEADER, sync_s=0.1, write_header=False, syncer=s)
    for k in range(100):
        w.write_frame(_frame(k), t_ms=k * 33)
    w.close()                                  # waits for the sync under way, then the last one
    f.close()
    assert w.frames_synced == 100 and not s._thread.is_alive()
    assert container.read(path).nframes == 100


def test_thread_syncer_reports_a_failing_card():
    class Failing:
        def fileno(self):
            raise OSError("no descriptor")

        def sync(self):
            raise OSError(5, "Input/output error")

    s = ThreadSyncer(Failing())
    assert s.request(10)
    with pytest.raises(OSError, match="recording: fsync failed"):
        s.close()
    assert s.done() == 0


def test_an_in_memory_buffer_has_no_syncer():
    import io
    assert make_syncer(io.BytesIO(), None) is None


def test_a_sync_that_raises_anything_is_reported_and_never_stays_under_way():
    """A file object whose sync raises something other than OSError (a wrapper's bug, a
    PowerCut of the twin): the writer hears it as an OSError, close() does not hang waiting for
    a sync that died, and the next sync can start."""
    class Odd:
        calls = 0

        def fileno(self):
            raise OSError("no descriptor")

        def sync(self):
            Odd.calls += 1
            if Odd.calls == 1:
                raise RuntimeError("wrapper bug")

    s = ThreadSyncer(Odd())
    assert s.request(10)
    with pytest.raises(OSError, match="recording: fsync failed: wrapper bug"):
        s.close()
    assert s.request(20)                       # not stuck "under way"
    s.close()
    assert s.done() == 20 and s.syncs == 1


def test_a_thread_syncer_holds_no_thread_while_idle(tmp_path):
    """No thread outlives its sync: a writer (or capture loop) never closed leaks no thread."""
    import threading
    path, f = new_recording(str(tmp_path), container.encode_header(HEADER))
    n0 = threading.active_count()
    s = ThreadSyncer(f)
    assert threading.active_count() == n0
    assert s.request(3)
    s.close()
    assert threading.active_count() == n0 and s.done() == 3
    f.close()


def test_a_twin_sync_settled_by_another_files_call_is_still_reported():
    fs = SimStorage(seed=5, sync_latency=lambda rng: 0.1)
    fs.makedirs("rec")
    clock = _Clock()
    a, b = fs.open_new("rec/a.msr"), fs.open_new("rec/b.msr")
    sa, sb = TwinSyncer(a, clock.now), TwinSyncer(b, clock.now)
    a.write(b"x" * 10)
    assert sa.request(7)
    clock.t = 0.5
    b.write(b"y")
    assert sb.request(1)                       # settles a's sync (its time came at 0.1 s)
    assert a.pending is None and bytes(a.m.synced) == b"x" * 10
    assert sa.done() == 7 and sa.syncs == 1


def test_a_twin_close_charges_the_wait_for_the_sync_under_way():
    fs = SimStorage(seed=5, sync_latency=lambda rng: 0.3)
    fs.makedirs("rec")
    clock = _Clock()
    f = fs.open_new("rec/a.msr")
    s = TwinSyncer(f, clock.now)
    f.write(b"x" * 10)
    assert s.request(4)
    clock.t = 0.1
    s.close()
    assert s.done() == 4 and fs.sync_wait_s == pytest.approx(0.2)


def test_a_card_pulled_before_close_still_closes_the_unit_and_says_so():
    """The recording's last sync fails (OSError: the card is gone): close() raises it, after the
    recording's file, the raw log and the unit (its buses, its threads) are closed."""
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit

    class PulledCard:
        closed = pulled = False

        def write(self, b):
            return len(b)

        def flush(self):
            pass

        def fileno(self):
            raise OSError("no descriptor")

        def sync(self):
            if PulledCard.pulled:
                raise OSError(19, "No such device")

        def close(self):
            PulledCard.closed = True

    cfg = default_config(body="humanoid18", chip="mpu6050", estimator="orient")
    cfg["subject"]["max_s"] = 1.0
    unit = build_unit(cfg)
    shut = []
    unit_close = unit.close
    unit.close = lambda: (shut.append(1), unit_close())
    f = PulledCard()
    loop = CaptureLoop(unit, record=f, own_record=True, sync_s=0.0)     # (its header synced)
    loop.run(frames=3)
    PulledCard.pulled = True
    with pytest.raises(OSError, match="No such device"):
        loop.close()
    assert PulledCard.closed and shut == [1]


def test_a_thread_syncer_without_a_thread_to_start_syncs_in_place(tmp_path, monkeypatch):
    import threading
    path, f = new_recording(str(tmp_path), container.encode_header(HEADER))

    def refuse(self):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(threading.Thread, "start", refuse)
    s = ThreadSyncer(f)
    assert s.request(5) and s.done() == 5          # done in place, not "under way" for ever
    assert s.request(9) and s.done() == 9
    s.close()
    f.close()


def test_fsync_true_syncs_every_block_in_place_even_with_a_syncer():
    fs = SimStorage(seed=4, sync_latency=lambda rng: 0.1)
    fs.makedirs("rec")
    fs.sync_dir("")
    clock = _Clock()
    path, f = new_recording("rec", container.encode_header(HEADER), fs, boot="0badc0de")
    w = container.Writer(f, HEADER, fsync=True, write_header=False, syncer=make_syncer(f, clock.now))
    assert w.syncer is None
    for k in range(5):
        w.write_frame(_frame(k), t_ms=k * 33)
        assert w.frames_synced == k + 1 and w.frames_at_risk == 0
