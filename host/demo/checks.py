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
            "servo_commands_checked": n, "servo_commands_out_of_limits": out_of_limits,
            "frames_checked": len(relay.delivered)}


def _wire_order(cmds):
    # the Maestro driver sends channels in ascending order (Set Multiple Targets runs)
    return sorted(cmds)
