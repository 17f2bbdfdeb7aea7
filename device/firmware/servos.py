"""PWM servo outputs: calibration, limits, velocity limits and failsafe actions, in integers.

    bank = ServoBank(config["servos"], machine)          # machine: the board's module (or the sim)
    bank.map_rows(header)                                # row names/ranges -> per-servo linear maps
    bank.set_targets(codes, missing, nrows)              # one frame of codes
    bank.tick(now_ms)                                    # move towards the targets (velocity limit)

Each servo (a dict of the receiver config, see config.py) turns a staff code into a pulse width:
joint_deg = scale * (lo + code * (hi - lo) / top) + offset_deg;  us = neutral_us + direction *
us_per_deg * joint_deg. At header time that is folded into pulse_ns = a_ns + bi * code + (bf * code >> 14),
so a frame costs integer operations only (no float, no allocation). Pulses are clamped to
[min_us, max_us] always, and move at most max_vel_dps * us_per_deg per second (ramping from
home_deg at the first frame). 50 Hz PWM via machine.PWM(...).duty_ns(); release = duty 0.
"""

HOLD = "hold"
RELEASE = "release"
HOME = "home"
MAX_DT_MS = 100


def _ns(us):
    return int(us * 1000 + 0.5) if us >= 0 else -int(-us * 1000 + 0.5)


class ServoBank:
    """The PWM servos of a receiver; counters: limited (clamped targets), moves."""

    def __init__(self, servos, machine, freq_hz=50):
        n = len(servos)
        self.n = n
        self.cfg = servos
        self.pwm = []
        self.min_ns = [0] * n
        self.max_ns = [0] * n
        self.home_ns = [0] * n
        self.vel_ns_per_ms = [0] * n
        self.row = [-1] * n          # staff row index driving each servo (-1: none)
        self.a_ns = [0] * n
        self.b = [0] * n             # integer ns per code
        self.shift = [0] * n         # fraction of ns per code, Q14
        self.target_ns = [0] * n
        self.cur_ns = [0] * n
        self.out_ns = [0] * n        # what the PWM was last given (0 = released)
        self.active = False
        # every servo at its target and its PWM told so: tick() has nothing to do. On the rp2
        # port the loop over 18 servos costs ~0.7 ms a poll (a Pico polls about every 3 ms idle)
        self.settled = False
        self.limited = 0
        self.last_ms = None
        for i in range(n):
            s = servos[i]
            k = s["us_per_deg"] * s.get("direction", 1)
            self.min_ns[i] = _ns(s["min_us"])
            self.max_ns[i] = _ns(s["max_us"])
            self.home_ns[i] = self._clamp(i, _ns(s["neutral_us"] + k * s.get("home_deg", 0.0)))
            self.vel_ns_per_ms[i] = max(1, int(abs(s["us_per_deg"]) * s.get("max_vel_dps", 180.0)))
            self.cur_ns[i] = self.home_ns[i]
            self.target_ns[i] = self.home_ns[i]
            self.pwm.append(machine.PWM(machine.Pin(s["pin"]), freq=freq_hz, duty_ns=0))

    def _clamp(self, i, v):
        if v < self.min_ns[i]:
            return self.min_ns[i]
        if v > self.max_ns[i]:
            return self.max_ns[i]
        return v

    def map_rows(self, rows, bits):
        """rows: [{"name", "lo", "hi"}] of the staff header; fold calibration into a_ns, b, shift."""
        index = {}
        for r in range(len(rows)):
            index[rows[r]["name"]] = r
        top = (1 << bits) - 1
        for i in range(self.n):
            s = self.cfg[i]
            want = s.get("row")
            r = index.get(want, -1) if isinstance(want, str) else (want if want is not None else -1)
            if r < 0 or r >= len(rows):
                self.row[i] = -1
                continue
            lo = float(rows[r]["lo"])
            hi = float(rows[r]["hi"])
            scale = s.get("scale", 1.0)
            k = s["us_per_deg"] * s.get("direction", 1)
            # pulse_ns(code) = a + B code with a = 1000 (neutral + k (scale lo + offset)),
            # B = 1000 k scale (hi - lo) / top
            a = 1000.0 * (s["neutral_us"] + k * (scale * lo + s.get("offset_deg", 0.0)))
            bcoef = 1000.0 * k * scale * (hi - lo) / top
            # B = bi + bf / 2^14 (bi = floor(B), 0 <= bf <= 2^14): bf * code < 2^30 for 16-bit
            # codes, so a frame needs small ints only; error <= code / 2^15 ns (2 ns at 16 bits)
            bi = int(bcoef // 1)
            bf = int((bcoef - bi) * 16384 + 0.5)
            self.a_ns[i] = int(a + 0.5) if a >= 0 else -int(-a + 0.5)
            self.b[i] = bi
            self.shift[i] = bf
            self.row[i] = r

    def set_targets(self, codes, missing, nrows):
        """One frame: each mapped servo's target from its row's code (missing rows hold)."""
        row = self.row
        a_ns = self.a_ns
        b = self.b
        shift = self.shift
        lo_ns = self.min_ns
        hi_ns = self.max_ns
        target = self.target_ns
        limited = 0
        for i in range(self.n):
            r = row[i]
            if r < 0 or r >= nrows or missing[r]:
                continue
            code = codes[r]
            # pulse_ns = a + bi code + bf code / 2^14, the fraction rounded half up
            v = a_ns[i] + b[i] * code + ((shift[i] * code + 8192) >> 14)
            # clamped to [min_ns, max_ns]
            if v < lo_ns[i]:
                v = lo_ns[i]
                limited += 1
            elif v > hi_ns[i]:
                v = hi_ns[i]
                limited += 1
            target[i] = v
        self.limited += limited
        self.active = True
        self.settled = False

    def hold(self):
        """Failsafe hold: stop where the servos are."""
        self.settled = False
        for i in range(self.n):
            self.target_ns[i] = self.cur_ns[i]

    def go_home(self):
        self.settled = False
        for i in range(self.n):
            self.target_ns[i] = self.home_ns[i]

    def release(self):
        """Failsafe release: no pulses (servos go limp); the next frame ramps from where they were."""
        self.settled = False
        for i in range(self.n):
            self.pwm[i].duty_ns(0)
            self.out_ns[i] = 0
        self.active = False

    def tick(self, now_ms, ticks_diff=None):
        """Move every active servo towards its target, at most vel * dt (dt clamped to 100 ms)."""
        last = self.last_ms
        self.last_ms = now_ms
        if not self.active or self.settled:
            return
        if last is None:
            dt = 0
        else:
            dt = ticks_diff(now_ms, last) if ticks_diff is not None else now_ms - last
            if dt < 0:
                dt = 0
            elif dt > MAX_DT_MS:
                dt = MAX_DT_MS
        moving = False
        cur_ns = self.cur_ns
        target = self.target_ns
        vel = self.vel_ns_per_ms
        lo_ns = self.min_ns
        hi_ns = self.max_ns
        out = self.out_ns
        pwm = self.pwm
        for i in range(self.n):
            cur = cur_ns[i]
            t = target[i]
            d = t - cur
            lim = vel[i] * dt
            if d > lim:
                d = lim
            elif d < -lim:
                d = -lim
            cur += d
            # clamped to [min_ns, max_ns]
            if cur < lo_ns[i]:
                cur = lo_ns[i]
            elif cur > hi_ns[i]:
                cur = hi_ns[i]
            cur_ns[i] = cur
            if out[i] != cur:
                pwm[i].duty_ns(cur)
                out[i] = cur
            if cur != t:
                moving = True
        self.settled = not moving
