"""A sensor's health on the unit: bounded retries, stale marking and rejoin, never an exception.

    from device.sensors.health import SensorSlot
    slot = SensorSlot("l_thigh_imu", MPU6050(bus), retries=2)
    reading = slot.sample()      # the driver's read(), or None while the sensor is stale
    slot.alive, slot.stale_frames, slot.errors, slot.rejoins

An OSError from the bus is retried at most `retries` times within one sample; if all fail the
sensor is stale (sample() returns None: the estimator carries on by prediction). A stale sensor
is tried again every `backoff` samples (doubling up to max_backoff); when it answers it is
re-initialised (it may have lost power and its configuration) and rejoins.
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
        """One reading, or None while stale."""
        if not self.alive:
            self.stale_frames += 1
            if self._wait > 0:
                self._wait -= 1
                return None
            ok, _ = self._try(self.driver.init)
            if not ok:
                self._backoff = min(self._backoff * 2, self.max_backoff)
                self._wait = self._backoff - 1
                return None
            if self.initialised:
                self.rejoins += 1
            self.initialised = True
            self.alive = True
            self._backoff = 1
        ok, reading = self._try(self.driver.read)
        if not ok:
            self.alive = False
            self._wait = 0
            self.stale_frames += 1
            return None
        self.samples += 1
        return reading

    def status(self):
        return {"name": self.name, "alive": self.alive, "errors": self.errors,
                "stale_frames": self.stale_frames, "rejoins": self.rejoins, "samples": self.samples}
