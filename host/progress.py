"""Progress for long host work: a tqdm bar on a terminal, plain lines (or nothing) in a log.

    from host.progress import progress
    bar = progress(total=2000, desc="c3d IK", unit="frame")
    for k in range(2000):
        ...; bar.update(1)
    bar.close()

On a terminal it is tqdm (updates in place). When stderr is not a terminal (a pipe, a journal,
a file) a redrawn bar would flood the log with carriage returns, so it prints one plain line at
most every 10% of the total (or every `every_s` seconds without a total), and quiet=True prints
nothing at all.
"""

import sys
import time


class PlainProgress:
    """The tqdm calls the commands use (update, n, close, set_postfix_str) as plain lines."""

    def __init__(self, total=None, desc="", unit="it", file=None, every_s=10.0, quiet=False):
        self.total, self.desc, self.unit = total, desc, unit
        self.file = file or sys.stderr
        self.every_s, self.quiet = every_s, quiet
        self.n = 0
        self._next = 0.1
        self._t0 = self._last = time.monotonic()
        self.postfix = ""

    def _line(self):
        s = "%s: %d" % (self.desc or "progress", self.n)
        if self.total:
            s += "/%d %s (%d%%)" % (self.total, self.unit, int(100 * self.n / self.total))
        else:
            s += " %s" % self.unit
        s += " %.0f s" % (time.monotonic() - self._t0)
        return s + ((" " + self.postfix) if self.postfix else "")

    def update(self, k=1):
        self.n += k
        if self.quiet:
            return
        now = time.monotonic()
        if self.total:
            if self.n >= self._next * self.total:
                print(self._line(), file=self.file, flush=True)
                while self._next * self.total <= self.n:
                    self._next += 0.1
        elif now - self._last >= self.every_s:
            print(self._line(), file=self.file, flush=True)
            self._last = now

    def set_postfix_str(self, s, refresh=True):
        self.postfix = s

    def close(self):
        pass


def is_terminal(f=None):
    f = f or sys.stderr
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError):
        return False


def progress(total=None, desc="", unit="it", file=None, leave=False, quiet=False, **kw):
    """tqdm on a terminal, PlainProgress otherwise (quiet: no output at all)."""
    f = file or sys.stderr
    if is_terminal(f) and not quiet:
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, unit=unit, file=f, leave=leave, **kw)
    return PlainProgress(total, desc, unit, f, quiet=quiet)
