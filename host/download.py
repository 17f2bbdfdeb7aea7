"""Download recordings from a capture unit over the serial link: chunked, CRC-checked, resumable.

    from host.download import Client, open_link
    with open_link("/dev/ttyACM0") as link:          # a pyserial port name or URL (loop://, ...)
        c = Client(link, timeout_s=2.0)
        for name, size, crc in c.listing(): ...
        c.fetch("rec0001.msr", "downloads/")        # -> downloads/rec0001.msr (+ .png staff)

A file arrives in DIR/NAME.part; every reply chunk is a CRC-32 checked packet written at its
offset; a missing or corrupted chunk (a gap in offsets) or a silence longer than timeout_s makes
the client ask again from the first byte it lacks. An interrupted download (cable pulled,
Ctrl-C) leaves the .part file; the next fetch resumes from its size. When all bytes are there
the whole-file CRC-32 from the listing is checked (a mismatch starts the file over), the .part
becomes NAME, and the container is turned into a PNG staff (NAME.png) with host.formats.
A name from the unit that is not a plain file name (protocol.download.safe_name) or that would
land outside DIR is refused with DownloadError before anything is written.
"""

import os

from device.download import file_crc32  # the unit computes the same CRC of its files
from protocol import download as dl
from protocol import packets as pk
from protocol.errors import FormatError


class DownloadError(FormatError):
    """The unit said no, went silent too long, or sent something that cannot be trusted."""


def open_link(port, baud=115200, timeout_s=0.2):
    """A pyserial port (a name like /dev/ttyUSB0, or a URL like loop://)."""
    import serial
    try:
        return serial.serial_for_url(port, baudrate=baud, timeout=timeout_s)
    except serial.SerialException as e:
        raise OSError("%s: cannot open the serial port (%s)" % (port, e)) from None


def target_path(directory, name):
    """DIR/name, or DownloadError if the unit's name could escape DIR."""
    if not dl.safe_name(name):
        raise DownloadError("refused the unit's recording name %r: not a plain file name" % (name,))
    root = os.path.realpath(directory)
    path = os.path.realpath(os.path.join(root, name))
    if os.path.dirname(path) != root:
        raise DownloadError("refused the unit's recording name %r: it would be written outside %s" % (name, directory))
    return path


class Client:
    def __init__(self, link, timeout_s=2.0, retries=20, clock_us=None):
        self.link = link
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.enc = pk.Encoder(clock_us=clock_us)
        self.dec = pk.Decoder()
        self.req = 0
        self.rerequests = 0
        self.bytes_received = 0

    # -- the exchange -----------------------------------------------------------------------
    def _next_req(self):
        self.req = (self.req + 1) & 0xFFFF
        return self.req

    def _replies(self, req):
        """Yield DOWNLOAD_REPLY/ERROR packets for request `req` until a silence of timeout_s."""
        import time
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            data = read_available(self.link)
            if not data:
                continue
            for p in self.dec.feed(data):
                if p.name in ("DOWNLOAD_REPLY", "DOWNLOAD_ERROR") and p.fields.get("req") == req:
                    deadline = time.monotonic() + self.timeout_s
                    yield p

    def _error(self, p, what):
        msg = p.tail.decode("utf-8", "replace")
        return DownloadError("%s: the unit says %s (code %d)" % (what, msg, p.fields["code"]))

    def listing(self):
        """[(name, size, crc32)] of the unit's recordings (unsafe names included: see fetch)."""
        for _ in range(self.retries):
            req = self._next_req()
            self.link.write(dl.list_request(self.enc, req))
            buf, want = bytearray(), 0
            for p in self._replies(req):
                if p.name == "DOWNLOAD_ERROR":
                    raise self._error(p, "list")
                if p.fields["offset"] != want:
                    break                          # a chunk went missing: ask again
                buf += p.tail
                want += len(p.tail)
                if len(buf) > dl.MAX_LISTING:
                    raise DownloadError("list: the unit's listing is larger than %d bytes" % dl.MAX_LISTING)
                if p.fields["flags"] & pk.FLAG_LAST:
                    return dl.decode_listing(bytes(buf))
            self.rerequests += 1
        raise DownloadError("list: no complete answer from the unit after %d tries" % self.retries)

    def fetch(self, name, directory, size=None, crc=None, progress=None, convert=True):
        """Download one recording into directory; returns the path (and writes NAME.png)."""
        path = target_path(directory, name)
        if size is None or crc is None:
            for n, s, c in self.listing():
                if n == name:
                    size, crc = s, c
                    break
            else:
                raise DownloadError("%s: the unit has no such recording" % name)
        part = path + ".part"
        have = os.path.getsize(part) if os.path.exists(part) else 0
        if have > size:
            os.remove(part)
            have = 0
        if progress is not None:
            progress(have, size)
        for attempt in range(2):
            with open(part, "r+b" if os.path.exists(part) else "wb") as f:
                have = self._fill(f, name, have, size, progress)
            if file_crc32(part) == crc:
                break
            os.remove(part)                        # corrupted on disk or a changed file: again
            have = 0
        else:
            raise DownloadError("%s: CRC-32 of the downloaded file does not match the unit's" % name)
        os.replace(part, path)
        if convert:
            to_png(path)
        return path

    def _fill(self, f, name, have, size, progress):
        tries = 0
        while have < size:
            if tries > self.retries:
                raise DownloadError("%s: the unit stopped answering at byte %d of %d" % (name, have, size))
            req = self._next_req()
            self.link.write(dl.get_request(self.enc, req, name, have, min(dl.WINDOW, size - have)))
            got_any = False
            for p in self._replies(req):
                if p.name == "DOWNLOAD_ERROR":
                    raise self._error(p, name)
                off, data = p.fields["offset"], p.tail
                if off != have:
                    break                          # a chunk was lost: re-ask from `have`
                if off + len(data) > size:
                    raise DownloadError("%s: the unit sent more than the %d bytes it listed" % (name, size))
                f.seek(off)
                f.write(data)
                have += len(data)
                self.bytes_received += len(data)
                got_any = got_any or bool(data)
                if progress is not None:
                    progress(have, size)
                if p.fields["flags"] & pk.FLAG_LAST:
                    break
            f.flush()
            if got_any:
                tries = 0
            else:
                tries += 1
            if have < size:
                self.rerequests += 1
        return have


def read_available(link):
    """Bytes from a pyserial-like link: waits up to its timeout for one, then takes what is there."""
    data = link.read(1)
    if data:
        waiting = getattr(link, "in_waiting", 0)
        if waiting:
            data += link.read(waiting)
    return data


def to_png(path):
    """Turn a downloaded container into NAME.png next to it; returns the PNG's path."""
    from host.formats import read_motion, write_motion
    staff = read_motion(path)
    out = os.path.splitext(path)[0] + ".png"
    write_motion(out, staff)
    return out
