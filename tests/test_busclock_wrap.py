"""busclock.clock_s on MicroPython counts on past ticks_ms's wrap (2^30 ms on the rp2 port):
a due time computed before the wrap is still reached after it, never 12 days away."""

import types

import pytest

from device.hal import busclock

PERIOD = 1 << 30                      # the rp2 port's TICKS_PERIOD


def _fake_time(start_ms):
    t = types.SimpleNamespace(now=start_ms)
    t.ticks_ms = lambda: t.now % PERIOD

    def ticks_diff(a, b):
        # MicroPython's: ((a - b + PERIOD / 2) mod PERIOD) - PERIOD / 2
        return ((a - b + PERIOD // 2) % PERIOD) - PERIOD // 2
    t.ticks_diff = ticks_diff
    return t


def test_clock_runs_on_through_the_wrap(monkeypatch):
    fake = _fake_time(PERIOD - 300)                 # 300 ms before the wrap
    monkeypatch.setattr(busclock, "time", fake)
    monkeypatch.setattr(busclock, "_last", [None, 0])
    bus = object()                                  # a machine.I2C: no now_s
    t0 = busclock.clock_s(bus)
    raw0_s = fake.ticks_ms() / 1000.0
    due = t0 + 0.65                                 # a BNO055's reset, over the wrap
    fake.now += 400
    assert busclock.clock_s(bus) == pytest.approx(t0 + 0.4)
    assert busclock.clock_s(bus) < due
    fake.now += 300
    assert busclock.clock_s(bus) == pytest.approx(t0 + 0.7) and busclock.clock_s(bus) >= due
    # a reading straight from ticks_ms would have gone back 12.4 days here
    assert fake.ticks_ms() / 1000.0 < raw0_s - 1e6
