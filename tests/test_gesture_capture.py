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
        loop = CaptureLoop(unit, outputs=outs)
        loop.run(duration_s=4.0)
        loop.close()
        assert loop.output_errors == 0
        with cond:
            ok = cond.wait_for(lambda: sum(a == "/VMC/Ext/T" for a, _ in got) >= 120
                               and sum(a == "/motionstaff/frame" for a, _ in got) >= 120
                               and any(a == "/motionstaff/gesture" for a, _ in got), timeout=20)
        assert ok
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
