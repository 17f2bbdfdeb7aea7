"""The recorder's fsync, off the capture loop's path: another thread waits for the card.

    from device.capture.syncer import make_syncer
    s = make_syncer(f, clock_now)        # f: the recording's file (OsFile, SimFile, a real file)
    w = container.Writer(f, header, sync_s=1.0, write_header=False, syncer=s)
    ...                                  # w.write_frame(...): a due sync is requested, not waited for
    w.close()                            # the last sync waits (and s.close() ends the thread)

An fsync on a microSD card takes milliseconds, and now and then a tenth of a second to
seconds (the card erases and garbage-collects; device/hal/storage_sim.SdCardLatency). Called
from the 30 Hz capture loop it would stall the frame it falls in: the loop reads 22 IMUs in
~22 ms of its 33 ms, and a 100 ms sync costs three frames. So the Writer only asks for a sync
(request: True when one starts, False while the last is still under way) and learns when one
has completed (done: the frames it covered are on the medium). What a power cut can lose is
what was written since the start of the last completed sync: the sync policy's frames plus
those written while a sync was under way (Writer.frames_at_risk, the bound it reports).

ThreadSyncer: a real file (os.fsync on its descriptor, which releases the GIL) on one worker
thread. TwinSyncer: the power-cut twin's file, whose sync_start / sync_poll complete on the
loop's clock after the card's latency, deterministically.
"""

import os
import threading


class ThreadSyncer:
    """fsync on a worker thread. request(n) starts one (covering the first n frames, already
    flushed to the OS) unless one is under way; done() is the frames covered by the last one
    completed; close() waits for the one under way and ends the thread. An fsync error is
    kept and raised (OSError) by the next request() or done()."""

    def __init__(self, f):
        self.f = f
        self._cv = threading.Condition()
        self._want = None          # frames covered by the sync asked for (None: none asked)
        self._busy = False
        self._done = 0
        self._error = None
        self._stop = False
        self.syncs = 0
        self._thread = threading.Thread(target=self._run, name="recorder-fsync", daemon=True)
        self._thread.start()

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

    def _run(self):
        while True:
            with self._cv:
                while self._want is None and not self._stop:
                    self._cv.wait()
                if self._want is None:
                    return
                n = self._want
            err = None
            try:
                self._fsync()
            except (OSError, ValueError) as e:
                err = e
            with self._cv:
                self._want = None
                self._busy = False
                if err is None:
                    self._done = max(self._done, n)
                    self.syncs += 1
                else:
                    self._error = err
                self._cv.notify_all()

    def _raise(self):
        if self._error is not None:
            e, self._error = self._error, None
            raise OSError("recording: fsync failed: %s" % e)

    def request(self, frames):
        with self._cv:
            self._raise()
            if self._busy:
                return False
            self._busy = True
            self._want = int(frames)
            self._cv.notify_all()
            return True

    def done(self):
        with self._cv:
            self._raise()
            return self._done

    def close(self):
        """Wait for the sync under way (if any), then end the thread."""
        with self._cv:
            while self._busy:
                self._cv.wait()
            self._stop = True
            self._cv.notify_all()
        self._thread.join()
        with self._cv:
            self._raise()


class TwinSyncer:
    """The power-cut twin's file (sync_start / sync_poll) on the loop's clock."""

    def __init__(self, f, now):
        self.f, self.now = f, now
        self._covering = 0         # frames the sync under way covers
        self._done = 0
        self.syncs = 0
        fs = getattr(f, "fs", None)
        if fs is not None and hasattr(fs, "attach_clock"):
            fs.attach_clock(now)

    def request(self, frames):
        if self.f.sync_start(self.now()):
            self._covering = int(frames)
            return True
        return False

    def done(self):
        if self.f.sync_poll(self.now()):
            self._done = max(self._done, self._covering)
            self.syncs += 1
        return self._done

    def close(self):
        """The sync under way completes (the caller waits until its time on the clock)."""
        p = getattr(self.f, "pending", None)
        if p is not None:
            if self.f.sync_poll(max(self.now(), p[1])):
                self._done = max(self._done, self._covering)
                self.syncs += 1


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
