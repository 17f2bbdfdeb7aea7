"""The demo's live stream over a damaged serial link (bit flips, dropped bytes, garbage, a pulled
cable): no corrupted frame reaches a servo, the robot's failsafe engages and recovers, every
error is counted. The product's own output (PacketOutput, paced) writes a pty; the serial twin
carries the bytes at 115200 baud of simulated time with a 4 KiB driver buffer; the robot end is
the product's LinkBridge. Nothing waits on the wall clock."""

import pytest

from device.servo.emulate.serialtwin import LineFaults
from host.demo.checks import link_checks
from host.demo.pipeline import capture, default_clip


def _run(tmp_path, faults, seconds=3.5):
    return capture(str(tmp_path), default_clip(), seconds, estimator="ekf", camera=False,
                   faults=faults)


def test_clean_link_delivers_every_frame_exactly(tmp_path):
    cap = _run(tmp_path, None, seconds=2.0)
    c = link_checks(cap)
    n = cap["loop"].frame_index
    lc = cap["streamer"].counts()
    assert n == cap["frames_planned"]
    assert cap["streamer"].frames == n and lc["frames_skipped"] == 0
    assert cap["relay"].counts["frames"] == n
    assert c["corrupted_frames_delivered"] == 0 and c["limiter_replay_mismatched"] == 0
    assert c["servo_commands_mismatched"] == 0 and c["servo_commands_checked"] > n
    assert c["servo_commands_out_of_limits"] == 0 and c["servo_commands_over_velocity"] == 0
    assert cap["relay"].decoder.dropped() == 0
    assert cap["twin"].counts["overrun_bytes"] == 0 and lc["header_repeats"] >= 3


@pytest.mark.parametrize("seed,rate", [(1, 0.002), (2, 0.006)])
def test_damaged_link_never_moves_a_servo_with_a_corrupted_frame(tmp_path, seed, rate):
    faults = LineFaults(rate=rate, seed=seed, unplug=[(2.5, 3.5)])   # cable out for 1 s
    cap = _run(tmp_path, faults)
    relay, st = cap["relay"], cap["streamer"]
    c = link_checks(cap)
    # nothing corrupted acted on; the controller got exactly what the limiter produced
    assert c["corrupted_frames_delivered"] == 0
    assert c["servo_commands_mismatched"] == 0 and c["servo_commands_out_of_limits"] == 0
    assert c["servo_commands_over_velocity"] == 0
    # and what it produced is what a fresh limiter makes of the frames the UNIT sent
    assert c["limiter_replay_mismatched"] == 0 and c["frames_checked"] == relay.counts["frames"]
    # the faults happened, and were seen
    for kind in ("bit_flips", "dropped_bytes", "garbage_bytes", "unplugged_bytes"):
        assert faults.counts[kind] > 0, kind
    assert relay.decoder.dropped() > 0
    # nothing stopped: every frame was captured, and every one is accounted for
    n = cap["loop"].frame_index
    assert n == cap["frames_planned"]
    lc = st.counts()
    assert lc["frames_sent"] + lc["frames_skipped"] == n and lc["frames_skipped"] == 0
    lost = st.frames - relay.counts["frames"]
    assert lost >= 30                                            # 1 s at 30 Hz went nowhere
    assert relay.counts["frames"] > 0.35 * st.frames             # the intact ones got through
    # the failsafe engaged while the cable was out and released when frames came back
    assert relay.counts["failsafe_engaged"] >= 1
    assert relay.counts["failsafe_released"] >= 1
    assert cap["twin"].counts["overrun_bytes"] == 0


def test_garbage_only_link_moves_nothing(tmp_path):
    """A link that carries only damage (rate 0.3): whatever is delivered is still exact."""
    faults = LineFaults(rate=0.3, seed=9)
    cap = _run(tmp_path, faults, seconds=1.0)
    c = link_checks(cap)
    assert c["corrupted_frames_delivered"] == 0 and c["servo_commands_mismatched"] == 0
    assert c["limiter_replay_mismatched"] == 0
    assert cap["relay"].decoder.dropped() > 50
    assert cap["relay"].counts["frames"] < 5
