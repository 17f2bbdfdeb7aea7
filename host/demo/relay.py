"""The robot end of the demo's link: packets in, Player + Limiter, vendor bytes out to the servos.

    from host.demo.relay import Relay
    relay = Relay(load_robot("khr17-maestro"), maestro_pty_path)
    relay.feed(link.read_pending(), now_s=t)    # decode; every valid FRAME -> player.send_frame
    relay.poll(now_s=t)                         # failsafe after the robot's timeout without frames
    relay.delivered                             # [(seq, time_us, codes)] frames acted on
    relay.commands                              # [[(channel, units), ...]] every write to the servos

It plays the part of the robot's own computer (or a bridge board): protocol.packets.Decoder
(never delivers a corrupted packet: COBS + CRC-32), the staff header's rows map to servos via
the robot description, device.servo.player.Player limits every command, the vendor driver
(the robot's controller, e.g. Pololu Maestro) writes the bytes. The clock is the caller's
(simulated time), so the failsafe is deterministic. A frame that arrives before any header is
counted (no_header) and not acted on.
"""

import time

from device.servo.drivers import open_driver
from device.servo.player import Player
from protocol import packets as pk, staffcodec


class _Logged:
    """A driver proxy that records every command list whose bytes were written."""

    def __init__(self, driver, log, stamp):
        self._d = driver
        self._log = log
        self._stamp = stamp

    def send_positions(self, cmds):
        self._d.send_positions(cmds)            # OSError propagates: the Player counts it
        self._log.append([(int(c), int(u)) for c, u in cmds])
        self._stamp()

    def __getattr__(self, name):
        return getattr(self._d, name)


class Relay:
    def __init__(self, robot, port, baud=None, mapping=None):
        self.robot = robot
        self.now_s = 0.0
        self.commands = []
        self.written_at = []                    # perf_counter when each command list was written
        raw = open_driver(robot.controller, port, baud=baud or robot.baud, **dict(robot.options))
        self.raw_driver = raw
        self.driver = _Logged(raw, self.commands, lambda: self.written_at.append(time.perf_counter()))
        self.mapping = mapping
        self.decoder = pk.Decoder()
        self.assembler = pk.HeaderAssembler()
        self.header = None
        self.player = None
        self.delivered = []
        self.frame_written_at = {}              # (seq, time_us) -> perf_counter of its servo bytes
        self.counts = {"frames": 0, "no_header": 0, "headers": 0, "failsafe_engaged": 0,
                       "failsafe_released": 0, "bad_frames": 0}
        self._t_prev_us = None

    def _clock(self):
        return self.now_s

    def _on_header(self, h):
        self.counts["headers"] += 1
        if self.header is not None and [r["name"] for r in h["rows"]] == self.names:
            return
        self.header = h
        self.names = [r["name"] for r in h["rows"]]
        self.los = [r["lo"] for r in h["rows"]]
        self.his = [r["hi"] for r in h["rows"]]
        self.bits = h["bits"]
        if self.player is None:
            self.player = Player(self.robot, self.driver, row_names=self.names, mapping=self.mapping,
                                 clock=self._clock, sleep=lambda d: None)
            self.player.start()
        else:
            self.player.bind(self.names, self.mapping)

    def feed(self, data, now_s):
        """Decode the bytes that arrived; act on every valid frame. Returns frames acted on."""
        self.now_s = now_s
        n = 0
        for p in self.decoder.feed(data):
            if p.name == "HEADER":
                try:
                    h = self.assembler.add(p)
                except ValueError:
                    h = None
                if h is not None:
                    self._on_header(h)
            elif p.is_frame():
                n += self._frame(p)
        return n

    def _frame(self, p):
        if self.player is None:
            self.counts["no_header"] += 1
            return 0
        bits, codes = p.frame()
        if bits != self.bits or len(codes) != len(self.names):
            self.counts["bad_frames"] += 1
            return 0
        values = staffcodec.decode_column(codes, self.los, self.his, bits)
        t_us = p.time_us if self._t_prev_us is None else pk.unwrap_time_us(self._t_prev_us, p.time_us)
        self._t_prev_us = t_us
        was = self.player.in_failsafe
        before = len(self.commands)
        self.player.send_frame(values, t_us / 1e6)
        if was and not self.player.in_failsafe:
            self.counts["failsafe_released"] += 1
        self.counts["frames"] += 1
        self.delivered.append((p.seq, p.time_us, codes))
        if len(self.commands) > before:
            self.frame_written_at[(p.seq, p.time_us)] = self.written_at[-1]
        return 1

    def poll(self, now_s):
        self.now_s = now_s
        if self.player is None:
            return False
        was = self.player.in_failsafe
        on = self.player.poll(now_s)
        if on and not was:
            self.counts["failsafe_engaged"] += 1
        return on

    def close(self):
        if self.player is not None:
            self.player.failsafe()
        self.raw_driver.close()

    def summary(self):
        out = dict(self.counts)
        out["decoder_drops"] = dict((k, v) for k, v in self.decoder.drops.items() if v)
        out["decoder_dropped"] = self.decoder.dropped()
        out["seq_gaps"] = self.decoder.gaps
        if self.player is not None:
            st = self.player.stats
            out.update(send_errors=st["send_errors"], failsafes=st["failsafes"],
                       limiter_clamped=self.player.limiter.clamped,
                       limiter_rate_limited=self.player.limiter.rate_limited,
                       servos_driven=len(self.player.rows), mapping=getattr(self.robot, "mapping_used", None))
        out["servo_bytes"] = self.raw_driver.stats["bytes"]
        return out
