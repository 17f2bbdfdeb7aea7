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
The servo bus (servo_port: the driver's ReconnectingPort) the same way: a bus that fails (the
servos' USB adapter unplugged) is one line on stderr and tried again every reopen_s, the loop
going on (the link still read, the failsafe's timeout still running); reopened, one line and
the servos set up again (torque, watchdog, profile) before the next command.
"""

import sys
import time

from device.servo.transport import reopening


class FollowLoop:
    def __init__(self, open_link, end, clock=None, sleep=None, tick_s=0.005, reopen_s=0.5,
                 read_max=4096, servo_port=None, notify=None):
        self.end = end
        # the servo bus's reconnecting port (the driver's, device/servo/transport.py), watched
        # every turn: lost and reopened each say one line (notify: stderr)
        self.servo_port = servo_port
        self.notify = notify or (lambda line: print(line, file=sys.stderr, flush=True))
        self._servo_seen = (servo_port.disconnects, servo_port.reconnects) if servo_port else None
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.tick_s = tick_s
        self.read_max = read_max
        # the project's reconnecting port (device/servo/transport.py): a port that fails is
        # closed and opened again at most every reopen_s (the first open's OSError: the
        # caller's one-line error)
        self.link = reopening(open_link(), open_link, "the link", retry_s=reopen_s, clock=self.clock)
        self._stop = False
        self._io = {"bytes_in": 0, "bytes_out": 0, "turns": 0}

    @property
    def stats(self):
        """bytes_in, bytes_out, turns, link_errors (ports lost), reopens, reopen_failures."""
        rp = self.link
        out = dict(self._io, link_errors=rp.disconnects, reopens=rp.reconnects,
                   reopen_failures=rp.failures)
        sp = self.servo_port
        if sp is not None:
            out.update(servo_bus_lost=sp.disconnects, servo_bus_reopened=sp.reconnects,
                       servo_bus_reopen_failures=sp.failures)
        return out

    def stop(self):
        self._stop = True

    def turn(self):
        """One turn of the loop (see the module's docstring)."""
        try:
            self._turn()
        finally:
            self._watch_servo_bus()

    def _watch_servo_bus(self):
        """A servo bus lost (a write or read that failed: the driver's port closed it) is said
        once and opened again every reopen_s, tried here while nothing writes to it; once it
        is back the player sets the servos up again before its next command (Player.restart:
        torque on, profile, watchdog: a power-cycled servo, or one whose watchdog tripped while
        the bus was gone, takes no goal until then)."""
        sp = self.servo_port
        if sp is None:
            return
        sp.ensure()
        lost, back = self._servo_seen
        if sp.disconnects > lost:
            self.notify("motionstaff follow: servo bus %s lost; reopening it every %g s"
                        % (sp.url(), sp.retry_s))
        if sp.reconnects > back:
            pl = self.end.bridge.player
            if pl is not None:
                pl.restart()
            self.notify("motionstaff follow: servo bus %s reopened; the servos are set up again "
                        "(torque, watchdog, profile)" % sp.url())
        self._servo_seen = (sp.disconnects, sp.reconnects)

    def _turn(self):
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
