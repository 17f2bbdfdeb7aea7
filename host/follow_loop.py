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

from device.servo.transport import ReconnectingPort


class FollowLoop:
    def __init__(self, open_link, end, clock=None, sleep=None, tick_s=0.005, reopen_s=0.5,
                 read_max=4096):
        self.end = end
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.tick_s = tick_s
        self.read_max = read_max
        first = [open_link()]                   # OSError: the caller's one-line error

        def opener(url, baud, timeout_s):
            return first.pop() if first else open_link()
        # the project's reconnecting port (device/servo/transport.py): a port that fails is
        # closed and opened again at most every reopen_s
        self.link = ReconnectingPort("the link", retry_s=reopen_s, clock=self.clock, opener=opener)
        self._stop = False
        self._io = {"bytes_in": 0, "bytes_out": 0, "turns": 0}

    @property
    def stats(self):
        """bytes_in, bytes_out, turns, link_errors (ports lost), reopens, reopen_failures."""
        rp = self.link
        return dict(self._io, link_errors=rp.disconnects, reopens=rp.reconnects,
                    reopen_failures=rp.failures)

    def stop(self):
        self._stop = True

    def turn(self):
        """One turn of the loop (see the module's docstring)."""
        self._io["turns"] += 1
        rp = self.link
        lost = rp.disconnects
        n = rp.in_waiting                       # (0 and an attempt to reopen while it is gone)
        data = rp.read(min(self.read_max, n) if n else 1) if rp.port is not None else b""
        if rp.disconnects > lost:
            self._lost()
            return
        if rp.port is None:
            self.sleep(self.tick_s)             # no port to wait on: the tick is the wait
            self.end.step(b"")                  # the failsafe's home move goes on
            return
        self._io["bytes_in"] += len(data)
        reply = self.end.step(data)
        if reply:
            try:
                rp.write(reply)
                self._io["bytes_out"] += len(reply)
            except OSError:
                self._lost()

    def _lost(self):
        pl = self.end.bridge.player
        if pl is not None and not pl.in_failsafe:
            pl.failsafe()                       # at once: no frames will come on this port
            self.end.bridge.counts["failsafe_engaged"] += 1

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
        self.link.close()
