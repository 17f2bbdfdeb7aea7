"""Power cuts through the storage twin (device/hal/storage_sim.py): every frame up to the last sync
is recovered, the loss stays within the writer's sync policy, the recording is readable, the
earlier recordings are untouched, and names are never reused."""

import pytest
from hypothesis import given, settings, strategies as st

from device.capture.storage import create_recording, new_recording, next_counter
from device.hal.storage_sim import PowerCut, SimStorage
from protocol import container, staffheader

ROWS = [{"name": "r%d" % i, "unit": "deg", "lo": 0, "hi": 180} for i in range(7)]


def _header(fps=30.0):
    return staffheader.make(rows=ROWS, fps=fps, bits=8)


def _frame(k):
    return [(k * 7 + i) % 256 if (k + i) % 11 else None for i in range(len(ROWS))]


def _record(fs, folder, header, frames, fpb=1, sync_s=1.0):
    """Write frames into a new recording until done or the power goes: (path, writer, cut);
    path and writer None when the power went while the recording was being created."""
    try:
        path, f = new_recording(folder, container.encode_header(header), fs, boot="0badc0de")
    except PowerCut:
        return None, None, True
    w = container.Writer(f, header, frames_per_block=fpb, sync_s=sync_s, write_header=False)
    try:
        for k in range(frames):
            w.write_frame(_frame(k), t_ms=k * 33)
        w.close()
        f.close()
    except PowerCut:
        return path, w, True
    return path, w, False


def test_unsynced_data_is_lost_and_the_last_write_torn():
    fs = SimStorage(seed=1, page=64)
    fs.makedirs("d")
    fs.sync_dir("")                 # the folder exists from before (its name on the medium)
    f = fs.open_new("d/x")
    f.write(b"a" * 100)
    f.sync()
    f.write(b"b" * 300)
    f.flush()
    fs.cut_after_writes = fs.writes + 1
    with pytest.raises(PowerCut):
        f.write(b"c" * 10)
    fs.after_cut()
    data = fs.read_bytes("d/x")
    assert data[:100] == b"a" * 100                     # synced: kept
    assert 100 <= len(data) <= 400 and (len(data) - 100) % 64 == 0 or len(data) == 400
    assert b"c" not in data[:100]


def test_a_file_never_synced_has_no_name_after_the_cut():
    fs = SimStorage(seed=2)
    fs.makedirs("d")
    fs.sync_dir("")                 # the folder exists from before (its name on the medium)
    f = fs.open_new("d/y")
    f.write(b"hello")
    f.flush()
    fs.power_cut()
    fs.after_cut()
    assert not fs.exists("d/y")


def test_names_never_reuse_a_recording():
    fs = SimStorage()
    fs.makedirs("rec")
    fs.sync_dir("")
    head = container.encode_header(_header())
    p1, f1 = new_recording("rec", head, fs, boot="00000001")
    p2, f2 = new_recording("rec", head, fs, boot="00000001")
    assert p1 == "rec/rec-000001-00000001.msr" and p2 == "rec/rec-000002-00000001.msr"
    with pytest.raises(FileExistsError):
        create_recording(p1, head, fs)
    assert fs.read_bytes(p1) == head                    # untouched
    assert next_counter(["rec-000041-aaaaaaaa.msr", "x.msr", "rec-000007-bbbbbbbb.msr"]) == 42


def test_os_storage_refuses_an_existing_recording(tmp_path):
    p = str(tmp_path / "a.msr")
    head = container.encode_header(_header())
    create_recording(p, head).close()
    with open(p, "rb") as f:
        before = f.read()
    with pytest.raises(FileExistsError):
        create_recording(p, head)
    with open(p, "rb") as f:
        assert f.read() == before
    path, f = new_recording(str(tmp_path / "recs"), head)
    f.close()
    assert container.read(path).nframes == 0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(cut=st.integers(1, 260), seed=st.integers(0, 2 ** 16), fpb=st.sampled_from([1, 3, 8]),
       sync_s=st.sampled_from([0.1, 0.5, 1.0]), fps=st.sampled_from([30.0, 100.0]))
def test_power_cut_recovers_every_synced_frame(cut, seed, fpb, sync_s, fps):
    fs = SimStorage(seed=seed, page=512)
    header = _header(fps)
    # an earlier recording, closed
    p0, _, cut0 = _record(fs, "rec", header, 40)
    assert not cut0
    before = fs.read_bytes(p0)
    fs.cut_after_writes = fs.writes + cut
    path, w, was_cut = _record(fs, "rec", header, 200, fpb=fpb, sync_s=sync_s)
    fs.after_cut()
    assert fs.read_bytes(p0) == before                  # earlier recordings untouched
    assert container.parse(before).nframes == 40
    if path is None:
        # the cut came before the header was on the medium: no new name, nothing half-made
        assert fs.listdir("rec") == [p0.split("/")[-1]]
        return
    bound = w.loss_bound_frames
    assert bound == w.sync_frames + fpb - 1
    assert w.sync_frames == max(1, -(-int(round(sync_s * fps * 1000)) // 1000))
    rec = container.parse(fs.read_bytes(path), path)   # readable: the header is always there
    got = [f[0] for f in rec.frames]
    # every frame up to the last sync, in order, with its codes
    assert got[:w.frames_synced] == list(range(w.frames_synced))
    for k, t_ms, codes in rec.frames:
        assert codes == _frame(k) and t_ms == k * 33
    assert set(got) <= set(range(w.frames))
    if was_cut:
        assert w.frames - len(got) <= bound
    else:
        assert len(got) == 200


def test_capture_loop_records_through_the_twin_and_syncs_on_its_policy():
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    cfg = default_config(body="human", estimator="orient")
    cfg["subject"]["max_s"] = 3.0
    cfg["sync_s"] = 0.5
    fs = SimStorage(seed=5)
    loop = CaptureLoop(build_unit(cfg), record_dir="recs", storage=fs)
    assert loop.writer.sync_frames == 15 and loop.writer.loss_bound_frames == 15
    fs.cut_after_writes = fs.writes + 50
    with pytest.raises(PowerCut):
        loop.run(frames=90)
    fs.after_cut()
    rec = container.parse(fs.read_bytes(loop.record_path))
    assert rec.nframes >= 45 and loop.writer.frames - rec.nframes <= 15
    assert [f[0] for f in rec.frames] == list(range(rec.nframes))
    # the next capture gets the next name
    loop2 = CaptureLoop(build_unit(cfg), record_dir="recs", storage=fs)
    assert loop2.record_path.split("/")[-1].startswith("rec-000002-")


def test_systemd_unit_names_recordings_without_a_clock():
    import os
    import shlex
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "device", "capture", "motionstaff-capture.service")
    text = open(here).read()
    start = [ln for ln in text.splitlines() if ln.startswith("ExecStart=")]
    assert len(start) == 1 and "date" not in start[0]
    argv = shlex.split(start[0][len("ExecStart="):])
    assert "--record-dir" in argv and "--record" not in argv and "--sync-s" in argv
    from host.cli import build_parser
    args = build_parser(only="capture").parse_args(argv[1:])
    assert args.record_dir == "/home/pi/recordings" and args.sync_s == 1.0
