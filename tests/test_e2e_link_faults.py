"""The demo's live stream over a damaged serial link (bit flips, dropped bytes, garbage, a port
that vanishes and comes back): no corrupted frame reaches a servo, the robot's failsafe engages
and recovers, every error is counted. Simulated time; the robot end is driven synchronously
from the bytes that crossed the pty, so nothing waits on the wall clock."""

import pytest

from host.demo.checks import link_checks
from host.demo.link import Faults
from host.demo.pipeline import capture, default_clip


def _run(tmp_path, faults, seconds=3.5):
    return capture(str(tmp_path), default_clip(), seconds, estimator="ekf", camera=False,
                   faults=faults)


def test_clean_link_delivers_every_frame_exactly(tmp_path):
    cap = _run(tmp_path, None, seconds=2.0)
    c = link_checks(cap)
    n = cap["loop"].frame_index
    assert n == cap["frames_planned"]
    assert cap["streamer"].frames == n and cap["relay"].counts["frames"] == n
    assert c["corrupted_frames_delivered"] == 0 and c["limiter_replay_mismatched"] == 0
    assert c["servo_commands_mismatched"] == 0 and c["servo_commands_checked"] > n
    assert c["servo_commands_out_of_limits"] == 0
    assert cap["relay"].decoder.dropped() == 0


@pytest.mark.parametrize("seed,rate", [(1, 0.002), (2, 0.006)])
def test_damaged_link_never_moves_a_servo_with_a_corrupted_frame(tmp_path, seed, rate):
    faults = Faults(rate=rate, seed=seed, vanish=[(2.5, 3.5)], start_s=0.3)   # unplugged 1 s
    cap = _run(tmp_path, faults)
    relay, st = cap["relay"], cap["streamer"]
    c = link_checks(cap)
    # nothing corrupted acted on; the controller got exactly what the limiter produced
    assert c["corrupted_frames_delivered"] == 0
    assert c["servo_commands_mismatched"] == 0 and c["servo_commands_out_of_limits"] == 0
    # and what it produced is what a fresh limiter makes of the frames the UNIT sent
    assert c["limiter_replay_mismatched"] == 0 and c["frames_checked"] == relay.counts["frames"]
    # the faults happened, and were seen
    for kind in ("bit_flips", "dropped_bytes", "garbage_bytes", "vanished_writes"):
        assert faults.counts[kind] > 0, kind
    assert relay.decoder.dropped() > 0
    # nothing stopped: every frame was captured, and every one is accounted for
    n = cap["loop"].frame_index
    assert n == cap["frames_planned"]
    assert st.frames + st.write_errors == n
    assert st.write_errors == faults.counts["vanished_writes"] == 30      # 1 s at 30 Hz
    lost = st.frames - relay.counts["frames"]
    assert lost >= 0 and relay.decoder.dropped() + relay.decoder.gaps >= lost
    assert relay.counts["frames"] > 0.3 * st.frames              # the intact ones got through
    # the failsafe engaged while the port was gone and released when frames came back
    assert relay.counts["failsafe_engaged"] >= 1
    assert relay.counts["failsafe_released"] >= 1
    assert cap["streamer"].link.generation == 2          # the port came back at a new pty


def test_garbage_only_link_moves_nothing(tmp_path):
    """A link that carries only damage (rate 0.3): whatever is delivered is still exact."""
    faults = Faults(rate=0.3, seed=9, start_s=0.3)
    cap = _run(tmp_path, faults, seconds=1.0)
    c = link_checks(cap)
    assert c["corrupted_frames_delivered"] == 0 and c["servo_commands_mismatched"] == 0
    assert c["limiter_replay_mismatched"] == 0
    assert cap["relay"].decoder.dropped() > 50
    assert 0 < cap["relay"].counts["frames"] < 20          # only the clean first 0.3 s
