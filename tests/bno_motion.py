"""A BNO055 twin moved as Bosch's calibration asks, on the bus clock (tests only).

    from tests.bno_motion import Motion, poll, calibrate_by_motion
    chip.truth = m = Motion(bus)       # still, +Z up; m.up = (1, 0, 0); m.kind = "tumble"
    poll(bus, imu, 1.5)                # CALIB_STAT polled every 10 ms of bus time: the last levels
    calibrate_by_motion(bus, imu, m)   # still, six poses, figure 8: (3, 3, 3, 3) where it can
"""

import math

G = 9.80665
FIELD = (20.0, 0.0, -40.0)
FACES = ((0, 0, 1), (0, 0, -1), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0))


class Motion:
    """The sensor's truth as a function of the bus clock: still (+Z up), held on faces, tumbling."""

    def __init__(self, bus):
        self.bus = bus
        self.kind, self.up = "still", (0, 0, 1)

    def __call__(self):
        if self.kind == "tumble":
            t = self.bus.now_s()
            a, b = 2.0 * t, 0.7 * t           # two rotations: the field sweeps every octant
            f = (math.cos(a) * math.cos(b), math.sin(a) * math.cos(b), math.sin(b))
            return {"gyro_rad_s": (1.5, 0.5, 0.0), "accel_m_s2": (0.0, 0.0, G),
                    "mag_ut": tuple(45.0 * x for x in f), "quat_wxyz": (1, 0, 0, 0), "temp_c": 25}
        return {"gyro_rad_s": (0.004, -0.003, 0.002), "accel_m_s2": tuple(G * u for u in self.up),
                "mag_ut": FIELD, "quat_wxyz": (1, 0, 0, 0), "temp_c": 25}


def poll(bus, imu, seconds, dt_s=0.01):
    """Poll CALIB_STAT every dt_s of bus time for seconds; the last levels."""
    stat = None
    for _ in range(int(round(seconds / dt_s))):
        bus.delay_ms(dt_s * 1000)
        stat = imu.calibration()
    return stat


def calibrate_by_motion(bus, imu, m):
    """Still 2.5 s, the six faces 1.2 s each, a figure 8 for 8 s; the levels reached."""
    m.kind = "still"
    poll(bus, imu, 2.5)
    for up in FACES:
        m.up = up
        poll(bus, imu, 1.2)
    m.kind = "tumble"
    s = poll(bus, imu, 8.0)
    m.kind, m.up = "still", (0, 0, 1)
    return s
