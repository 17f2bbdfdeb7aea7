"""The demo's download: the unit's DownloadServer on one end of a pty, host.download.Client on the other.

    from host.demo.fetch import fetch_over_pty
    info = fetch_over_pty("out/unit/recording.msr", "out/recording.msr")
    info["bytes"], info["rerequests"]

The unit's side serves the folder of the recording (device/download.py) from a thread reading
the pty's master; the host opens the slave path with pyserial (host/download.open_link), lists
the recordings, and fetches this one (chunked, CRC-checked, resumable) without converting it.
"""

import fcntl
import os
import select
import shutil
import struct
import termios
import threading
import tty


class PtyMasterLink:
    """The unit's end of a pty (its master fd) with the pyserial calls DownloadServer.serve uses:
    read(n, timeout_s), in_waiting, write(data)."""

    def __init__(self, fd):
        self.fd = fd

    def read(self, n, timeout_s=0.05):
        r, _, _ = select.select([self.fd], [], [], timeout_s)
        if not r:
            return b""
        try:
            return os.read(self.fd, n)
        except OSError:
            return b""

    @property
    def in_waiting(self):
        return struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0"))[0]

    def write(self, data):
        view = memoryview(bytes(data))
        while view:
            _, w, _ = select.select([], [self.fd], [], 5.0)
            if not w:
                raise OSError("download link: the host stopped reading")
            view = view[os.write(self.fd, view):]
        return len(data)


def fetch_over_pty(unit_path, host_path, timeout_s=1.0):
    from device.download import DownloadServer
    from host.download import Client, open_link
    folder, name = os.path.split(os.path.abspath(unit_path))
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    stop = threading.Event()
    server = DownloadServer(folder)
    th = threading.Thread(target=server.serve, args=(PtyMasterLink(master), stop), daemon=True)
    th.start()
    try:
        with open_link(os.ttyname(slave), timeout_s=0.05) as link:
            c = Client(link, timeout_s=timeout_s)
            entries = dict((n, (s, crc)) for n, s, crc in c.listing())
            size, crc = entries[name]
            dest = os.path.dirname(os.path.abspath(host_path))
            got = c.fetch(name, dest, size, crc, convert=False)
            if os.path.abspath(got) != os.path.abspath(host_path):
                shutil.move(got, host_path)
            return {"bytes": size, "crc32": "%08x" % crc, "rerequests": c.rerequests,
                    "listed": len(entries), "served_bytes": server.served_bytes}
    finally:
        stop.set()
        th.join(5.0)
        os.close(master)
        os.close(slave)
