"""A bus's waits and clock, the same calls on a real and a simulated bus (MicroPython-safe).

    from device.hal.busclock import wait_ms, clock_s
    wait_ms(bus, 650)        # SimI2C: charged to its clock; SmbusI2C: sleeps; machine.I2C: sleep_ms
    t = clock_s(bus)         # SimI2C: its simulated clock; otherwise the monotonic clock (s)

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
        return time.ticks_ms() / 1000.0         # MicroPython (wraps after ~12 days at 2^30 ms)
    return time.monotonic()
