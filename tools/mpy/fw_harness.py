"""Drive the receiver firmware with the simulated machine: the same on CPython and MicroPython.

    import fw_harness
    res = fw_harness.run(cfg, [(now_ms, "hex bytes or ''"), ...])
    res["pulses"][k]      # every servo's duty_ns after poll k; res["counters"], res["tx"] (hex)

tests/test_firmware_receiver.py runs it under the wasm MicroPython and CPython and compares.
"""

import binascii
import gc


def _machine():
    import machine

    machine.reset()
    return machine


def run(cfg, schedule, record=True):
    machine = _machine()
    from device.firmware.receiver import Receiver

    u = machine.UART(0)
    r = Receiver(cfg, machine, uart=u)
    machine.RECORD = record
    out = []
    for now, data in schedule:
        if data:
            u.inject(binascii.unhexlify(data))
        r.poll(now)
        out.append([p.duty_ns() for p in machine.pwms()])
    return {"pulses": out, "counters": r.counters(), "tx": binascii.hexlify(bytes(u.txq)).decode(),
            "log": [list(x) for x in machine.LOG]}


def heap_per_frame(cfg, warm, frames, dt_ms=33):
    """(bytes allocated over len(frames) steady-state frames, heap_lock held?) after warm-up."""
    machine = _machine()
    from device.firmware.receiver import Receiver

    u = machine.UART(0)
    r = Receiver(cfg, machine, uart=u)
    machine.RECORD = False
    now = 0
    for data in warm:
        u.inject(binascii.unhexlify(data))
        now += dt_ms
        r.poll(now)
    # the whole steady-state stream is queued before measuring (the sim's inject allocates)
    u.inject(binascii.unhexlify("".join(frames)))
    gc.collect()
    mem = getattr(gc, "mem_alloc", lambda: 0)   # MicroPython only; 0 on CPython
    before = mem()
    locked = False
    try:
        import micropython

        micropython.heap_lock()
        locked = True
    except (ImportError, AttributeError):
        pass
    try:
        for k in range(len(frames)):
            now += dt_ms
            r.poll(now)
    finally:
        if locked:
            micropython.heap_unlock()
    after = mem()
    return after - before, locked, r.reader.frames
