"""Deadline clocks for the capture loop: absolute deadlines (no drift), real or virtual time.

    from device.capture.clock import RealClock, VirtualClock
    clk = VirtualClock()          # tests, the demo, benchmarks: no sleeping, time jumps
    clk.sleep_until(0.5); clk.now()   # 0.5
    clk = RealClock()             # time.monotonic(); sleep_until(deadline) sleeps what is left

Frame k's deadline is t0 + k * period computed from k (never by adding periods), so rounding
never accumulates: over an hour at 30 Hz the 108000th deadline is exactly t0 + 3600 s.
"""

import time


class VirtualClock:
    realtime = False

    def __init__(self, t0=0.0):
        self.t = float(t0)

    def now(self):
        return self.t

    def sleep_until(self, t):
        if t > self.t:
            self.t = float(t)


class RealClock:
    realtime = True

    def __init__(self, monotonic=None, sleep=None):
        self._mono = monotonic or time.monotonic
        self._sleep = sleep or time.sleep

    def now(self):
        return self._mono()

    def sleep_until(self, t):
        left = t - self._mono()
        if left > 0:
            self._sleep(left)


def deadline(t0, k, period_s):
    """Frame k's absolute deadline."""
    return t0 + k * period_s
