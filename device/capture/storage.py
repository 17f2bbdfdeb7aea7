"""Where recordings go: new files only (never truncated, never reused), names without a clock.

    from device.capture.storage import create_recording, new_recording
    head = container.encode_header(header)
    path, f = new_recording("/home/pi/recordings", head)    # rec-000042-3f9c1a2b.msr
    f = create_recording("rec.msr", head)                   # FileExistsError if it exists
    w = container.Writer(f, header, sync_s=1.0, write_header=False)   # f.sync() on its policy

A Raspberry Pi has no real-time clock: after a power cut it may boot with the clock of its last
shutdown (fake-hwclock) or of 1970 until NTP answers, so a name made of the date can repeat and
`open(name, "wb")` would truncate the earlier recording. A name here is a counter one above the
highest in the folder and the boot id (/proc/sys/kernel/random/boot_id, new at every boot), the
file created with O_CREAT | O_EXCL (a name that exists is never opened: the next counter is
tried) and the folder synced, so the new name survives a cut (a folder it creates is synced
into its parent too). The storage object is OsStorage
(the real file system) or the power-cut twin device/hal/storage_sim.SimStorage, same calls.
"""

import os
import re

PATTERN = re.compile(r"^rec-(\d{6,})-([0-9a-f]{8})\.msr$")


class OsFile:
    """A binary file open for appending, with sync() = os.fsync."""

    def __init__(self, fd, path):
        self.f = os.fdopen(fd, "wb")
        self.path = path

    def write(self, b):
        return self.f.write(b)

    def flush(self):
        self.f.flush()

    def sync(self):
        self.f.flush()
        os.fsync(self.f.fileno())

    def fileno(self):
        return self.f.fileno()

    def close(self):
        self.f.close()


class OsStorage:
    def makedirs(self, d):
        os.makedirs(d, exist_ok=True)

    def exists(self, path):
        return os.path.exists(path)

    def isdir(self, d):
        return os.path.isdir(d)

    def listdir(self, d):
        return sorted(os.listdir(d))

    def open_new(self, path):
        """Create path exclusively: FileExistsError if anything is there (never truncated)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
        return OsFile(fd, path)

    def sync_dir(self, d):
        try:
            fd = os.open(d or ".", os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def read_bytes(self, path):
        with open(path, "rb") as f:
            return f.read()

    def link_new(self, src, dst):
        """Give src's file the name dst (FileExistsError if dst exists) and drop the name src."""
        try:
            os.link(src, dst)
        except FileExistsError:
            raise
        except OSError:                      # no hard links (FAT): rename, dst checked first
            if os.path.exists(dst):
                raise FileExistsError(17, "File exists", dst)
            os.rename(src, dst)
            return
        os.unlink(src)

    def remove(self, path):
        os.unlink(path)


def boot_id():
    """8 hex digits of this boot's id (Linux), else of a random number kept for the process."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8].lower()
    except OSError:
        global _BOOT
        if _BOOT is None:
            _BOOT = "%08x" % int.from_bytes(os.urandom(4), "big")
        return _BOOT


_BOOT = None


def next_counter(names):
    """One above the highest counter among recording names (1 for none)."""
    top = 0
    for n in names:
        m = PATTERN.match(n)
        if m:
            top = max(top, int(m.group(1)))
    return top + 1


def create_recording(path, head, storage=None):
    """A new recording at path holding head (the file header bytes) on the medium, open for
    appending; FileExistsError if path exists (it is never opened)."""
    fs = storage or OsStorage()
    if fs.exists(path):
        raise FileExistsError(17, "File exists (a recording is never replaced)", path)
    folder = path.rsplit("/", 1)[0] if "/" in path else "."
    tmp = "%s.%d.new" % (path, os.getpid())
    f = fs.open_new(tmp)
    try:
        f.write(head)
        f.sync()
        fs.link_new(tmp, path)
    except BaseException:
        f.close()
        try:
            fs.remove(tmp)
        except Exception:
            pass
        raise
    fs.sync_dir(folder)
    return f


def new_recording(folder, head, storage=None, boot=None, tries=1000):
    """(path, file) of a new recording in folder (created if missing), rec-<counter>-<boot>.msr,
    its header head on the medium (create_recording)."""
    fs = storage or OsStorage()
    folder = folder.rstrip("/") or "/"
    if not fs.isdir(folder):
        # the new folders' names must reach the medium too: fsync each new folder's parent
        # (a cut before that loses the folder and every recording in it)
        made = []
        d = folder
        while d and d not in ("/", ".") and not fs.isdir(d):
            made.append(d)
            d = d.rsplit("/", 1)[0] if "/" in d.rstrip("/") else ""
        fs.makedirs(folder)
        for d in reversed(made):
            parent = d.rsplit("/", 1)[0] if "/" in d else "."
            fs.sync_dir(parent or "/")
    b = boot or boot_id()
    k = next_counter(fs.listdir(folder))
    for _ in range(tries):
        path = "%s/rec-%06d-%s.msr" % (folder, k, b)
        try:
            return path, create_recording(path, head, fs)
        except FileExistsError:
            k += 1
    raise OSError(17, "no free recording name after %d tries" % tries, folder)
