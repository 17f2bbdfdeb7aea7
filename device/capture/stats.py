"""Timing statistics of the capture loop: period jitter, time per stage, missed deadlines, latency.

    from device.capture.stats import TimingStats
    st = TimingStats(period_s=1/30, stages=("read", "estimate", "encode", "record", "output"))
    st.frame(start_s, deadline_s, {"read": 0.001, ...}, latency_s)    # once per frame
    st.missed(3)                      # frames skipped because the loop fell behind
    print(st.table()); st.summary()   # dict of numbers (ms), at the end and on request

Times are measured with time.perf_counter around each stage, in virtual-time mode too (so the
benchmark sees the real compute cost); "busy" is their sum (the unit's work), "cpu" the thread's
CPU time of it (time.thread_time: what other processes on the machine do not inflate), "bus" the
frame's bus time (waited, not computed); a frame whose work plus bus time exceeds its period
counts as an overrun (it misses its deadline in real time; the loop then skips frames, counted
as skipped).
"""

import math


class TimingStats:
    def __init__(self, period_s, stages):
        self.period_s = period_s
        self.stages = tuple(stages)
        self.stage_s = {s: [] for s in self.stages}
        self.busy_s = []
        self.bus_s = []           # bus time per frame (the slowest bus; waited, not CPU)
        self.cpu_s = []           # thread CPU time of the unit's work per frame (time.thread_time)
        self.simulate_s = []      # simulator time per frame (not part of busy)
        self.late_s = []
        self.latency_s = []
        self.starts = []
        self.frames = 0
        self.skipped = 0
        self.overruns = 0

    def frame(self, start_s, deadline_s, stage_s, latency_s, bus_s=0.0, cpu_s=None, overrun=None):
        """latency_s: the frame's work from its start to its outputs (bus time included);
        overrun: the frame ended after the next deadline (None: busy + bus_s > the period)."""
        self.frames += 1
        self.bus_s.append(bus_s)
        if cpu_s is not None:
            self.cpu_s.append(cpu_s)
        self.starts.append(start_s)
        self.late_s.append(start_s - deadline_s)
        busy = 0.0
        for s in self.stages:
            v = stage_s.get(s, 0.0)
            self.stage_s[s].append(v)
            busy += v
        self.busy_s.append(busy)
        self.latency_s.append(latency_s)
        if overrun is None:
            overrun = max(busy + bus_s, latency_s) > self.period_s
        if overrun:
            self.overruns += 1

    def missed(self, n=1):
        self.skipped += n

    @staticmethod
    def _q(xs, p):
        if not xs:
            return float("nan")
        s = sorted(xs)
        return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]

    def summary(self):
        """Numbers in milliseconds (and counts)."""
        ms = 1000.0
        out = {"frames": self.frames, "skipped": self.skipped, "overruns": self.overruns,
               "period_ms": self.period_s * ms}
        if len(self.starts) > 1:
            per = [b - a for a, b in zip(self.starts, self.starts[1:])]
            mean = sum(per) / len(per)
            out["period_mean_ms"] = mean * ms
            out["period_jitter_ms"] = math.sqrt(sum((p - mean) ** 2 for p in per) / len(per)) * ms
            out["late_max_ms"] = max(self.late_s) * ms
        for s in self.stages:
            xs = self.stage_s[s]
            out["%s_mean_ms" % s] = (sum(xs) / len(xs) * ms) if xs else float("nan")
            out["%s_p99_ms" % s] = self._q(xs, 0.99) * ms
        if self.simulate_s:
            out["simulate_mean_ms"] = sum(self.simulate_s) / len(self.simulate_s) * ms
            out["simulate_p99_ms"] = self._q(self.simulate_s, 0.99) * ms
        for name, xs in (("bus", self.bus_s), ("cpu", self.cpu_s)):
            if xs:
                out["%s_mean_ms" % name] = sum(xs) / len(xs) * ms
                out["%s_p99_ms" % name] = self._q(xs, 0.99) * ms
                out["%s_max_ms" % name] = max(xs) * ms
        if self.busy_s:
            out["busy_mean_ms"] = sum(self.busy_s) / len(self.busy_s) * ms
            out["busy_p99_ms"] = self._q(self.busy_s, 0.99) * ms
            out["busy_max_ms"] = max(self.busy_s) * ms
            out["spare_mean_pct"] = 100.0 * (1 - out["busy_mean_ms"] / (self.period_s * ms))
            out["latency_mean_ms"] = sum(self.latency_s) / len(self.latency_s) * ms
            out["latency_p99_ms"] = self._q(self.latency_s, 0.99) * ms
        return out

    def table(self):
        s = self.summary()
        lines = ["%-18s %10s %10s" % ("stage", "mean ms", "p99 ms")]
        extra = tuple(n for n, xs in (("cpu", self.cpu_s), ("bus", self.bus_s)) if xs and any(xs))
        for st in self.stages + ("busy",) + extra + ("latency",) + (("simulate",) if self.simulate_s else ()):
            lines.append("%-18s %10.3f %10.3f" % (st, s.get("%s_mean_ms" % st, float("nan")),
                                                 s.get("%s_p99_ms" % st, float("nan"))))
        lines.append("frames %d, skipped %d, overruns %d, period %.3f ms, spare %.1f%%"
                     % (s["frames"], s["skipped"], s["overruns"], s["period_ms"],
                        s.get("spare_mean_pct", float("nan"))))
        if "period_jitter_ms" in s:
            lines.append("period mean %.4f ms, jitter (sd) %.4f ms, latest start %.3f ms after deadline"
                         % (s["period_mean_ms"], s["period_jitter_ms"], s["late_max_ms"]))
        return "\n".join(lines)
