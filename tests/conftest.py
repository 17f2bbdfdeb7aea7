"""Shared pytest fixtures. Keep additions small: one import or fixture per area."""

# estimate: one BLAS thread (set before numpy loads). Threaded OpenBLAS on a shared 2-core
# machine made a 234x234 Cholesky take 100 ms instead of 1 ms.
import os  # noqa: E402

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# mpy: one MicroPython WebAssembly session for the whole run (tools/mpy_run.py)
from tools.mpy_run import mpy  # noqa: F401

# hypothesis: every run draws the same examples (seeded randomness; a CI run must not find a
# counterexample the last run did not look at). A test's own @settings still set the rest.
from hypothesis import settings as _hyp_settings  # noqa: E402

_hyp_settings.register_profile("motionstaff", derandomize=True, print_blob=True)
_hyp_settings.load_profile("motionstaff")

# shared_data: Path of ../shared/data (real BVH, C3D, IMU data), or skip with the reason
import pathlib  # noqa: E402

import pytest  # noqa: E402

SHARED_DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip("shared data folder %s is absent (real BVH/C3D/IMU clips)" % SHARED_DATA)
    return SHARED_DATA


# osc_receiver: a real python-osc server on 127.0.0.1 (port 0) recording (address, args)
class _OscReceiver:
    def __init__(self):
        import threading

        from pythonosc.dispatcher import Dispatcher
        from pythonosc.osc_server import ThreadingOSCUDPServer
        self.messages = []
        self.cond = threading.Condition()
        d = Dispatcher()
        d.set_default_handler(self._on)
        self.server = ThreadingOSCUDPServer(("127.0.0.1", 0), d)
        self.port = self.server.server_address[1]
        self.target = "127.0.0.1:%d" % self.port
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _on(self, address, *args):
        with self.cond:
            self.messages.append((address, args))
            self.cond.notify_all()

    def count(self, address):
        with self.cond:
            return sum(a == address for a, _ in self.messages)

    def wait_for(self, predicate, timeout):
        """True once predicate() holds (re-checked on every message), False after timeout."""
        with self.cond:
            return self.cond.wait_for(predicate, timeout=timeout)

    def wait_count(self, address, count, timeout_s=10.0):
        """All messages so far, once `count` messages to `address` have arrived (else fail)."""
        ok = self.wait_for(lambda: self.count(address) >= count, timeout_s)
        assert ok, "only %d %s messages arrived" % (self.count(address), address)
        with self.cond:
            return list(self.messages)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def make_osc_receiver():
    """A factory: each call starts another receiver; all are closed after the test."""
    pytest.importorskip("pythonosc")
    made = []

    def make():
        made.append(_OscReceiver())
        return made[-1]
    try:
        yield make
    finally:
        for r in made:
            r.close()


@pytest.fixture
def osc_receiver(make_osc_receiver):
    return make_osc_receiver()


@pytest.fixture
def dynamixel_sdk_patient(monkeypatch):
    """dynamixel_sdk, its reply timeout widened to 1 s. The SDK waits 2 * LATENCY_TIMER (16 ms,
    a USB adapter's latency timer) + 2 ms of wall time for a reply; behind a pty the emulator's
    thread answers in well under a millisecond, but on a loaded 2-core CI machine the thread can
    be descheduled for longer than 34 ms (CI run 30: COMM_RX_TIMEOUT on a TORQUE_ENABLE write).
    These tests check what the SDK reads, not the wire's timing (that is paced and tested in
    test_paced_pty, test_emulate_pty_baud and test_feetech_packet_timeout, on their own clocks)."""
    sdk = pytest.importorskip("dynamixel_sdk")
    from dynamixel_sdk import port_handler
    monkeypatch.setattr(port_handler, "LATENCY_TIMER", 500)
    return sdk
