"""Shared pytest fixtures. Keep additions small: one import or fixture per area."""

# estimate: one BLAS thread (set before numpy loads). Threaded OpenBLAS on a shared 2-core
# machine made a 234x234 Cholesky take 100 ms instead of 1 ms.
import os  # noqa: E402

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# mpy: one MicroPython WebAssembly session for the whole run (tools/mpy_run.py)
from tools.mpy_run import mpy  # noqa: F401

# shared_data: Path of ../shared/data (real BVH, C3D, IMU data), or skip with the reason
import pathlib  # noqa: E402

import pytest  # noqa: E402

SHARED_DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip("shared data folder %s is absent (real BVH/C3D/IMU clips)" % SHARED_DATA)
    return SHARED_DATA
