"""The capture loop with gesture, OSC and VMC outputs from configuration entries, received on loopback."""

import os

import pytest

pytest.importorskip("pythonosc")
from device.outputs.factory import make_output  # noqa: E402
from protocol.errors import FormatError  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bvh")


@pytest.mark.skipif(not os.path.isdir(DATA), reason="../shared/data/bvh is absent")
def test_capture_loop_outputs_gesture_osc_vmc(tmp_path, osc_receiver):
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

    rx = osc_receiver
    unit = build_unit(default_config())
    outs = [make_output({"kind": k, "target": rx.target, **extra}, unit.skeleton, unit.rate_hz)
            for k, extra in (("gestures", {"library": lib}), ("osc", {}), ("vmc", {}))]
    try:
        loop = CaptureLoop(unit, outputs=outs)          # virtual time: no sleeping, deterministic
        assert not loop.clock.realtime
        n = int(round(4.0 * unit.rate_hz))
        # lockstep with the receiver: frame k is captured only once frame k-1 has arrived, so a
        # loaded machine slows the test down but cannot make UDP drop datagrams from a full
        # socket buffer
        for k in range(n):
            loop.step()
            assert rx.wait_for(lambda: rx.count("/VMC/Ext/T") > k and rx.count("/motionstaff/frame") > k,
                               timeout=60), "frame %d not received" % k
        loop.close()
        assert loop.output_errors == 0 and loop.frame_index == n
        # the gesture bundle was sent before its frame's OSC/VMC bundles
        assert rx.wait_for(lambda: rx.count("/motionstaff/gesture") >= 1, timeout=60)
    finally:
        for o in outs:
            o.close()
    got = rx.messages
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
