"""The robot end of the live link when the robot has a computer (or a bridge board) and a vendor
servo controller: link packets in, Player (limits, velocity in wall time, failsafe) out.

    from device.servo.bridge import LinkBridge
    br = LinkBridge(robot, driver, clock=time.monotonic)
    reply = br.feed(bytes_from_the_link)    # frames -> player.send_frame; REQUESTs to send back
    br.poll()                               # failsafe after the robot's timeout without frames
    br.counts                               # frames, headers, no_header, wrong_rows, ...

The same rules as the receiver firmware (device/firmware/receiver.py): protocol.packets.Decoder
(COBS + CRC-32: never a corrupted packet), the compact link header by id (HeaderAssembler:
spliced or damaged headers are counted, never raised; a valid header whose rows drive none
of the robot's servos is counted in unusable_headers and its frames never mapped), a frame
with every value missing is the sender's torque off (Player.failsafe("torque_off"), whatever
header is held), a frame whose row count or bit depth is not the header's is dropped and
counted, and a frame that cannot be mapped makes it ask for the header (a REQUEST, at most every 0.1 s: about one header's line time at 115200 baud). Every decoded frame goes to Player.send_frame, whose
Limiter keeps every command inside the servos' limits and velocity limits on the clock.
With stale_s (the robot ends of host/robot_link.py: 0.1 s) a frame read in the same feed() as
one more than stale_s newer (media time) is counted in superseded and never acted on: a burst
(a link catching up, a reader that stalled) costs the retargets and commands of its last stale_s,
not of every frame in it, and plays no motion already past.
`last_key`/`last_codes` are (seq, time_us) and the codes of the frame being acted on while its
command is written (None for a failsafe step).

    br = LinkBridge(op3, driver, retarget=make_retargeter, bus_imu=True)
    br.power_up(sleep)                      # switched on: home, torque on, until its IMU is up
    # make_retargeter(row names, imu) -> r; imu() is the robot's own IMU read on its servo bus
    # (device/servo/opencr.py: the OP3's OpenCR board, one READ per call on this driver):
    # (up, rate rad/s, specific force g, the bridge's clock at the read s), or None without
    # bus_imu; r.tick(now_s) between frames is the balance loop (poll calls it)

With bus_imu the IMU is the one a robot has: its board answers on the same bus as the servos,
each read takes its bytes' time on the line (budgeted at imu_hz, the balance loop's rate:
device/servo/linebudget.py), and a read that fails is None to the retargeter (its feedback
skips that tick). Until the board has given one good reading (it is silent for about 2.9 s
after power-up: its gyro calibration) the robot stands at home with torque on and the frames
are not played (counted imu_wait; one probe of the board a feed). A robot whose description names no IMU is a ValueError at construction.
"""

import time

from device.servo.player import Player
from protocol import packets as pk, staffcodec


class LinkBridge:
    def __init__(self, robot, driver, clock=None, mapping=None, request_s=0.1, retarget=None,
                 bus_imu=False, imu_hz=200.0, stale_s=None):
        self.robot = robot
        # stale_s: a frame more than this older than the newest one of the same feed() is checked
        # and counted as superseded, never retargeted nor sent (None: every frame acted on)
        self.stale_s = stale_s
        # retarget(row names, imu) -> r: r.servo_names, r.step(values, t_s), optional r.tick(now)
        # between frames and r.idle() after a frame's send; None: the row map;
        # ValueError: rows it cannot use (an unusable header)
        self.retarget = retarget
        self.retargeter = None
        self.bus_imu = None
        if bus_imu:
            from device.servo.opencr import imu_reader
            self.bus_imu = imu_reader(robot, driver, imu_hz)
        self.driver = driver
        self.clock = clock or time.monotonic
        self.mapping = mapping
        self.request_s = request_s
        self.decoder = pk.Decoder()
        self.assembler = pk.HeaderAssembler()
        self.enc = pk.Encoder(clock_us=lambda: int(self.clock() * 1e6))
        self.header = None
        self.player = None
        self.last_key = None
        self.last_codes = None
        self._last_request = None
        self._t_prev_us = None
        self._unusable_id = None
        self.counts = {"frames": 0, "headers": 0, "no_header": 0, "wrong_rows": 0,
                       "requests": 0, "failsafe_engaged": 0, "failsafe_released": 0,
                       "torque_off": 0, "unusable_headers": 0, "tick_errors": 0,
                       "retarget_errors": 0, "superseded": 0, "imu_wait": 0}

    def _on_header(self, h):
        self.counts["headers"] += 1
        if self.header is not None and h["id"] == self.header["id"] or h["id"] == self._unusable_id:
            return
        names = [r["name"] for r in h["rows"]]
        try:
            self.robot.row_map(names, self.mapping)
        except ValueError:
            # a valid header whose rows drive none of this robot's servos (another robot's):
            # counted; its frames are never mapped (not onto the rows held before either)
            self.counts["unusable_headers"] += 1
            self._unusable_id = h["id"]
            self.header = None
            return
        mapping = self.mapping
        retargeter = None
        if self.retarget is not None:
            # the rows are the person's: the retargeter turns each frame into the servos' angles
            # (None: rows it leaves to the row map, e.g. the servos' own; ValueError: rows it
            # cannot use, counted like another robot's header and never mapped)
            try:
                retargeter = self.retarget(names, self._imu if self.bus_imu is not None else None)
            except ValueError:
                self.counts["unusable_headers"] += 1
                self._unusable_id = h["id"]
                self.header = None
                self.retargeter = None
                return
            if retargeter is not None:
                names, mapping = retargeter.servo_names, "servo"
        self.retargeter = retargeter
        self._unusable_id = None
        self.header = h
        self.los = [r["lo"] for r in h["rows"]]
        self.his = [r["hi"] for r in h["rows"]]
        if self.player is None:
            self.started_at = self.clock()
            self.player = Player(self.robot, self.driver, row_names=names, mapping=mapping,
                                 clock=self.clock, sleep=lambda d: None)
            self.player.start()
        else:
            self.player.bind(names, mapping)

    def power_up(self, sleep):
        """The robot end switched on before its link: torque on at home (a Player on the
        robot's own servos, rebound to the stream's rows at its header), standing until its bus
        IMU board answers and the standing reference is taken (sleep(s) lets the robot's time
        pass: the OpenCR is silent about 2.9 s after power-up). True when ready (no bus IMU:
        at once); until the first frame the robot stands by at home (poll)."""
        if self.player is None:
            self.started_at = self.clock()
            self.player = Player(self.robot, self.driver, row_names=[sv.name for sv in self.robot.servos],
                                 mapping="servo", clock=self.clock, sleep=lambda d: None)
            self.player.start()
        self._standing_by = True
        if self.bus_imu is None:
            return True
        return self.bus_imu.wait_ready(sleep, stand=self.player.stand_by)

    _standing_by = False
    _at_home = False        # the last stand_by() found the robot at home
    _probed = False         # the board not ready was asked in this feed()

    def _imu(self):
        """The robot's IMU now, read on its bus: (up, rate rad/s, specific force g) in the torso
        frame and the clock at the read (s: the host's attitude filter integrates the gyro over
        it); a read that failed raises ValueError (the retargeter's feedback skips that tick)."""
        s = self.bus_imu.timed(self.clock)
        if s is None:
            raise ValueError("the bus IMU did not answer")
        return s

    def _request(self, out):
        now = self.clock()
        if self._last_request is None or now - self._last_request >= self.request_s:
            self._last_request = now
            hid, missing = self.assembler.wanted(self.header["id"] if self.header is not None else 0)
            out.append(self.enc.request_header(hid, missing))
            self.counts["requests"] += 1

    def feed(self, data):
        """Decode the bytes that arrived and act on every valid frame (with stale_s: every one
        within stale_s of the newest); returns the bytes to send back."""
        out = []
        self._probed = False
        packets = self.decoder.feed(data)
        newest_us = None
        if self.stale_s is not None:
            t = self._t_prev_us
            for p in packets:
                if p.is_frame():
                    t = p.time_us if t is None else pk.unwrap_time_us(t, p.time_us)
            newest_us = t
        for p in packets:
            if p.name == "HEADER":
                h = self.assembler.add(p)
                if h is not None:
                    self._on_header(h)
            elif p.is_frame():
                self._frame(p, out, newest_us)
        return b"".join(out)

    def _frame(self, p, out, newest_us=None):
        bits, codes = p.frame()
        if all(c is None for c in codes):
            # every value missing: the sender's torque off (SPEC 2), obeyed like the firmware
            # does, whatever header we hold (it has no value to map)
            self.counts["torque_off"] += 1
            pl = self.player
            if pl is not None and not (pl.in_failsafe and
                                       getattr(pl, "failsafe_action", None) == "torque_off"):
                pl.failsafe("torque_off")
            return
        if self.bus_imu is not None and not self.bus_imu.ready and self.player is not None:
            if self.player.in_failsafe:
                # a frame ends a failsafe as any frame does (a torque off that came before the
                # board was up: the robot stands again, torque on at home, not limp for ever:
                # stand_by does nothing in a failsafe, so the reference was never taken)
                self.player.resume()
                self.counts["failsafe_released"] += 1
            # the robot stands (torque on, home) until its board answers: the OpenCR is silent
            # for about 2.9 s after power-up (its gyro calibration), and the balance needs it
            # (ROBOTIS' framework waits for it too); one probe a feed, not the silent backoff
            # (its read counts for the standing reference once the robot stood at home): a
            # silent board's read waits its packet timeout (34 ms at 1 Mbaud, a frame's period
            # at 30 fps), and the frames that came meanwhile come in one feed after it
            if not self._probed:
                self._probed = True
                self.bus_imu.stand_sample(self._at_home)
            if not self.bus_imu.ready:
                self.counts["imu_wait"] += 1
                self._at_home = self.player.stand_by()
                return
            self.bus_imu.quiet = 0
        if self.player is None or self.header is None:
            self.counts["no_header"] += 1
            if self._unusable_id is None:       # (the sender's header is known not to fit)
                self._request(out)
            return
        if bits != self.header["bits"] or len(codes) != len(self.los):
            self.counts["wrong_rows"] += 1
            self._request(out)
            return
        t_s = self._media_s(p.time_us)
        if newest_us is not None and newest_us - self._t_prev_us > self.stale_s * 1e6:
            # a frame more than stale_s newer came in the same bytes (a burst: a link catching
            # up, a stalled reader): retargeting and sending each one would hold the loop, its
            # balance ticks and failsafe for their sum, and play motion already past
            self.counts["superseded"] += 1
            return
        values = staffcodec.decode_column(codes, self.los, self.his, bits)
        if self.retargeter is not None:
            try:
                values = self.retargeter.step(values, t_s)
            except Exception:
                # a frame the retargeter cannot take (a bug, a degenerate pose): dropped and
                # counted; the robot's loop goes on and the failsafe's timeout still runs
                self.counts["retarget_errors"] += 1
                return
        was = self.player.in_failsafe
        self.last_key = (p.seq, p.time_us)
        self.last_codes = codes
        try:
            self.player.send_frame(values, t_s)
        finally:
            self.last_key = None
            self.last_codes = None
        idle = getattr(self.retargeter, "idle", None)
        if idle is not None:
            # the retargeter's bookkeeping, once the frame's bytes are out (a failure there is
            # a tick error's kind: counted, the loop goes on)
            try:
                idle()
            except Exception:
                self.counts["tick_errors"] += 1
        if was and not self.player.in_failsafe:
            self.counts["failsafe_released"] += 1
        self.counts["frames"] += 1

    def _media_s(self, t24):
        t = t24 if self._t_prev_us is None else pk.unwrap_time_us(self._t_prev_us, t24)
        self._t_prev_us = t
        return t / 1e6

    def poll(self):
        """The failsafe (and a home move's next step); True while it is engaged."""
        if self.player is None:
            return False
        if self._standing_by:
            # powered up, no frame yet: the robot holds home (no stream has stopped yet)
            if not self.counts["frames"]:
                self._at_home = self.player.stand_by()
                return False
            self._standing_by = False
        was = self.player.in_failsafe
        on = self.player.poll()
        if on and not was:
            self.counts["failsafe_engaged"] += 1
        # a retargeter with its own control loop (the live balance's IMU feedback) updates the
        # servos between frames; the limiter stays the last word, the failsafe is left alone
        # (a tick that raises is counted and skipped: the robot's loop, and with it the
        # failsafe's timeout, must outlive a bad IMU sample or a solver error)
        tick = getattr(self.retargeter, "tick", None)
        if tick is not None and not on:
            try:
                values = tick(self.clock())
            except Exception:
                self.counts["tick_errors"] += 1
                values = None
            if values is not None:
                self.player.update(values)
        return on

    def close(self):
        if self.player is not None:
            self.player.failsafe()

    def summary(self):
        out = dict(self.counts)
        out["decoder_drops"] = dict((k, v) for k, v in self.decoder.drops.items() if v)
        out["decoder_dropped"] = self.decoder.dropped()
        out["seq_gaps"] = self.decoder.gaps
        a = self.assembler
        out["bad_headers"] = a.bad + a.restarts + a.too_big
        if self.bus_imu is not None:
            out["imu_reads"] = dict(self.bus_imu.stats)
        if self.player is not None:
            st = self.player.stats
            out.update(send_errors=st["send_errors"], failsafes=st["failsafes"],
                       power_lost=st["power_lost"], power_restored=st["power_restored"],
                       servos_silent=st["servos_silent"], shutdowns=st["shutdowns"],
                       limiter_clamped=self.player.limiter.clamped,
                       limiter_rate_limited=self.player.limiter.rate_limited,
                       servos_driven=len(self.player.rows),
                       mapping=getattr(self.robot, "mapping_used", None))
        return out
