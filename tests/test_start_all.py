"""The unit's start-up initialises its chips with their waits overlapped (health.start_all):
a BNO055's 650 ms reset under way on every chip at once, not one after another."""

import pytest

from device.hal.i2c_sim import SimI2C
from device.sensors.bno055 import BNO055, RESET_MS
from device.sensors.bno055_sim import SimBNO055
from device.sensors.health import SensorSlot, start_all




def test_start_all_overlaps_the_resets():
    bus = SimI2C()
    slots = []
    for addr in (0x28, 0x29):
        bus.attach(addr, SimBNO055())
        slots.append(SensorSlot("imu%x" % addr, BNO055(bus, addr=addr)))
    t0 = bus.now_s()
    assert start_all(slots) == [True, True]
    took_s = bus.now_s() - t0
    # one reset (650 ms) and one mode switch (19 ms), the transfers on top: not two of each
    assert RESET_MS / 1000.0 <= took_s < 2 * RESET_MS / 1000.0 - 0.1
    assert all(s.alive and s.initialised for s in slots)
    assert all(s.sample() is not None for s in slots)


def test_start_all_as_blocking_start_for_the_rest():
    bus = SimI2C()
    bus.attach(0x28, SimBNO055())
    good = SensorSlot("good", BNO055(bus, addr=0x28))
    absent = SensorSlot("absent", BNO055(bus, addr=0x29), retries=2)   # nothing answers at 0x29
    assert start_all([absent, good]) == [False, True]
    assert absent.errors == 3 and not absent.alive and not absent.initialised    # 1 + 2 retries
    assert good.alive

    class NoSteps:
        calls = 0

        def init(self):
            NoSteps.calls += 1
            raise OSError(5, "bus error")
    slot = SensorSlot("plain", NoSteps(), retries=1)
    assert start_all([slot]) == [False] and NoSteps.calls == 2


def test_a_unit_of_22_bno055_starts_in_one_reset():
    from device.capture.config import default_config
    from device.capture.unit import build_unit
    unit = build_unit(default_config(body="human"))
    assert len(unit.slots) == 22 and all(s.alive for s in unit.slots)
    # every bus: one 650 ms reset and the transfers (one after another: 2.7-3.4 s a bus, 14.8 s
    # on a real unit's one clock)
    for name, bus in unit.buses.items():
        assert bus.now_s() == pytest.approx(0.673, abs=0.05), name


def test_a_driver_whose_steps_never_end_is_given_up():
    """start_all must not hang on a chip that keeps asking for time: START_MAX_S on its clock."""
    from device.sensors import health

    class Forever:
        def __init__(self):
            self.t = 0.0

        def now_s(self):
            return self.t

        def _wait(self, ms):
            self.t += ms / 1000.0

        def init_steps(self):
            while True:
                yield 100

    slot = SensorSlot("forever", Forever(), retries=1)
    assert start_all([slot]) == [False]
    assert "no end" in slot.last_error and slot.errors == 2
    assert slot.driver.t <= 2 * (health.START_MAX_S + 0.2)
