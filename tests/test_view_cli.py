"""`motionstaff view` on the command line: serves on 127.0.0.1 until stopped; bad input exits 2."""

import threading
import urllib.request

from host.cli import main
from host.commands import view


class Args:
    def __init__(self, staffs, port=0):
        self.staffs, self.port, self.no_browser = staffs, port, True


def test_view_serves_until_stopped(shared_data, capsys):
    stop = threading.Event()
    seen = {}
    real_start = view.Viewer.start

    def start(self):
        out = real_start(self)
        seen["url"] = self.url
        seen["bodies"] = urllib.request.urlopen(self.url + "bodies.json", timeout=10).read()
        seen["page"] = urllib.request.urlopen(self.url, timeout=10).read()
        stop.set()
        return out

    view.Viewer.start = start
    try:
        rc = view.run(Args([str(shared_data / "bvh" / "131_03.bvh")]), stop_event=stop)
    finally:
        view.Viewer.start = real_start
    assert rc == 0
    assert seen["url"].startswith("http://127.0.0.1:")
    assert b"/body/0.json" in seen["bodies"] and b"viewer.js" in seen["page"]
    assert "Ctrl-C" in capsys.readouterr().out


def test_view_bad_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "x.png"
    bad.write_bytes(b"not a png")
    assert main(["view", str(bad), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.png" in err
