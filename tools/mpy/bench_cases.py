"""Benchmark kernels run unchanged on CPython and MicroPython (benchmarks/micropython.py).

    import bench_cases
    bench_cases.run_all(reps=3)   # {"ekf48": us per step, "encode48": us per frame, ...}

Times come from time.ticks_us on MicroPython and time.perf_counter_ns on CPython; the best of
`reps` repetitions is reported, in microseconds per operation.
"""

import gc
import time

try:
    _ticks = time.ticks_us
    _diff = time.ticks_diff
except AttributeError:
    def _ticks():
        return time.perf_counter_ns() // 1000

    def _diff(a, b):
        return a - b


def _best(fn, n, reps):
    best = None
    for _ in range(reps):
        t0 = _ticks()
        fn(n)
        dt = _diff(_ticks(), t0)
        if best is None or dt < best:
            best = dt
    return best / n


def ekf48(reps=3, n=20, dofs=48):
    from device.core.ekf_q import EkfQ

    f = EkfQ(dofs, 1 << 23, c_q20=1 << 17, g_q20=1 << 20)
    zs = []
    for k in range(8):
        zs.append([((k * (j + 1)) << 12) - (j << 15) for j in range(dofs)])

    def go(n):
        for k in range(n):
            f.step(zs[k & 7])
    return _best(go, n, reps)


def encode48(reps=3, n=50):
    from protocol import staffcodec as sc
    from protocol import packets as pk

    enc = pk.Encoder(clock_us=lambda: 0)
    los = [-90.0] * 48
    his = [90.0] * 48
    vals = [(-80.0 + 3.3 * j) for j in range(48)]

    def go(n):
        for k in range(n):
            codes = sc.encode_column(vals, los, his, 8)
            enc.frame(codes, 8)
    return _best(go, n, reps)


def receiver18(reps=3, n=60):
    """us per frame through the receiver's whole chain (UART bytes -> PWM), 18 servos."""
    import machine
    from protocol import packets as pk
    from device.firmware.receiver import Receiver

    machine.reset()
    machine.RECORD = False
    cfg = {"format": "motionstaff-receiver", "version": 1, "uart": {"id": 0, "baud": 115200, "tx": 0, "rx": 1},
           "failsafe": {"timeout_ms": 500, "action": "hold"}, "heartbeat_ms": 0,
           "servos": [{"name": "s%d" % i, "pin": i, "row": "r%d" % i, "neutral_us": 1500, "direction": 1,
                       "us_per_deg": 10.0, "min_us": 600, "max_us": 2400, "max_vel_dps": 360.0,
                       "scale": 1.0, "offset_deg": 0.0, "home_deg": 0.0} for i in range(18)]}
    u = machine.UART(0)
    r = Receiver(cfg, machine, uart=u)
    enc = pk.Encoder(clock_us=lambda: 0)
    rows = [{"name": "r%d" % i, "unit": "deg", "lo": -90.0, "hi": 90.0, "wrap": False} for i in range(18)]
    hdr = ('{"format":"motionstaff","version":1,"fps":30.0,"bits":8,"frames":0,"rows":[%s],'
           '"skeleton":null,"source":"","captured":""}' % ",".join(
               '{"name":"%s","unit":"deg","lo":-90.0,"hi":90.0,"wrap":false}' % x["name"] for x in rows))
    for p in enc.header(hdr):
        u.inject(p)
    r.poll(0)
    frames = [enc.frame([(k * 13 + j * 7) & 255 for j in range(18)]) for k in range(16)]
    state = [0]

    def go(n):
        for k in range(n):
            u.inject(frames[k & 15])
            state[0] += 33
            r.poll(state[0])
    us = _best(go, n, reps)
    return us, r.reader.frames


def heap_per_frame(n=100):
    """Bytes allocated per steady-state frame by the receiver (MicroPython: gc.mem_alloc)."""
    if not hasattr(gc, "mem_alloc"):
        return None
    import fw_harness
    from protocol import packets as pk

    enc = pk.Encoder(clock_us=lambda: 0)
    hdr = ('{"format":"motionstaff","version":1,"fps":30.0,"bits":8,"frames":0,"rows":[%s],'
           '"skeleton":null,"source":"","captured":""}' % ",".join(
               '{"name":"r%d","unit":"deg","lo":-90.0,"hi":90.0,"wrap":false}' % i for i in range(18)))
    cfg = {"format": "motionstaff-receiver", "version": 1, "uart": {"id": 0, "baud": 115200, "tx": 0, "rx": 1},
           "failsafe": {"timeout_ms": 500, "action": "hold"}, "heartbeat_ms": 0,
           "servos": [{"name": "s%d" % i, "pin": i, "row": "r%d" % i, "neutral_us": 1500, "direction": 1,
                       "us_per_deg": 10.0, "min_us": 600, "max_us": 2400, "max_vel_dps": 360.0}
                      for i in range(18)]}
    import binascii
    warm = [binascii.hexlify(b"".join(enc.header(hdr))).decode()]
    warm += [binascii.hexlify(enc.frame([100] * 18)).decode() for _ in range(3)]
    steady = [binascii.hexlify(enc.frame([(k * 5 + j) & 255 for j in range(18)])).decode() for k in range(n)]
    alloc, locked, frames = fw_harness.heap_per_frame(cfg, warm, steady)
    return alloc / float(n), locked
