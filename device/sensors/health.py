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
capture, where waiting is fine).
"""


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
