"""The recorder's fsync, off the capture loop's path: another thread waits for the card.

    from device.capture.syncer import make_syncer
    s = make_syncer(f, clock_now)        # f: the recording's file (OsFile, SimFile, a real file)
    w = container.Writer(f, header, sync_s=1.0, write_header=False, syncer=s)
    ...                                  # w.write_frame(...): a due sync is requested, not waited for
    w.close()                            # waits for the sync under way, then the last one

An fsync on a microSD card takes milliseconds, and now and then a tenth of a second to
seconds (the card erases and garbage-collects; device/hal/storage_sim.SdCardLatency). Called
from the 30 Hz capture loop it would stall the frame it falls in: the loop reads 22 IMUs in
~22 ms of its 33 ms, and a 100 ms sync costs three frames. So the Writer only asks for a sync
(request: True when one starts, False while the last is still under way) and learns when one
has completed (done: the frames it covered are on the medium). What a power cut can lose is
what was written since the start of the last completed sync: the sync policy's frames plus
those written while a sync was under way (Writer.frames_at_risk, the bound it reports).

ThreadSyncer: a real file (os.fsync on its descriptor, which releases the GIL) on a thread
started for each sync (it ends with its sync). TwinSyncer: the power-cut twin's file, whose
sync_start / sync_poll complete on the loop's clock after the card's latency, deterministically.
"""

import os
import threading


class ThreadSyncer:
    """fsync on another thread. request(n) starts one (covering the first n frames, already
    flushed to the OS) on a thread of its own unless one is under way; done() is the frames
    covered by the last one completed; close() waits for the one under way. Whatever the sync
    raises (OSError: the card is gone; anything else a file object raises) is kept and raised
    (OSError) by the next request(), done() or close(): a failed sync never leaves one "under
    way" for ever. No thread outlives its sync, so a writer never closed leaks none (nor holds
    its file open from one)."""

    def __init__(self, f):
        self.f = f
        self._lock = threading.Lock()
        self._thread = None        # the thread of the sync under way (or of the last one)
        self._busy = False
        self._done = 0
        self._error = None
        self.syncs = 0

    def _fsync(self):
        fileno = getattr(self.f, "fileno", None)
        try:
            fd = fileno() if fileno is not None else None
        except (OSError, ValueError):
            fd = None
        if fd is not None:
            os.fsync(fd)
        else:
            self.f.sync()

    def _run(self, n):
        err = None
        try:
            self._fsync()
        except Exception as e:     # noqa: BLE001 - kept, raised to the writer as an OSError
            err = e
        with self._lock:
            self._busy = False
            if err is None:
                self._done = max(self._done, n)
                self.syncs += 1
            else:
                self._error = err

    def _raise(self):
        if self._error is not None:
            e, self._error = self._error, None
            raise OSError("recording: fsync failed: %s" % (e,))

    def request(self, frames):
        with self._lock:
            self._raise()
            if self._busy:
                return False
            self._busy = True
            t = self._thread = threading.Thread(target=self._run, args=(int(frames),),
                                                name="recorder-fsync", daemon=True)
        try:
            t.start()
        except RuntimeError:
            # no thread to be had (the process is at its limit): this sync waits, as before
            self._thread = None
            self._run(int(frames))
        return True

    def done(self):
        with self._lock:
            self._raise()
            return self._done

    def close(self):
        """Wait for the sync under way (if any)."""
        t = self._thread
        if t is not None:
            t.join()
        with self._lock:
            self._raise()


class TwinSyncer:
    """The power-cut twin's file (sync_start / sync_poll) on the loop's clock. A completion is
    read from the file's count of completed syncs, so one settled by another call on the same
    storage (another file's sync, a cut's settle) is still reported."""

    def __init__(self, f, now):
        self.f, self.now = f, now
        self._covering = 0         # frames the sync under way covers
        self._done = 0
        self._seen = getattr(f, "async_syncs", 0)
        self.syncs = 0
        fs = getattr(f, "fs", None)
        if fs is not None and hasattr(fs, "attach_clock"):
            fs.attach_clock(now)

    def _collect(self, covering):
        # the sync that covered `covering` frames has completed (the file counted it)
        if self.f.async_syncs > self._seen:
            self._seen = self.f.async_syncs
            self._done = max(self._done, covering)
            self.syncs += 1

    def request(self, frames):
        before = self._covering
        started = self.f.sync_start(self.now())
        self._collect(before)              # sync_start settles the last one when its time came
        if started:
            self._covering = int(frames)
        return started

    def done(self):
        self.f.sync_poll(self.now())
        self._collect(self._covering)
        return self._done

    def close(self):
        """The sync under way completes; the caller waits until its time on the clock (charged
        to the storage's sync_wait_s, as a thread blocked in close would be)."""
        p = getattr(self.f, "pending", None)
        if p is not None:
            now = self.now()
            fs = getattr(self.f, "fs", None)
            if fs is not None and p[1] > now:
                fs.sync_wait_s += p[1] - now
            self.f.sync_poll(max(now, p[1]))
            self._collect(self._covering)


def make_syncer(f, now):
    """TwinSyncer for the storage twin's files, ThreadSyncer for a real file (one with a
    descriptor or a sync()), None for anything else (an in-memory buffer has no medium)."""
    if hasattr(f, "sync_start") and hasattr(f, "sync_poll"):
        return TwinSyncer(f, now)
    try:
        f.fileno()
        return ThreadSyncer(f)
    except (AttributeError, OSError, ValueError):
        return ThreadSyncer(f) if hasattr(f, "sync") else None
