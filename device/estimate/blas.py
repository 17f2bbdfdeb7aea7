"""Limit the BLAS thread pools of this process (OpenBLAS as bundled with numpy / scipy wheels).

    from device.estimate.blas import set_blas_threads
    set_blas_threads(1)        # -> number of OpenBLAS libraries changed (0: none found)

The EKF's matrices are small (144 x 144 for 48 dofs): a threaded BLAS spends more on waking
and synchronising threads than on the work, and on a loaded 2-core machine it made one EKF
step take 127 ms instead of 5 (`motionstaff capture` measured 219 ms per frame: the CLI,
unlike tests/conftest.py and the benchmarks, did not set OPENBLAS_NUM_THREADS=1 before numpy
loaded). OPENBLAS_NUM_THREADS only works before the library loads; this calls OpenBLAS's own
`openblas_set_num_threads` (under the names the numpy / scipy wheels export) on every OpenBLAS
mapped into the process (Linux /proc/self/maps), so it works at any time. No threadpoolctl
dependency; a platform without /proc or without OpenBLAS is left alone.
"""

import ctypes
import os

_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads", "openblas_set_num_threads64_")
_GETTERS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
            "scipy_openblas_get_num_threads", "openblas_get_num_threads64_")


def _openblas_paths():
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and ".so" in p)


def set_blas_threads(n=1):
    """Set every loaded OpenBLAS to n threads; returns how many libraries took it."""
    import numpy  # noqa: F401  (numpy's OpenBLAS must be loaded to be found)
    os.environ["OPENBLAS_NUM_THREADS"] = str(int(n))      # for child processes
    done = 0
    for path in _openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = None
                fn(ctypes.c_int(int(n)))
                done += 1
                break
    return done


def blas_threads():
    """{library path: thread count} of the OpenBLAS libraries loaded in this process."""
    out = {}
    for path in _openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _GETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                out[path] = int(fn())
                break
    return out
