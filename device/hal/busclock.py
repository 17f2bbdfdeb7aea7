"""A bus's waits and clock, the same calls on a real and a simulated bus (MicroPython-safe).

    from device.hal.busclock import wait_ms, clock_s
    wait_ms(bus, 650)        # SimI2C: charged to its clock; SmbusI2C: sleeps; machine.I2C: sleep_ms
    t = clock_s(bus)         # SimI2C: its simulated clock; otherwise the monotonic clock (s;
                             # MicroPython's ticks_ms, counted on past its wrap)

Drivers wait out their chips' reset and mode-switch times through wait_ms, so a driver runs the
same code on a unit and on its twin; a bus without delay_ms/now_s (MicroPython's machine.I2C)
gets the board's own sleep and clock.
"""

import time


def wait_ms(bus, ms):
    """Wait ms milliseconds on bus's clock."""
    d = getattr(bus, "delay_ms", None)
    if d is not None:
        d(ms)
    elif hasattr(time, "sleep_ms"):
        time.sleep_ms(int(ms + 0.999))          # MicroPython: whole milliseconds, rounded up
    else:
        time.sleep(ms / 1000.0)


def clock_s(bus):
    """bus's clock in seconds."""
    n = getattr(bus, "now_s", None)
    if n is not None:
        return n()
    if hasattr(time, "ticks_ms"):
        return _ticks_s()                       # MicroPython: ticks_ms wraps; this does not
    return time.monotonic()


_last = [None, 0]                               # [last ticks_ms read, ms counted since the first]


def _ticks_s():
    """MicroPython's ticks_ms as a clock that never wraps (s): ticks_ms wraps at
    TICKS_MAX + 1 (2^30 ms on the rp2 port, 12.4 days), so each read adds
    ticks_diff(now, last), the wrap-safe difference, to a running count (read it at least
    once every 6 days, half the period: a unit reads it every frame)."""
    now = time.ticks_ms()
    last = _last[0]
    if last is not None:
        _last[1] += time.ticks_diff(now, last)
    _last[0] = now
    return _last[1] / 1000.0
