"""The unit's side of the download: serves the recordings of a folder over the serial link.

    from device.download import DownloadServer
    srv = DownloadServer("/var/lib/motionstaff/recordings")
    for reply in srv.handle_bytes(data_from_link):     # wire bytes in -> wire bytes out
        link.write(reply)
    srv.serve(link, stop)                              # or: a loop over a serial.Serial-like link

Answers DOWNLOAD_LIST with the listing (protocol/download.py: name, size, whole-file CRC-32)
and DOWNLOAD_GET with CRC-checked chunks of the asked range, read straight from the file (a
recording still being written is served as far as it is on disk). Only plain names of files
directly in the folder are served; anything else is "not found". Errors are DOWNLOAD_ERROR
replies, never exceptions: no request can stop the server.
"""

import os

from protocol import crc as _crc
from protocol import download as dl
from protocol import packets as pk

EXTENSIONS = (".msr",)


def file_crc32(path, block=65536):
    c = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(block)
            if not b:
                return c
            c = _crc.crc32(b, c)          # chained, like binascii.crc32


class DownloadServer:
    def __init__(self, folder, extensions=EXTENSIONS, clock_us=None):
        self.folder = folder
        self.extensions = tuple(extensions)
        self.enc = pk.Encoder(clock_us=clock_us)
        self.dec = pk.Decoder()
        self.served_bytes = 0
        self.requests = 0
        self._crc_cache = {}

    def entries(self):
        out = []
        for name in sorted(os.listdir(self.folder)):
            path = os.path.join(self.folder, name)
            if not name.endswith(self.extensions) or not dl.safe_name(name) or not os.path.isfile(path):
                continue
            st = os.stat(path)
            key = (name, st.st_size, st.st_mtime)
            if key not in self._crc_cache:
                self._crc_cache[key] = file_crc32(path)
            out.append((name, st.st_size, self._crc_cache[key]))
        return out

    def handle(self, p):
        """Wire replies (list of bytes) to one delivered packet."""
        self.requests += 1
        req = p.fields.get("req", 0)
        try:
            if p.name == "DOWNLOAD_LIST":
                return dl.reply_chunks(self.enc, req, 0, dl.encode_listing(self.entries()), True)
            if p.name == "DOWNLOAD_GET":
                return self._get(req, p.fields["offset"], p.fields["length"], p.tail)
            if p.name in ("DOWNLOAD_REPLY", "DOWNLOAD_ERROR"):
                return [dl.error_reply(self.enc, req, pk.ERR_UNKNOWN_REQUEST, "not a request")]
            return []
        except OSError as e:
            return [dl.error_reply(self.enc, req, pk.ERR_IO, "I/O error: %s" % (e,))]

    def _get(self, req, offset, length, tail):
        try:
            name = bytes(tail).decode()
        except UnicodeError:
            name = ""
        path = os.path.join(self.folder, name)
        if not dl.safe_name(name) or not name.endswith(self.extensions) or not os.path.isfile(path):
            return [dl.error_reply(self.enc, req, pk.ERR_NOT_FOUND, "no recording %r" % name[:64])]
        size = os.path.getsize(path)
        if offset > size:
            return [dl.error_reply(self.enc, req, pk.ERR_BAD_RANGE, "offset %d beyond %d bytes" % (offset, size))]
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(min(length, size - offset))
        self.served_bytes += len(data)
        return dl.reply_chunks(self.enc, req, offset, data, True)

    def handle_bytes(self, data):
        out = []
        for p in self.dec.feed(data):
            out.extend(self.handle(p))
        return out

    def serve(self, link, stop=None):
        """Loop: read from link (pyserial-like: read(n) with a timeout, in_waiting), answer;
        until stop.is_set()."""
        while stop is None or not stop.is_set():
            data = link.read(1)
            if data and getattr(link, "in_waiting", 0):
                data += link.read(link.in_waiting)
            if not data:
                continue
            for reply in self.handle_bytes(data):
                link.write(reply)
