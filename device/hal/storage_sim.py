"""The power-cut twin of the unit's storage: what was synced survives a cut, what was only written
does not, and the write in flight is torn.

    from device.hal.storage_sim import SimStorage, PowerCut
    fs = SimStorage(seed=3, cut_after_writes=250)   # the power goes at the 250th write()
    fs.makedirs("rec"); fs.sync_dir("")                # the folder's name on the medium too
    f = fs.open_new("rec/rec-000001.msr")           # O_EXCL: FileExistsError if it exists
    f.write(b"..."); f.flush(); f.sync()            # flush: to the page cache; sync: to the card
    ...                                             # PowerCut raised at the seeded moment
    fs.after_cut()                                  # the medium as it is found after the reboot
    fs.read_bytes("rec/rec-000001.msr")

A real SD card under Linux keeps written data in the page cache until fsync (or writeback,
seconds later, at a moment nobody chooses) and programs it in pages: after a cut each file holds
what its last sync() put on the medium plus, at worst, a torn piece of the unsynced rest: the
pages writeback had started, the last of them partly programmed (its tail garbage). The twin
makes the worst seeded choice of that each time: of the unsynced bytes it keeps a seeded number
of whole pages, then a seeded part of the next page followed by random garbage up to the page
boundary (a torn page), and drops the rest. A file created but never synced (nor its folder)
has no directory entry after the cut, and a folder made but whose parent was never synced
(sync_dir) is gone with everything in it. Files closed and synced before the cut are untouched.
It also accepts the same calls as device/capture/storage.py's OsStorage: listdir, exists,
isdir, open_new, sync_dir, link_new, remove, read_bytes, makedirs. A name given by link_new is
on the medium once its folder is synced.

A sync takes time, as on the card (SdCardLatency: milliseconds typically, a seeded few in a
hundred take a tenth of a second to half a second, the card's own garbage collection). A
synchronous sync() charges its caller (sync_wait_s: the time a thread calling fsync would have
waited); sync_start(now_s) / sync_poll(now_s) are the same fsync run by another thread (the
recorder's, device/capture/syncer.py): it covers the bytes written when it started and they are
on the medium only when it completes, at now_s + its latency, on the clock attach_clock() gave.
A cut while it is under way finds them unsynced (written, not yet on the medium).

    fs = SimStorage(seed=3, sync_latency=SdCardLatency())
    f.sync_start(t_s)              # False while this file's previous sync is still under way
    f.sync_poll(t_s + 0.05)        # True once it has completed: its bytes are on the medium
"""

import random

PAGE = 4096


def _norm(d):
    d = d.rstrip("/") if d not in ("/",) else d
    return "" if d in (".", "./") else d


def _parent(p):
    return p.rsplit("/", 1)[0] if "/" in p.rstrip("/") else ""


class SdCardLatency:
    """The time of one fsync on a microSD card (seconds), drawn with the storage's seeded rng.

    A shape, not a fit to one card: an ext4 fsync of a few KB on a microSD card costs a few to
    tens of milliseconds (55 ms is a figure often quoted for fsync on ordinary media, antirez,
    "fsync() on a different thread", 2013), and SD cards stall for far longer while they erase
    and garbage-collect (seconds are reported on Linux, e.g. the "SD card write performance"
    question of the linux tag on Stack Overflow). Here: typical_s +- 50 % uniformly, and with
    probability spike_p a stall uniformly in spike_s. Zero-latency storage (SimStorage's
    sync_latency=None) is kinder than any card."""

    def __init__(self, typical_s=0.012, spike_p=0.03, spike_s=(0.1, 0.5)):
        self.typical_s, self.spike_p, self.spike_s = float(typical_s), float(spike_p), tuple(spike_s)

    def __call__(self, rng):
        if rng.random() < self.spike_p:
            return rng.uniform(*self.spike_s)
        return self.typical_s * rng.uniform(0.5, 1.5)


class PowerCut(Exception):
    """The power went: raised by the write (or sync) that was in flight."""


class _Medium:
    def __init__(self):
        self.synced = bytearray()     # on the card
        self.data = bytearray()       # what the process sees (page cache included)


class SimFile:
    """A file open for appending on the twin (binary): write, flush, sync, close."""

    def __init__(self, fs, path, medium):
        self.fs, self.path, self.m = fs, path, medium
        self._buf = bytearray()       # user-space buffer (lost at a cut even if written)
        self.closed = False
        self.pending = None           # the sync under way: (bytes it covers, done at s)
        self.async_syncs = 0          # syncs completed by sync_start / sync_poll

    def write(self, b):
        if self.closed:
            raise ValueError("write to a closed file")
        self.fs._tick(self, len(b))
        self._buf += b
        return len(b)

    def flush(self):
        self.m.data += self._buf
        self._buf = bytearray()

    def sync(self):
        """fsync: the file's data (and, as on ext4, its directory entry) on the medium; the
        caller waits for it (fs.sync_wait_s grows by its latency)."""
        self.flush()
        self.fs._tick(self, 0, sync=True)
        self.fs.sync_wait_s += self.fs._latency()
        self._on_medium(len(self.m.data))

    def _on_medium(self, n):
        self.m.synced = bytearray(self.m.data[:max(n, len(self.m.synced))])
        if self.fs.files.get(self.path) is self.m:
            self.fs.entries.add(self.path)     # ext4: fsync commits a new file's entry
        self.fs.syncs += 1

    def sync_start(self, now_s):
        """An fsync started at now_s by another thread: it covers what is written now and
        completes at now_s + its latency (sync_poll). False (nothing started) while the
        previous one is under way."""
        self._alive_poll(now_s)
        if self.pending is not None:
            return False
        self.flush()
        self.fs._tick(self, 0, sync=True)
        self.pending = (len(self.m.data), now_s + self.fs._latency())
        return True

    def sync_poll(self, now_s):
        """True when the sync under way has completed by now_s (its bytes are on the medium)."""
        was = self.pending is not None
        self._alive_poll(now_s)
        return was and self.pending is None

    def _alive_poll(self, now_s):
        self.fs._alive()
        self.fs.settle(now_s)

    def fileno(self):
        raise OSError("a simulated file has no descriptor (use sync())")

    def close(self):
        if not self.closed:
            self.flush()
            self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SimStorage:
    """Files in memory with a power cut at a seeded write (cut_after_writes; None: never)."""

    def __init__(self, seed=0, cut_after_writes=None, page=PAGE, sync_latency=None):
        self.rng = random.Random(seed)
        self.lat_rng = random.Random(seed * 7919 + 1)   # apart: latencies do not move the cut's draws
        # sync_latency: rng -> seconds of one fsync (SdCardLatency), None: instantaneous
        self.sync_latency = sync_latency
        self.sync_wait_s = 0.0         # time callers of the synchronous sync() waited
        self.clock = None              # () -> s: the time of a cut, for syncs under way
        self.open_files = []
        self.cut_after_writes = cut_after_writes
        self.page = page
        self.files = {}                # path -> medium (what the process sees)
        self.entries = set()           # paths whose directory entry is on the medium
        self.dirs = set()
        self.dir_entries = set()       # folders whose name is on the medium (parent synced)
        self.writes = 0
        self.syncs = 0
        self.cut = False
        self.in_flight = None          # (file, bytes) of the write the cut tore

    # -- the OsStorage calls ------------------------------------------------------------------
    def makedirs(self, d):
        """Create d and its missing parents; each new folder's name is on the medium only once
        its parent is synced (sync_dir(parent)), as on a real file system."""
        d = _norm(d)
        while d and d not in self.dirs:
            self.dirs.add(d)
            d = _parent(d)

    def exists(self, path):
        return path in self.files or path.rstrip("/") in self.dirs

    def isdir(self, d):
        return d.rstrip("/") in self.dirs

    def listdir(self, d):
        d = _norm(d)
        if d and d not in self.dirs:
            raise FileNotFoundError(2, "No such file or directory", d)
        return sorted(p[len(d) + 1:] if d else p for p in self.files if _parent(p) == d)

    def open_new(self, path):
        """Create path exclusively (O_CREAT | O_EXCL) for writing."""
        self._alive()
        if path in self.files:
            raise FileExistsError(17, "File exists", path)
        folder = _parent(path)
        if folder and folder not in self.dirs:
            raise FileNotFoundError(2, "No such file or directory", folder)
        m = self.files[path] = _Medium()
        f = SimFile(self, path, m)
        self.open_files.append(f)
        return f

    def sync_dir(self, d):
        """fsync of folder d: the names in it (files and folders) are on the medium."""
        self._alive()
        d = _norm(d)
        self.entries = set(p for p in self.entries if p in self.files)
        for p in self.files:
            if _parent(p) == d:
                self.entries.add(p)
        for sub in self.dirs:
            if _parent(sub) == d:
                self.dir_entries.add(sub)

    def link_new(self, src, dst):
        self._alive()
        if dst in self.files:
            raise FileExistsError(17, "File exists", dst)
        self.files[dst] = self.files[src]
        del self.files[src]

    def remove(self, path):
        self._alive()
        del self.files[path]

    def read_bytes(self, path):
        if path not in self.files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return bytes(self.files[path].data)

    # -- time -------------------------------------------------------------------------------
    def _latency(self):
        return 0.0 if self.sync_latency is None else float(self.sync_latency(self.lat_rng))

    def attach_clock(self, now):
        """now() -> seconds: the clock of the threads using this storage (syncs under way
        complete on it; a cut settles the ones done by its time)."""
        self.clock = now

    def settle(self, now_s):
        """Complete every sync under way whose time has come by now_s."""
        for f in self.open_files:
            if f.pending is not None and now_s >= f.pending[1]:
                f._on_medium(f.pending[0])
                f.pending = None
                f.async_syncs += 1

    # -- the cut ------------------------------------------------------------------------------
    def _alive(self):
        if self.cut:
            raise PowerCut("the power is off")

    def _tick(self, f, n, sync=False):
        self._alive()
        if not sync:
            self.writes += 1
        if self.cut_after_writes is not None and self.writes >= self.cut_after_writes and not sync:
            self.in_flight = (f, n)
            self.power_cut()
            raise PowerCut("power cut at write %d" % self.writes)

    def power_cut(self):
        """Now: every file falls back to what is on the medium plus a torn piece of the rest
        (syncs under way that had not completed by the clock's now: not on the medium)."""
        if self.clock is not None:
            self.settle(self.clock())
        for f in self.open_files:
            f.pending = None
        self.cut = True
        # a folder whose name (or a parent's) never reached the medium is gone, and its files
        self.dirs = set(d for d in self.dirs if self._durable(d))
        self.dir_entries = set(self.dirs)
        for path in list(self.files):
            m = self.files[path]
            if path not in self.entries or not (_parent(path) == "" or _parent(path) in self.dirs):
                del self.files[path]         # its name never reached the medium
                continue
            tail = bytes(m.data[len(m.synced):])
            keep = bytearray(m.synced)
            if tail:
                pages = (len(tail) + self.page - 1) // self.page
                whole = self.rng.randrange(pages)                 # pages writeback finished
                keep += tail[:whole * self.page]
                rest = tail[whole * self.page:(whole + 1) * self.page]
                part = self.rng.randrange(len(rest) + 1)           # the torn page: a prefix,
                keep += rest[:part]
                keep += bytes(self.rng.randrange(256) for _ in range(len(rest) - part))   # garbage
            m.data = keep
            m.synced = bytearray(keep)

    def _durable(self, d):
        while d:
            if d not in self.dir_entries:
                return False
            d = _parent(d)
        return True

    def after_cut(self):
        """Power back: the medium as found (the files as power_cut() left them)."""
        self.cut = False
        self.cut_after_writes = None
        return self
