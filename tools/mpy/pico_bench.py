"""Benchmark kernels for the emulated Pico (benchmarks/micropython.py), timed in emulated us.

    import pico_bench
    pico_bench.receiver(nframes=40)   # the real Receiver on the real UART0/PWM: us and bytes per frame
    pico_bench.ekf(48, steps=3)       # fixed-point EKF step: us and bytes allocated per step

Heap per operation: gc.disable(), then gc.mem_alloc() before and after (no collection between).
MicroPython-safe; runs as /main.py's payload on the board (tools/mpy/pico.py run_script).
"""

import gc
import json
import time


def receiver(nservo=18, nframes=40, frame_len=0):
    """The receiver chain per 50 Hz frame: UART0 ring -> FrameReader -> ServoBank -> PWM duty.

    The harness sends a header, then nframes frames 20 ms apart. Each poll that finds a whole
    frame waiting (uart.any() >= frame_len) is timed; idle polls (nothing waiting) too."""
    import machine
    from device.firmware.receiver import Receiver

    cfg = {"format": "motionstaff-receiver", "version": 1,
           "uart": {"id": 0, "baud": 115200, "tx": 0, "rx": 1},
           "failsafe": {"timeout_ms": 500, "action": "hold"}, "heartbeat_ms": 0,
           "servos": [{"name": "s%d" % i, "pin": 2 + i, "row": "r%d" % i, "neutral_us": 1500,
                       "direction": 1, "us_per_deg": 10.0, "min_us": 600, "max_us": 2400,
                       "max_vel_dps": 360.0, "scale": 1.0, "offset_deg": 0.0, "home_deg": 0.0}
                      for i in range(nservo)]}
    from device.firmware import config
    rx = Receiver(config.check(cfg), machine)
    print("@@ready")
    while rx.reader.frames == 0:             # the header, then the first frame
        rx.poll(time.ticks_ms())
        time.sleep_ms(1)
    us = [0] * nframes
    heap = [0] * nframes
    idle_us = [0] * nframes
    got = 0
    seen = rx.reader.frames
    deltas = []
    end = time.ticks_add(time.ticks_ms(), 3000 + 40 * nframes)
    gc.collect()
    gc.disable()
    # every poll that finds a whole frame waiting is timed, with how many frames it used
    while got < nframes and time.ticks_diff(end, time.ticks_ms()) > 0:
        if rx.uart.any() >= frame_len:
            a = gc.mem_alloc()
            t = time.ticks_us()
            rx.poll(time.ticks_ms())
            dt = time.ticks_diff(time.ticks_us(), t)
            dh = gc.mem_alloc() - a
            used = rx.reader.frames - seen
            seen = rx.reader.frames
            t = time.ticks_us()
            rx.poll(time.ticks_ms())             # the next pass (idle unless a frame came)
            idle = rx.reader.frames == seen
            di = time.ticks_diff(time.ticks_us(), t)
            if used == 1:
                us[got] = dt
                heap[got] = dh
                idle_us[got] = di if idle else -1
                got += 1
            deltas.append(used)
            seen = rx.reader.frames
        else:
            time.sleep_ms(1)
    gc.enable()
    us = us[:got]
    heap = heap[:got]
    idle_us = idle_us[:got]
    print("@@receiver " + json.dumps({"us": us, "heap": heap, "idle_us": idle_us,
                                      "frames": rx.reader.frames, "dropped": rx.reader.dropped(),
                                      "deltas": deltas}))


def ekf(dofs=48, steps=3):
    """us per step (gc on), and bytes allocated per step (gc off; None: more than the free heap)."""
    from device.core.ekf_q import EkfQ

    f = EkfQ(dofs, 1 << 23, c_q20=1 << 17, g_q20=1 << 20)
    zs = [[((k * (j + 1)) << 12) - (j << 15) for j in range(dofs)] for k in range(steps + 2)]
    f.step(zs[0])                             # warm-up
    us = []
    for k in range(steps):
        gc.collect()
        t = time.ticks_us()
        f.step(zs[k + 1])
        us.append(time.ticks_diff(time.ticks_us(), t))
    gc.collect()
    free = gc.mem_free()
    gc.disable()
    a = gc.mem_alloc()
    try:
        f.step(zs[steps + 1])
        heap = gc.mem_alloc() - a
    except MemoryError:
        heap = None
    gc.enable()
    gc.collect()
    print("@@ekf%d " % dofs + json.dumps({"dofs": dofs, "us": us, "heap": heap, "free": free}))


def codec(nrows=48, n=10):
    """staffcodec.encode_column + packets frame, per frame (what a Pico capture node would send)."""
    from protocol import staffcodec as sc
    from protocol import packets as pk

    enc = pk.Encoder(clock_us=lambda: 0)
    los = [-90.0] * nrows
    his = [90.0] * nrows
    vals = [(-80.0 + 3.3 * j) for j in range(nrows)]
    codes = sc.encode_column(vals, los, his, 8)
    enc.frame(codes, 8)
    gc.collect()
    gc.disable()
    a = gc.mem_alloc()
    t = time.ticks_us()
    for k in range(n):
        codes = sc.encode_column(vals, los, his, 8)
        enc.frame(codes, 8)
    dt = time.ticks_diff(time.ticks_us(), t)
    h = gc.mem_alloc() - a
    gc.enable()
    print("@@codec " + json.dumps({"us": dt / n, "heap": h / n}))
