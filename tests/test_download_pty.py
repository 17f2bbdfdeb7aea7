"""`download` end to end over a pseudo-terminal against the unit's server in a thread: listing,
CRC-checked chunks, corruption and dropped packets, a pulled cable and Ctrl-C with resume,
conversion to PNG, and names from the unit that would escape the folder refused."""

import os
import random
import threading

import pytest

serial = pytest.importorskip("serial", reason="pyserial is not installed")

from device.download import DownloadServer  # noqa: E402
from host.bvh import read_bvh  # noqa: E402
from host.cli import main  # noqa: E402
from host.demo.fetch import PtyMasterLink  # noqa: E402
from host.download import Client, DownloadError, open_link, target_path  # noqa: E402
from host.stafffile import read_staff  # noqa: E402
from protocol import container  # noqa: E402
from protocol import download as dl  # noqa: E402

CLIPS = {"rec0001.msr": ("131_03.bvh", 0, 700), "rec0002.msr": ("05_20-daz.bvh", 100, 600),
         "rec0003.msr": ("dataset-1_walk_normal_001.bvh", 0, 195)}


class FdLink(PtyMasterLink):
    """The unit's end of the pty with faults injected into what the unit sends: corrupted bytes,
    dropped packets, a pulled cable."""

    def __init__(self, fd, seed=0, corrupt=0.0, drop=0.0):
        PtyMasterLink.__init__(self, fd)
        self.rng = random.Random(seed)
        self.corrupt, self.drop = corrupt, drop
        self.cut_after = None          # stop sending after this many more bytes
        self.sent = 0
        self.corrupted = self.dropped = 0

    def write(self, data):
        data = bytearray(data)
        if self.cut_after is not None:
            if self.cut_after <= 0:
                return
            self.cut_after -= len(data)
        if self.drop and self.rng.random() < self.drop:
            self.dropped += 1
            return
        if self.corrupt and self.rng.random() < self.corrupt:
            i = self.rng.randrange(len(data) - 1)
            data[i] ^= 1 << self.rng.randrange(8)
            self.corrupted += 1
        try:
            PtyMasterLink.write(self, data)
        except OSError:                # the host stopped reading: like a cable nobody listens on
            return
        self.sent += len(data)


@pytest.fixture(scope="module")
def unit_dir(tmp_path_factory, shared_data):
    d = tmp_path_factory.mktemp("unit")
    for name, (clip, a, b) in CLIPS.items():
        st = read_bvh(str(shared_data / "bvh" / clip))
        codes, miss = st.codes()
        w = container.Writer(str(d / name), st.header() | {"frames": 0}, frames_per_block=4)
        for f in range(a, b):
            w.write_frame([None if miss[r, f] else int(codes[r, f]) for r in range(st.nrows)], t_ms=f)
        w.close()
    (d / "notes.txt").write_text("not a recording")
    return d


class Unit:
    def __init__(self, folder, server=None, **faults):
        self.master, self.slave = os.openpty()
        self.port = os.ttyname(self.slave)
        self.link = FdLink(self.master, **faults)
        self.server = server or DownloadServer(str(folder))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.server.serve, args=(self.link, self.stop), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)
        os.close(self.master)
        os.close(self.slave)


def test_list_and_download_all_through_corruption(unit_dir, tmp_path):
    out = tmp_path / "dl"
    out.mkdir()
    with Unit(unit_dir, seed=11, corrupt=0.05, drop=0.02) as u, open_link(u.port, timeout_s=0.05) as link:
        c = Client(link, timeout_s=0.3)
        entries = c.listing()
        assert [e[0] for e in entries] == sorted(CLIPS)
        for name, size, crc in entries:
            assert size == os.path.getsize(unit_dir / name)
            path = c.fetch(name, str(out), size, crc)
            assert open(path, "rb").read() == (unit_dir / name).read_bytes()
        assert u.link.corrupted > 0 and u.link.dropped > 0
        assert c.dec.dropped() > 0 and c.rerequests > 0
    for name, (clip, a, b) in CLIPS.items():
        st = read_staff(str(out / name.replace(".msr", ".png")))
        assert st.frames == b - a
        src = container.read(str(unit_dir / name))
        assert st.names == [r["name"] for r in src.header["rows"]]
    assert not list(out.glob("*.part"))


def test_pulled_cable_then_resume(unit_dir, tmp_path):
    name = "rec0001.msr"
    size = os.path.getsize(unit_dir / name)
    with Unit(unit_dir, seed=3) as u, open_link(u.port, timeout_s=0.05) as link:
        c = Client(link, timeout_s=1.0, retries=1)
        (n, s, crc), = [e for e in c.listing() if e[0] == name]
        u.link.cut_after = size // 3                # the cable comes out a third of the way in
        with pytest.raises(DownloadError, match="stopped answering"):
            c.fetch(name, str(tmp_path), s, crc)
        have = os.path.getsize(tmp_path / (name + ".part"))
        assert 0 < have < size
        assert not (tmp_path / name).exists()
        u.link.cut_after = None                      # plugged back in
        served_before = u.server.served_bytes
        path = Client(link, timeout_s=1.0).fetch(name, str(tmp_path), s, crc)
        resumed = u.server.served_bytes - served_before
        assert resumed <= size - have + dl.WINDOW and resumed < size
    assert open(path, "rb").read() == (unit_dir / name).read_bytes()
    assert (tmp_path / "rec0001.png").exists()


def test_ctrl_c_then_resume_with_a_new_client(unit_dir, tmp_path):
    name = "rec0002.msr"
    with Unit(unit_dir, seed=5) as u, open_link(u.port, timeout_s=0.05) as link:
        c = Client(link, timeout_s=0.3)
        entry = [e for e in c.listing() if e[0] == name][0]

        def interrupt(have, size):
            if have > size // 2:
                raise KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt):
            c.fetch(name, str(tmp_path), entry[1], entry[2], progress=interrupt)
        have = os.path.getsize(tmp_path / (name + ".part"))
        assert entry[1] // 2 < have < entry[1]
    with Unit(unit_dir, seed=6) as u, open_link(u.port, timeout_s=0.05) as link:
        path = Client(link, timeout_s=1.0).fetch(name, str(tmp_path))
        assert u.server.served_bytes <= entry[1] - have + dl.WINDOW
    assert open(path, "rb").read() == (unit_dir / name).read_bytes()


def test_corrupted_part_file_is_caught_by_the_file_crc(unit_dir, tmp_path):
    name = "rec0003.msr"
    data = (unit_dir / name).read_bytes()
    bad = bytearray(data[:len(data) // 2])
    bad[100] ^= 0xFF                                # a .part damaged on disk
    (tmp_path / (name + ".part")).write_bytes(bytes(bad))
    with Unit(unit_dir, seed=7) as u, open_link(u.port, timeout_s=0.05) as link:
        path = Client(link, timeout_s=0.3).fetch(name, str(tmp_path))
    assert open(path, "rb").read() == data


class EvilServer(DownloadServer):
    NAMES = ["../evil.msr", "sub/x.msr", "/tmp/abs.msr", ".hidden.msr", "rec0003.msr"]

    def handle(self, p):
        if p.name == "DOWNLOAD_LIST":
            real = {n: (s, c) for n, s, c in super().entries()}
            s, c = real["rec0003.msr"]
            text = "".join("%s\t%d\t%08x\n" % (n, s, c) for n in self.NAMES).encode()
            return dl.reply_chunks(self.enc, p.fields["req"], 0, text, True)
        return super().handle(p)


def test_names_that_escape_the_folder_are_refused(unit_dir, tmp_path, capsys):
    out = tmp_path / "in"
    out.mkdir()
    with Unit(unit_dir, server=EvilServer(str(unit_dir)), seed=8) as u:
        rc = main(["download", "--port", u.port, "--all", "-o", str(out), "--timeout", "0.3"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("refused") == 4 and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["rec0003.msr", "rec0003.png"]
    assert not (tmp_path / "evil.msr").exists() and not os.path.exists("/tmp/abs.msr")
    for bad in EvilServer.NAMES[:4]:
        with pytest.raises(DownloadError, match="refused"):
            target_path(str(out), bad)


def test_cli_list_errors_and_unknown(unit_dir, tmp_path, capsys):
    with Unit(unit_dir, seed=9) as u:
        assert main(["download", "--port", u.port, "--list"]) == 0
        listing = capsys.readouterr().out
        assert all(n in listing for n in CLIPS) and "notes.txt" not in listing
        assert main(["download", "--port", u.port, "nope.msr", "-o", str(tmp_path)]) == 2
        assert "no such recording" in capsys.readouterr().err
        with open_link(u.port, timeout_s=0.05) as link:
            c = Client(link, timeout_s=0.3)
            with pytest.raises(DownloadError, match="no recording"):
                c.fetch("ghost.msr", str(tmp_path), 10, 0)
    assert main(["download", "--port", str(tmp_path / "no-such-tty"), "--list"]) == 2
    assert "cannot open" in capsys.readouterr().err
