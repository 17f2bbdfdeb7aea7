"""Checks of the demo's stream, used by the report and the end-to-end tests.

    from host.demo.checks import link_checks
    c = link_checks(cap)      # cap: host.demo.pipeline.capture(...) result
    c["corrupted_frames_delivered"] == 0 and c["servo_commands_mismatched"] == 0

corrupted_frames_delivered: frames the robot end acted on whose codes differ from what the
unit encoded under the same (seq, time_us), or that the unit never sent.
servo_commands_mismatched: commands the emulated controller recorded that differ, in order,
from the commands the Player (after its Limiter) wrote; plus any missing or extra ones.
"""


def link_checks(cap):
    relay, streamer, emu = cap["relay"], cap["streamer"], cap["emulator"]
    corrupted = 0
    for seq, t_us, codes in relay.delivered:
        sent = streamer.sent.get((seq, t_us))
        if sent is None or list(sent) != list(codes):
            corrupted += 1
    written = [c for cmds in relay.commands for c in _wire_order(cmds)]
    recorded = [(s, u) for _t, s, u, _d in emu.timeline]
    n = min(len(written), len(recorded))
    mismatched = sum(1 for i in range(n) if written[i] != recorded[i]) + abs(len(written) - len(recorded))
    servos = relay.robot.servos
    out_of_limits = sum(1 for s, u in recorded
                        if not any(sv.id == s and min(sv.min, sv.max) <= u <= max(sv.min, sv.max)
                                   for sv in servos))
    return {"corrupted_frames_delivered": corrupted, "servo_commands_mismatched": mismatched,
            "limiter_replay_mismatched": limiter_replay(relay, streamer),
            "servo_commands_checked": n, "servo_commands_out_of_limits": out_of_limits,
            "frames_checked": len(relay.delivered)}


def limiter_replay(relay, streamer):
    """Frames whose servo commands differ from a fresh Limiter run over the codes the UNIT sent
    for the delivered frames (so a corrupted frame could not hide behind the relay's own log)."""
    from device.servo.limiter import Limiter
    from protocol import packets as pk, staffcodec
    if relay.player is None:
        return 0
    robot = relay.robot
    lim = Limiter(robot.servos, max_dt_s=2.0 / robot.rate_hz)
    if len(relay.commands) != len(relay.delivered):
        return abs(len(relay.commands) - len(relay.delivered))
    bad, last_t = 0, None
    for (seq, t_us, _codes), cmds in zip(relay.delivered, relay.commands):
        sent = streamer.sent.get((seq, t_us))
        if sent is None:
            bad += 1
            continue
        t = t_us if last_t is None else pk.unwrap_time_us(last_t, t_us)
        # the same float arithmetic as Player.send_frame (t_s - last_t_s), so rounding agrees
        dt = 1.0 / robot.rate_hz if last_t is None else t / 1e6 - last_t / 1e6
        last_t = t
        values = staffcodec.decode_column(sent, relay.los, relay.his, relay.bits)
        deg = lim.step(relay.player.targets(values), dt)
        want = [(s.id, s.to_units(d)) for s, d in zip(robot.servos, deg)]
        bad += sorted(want) != sorted(cmds)
    return bad


def _wire_order(cmds):
    # the Maestro driver sends channels in ascending order (Set Multiple Targets runs)
    return sorted(cmds)
