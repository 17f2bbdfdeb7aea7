"""Checks of the demo's stream, used by the report and the end-to-end tests.

    from host.demo.checks import link_checks
    c = link_checks(cap)      # cap: host.demo.pipeline.capture(...) result
    c["corrupted_frames_delivered"] == 0 and c["servo_commands_mismatched"] == 0

corrupted_frames_delivered: frames the robot end acted on whose codes differ from what the
unit sent under the same (seq, time_us), or that the unit never sent.
servo_commands_mismatched: commands the emulated controller recorded that differ, in order,
from the commands the Player (after its Limiter) wrote; plus any missing or extra ones.
limiter_replay_mismatched: commands that differ from a fresh Limiter run, on the commands' own
send clock, over the codes the UNIT sent for each acted-on frame (and home for failsafe steps),
so a corrupted frame could not hide behind the robot end's own log.
servo_commands_over_velocity: servo moves faster than the velocity limit on the send clock.
"""


def link_checks(cap):
    end, streamer, emu = cap["robot_end"], cap["streamer"], cap["emulator"]
    sent = streamer.link.sent
    delivered = end.delivered
    corrupted = 0
    for key, codes in delivered:
        if sent.get(key) != list(codes):
            corrupted += 1
    written = [c for _t, _k, cmds, _p in end.commands for c in _wire_order(cmds)]
    recorded = [(s, u) for _t, s, u, _d in emu.timeline]
    n = min(len(written), len(recorded))
    mismatched = sum(1 for i in range(n) if written[i] != recorded[i]) + abs(len(written) - len(recorded))
    servos = end.robot.servos
    out_of_limits = sum(1 for s, u in recorded
                        if not any(sv.id == s and min(sv.min, sv.max) <= u <= max(sv.min, sv.max)
                                   for sv in servos))
    return {"corrupted_frames_delivered": corrupted, "servo_commands_mismatched": mismatched,
            "limiter_replay_mismatched": limiter_replay(end, sent),
            "servo_commands_over_velocity": over_velocity(end),
            "servo_commands_checked": n, "servo_commands_out_of_limits": out_of_limits,
            "frames_checked": len(delivered)}


def limiter_replay(end, sent):
    from device.servo.limiter import Limiter
    from protocol import staffcodec
    br = end.bridge
    if br.player is None:
        return 0
    robot = end.robot
    lim = Limiter(robot.servos, max_dt_s=2.0 / robot.rate_hz)
    home = [s.home_deg for s in robot.servos]
    bad, last = 0, br.started_at
    for clock_s, key, cmds, _perf in end.commands:
        dt = clock_s - last                  # the same float arithmetic as Player._command
        last = clock_s
        if key is None:
            deg = lim.step(home, dt, robot.ramp_vel_dps)
        else:
            codes = sent.get(key)
            if codes is None:
                bad += 1
                continue
            values = staffcodec.decode_column(codes, br.los, br.his, br.header["bits"])
            deg = lim.step(br.player.targets(values), dt)
        want = [(s.id, s.to_units(d)) for s, d in zip(robot.servos, deg)]
        bad += sorted(want) != sorted(cmds)
    return bad


def over_velocity(end):
    """Servo moves above max_vel_dps on the send clock (+1 unit of rounding)."""
    servos = dict((s.id, s) for s in end.robot.servos)
    last, bad = {}, 0
    for clock_s, _key, cmds, _perf in end.commands:
        for sid, u in cmds:
            if sid in last:
                t0, u0 = last[sid]
                s = servos[sid]
                if abs(u - u0) > s.max_vel_dps * (clock_s - t0) * abs(s.units_per_deg) + 1:
                    bad += 1
            last[sid] = (clock_s, u)
    return bad


def _wire_order(cmds):
    # the Maestro driver sends channels in ascending order (Set Multiple Targets runs)
    return sorted(cmds)
