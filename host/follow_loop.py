"""The robot's own computer on the live link: the capture unit's bytes into the robot end
(host/robot_link.py), its replies back, its balance loop and failsafe running between bytes.

    loop = FollowLoop(lambda: open_port("/dev/ttyAMA0", 115200, TICK_S), end, clock=time.monotonic)
    loop.run(duration_s=10.0)        # or frames=N; runs until then, loop.stop() or Ctrl-C
    loop.stats                       # bytes_in, bytes_out, turns, link_errors, reopens

A turn reads what the link holds (waiting at most the port's read timeout, the balance loop's
tick), hands it to end.step (decode, frames to the servos, the failsafe's timeout and the IMU
feedback between frames), and writes the replies (REQUESTs for the header) back: so the bridge
is polled at least once a tick whether bytes come or not. A link that fails (the unit's USB
serial unplugged, its cable pulled: an OSError from the port) puts the robot in its failsafe at
once, not only after the description's timeout; the port is closed and opened again every
reopen_s while the failsafe runs (one limited home step a turn), and the first frame that
arrives after it releases the failsafe as any frame does. An opener that fails at the start is
the caller's one-line error (nothing moved yet); one that fails while reopening is counted.
"""

import time


class FollowLoop:
    def __init__(self, open_link, end, clock=None, sleep=None, tick_s=0.005, reopen_s=0.5,
                 read_max=4096):
        self.open_link = open_link
        self.end = end
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.tick_s = tick_s
        self.reopen_s = reopen_s
        self.read_max = read_max
        self.link = open_link()                 # OSError: the caller's one-line error
        self._down_at = None                    # the clock when the link failed, while it is down
        self._stop = False
        self.stats = {"bytes_in": 0, "bytes_out": 0, "turns": 0, "link_errors": 0, "reopens": 0,
                      "reopen_failures": 0}

    def stop(self):
        self._stop = True

    def turn(self):
        """One turn of the loop (see the module's docstring)."""
        self.stats["turns"] += 1
        if self.link is None:
            self._reopen()
            if self.link is None:
                self.sleep(self.tick_s)         # no port to wait on: the tick is the wait
                self.end.step(b"")              # the failsafe's home move goes on
                return
        try:
            n = self.link.in_waiting
            data = self.link.read(min(self.read_max, n) if n else 1)
        except (OSError, ValueError) as e:      # (pyserial raises SerialException: an OSError)
            self._lost(e)
            return
        self.stats["bytes_in"] += len(data)
        reply = self.end.step(data)
        if reply:
            try:
                self.link.write(reply)
                self.stats["bytes_out"] += len(reply)
            except (OSError, ValueError) as e:
                self._lost(e)

    def _lost(self, error):
        self.stats["link_errors"] += 1
        self.last_error = str(error).splitlines()[0] if str(error) else error.__class__.__name__
        pl = self.end.bridge.player
        if pl is not None and not pl.in_failsafe:
            pl.failsafe()                       # at once: no frames will come on this port
            self.end.bridge.counts["failsafe_engaged"] += 1
        try:
            self.link.close()
        except (OSError, ValueError):
            pass
        self.link = None
        self._down_at = self.clock()

    def _reopen(self):
        if self.clock() - self._down_at < self.reopen_s:
            return
        self._down_at = self.clock()
        try:
            self.link = self.open_link()
        except (OSError, ValueError):
            self.stats["reopen_failures"] += 1
            return
        self.stats["reopens"] += 1
        self._down_at = None

    def run(self, duration_s=None, frames=None):
        """Turns until duration_s on the clock, frames received (acted on or superseded by a
        newer one in the same read), or stop()."""
        t0 = self.clock()
        counts = self.end.bridge.counts
        while not self._stop:
            if duration_s is not None and self.clock() - t0 >= duration_s:
                break
            if frames is not None and counts["frames"] + counts["superseded"] >= frames:
                break
            self.turn()

    def close(self):
        if self.link is not None:
            try:
                self.link.close()
            except (OSError, ValueError):
                pass
            self.link = None
