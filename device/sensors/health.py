"""A sensor's health on the unit: bounded retries, stale marking and rejoin, never an exception.

    from device.sensors.health import SensorSlot
    slot = SensorSlot("l_thigh_imu", MPU6050(bus), retries=2)
    reading = slot.sample()      # the driver's read(), or None while the sensor is stale
    slot.alive, slot.stale_frames, slot.errors, slot.rejoins

An OSError from the bus is retried at most `retries` times within one sample; if all fail the
sensor is stale (sample() returns None: the estimator carries on by prediction). A stale sensor
is tried again every `backoff` samples (doubling up to max_backoff); when it answers it is
re-initialised (it may have lost power and its configuration) and rejoins.

The re-initialisation never blocks the capture loop: it runs the driver's init_steps() one step
a sample, each step's wait (a BNO055's 650 ms reset, its 20 ms mode switch) passing on the bus
clock (driver.now_s(): the twin's simulated clock, the monotonic clock on a real bus) between
frames, while the other sensors are read as usual. A blocking init() inside the loop held a
real unit's bus 0.67 s per BNO055 rejoin, some 20 frames at 30 Hz (benchmarks/robust_unit.py
(d)). A step that fails (OSError) abandons the re-initialisation, which starts again at the next
sample up to `retries` times, then backs off as before; start() initialises blocking (before
capture, where waiting is fine). start_all(slots) initialises them all before capture with
their waits overlapped: every chip's reset under way at once, so 22 BNO055 take one 650 ms
reset, not 22 (14.3 s) on one bus.

    ok = start_all(slots)            # [True, False, ...]: which answered
"""


START_MAX_S = 10.0         # a chip's initialisation at start: given up after this (bus clock)


def start_all(slots):
    """Initialise every slot's driver, the init_steps' waits overlapped (each slot's next step
    run once its bus clock has passed its due time; the earliest due waited out on its bus);
    a driver without steps initialises blocking. [ok per slot], as start() would give."""
    from device.hal.busclock import wait_ms
    out = [None] * len(slots)
    live = []                                  # [index, slot, steps, due_s, attempts, give-up time]
    for k, slot in enumerate(slots):
        steps = getattr(slot.driver, "init_steps", None)
        if steps is None or not hasattr(slot.driver, "now_s"):
            out[k] = slot.start()
        else:
            live.append([k, slot, steps(), None, 0, slot.driver.now_s() + START_MAX_S])
    while live:
        for item in list(live):
            k, slot, steps, due, attempts, give_up = item
            if due is not None and slot.driver.now_s() < due:
                continue
            try:
                if slot.driver.now_s() > give_up:
                    # a driver whose steps never end (a chip that keeps asking for time)
                    raise OSError(110, "no end to its initialisation in %.0f s" % START_MAX_S)
                ms = next(steps)
                item[3] = slot.driver.now_s() + ms / 1000.0
                continue
            except StopIteration:
                slot.initialised = slot.alive = True
                out[k] = True
            except OSError as e:
                slot.errors += 1
                slot.last_error = str(e)
                if attempts < slot.retries:
                    # start again from the top, as start()'s retries run init() again
                    item[2], item[3], item[4] = slot.driver.init_steps(), None, attempts + 1
                    continue
                slot.initialised = slot.alive = False
                out[k] = False
            live.remove(item)
        waiting = [it for it in live if it[3] is not None]
        if waiting and len(waiting) == len(live):
            # wait out the earliest step due on its own bus (a real bus: the same clock for all)
            k, slot, _, due, _, _ = min(waiting, key=lambda it: it[3] - it[1].driver.now_s())
            left_ms = (due - slot.driver.now_s()) * 1000.0
            if left_ms > 0:
                w = getattr(slot.driver, "_wait", None)
                w(left_ms) if w is not None else wait_ms(getattr(slot.driver, "i2c", None), left_ms)
    return out


class SensorSlot:
    def __init__(self, name, driver, retries=2, max_backoff=8):
        self.name = name
        self.driver = driver
        self.retries = retries
        self.max_backoff = max_backoff
        self.alive = False
        self.initialised = False
        self.errors = 0
        self.stale_frames = 0
        self.rejoins = 0
        self.samples = 0
        self.last_error = ""
        self._wait = 0
        self._backoff = 1
        self._steps = None          # init_steps() under way while re-initialising
        self._due_s = None          # bus-clock time its next step is due
        self._attempts = 0          # re-initialisations failed in a row (retries, then back off)

    def _try(self, fn):
        for _ in range(self.retries + 1):
            try:
                return True, fn()
            except OSError as e:
                self.errors += 1
                self.last_error = str(e)
        return False, None

    def start(self):
        """Initialise the driver; False (and stale) if it does not answer."""
        ok, _ = self._try(self.driver.init)
        self.initialised = ok
        self.alive = ok
        return ok

    def sample(self):
        """One reading, or None while stale (or re-initialising)."""
        if not self.alive:
            self.stale_frames += 1
            if self._steps is None:
                if self._wait > 0:
                    self._wait -= 1
                    return None
                steps = getattr(self.driver, "init_steps", None)
                if steps is None:               # a driver without steps: blocking, with retries
                    ok, _ = self._try(self.driver.init)
                    if not ok:
                        return self._failed()
                    return self._joined(True)
                self._steps = steps()
                self._due_s = None
            return self._joined(self._step())
        ok, reading = self._try(self.driver.read)
        if not ok:
            self.alive = False
            self._wait = 0
            self.stale_frames += 1
            return None
        self.samples += 1
        return reading

    def _step(self):
        """The next init step once its wait is over: True when init is done, False to wait, None
        when a step failed."""
        if self._due_s is not None and self.driver.now_s() < self._due_s:
            return False
        try:
            ms = next(self._steps)
        except StopIteration:
            self._steps = None
            return True
        except OSError as e:
            self.errors += 1
            self.last_error = str(e)
            self._steps = None
            self._attempts += 1
            if self._attempts <= self.retries:
                return False            # start again at the next sample, as _try retries
            self._attempts = 0
            return None                 # then back off
        self._due_s = self.driver.now_s() + ms / 1000.0
        return False

    def _failed(self):
        self._backoff = min(self._backoff * 2, self.max_backoff)
        self._wait = self._backoff - 1
        return None

    def _joined(self, done):
        if done is None:
            return self._failed()
        if not done:
            return None
        if self.initialised:
            self.rejoins += 1
        self.initialised = True
        self.alive = True
        self._backoff = 1
        self._attempts = 0
        ok, reading = self._try(self.driver.read)
        if not ok:
            self.alive = False
            self._wait = 0
            return None
        self.samples += 1
        return reading

    def status(self):
        return {"name": self.name, "alive": self.alive, "errors": self.errors,
                "stale_frames": self.stale_frames, "rejoins": self.rejoins, "samples": self.samples}
