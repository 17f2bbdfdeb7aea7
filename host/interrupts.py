"""SIGTERM (a service stopped) and SIGHUP (the ssh session that started it gone) as Ctrl-C, for
the commands that drive a robot: their KeyboardInterrupt path puts it in its failsafe, where the
signal's default would kill the process with the servos holding the last command.

    from host.interrupts import as_interrupt, restore
    old = as_interrupt()
    try:
        ...                     # a KeyboardInterrupt here on Ctrl-C, SIGTERM or SIGHUP
    finally:
        restore(old)
"""

import signal


def as_interrupt():
    """Installs the handlers; returns the ones they replace (for restore)."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    old = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            old[sig] = signal.signal(sig, interrupt)
    return old


def restore(old):
    for sig, handler in old.items():
        signal.signal(sig, handler)
