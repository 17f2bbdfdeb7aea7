"""The capture loop with gesture, OSC and VMC outputs from configuration entries, received on loopback."""

import os
import threading

import pytest

pytest.importorskip("pythonosc")
from pythonosc.dispatcher import Dispatcher  # noqa: E402
from pythonosc.osc_server import ThreadingOSCUDPServer  # noqa: E402

from device.outputs.factory import make_output  # noqa: E402
from protocol.errors import FormatError  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bvh")


@pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")
def test_capture_loop_outputs_gesture_osc_vmc(tmp_path):
    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    from device.gestures.library import save_library
    from host.bvh import read_bvh
    from host.gestures.learn import cut, learn_gesture, motion_features
    rows = ["l_hip_flex_deg", "r_hip_flex_deg", "l_knee_deg", "r_knee_deg", "l_foot_h_leg", "r_foot_h_leg"]
    f = motion_features(read_bvh(os.path.join(DATA, "131_01.bvh")))
    lib = str(tmp_path / "g.json")
    save_library(lib, [learn_gesture("walk_start", [cut(f, 30.0, 0.6, 1.87)], rows=rows)])

    got = []
    cond = threading.Condition()

    def on(address, *args):
        with cond:
            got.append((address, args))
            cond.notify_all()
    d = Dispatcher()
    d.set_default_handler(on)
    srv = ThreadingOSCUDPServer(("127.0.0.1", 0), d)
    th = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    th.start()
    try:
        target = "127.0.0.1:%d" % srv.server_address[1]
        unit = build_unit(default_config())
        outs = [make_output({"kind": k, "target": target, **extra}, unit.skeleton, unit.rate_hz)
                for k, extra in (("gestures", {"library": lib}), ("osc", {}), ("vmc", {}))]
        loop = CaptureLoop(unit, outputs=outs)          # virtual time: no sleeping, deterministic
        assert not loop.clock.realtime
        n = int(round(4.0 * unit.rate_hz))

        def count(address):
            return sum(a == address for a, _ in got)
        # lockstep with the receiver: frame k is captured only once frame k-1 has arrived, so a
        # loaded machine slows the test down but cannot make UDP drop datagrams from a full
        # socket buffer (the earlier version sent all frames at once and waited 20 s for them)
        for k in range(n):
            loop.step()
            with cond:
                assert cond.wait_for(lambda: count("/VMC/Ext/T") > k and count("/motionstaff/frame") > k,
                                     timeout=60), "frame %d not received" % k
        loop.close()
        assert loop.output_errors == 0 and loop.frame_index == n
        with cond:          # the gesture bundle was sent before its frame's OSC/VMC bundles
            assert cond.wait_for(lambda: count("/motionstaff/gesture") >= 1, timeout=60)
    finally:
        srv.shutdown()
        srv.server_close()
        for o in outs:
            o.close()
    (g,) = [args for a, args in got if a == "/motionstaff/gesture"]
    assert g[0] == "walk_start" and g[1] > 0.5
    assert 1.5 < g[2] < g[3] < g[4] <= g[3] + 2 / 30 + 1e-6
    assert outs[0].matches[0].name == "walk_start"


def test_make_output_bad_entries():
    from device.body.human import human_model
    sk = human_model()
    for spec, msg in [({"kind": "midi"}, "kind"), ("osc", "kind"), ({"kind": "osc", "colour": 1}, "unknown"),
                      ({"kind": "vmc", "target": "h:x"}, "port"), ({"kind": "gestures"}, "library")]:
        with pytest.raises(FormatError, match=msg):
            make_output(spec, sk)
