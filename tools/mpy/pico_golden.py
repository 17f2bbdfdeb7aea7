"""Run the golden cases on the emulated Pico, printing each result as JSON in small pieces.

    import pico_golden
    pico_golden.main(["crc", "cobs"])    # prints "@@ NAME MS HEAP_BYTES " + JSON, one line per case

A Pico's 240 KB heap fragments while a case keeps hundreds of long ints alive: json.dumps of a
whole result then fails for want of a few contiguous KB (seen: 203 KB free, largest block
1.6 KB). So the JSON is written piece by piece, never built as one string. MicroPython-safe.
"""

import gc
import json
import sys
import time

import golden_cases


def dump(v, w):
    if isinstance(v, (list, tuple)):
        w("[")
        for i in range(len(v)):
            if i:
                w(", ")
            dump(v[i], w)
        w("]")
    elif isinstance(v, dict):
        w("{")
        first = True
        for k in v:
            if not first:
                w(", ")
            first = False
            w(json.dumps(str(k)))
            w(": ")
            dump(v[k], w)
        w("}")
    else:
        w(json.dumps(v))


def servo_map(machine):
    """The receiver's pulse for codes across header ranges: its header-time math is in floats
    (single precision on the Pico), its per-frame math in ints. [[target_ns, ...], ...]"""
    from device.firmware.servos import ServoBank

    servos = [{"name": "s%d" % i, "pin": 2 + i, "row": "r%d" % i, "neutral_us": (1500, 1472.5, 1333.3, 1600)[i],
               "direction": (1, -1, 1, -1)[i], "us_per_deg": (10.0, 11.111, 7.3, 2000.0 / 270)[i],
               "min_us": 500, "max_us": 2500, "scale": (1.0, 0.5, -1.3, 1.0)[i],
               "offset_deg": (0.0, 12.5, -3.7, 0.1)[i]} for i in range(4)]
    bank = ServoBank(servos, machine)
    out = []
    for lo, hi, bits in ((-90.0, 90.0, 8), (-0.05, 0.3, 16), (-180.0, 180.0, 16), (12.34, 56.78, 8),
                         (-135.0, 135.0, 16)):
        bank.map_rows([{"name": "r%d" % i, "lo": lo, "hi": hi} for i in range(4)], bits)
        top = (1 << bits) - 1
        for code in (0, 1, top // 3, top // 2, top - 1, top):
            bank.set_targets([code] * 4, [False] * 4, 4)
            out.append(list(bank.target_ns))
    for p in bank.pwm:
        p.duty_ns(0)
    return out


# a part of a case, for a run that cannot afford the whole (ekf_q's 48 joints: ~7 s emulated)
PARTS = (("ekf_q.small", lambda: golden_cases.ekf_run(6, 40, 3)),
         ("servo_map", lambda: servo_map(__import__("machine"))))


def main(names=None):
    w = sys.stdout.write
    for name, fn in golden_cases.CASES + PARTS:
        if names is not None and name not in names:
            continue
        gc.collect()
        free = gc.mem_free()
        t = time.ticks_ms()
        try:
            r = fn()
        except MemoryError as e:
            w("@@ %s ERR MemoryError %s\n" % (name, e))
            continue
        ms = time.ticks_diff(time.ticks_ms(), t)
        w("@@ %s %d %d " % (name, ms, free - gc.mem_free()))
        dump(r, w)
        w("\n")
        r = None
