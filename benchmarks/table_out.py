"""A benchmark's table out: printed, the time and the machine's load under it, and a copy to --out.

    from benchmarks.table_out import emit
    emit(lines, args.out, "CPU time: other jobs count only through the caches")
"""

import os
import time


def emit(lines, out=None, note=""):
    """Print lines with a last line of when and under what load they were measured; write them
    to out as well (None: printed only)."""
    lines = list(lines) + ["(%s, load average %.1f on %d cores at the end%s)"
                           % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0],
                              os.cpu_count() or 1, ("; " + note) if note else "")]
    text = "\n".join(lines)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    return text
