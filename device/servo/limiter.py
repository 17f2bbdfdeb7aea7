"""The Limiter: whatever comes in (NaN, None, inf, absurd values, bad times), what goes out stays
inside every servo's limits and never moves faster than its velocity limit.

    lim = Limiter(robot.servos, start_deg=[s.home_deg for s in robot.servos], max_dt_s=0.1)
    out_deg = lim.step(targets_deg, dt_s)     # one list entry per servo; None/NaN = hold

Per servo and step: a non-finite target holds the last command; the target is clamped to
[lo_deg, hi_deg]; the step is bounded by max_vel_dps * dt (dt clamped to [0, max_dt_s], so a
pause in the stream cannot turn into a jump); with max_acc_dps2 > 0 the velocity changes by at
most max_acc * dt and slows down in time to stop at the target (v <= sqrt(2 a d)).
The guarantees (limits, velocity) hold for every input; acceleration is best effort.
"""

import math


class Limiter:
    def __init__(self, servos, start_deg=None, max_dt_s=0.1, vel_scale=1.0):
        self.servos = servos
        n = len(servos)
        self.max_dt_s = max_dt_s
        self.vel_scale = vel_scale
        self.pos = [0.0] * n
        self.vel = [0.0] * n
        start = start_deg if start_deg is not None else [s.home_deg for s in servos]
        for i in range(n):
            self.pos[i] = self._clamp(i, start[i] if _finite(start[i]) else servos[i].home_deg)
        self.clamped = 0
        self.rate_limited = 0
        self.invalid = 0

    def _clamp(self, i, v):
        s = self.servos[i]
        return s.lo_deg if v < s.lo_deg else s.hi_deg if v > s.hi_deg else v

    def step(self, targets_deg, dt_s, vel_limit_dps=None):
        if not _finite(dt_s) or dt_s < 0:
            dt_s = 0.0
        dt = min(dt_s, self.max_dt_s)
        out = []
        for i, s in enumerate(self.servos):
            t = targets_deg[i] if i < len(targets_deg) else None
            p = self.pos[i]
            if not _finite(t):
                if t is not None:
                    self.invalid += 1
                t = p
            c = self._clamp(i, float(t))
            if c != t:
                self.clamped += 1
            vmax = s.max_vel_dps * self.vel_scale
            if vel_limit_dps is not None:
                vmax = min(vmax, vel_limit_dps)
            d = c - p
            v = d / dt if dt > 0 else 0.0
            if s.max_acc_dps2 > 0 and dt > 0:
                a = s.max_acc_dps2
                # brake so as to stop at the target: |v| <= sqrt(2 a |d|)
                vstop = math.sqrt(2.0 * a * abs(d))
                v = max(-vstop, min(vstop, v))
                v = max(self.vel[i] - a * dt, min(self.vel[i] + a * dt, v))
            if v > vmax or v < -vmax:
                v = vmax if v > 0 else -vmax
            step = v * dt
            # never overshoot the target, never step more than vmax * dt
            if (d >= 0 and step > d) or (d <= 0 and step < d):
                step = d
            lim = vmax * dt
            step = lim if step > lim else -lim if step < -lim else step
            if step != d:
                self.rate_limited += 1          # the target was not reached this step
            q = self._clamp(i, p + step)
            self.vel[i] = (q - p) / dt if dt > 0 else 0.0
            self.pos[i] = q
            out.append(q)
        return out

    def at(self, targets_deg, tol_deg=0.5):
        """True when every finite target is reached (within tol) after clamping."""
        for i in range(len(self.servos)):
            t = targets_deg[i] if i < len(targets_deg) else None
            if _finite(t) and abs(self._clamp(i, t) - self.pos[i]) > tol_deg:
                return False
        return True


def _finite(v):
    try:
        return v is not None and math.isfinite(v)
    except TypeError:
        return False
