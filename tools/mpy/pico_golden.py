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


# a part of a case, for a run that cannot afford the whole (ekf_q's 48 joints: ~7 s emulated)
PARTS = (("ekf_q.small", lambda: golden_cases.ekf_run(6, 40, 3)),)


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
