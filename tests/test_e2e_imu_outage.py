"""An IMU that stops answering mid-capture and comes back, during the demo's live stream: the
estimate of its segment degrades while it is gone and recovers after, nothing stops (every
frame is captured, recorded and streamed to the robot)."""

import numpy as np

from host.demo.checks import link_checks
from host.demo.pipeline import capture, default_clip
from protocol import container

SENSOR = "LeftKnee_imu"


def _err(cap, rows, a_s, b_s):
    rate = cap["unit"].rate_hz
    est, truth = cap["values"], cap["loop"].truth_values()
    a, b = int(a_s * rate), int(b_s * rate)
    d = (est[a:b, rows] - truth[a:b, rows] + 180.0) % 360.0 - 180.0
    return float(np.sqrt(np.nanmean(d ** 2)))


def test_imu_outage_degrades_and_recovers_without_stopping(tmp_path):
    def configure(cfg):
        cfg["subject"]["outages"] = [{"sensor": SENSOR, "start_s": 3.0, "end_s": 4.0}]
    cap = capture(str(tmp_path), default_clip(), 4.5, estimator="orient", camera=False,
                  configure=configure)
    unit, loop = cap["unit"], cap["loop"]
    sk = unit.skeleton
    link = sk.link_index("LeftKnee")
    rows = [j for j, d in enumerate(sk.dofs) if d.link == link and d.kind == "rotation"]
    slot = [s for s in unit.slots if s.name == SENSOR][0]
    # the sensor really went away and came back
    assert slot.stale_frames >= 25 and slot.rejoins == 1 and slot.alive
    # nothing stopped: every frame captured, recorded, streamed and acted on by the robot
    n = cap["frames_planned"]
    assert loop.frame_index == n and loop.stats.skipped == 0
    assert cap["streamer"].frames == n and cap["relay"].counts["frames"] == n
    assert container.read(cap["record"]).nframes == n
    assert link_checks(cap)["corrupted_frames_delivered"] == 0
    # the estimate degrades while the IMU is gone and recovers once it is back
    before = _err(cap, rows, 2.0, 3.0)
    during = _err(cap, rows, 3.5, 4.0)
    after = _err(cap, rows, 4.8, 6.0)
    assert during > 2 * before, (before, during, after)
    assert after < 2.0 and after < during / 2, (before, during, after)
    # the joints that do not involve the knee segment were not disturbed
    near = {link} | {i for i, ln in enumerate(sk.links) if ln.parent == link}
    others = [j for j, d in enumerate(sk.dofs) if d.kind == "rotation" and d.link not in near
              and sk.links[d.link].parent >= 0]
    assert _err(cap, others, 3.0, 4.0) < 2.0
