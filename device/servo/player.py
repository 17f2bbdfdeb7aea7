"""Playback pipeline: frames (joint degrees by staff row) -> Limiter -> driver, with failsafe.

    from device.servo.player import Player
    player = Player(robot, driver, row_names=staff_row_names)   # picks the row mapping
    player.start()                          # driver.start, watchdog, limiter at home/current pose
    player.ramp_to(first_values)            # slow approach to the first frame (ramp velocity)
    player.send_frame(values, t_s)          # values: sequence by row (NaN = missing) or {row: deg}
    player.poll(now_s)                      # call often: engages the failsafe after the timeout
    player.failsafe()                       # hold / home / torque off, as the robot says
    summary = player.play(staff, speed=1.0) # paced by absolute deadlines (host/commands/play.py)

The live capture loop uses the same send_frame()/poll()/failsafe(). Nothing a frame contains
can leave a servo's limits or exceed its velocity limit (device/servo/limiter.py), in the time
the commands are *sent*: every step's dt is the player's clock (wall time, injectable) since the
previous command, never the frames' media time, so a burst of frames (a link catching up, a
stalled reader) cannot turn into a fast move. The "home" failsafe moves one limited step per
poll() at ramp_vel_dps, in the same wall time, until the servos are home. A driver that makes
each command a timed move (time_ms: LX-16A MOVE_TIME) bounds dt by time_ms too, so a step never
asks the servo for more than its velocity limit in its own time. A clock that steps back counts
as no time passing (the failsafe's timeout runs on from there). update() (a balance loop between
frames) goes through the same limiter and sends nothing while a failsafe is engaged; a torque
off stays off through any later failsafe until a frame comes.

A robot whose servos lose their power (a battery swapped with the USB adapter plugged in, a
loose lead, a brownout: servos at stall sag the battery until they reset) comes back limp with
its RAM at defaults, and sync writes have no replies to say so. With a driver that can read
Torque Enable (Dynamixel, Feetech; the LX-16A's load state: read_torque_enabled) the player
asks one servo (in turn) every probe_s (device/servo/linebudget.py probe_budget: 0.1 s, what
the line leaves beside the frames): no answer from it and from the next servo, or torque off
when it should be on (a command sent since the set-up: an LX-16A loads with its first move), is
a power loss, found within probe_s plus two read timeouts of the cut (plus the command it waits
for). A servo silent while the next answers with its torque on is silent alone (a lead off, a wrong id): said once (stats servos_silent), played
on, and left out of the positions the set-up after a cut waits for. It is said once
(notify: a line on stderr), counted (stats power_lost), and nothing more is sent: a goal sent
to a rebooted Feetech would snap it on at full speed. Every probe_s after, while it is off, a
probe; when the servo answers and every servo's position reads, the robot is set up again
(Driver.start: torque on, profile; the Bus Watchdog armed again with the next command), the
limiter starts at the read positions and the stream is ramped to at ramp.max_vel_dps (never a
jump), counted in power_restored. A PWM servo (Maestro, SSC-32, PCA9685) has no feedback:
nothing can tell a cut; its power back, it jumps at full speed to the pulse still sent.
"""

import sys
import time

from device.servo.limiter import Limiter, _finite

# a gap between two commands longer than this share of the watchdog's timeout arms it again
# (it trips at its 20 ms unit's rounding of the timeout; other packets on the bus may have fed it)
REARM_GAP = 0.75
# the ramp after a power cut lasts the first gap's time at ramp velocity and this much more
RECOVER_EXTRA_S = 0.5


def _probe_s(robot):
    """The power probe's period (s) the robot's line allows (linebudget.probe_budget), or
    POWER_PROBE_S for a robot that cannot say (a description without a controller)."""
    from device.servo import linebudget
    try:
        b = linebudget.probe_budget(robot)
    except Exception:
        return linebudget.POWER_PROBE_S
    return linebudget.POWER_PROBE_S if b is None else b["probe_s"]


HARDWARE_ERRORS = ((0x01, "input voltage"), (0x04, "overheating"), (0x08, "motor encoder"),
                   (0x10, "electrical shock"), (0x20, "overload"))


def _hardware_error_names(bits):
    """'overload, overheating' for a Dynamixel's Hardware Error Status bits."""
    names = [n for b, n in HARDWARE_ERRORS if bits & b]
    return ", ".join(names) if names else "unknown"


def _stderr(msg):
    print(msg, file=sys.stderr)


class Player:
    def __init__(self, robot, driver, row_names=None, mapping=None, clock=None, sleep=None,
                 notify=None):
        self.robot = robot
        self.driver = driver
        self.clock = clock or time.monotonic
        self._sleep = sleep or time.sleep
        self.notify = notify or _stderr       # one line: the power lost, the power back
        self.servos = robot.servos
        self.period_s = 1.0 / robot.rate_hz
        self.max_dt_s = 2.0 / robot.rate_hz
        self.limiter = Limiter(self.servos, max_dt_s=self.max_dt_s)
        self.rows = None
        if row_names is not None:
            self.bind(row_names, mapping)
        self.last_t = None
        self.last_frame_clock = None
        self.in_failsafe = False
        self.watchdog = False
        self.watchdog_s = None                # the controller's watchdog timeout as armed (s)
        self.stats = {"frames": 0, "sent": 0, "late": 0, "skipped": 0, "failsafes": 0,
                      "send_errors": 0, "ramp_frames": 0, "power_probes": 0, "power_lost": 0,
                      "power_restored": 0, "unpowered": 0, "servos_silent": 0,
                      "servos_shut_down": 0, "shutdowns": 0}
        # the power probe (read_torque_enabled: a bus servo's driver), one servo a probe
        self._probe = getattr(driver, "read_torque_enabled", None)
        self.probe_s = _probe_s(robot) if self._probe is not None else None
        self.power_lost = False
        self.power_lost_at = None             # the player's clock when the loss was found
        self._last_probe = None
        self._probe_k = 0
        self._silent = set()                  # servos silent while another answered (not a cut)
        self._shut = set()                    # servos that shut themselves down (a hardware error)
        self._hw = getattr(driver, "read_hardware_error", None)
        self._said_silent = set()
        self._moved = False                   # a command sent since the last set-up (start)
        self._started = False
        self._recovering = False              # ramping to the stream after the power came back
        self._recover_end = None
        self.last_units = None
        self._last_hb_s = -1e9
        self._raw_prev = None
        self._back_s = 0.0
        self._mono = 0.0
        self._last_cmd_clock = self._now()    # when the last command was sent (the limiter's dt)
        self._homing = False
        self._torque_pending = False
        self._rearm = False                   # the watchdog to arm again (a failed re-arm)
        if hasattr(driver, "time_ms") and not driver.time_ms:
            # LX-16A MOVE_TIME / SSC-32 T: spread each step over one frame period
            driver.time_ms = int(1000 * self.period_s + 0.5)
        if getattr(driver, "time_ms", 0):
            # the servo executes each step over time_ms (its own clock): a step may be at most
            # max_vel * time_ms, whatever time passed since the previous command
            self.max_dt_s = min(self.max_dt_s, driver.time_ms / 1000.0)
            self.limiter = Limiter(self.servos, max_dt_s=self.max_dt_s)

    def _now(self, raw=None):
        """The player's time: the clock's forward steps summed, so a clock that steps back (an
        injected one; a wall clock set back) counts as no time passing, not as a pause that ends
        only when it catches up (which would hold the failsafe off, or let the limiter take the
        step back as a step forward later)."""
        raw = self.clock() if raw is None else raw
        try:
            raw = float(raw)
        except (TypeError, ValueError):
            return self._mono
        if raw != raw or raw in (float("inf"), float("-inf")):
            return self._mono
        if self._raw_prev is not None and raw < self._raw_prev:
            self._back_s += self._raw_prev - raw      # the clock's steps back, summed
        self._raw_prev = raw
        # (a clock that never steps back: the clock's own reading, to the bit)
        self._mono = raw + self._back_s
        return self._mono

    def bind(self, row_names, mapping=None):
        self.row_names = list(row_names)
        self.rows = self.robot.row_map(self.row_names, mapping)
        self._row_index = dict((n, i) for i, n in enumerate(self.row_names))

    # --- setup ---------------------------------------------------------------------------------
    def start(self, current_deg=None):
        """Prepare the controller; the limiter starts at the current pose (if read) or home."""
        self.driver.start([(s.id, s) for s in self.servos])
        if current_deg is None and self.robot.ramp_from == "current":
            current_deg = self._read_current()
        if current_deg is not None:
            self.limiter = Limiter(self.servos, start_deg=current_deg, max_dt_s=self.max_dt_s)
        if self.robot.use_watchdog:
            armed = self.driver.set_watchdog(self.robot.failsafe_timeout_s)
            self.watchdog = bool(armed)
            # the controller's own timeout, as armed (a Dynamixel's: 20 ms units, at most 2.54 s)
            if self.watchdog and not isinstance(armed, bool):
                self.watchdog_s = float(armed)
        self.last_frame_clock = self._last_cmd_clock = self._now()
        self._started = True
        self._moved = False

    def _read_current(self):
        read = getattr(self.driver, "read_position", None)
        if read is None:
            return None
        out = []
        for s in self.servos:
            try:
                u = read(s.id)
            except OSError:
                u = None
            out.append(None if u is None else s.to_deg(u))
        return out

    # --- frames --------------------------------------------------------------------------------
    def targets(self, values):
        """Servo target degrees (None = no value) from a row-ordered sequence or {row: deg}."""
        out = [None] * len(self.servos)
        if isinstance(values, dict):
            get = lambda ri: values.get(self.row_names[ri])
        else:
            get = lambda ri: values[ri] if ri < len(values) else None
        for si, ri, scale, off in self.rows:
            v = get(ri)
            try:
                out[si] = None if v is None else float(v) * scale + off
            except (TypeError, ValueError):
                out[si] = None
        return out

    # --- the servos' power --------------------------------------------------------------------
    def _ask(self, sid):
        """Torque Enable of servo sid: 1, 0 or None (no answer); OSError: the port failed (a
        write timeout, its adapter unplugged: the bus, not the servos' power)."""
        self.stats["power_probes"] += 1
        return self._probe(sid)

    def _power_ok(self):
        """True when commands may go out: no probe due, or the servo asked has its torque on;
        False while the power is off (found now, or before and not back yet)."""
        if self._probe is None or not self._started or self._restart:
            return True
        if self.in_failsafe and getattr(self, "failsafe_action", None) == "torque_off":
            return True                       # (the torque is off on purpose: nothing to ask)
        now = self._now()
        if self._last_probe is not None and now - self._last_probe < self.probe_s:
            return not self.power_lost
        self._last_probe = now
        sid = self.servos[self._probe_k % len(self.servos)].id
        self._probe_k += 1
        try:
            if self.power_lost:
                return self._power_back(sid)
            if sid in self._shut:
                hw = self._hardware_error(sid)
                if hw:
                    return True               # (still shut down: it says nothing of the power)
                if hw == 0:
                    # cleared (rebooted, power-cycled): its torque off is then a power loss
                    # below, and the set-up after it turns it on again, ramped
                    self._shut.discard(sid)
                    self.stats["servos_shut_down"] = len(self._shut)
            r = self._ask(sid)
            if r is None and sid in self._silent:
                return True                   # (silent alone before: the others were asked)
            if r is None:
                # another servo asked (two read timeouts in a cut, as asking this one twice):
                # one that answers with its torque on says the power is there, and this one's
                # reply was lost (asked again) or it is silent alone (a lead off, a wrong id:
                # left out, never a robot stopped for good)
                # (one shut down last: its torque off says nothing of the power, its hardware
                # error still set says the power is there, never cycled)
                others = [x.id for x in self.servos[self._probe_k % len(self.servos):] + self.servos
                          if x.id != sid and x.id not in self._silent]
                others.sort(key=lambda x: x in self._shut)
                other = others[0] if others else None
                r = self._ask(other) if other is not None else None
                if r == 0 and other in self._shut:
                    hw = self._hardware_error(other)
                    if hw:
                        r = 1
                    elif hw == 0:
                        self._shut.discard(other)     # (cleared: its torque off a loss, below)
                        self.stats["servos_shut_down"] = len(self._shut)
                again = self._ask(sid) if r else None
                if r and again == 0 and self._moved:
                    r = 0                     # (this one answers now: its torque off, below)
                elif r:
                    if again is None:
                        self._silent.add(sid)
                        self.stats["servos_silent"] = len(self._silent)
                    if sid in self._silent and sid not in self._said_silent:
                        self._said_silent.add(sid)        # (once a servo: a noisy line)
                        self.notify("motionstaff: servo %d does not answer (servo %d does, %s): "
                                    "not a power cut; played on without it"
                                    % (sid, other, "shut down" if other in self._shut else "torque on"))
                    return True
                elif r is not None:
                    sid = other               # (its torque off: the servo the line names)
            elif sid in self._silent:
                self._silent.discard(sid)     # answering again (torque off: a cut, below)
                self.stats["servos_silent"] = len(self._silent)
        except OSError:
            # a port that fails says nothing of the power: a send error, as a position's
            self.stats["send_errors"] += 1
            return not self.power_lost
        if r or (r == 0 and not self._moved):
            # (torque off before any command since the set-up: a driver whose start does not
            # turn it on, the LX-16A's, loads its motors with the first move)
            return True
        if r == 0 and sid in self._shut:
            # (its hardware error unread: a lost reply; it answers, so it is powered, still
            # shut down as far as anyone knows: asked again at its next probe)
            return True
        if r == 0:
            hw = self._hardware_error(sid)
            if hw:
                # the servo shut itself down (overload, overheating, its supply's voltage): not
                # a power cut; its torque stays off until it is rebooted or power-cycled (never
                # done here: an overloaded servo re-armed at once overloads again), the rest
                # play on; said once a shutdown
                self._shut.add(sid)
                self.stats["servos_shut_down"] = len(self._shut)
                self.stats["shutdowns"] += 1
                self.notify("motionstaff: servo %d shut itself down (hardware error 0x%02x: %s); its "
                            "torque stays off until it is rebooted or power-cycled; played on without it"
                            % (sid, hw, _hardware_error_names(hw)))
                return True
        self.power_lost = True
        self.power_lost_at = now
        self.stats["power_lost"] += 1
        self.notify("motionstaff: servo %d %s: the servos' power looks cut (limp, or rebooted with "
                    "their settings lost); nothing is sent, asking every %g s"
                    % (sid, "does not answer" if r is None else "reads torque off", self.probe_s))
        return False

    def _hardware_error(self, sid):
        """Servo sid's hardware error bits (0: none), None (no answer, no such register, the
        port failed)."""
        if self._hw is None:
            return None
        self.stats["power_probes"] += 1
        try:
            return self._hw(sid)
        except OSError:
            self.stats["send_errors"] += 1
            return None

    def _power_back(self, sid):
        """The power may be back: servo sid answers and every position reads -> set up again
        (Driver.start: torque on, profile; the watchdog with the next command), the limiter
        at the read pose, the stream ramped to. True once done."""
        if self._ask(sid) is None:
            return False
        cur = self._read_current()
        if cur is None or any(v is None and s.id not in self._silent for v, s in zip(cur, self.servos)):
            return False                      # (some still booting: the next probe)
        # a servo silent alone before the cut: where it was last sent (it is not there to move)
        cur = [self.limiter.pos[i] if v is None else v for i, v in enumerate(cur)]
        self.driver.start([(s.id, s) for s in self.servos])
        self._moved = False
        # (a servo shut down stays in _shut: its next probe reads its hardware error, cleared by
        # a power cycle -> left out of it; still set (one servo rebooted, not the power cut) ->
        # not found and said a second time)
        self.limiter = Limiter(self.servos, start_deg=cur, max_dt_s=self.max_dt_s)
        self._last_cmd_clock = self._now()
        self._rearm = self.watchdog
        self._recovering = True
        self._recover_end = None
        self.power_lost = False
        self.stats["power_restored"] += 1
        self.notify("motionstaff: the servos answer again after %.2f s: torque on, set up again, "
                    "ramping from where they are at %g deg/s"
                    % (self._now() - self.power_lost_at, self.robot.ramp_vel_dps))
        return True

    def _command(self, targets_deg, vel_limit_dps=None):
        if not self._power_ok():
            # the servos unpowered: nothing sent (the limiter holds; it starts again at the
            # read pose when the power is back)
            self.stats["unpowered"] += 1
            return list(self.limiter.pos)
        now = self._now()
        if self._recovering:
            # back from a power cut: from the read pose to the stream at the ramp velocity,
            # until it is caught or for as long as the first gap takes at that velocity (and
            # RECOVER_EXTRA_S: a stream moving away faster than the ramp is caught at the
            # servos' own velocity limits then, not lagged behind for ever)
            if self._recover_end is None:
                gap = max([abs(t - q) for t, q in zip(targets_deg, self.limiter.pos)
                           if _finite(t)] or [0.0])
                self._recover_end = now + gap / self.robot.ramp_vel_dps + RECOVER_EXTRA_S
            if now > self._recover_end:
                self._recovering = False
            else:
                vel_limit_dps = self.robot.ramp_vel_dps if vel_limit_dps is None \
                    else min(vel_limit_dps, self.robot.ramp_vel_dps)
        # dt: wall time since the previous command went out (the first: one period)
        dt = now - self._last_cmd_clock
        self._last_cmd_clock = now
        if self.watchdog and (self._rearm or dt > REARM_GAP * (self.watchdog_s or self.robot.failsafe_timeout_s)):
            # the controller's watchdog armed again: after a failsafe, or a gap in the commands
            # long enough that it may have tripped (a host that stalled between two frames: a
            # tripped XM430 refuses every goal until re-armed). A bus that fails here (a write
            # timeout, its adapter unplugged) is a send error like a position's, tried again
            # with the next command
            try:
                self.driver.set_watchdog(self.robot.failsafe_timeout_s)
                self._rearm = False
            except OSError:
                self._rearm = True
                self.stats["send_errors"] += 1
        deg = self.limiter.step(targets_deg, dt, vel_limit_dps)
        if self._recovering and self.limiter.at(targets_deg):
            self._recovering = False
        cmds = [(s.id, s.to_units(d)) for s, d in zip(self.servos, deg)]
        try:
            self.driver.send_positions(cmds)
            self.stats["sent"] += 1
            self._moved = True
        except OSError:
            # nothing went out: the bus may fall silent for the watchdog, arm it again next
            self.stats["send_errors"] += 1
            self._rearm = self.watchdog
        self.last_units = cmds
        return deg

    def send_frame(self, values, t_s=None):
        """One frame of joint degrees (by staff row) to the robot; returns servo degrees sent."""
        if self.rows is None:
            if not isinstance(values, dict):
                raise ValueError("Player: give row_names (or bind()) before sending a sequence")
            self.bind(list(values))
        now = self._now()
        self.last_t = now if t_s is None else t_s       # media time: reported, not used for dt
        self.last_frame_clock = now
        self.resume()
        self._restart_if_due()
        self.stats["frames"] += 1
        return self._command(self.targets(values))

    def resume(self):
        """End an engaged failsafe as a frame does: the watchdog to arm again and, after a
        torque off, the controller set up again (torque on, profile: Driver.start) before the
        next command; a servo limp since the torque off holds where it is, the limiter
        starting there where the servos can be read. No-op when none is engaged."""
        if not self.in_failsafe:
            return
        self.in_failsafe = False
        self._homing = False
        self._torque_pending = False
        self._rearm = self.watchdog
        if getattr(self, "failsafe_action", None) == "torque_off":
            self._restart = True
        self.failsafe_action = None

    def restart(self):
        """Set the controller up again before the next command (a servo bus reopened: its
        servos powered down with it, torque off, profile and watchdog lost)."""
        self._restart = True
        self._rearm = self.watchdog

    _restart = False

    def _restart_if_due(self):
        """A restart that is due, before a command; a bus that fails here
        (a write timeout, its adapter unplugged) is a send error like a position's, and tried
        again at the next one."""
        if self._restart:
            try:
                self.driver.start([(s.id, s) for s in self.servos])
                self._restart = False
                self._moved = False
            except OSError:
                self.stats["send_errors"] += 1
                return
            cur = self._read_current()
            if cur is not None and any(v is not None for v in cur):
                # a servo whose position did not read: where it was last sent, not home (the
                # limiter at home would send home at once, at the servo's own speed)
                cur = [self.limiter.pos[i] if v is None else v for i, v in enumerate(cur)]
                self.limiter = Limiter(self.servos, start_deg=cur, max_dt_s=self.max_dt_s)
        # (the watchdog's re-arm, if due, goes with the next command: _command)

    def stand_by(self):
        """Hold home with torque on while the robot end is not ready to play (its IMU board not
        up yet): a command of home through the limiter (ramped), and the robot end alive for
        the failsafe's timeout as a frame is. True once the limiter is at home (the robot
        standing there: its IMU's standing reference may be taken); nothing, False, while a
        failsafe is engaged."""
        if self.in_failsafe:
            return False
        self._restart_if_due()
        self.last_frame_clock = self._now()
        home = [s.home_deg for s in self.servos]
        self._command(home, self.robot.ramp_vel_dps)
        return self.limiter.at(home)

    def update(self, values):
        """A correction between frames (a robot's own balance loop, e.g. host/retarget/live.py
        tick): through the same limiter, but no frame: it neither feeds the failsafe's timeout
        nor releases it (None, nothing sent, while it is engaged)."""
        if self.rows is None or self.in_failsafe:
            return None
        return self._command(self.targets(values))

    def ramp_to(self, values, timeout_s=30.0, tol_deg=0.5):
        """Move slowly (ramp max_vel_dps) from the limiter's pose to the frame's targets."""
        tg = self.targets(values)
        n = int(timeout_s * self.robot.rate_hz)
        deadline = self.clock()
        for _ in range(n):
            if self.limiter.at(tg, tol_deg):
                break
            self._command(tg, self.robot.ramp_vel_dps)
            self.stats["ramp_frames"] += 1
            deadline += self.period_s
            self._sleep_until(deadline)
        self.last_t = None
        self.last_frame_clock = self._now()

    # --- failsafe -------------------------------------------------------------------------------
    def poll(self, now_s=None):
        """Engage the failsafe when no frame came for failsafe_timeout_s; True if it is engaged."""
        now = self._now(now_s)
        hb = getattr(self.driver, "heartbeat", None)
        if hb is not None and now - self._last_hb_s >= 0.5:
            self._last_hb_s = now
            try:
                hb(int(now * 1000), 2 if self.in_failsafe else 1)
            except OSError:
                self.stats["send_errors"] += 1
        if not self.in_failsafe and self.last_frame_clock is not None \
                and now - self.last_frame_clock > self.robot.failsafe_timeout_s:
            self.failsafe()
        elif self.in_failsafe:
            self._failsafe_step()
        return self.in_failsafe

    def _torque_off(self):
        ok = self.driver.torque_off([s.id for s in self.servos])
        # a driver that may find its line full (Native) says so; the others cannot retry
        return ok if getattr(self.driver, "TORQUE_OFF_RETRY", False) else True

    def _failsafe_step(self):
        # an engaged failsafe that is not done yet: one home step, or torque off again
        try:
            if self._homing:
                home = [s.home_deg for s in self.servos]
                if self.limiter.at(home, 0.01):
                    self._homing = False
                else:
                    self._command(home, self.robot.ramp_vel_dps)
            if self._torque_pending:
                self._torque_pending = self._torque_off() is False
        except OSError:
            self.stats["send_errors"] += 1

    def failsafe(self, action=None):
        action = action or self.robot.failsafe_action
        self._now()                  # (the clock seen: a step back here is no time, as anywhere)
        if self.in_failsafe and getattr(self, "failsafe_action", None) == "torque_off":
            # torque off stays off until a frame: a later failsafe (the bridge's close, a
            # default "home") must not send positions, which revive a PWM servo's output
            action = "torque_off"
        # a new action replaces the one engaged (a hold or torque off stops a home move)
        self._homing = False
        self._torque_pending = False
        self.in_failsafe = True
        self.stats["failsafes"] += 1
        try:
            if action == "torque_off":
                # a driver whose line is full says False: retried on every poll until it goes
                self._torque_pending = self._torque_off() is False
            elif action == "home":
                # at the ramp velocity in wall time: this step, then one per poll() until home
                self._homing = True
                self._failsafe_step()
            # hold: the controller keeps the last command (its watchdog, if armed, stops it)
        except OSError:
            self.stats["send_errors"] += 1
        self.failsafe_action = action

    def settle(self, timeout_s=10.0):
        """Run an engaged failsafe to its end (a home move, a torque off the line had no room
        for), one step a period on the player's clock and sleep; at most timeout_s."""
        end = self.clock() + timeout_s
        # (servos without power: no home move to run, nothing to wait for)
        while self.in_failsafe and (self._homing or self._torque_pending) and not self.power_lost \
                and self.clock() < end:
            self._sleep_until(self.clock() + self.period_s)
            self.poll()

    # --- a whole staff --------------------------------------------------------------------------
    def _sleep_until(self, deadline):
        d = deadline - self.clock()
        if d > 0:
            self._sleep(d)

    def play(self, values, fps, speed=1.0, loop=False, reverse=False, first=0, last=None,
             progress=None, stop=None, on_frame=None, adjust=None):
        """Stream columns of values (rows x frames, NaN = missing) paced by absolute deadlines.

        Frame k of a pass is due at t0 + k / (fps * speed); a late frame is sent at once and
        frames already overdue by more than one period are skipped (never drift, never rush).
        on_frame(k, column) is called after each frame sent, k its index in values (skipped
        frames are not sent, so not reported). adjust(k, column) -> column, when given, changes
        each frame just before it is sent (the robot's own balance feedback, e.g.
        host/retarget/feedback.py); the limiter stays the last word on what reaches the servos.
        """
        nframes = len(values[0]) if len(values) else 0
        last = nframes if last is None else min(last, nframes)
        order = list(range(first, last))
        if reverse:
            order.reverse()
        if not order:
            raise ValueError("nothing to play: the selected range has no frames")
        step_s = 1.0 / (fps * speed)
        col = lambda k: [values[r][k] for r in range(len(values))]
        self.ramp_to(col(order[0]))
        passes = 0
        t_media = 0.0
        while True:
            t0 = self.clock()
            for j, k in enumerate(order):
                if stop is not None and stop():
                    return self._summary(passes, t_media)
                due = t0 + j * step_s
                now = self.clock()
                if now > due + step_s and j + 1 < len(order):
                    self.stats["skipped"] += 1
                    continue
                if now > due:
                    self.stats["late"] += 1
                else:
                    self._sleep_until(due)
                column = col(k)
                if adjust is not None:
                    try:
                        # (a copy: an adjust that changes it in place and then fails cannot
                        # change the plan; what it returns must be a column, by row or dict)
                        adjusted = adjust(k, list(column))
                        len(adjusted)
                        column = adjusted
                    except Exception:
                        # a feedback that failed this frame (raised, or returned no column:
                        # None): the frame as planned, counted, never a play loop that ends
                        # with the servos holding
                        self.stats["adjust_errors"] = self.stats.get("adjust_errors", 0) + 1
                self.send_frame(column, t0 + j * step_s)
                if on_frame is not None:
                    on_frame(k, column)
                t_media += 1.0 / fps
                if progress is not None:
                    progress(1)
            passes += 1
            if not loop:
                break
            self.last_t = None
        return self._summary(passes, t_media)

    def _summary(self, passes, t_media):
        s = dict(self.stats)
        s["passes"] = passes
        s["media_s"] = round(t_media, 3)
        s["limiter_clamped"] = self.limiter.clamped
        s["limiter_rate_limited"] = self.limiter.rate_limited
        s["limiter_invalid"] = self.limiter.invalid
        s["power_off_at_end"] = self.power_lost
        s["driver"] = dict(self.driver.stats)
        return s
