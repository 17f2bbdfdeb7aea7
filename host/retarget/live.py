"""Pose retargeting with balance, live: one frame of the person's rows in, the robot's servo
degrees out, causally (no look-ahead, no retiming: the player's limiter is the last word).

    from host.retarget.live import LiveRetargeter
    lr = LiveRetargeter("op3-dynamixel", row_names, fps=30.0)   # rows of the built-in human
    lr = LiveRetargeter(..., imu=robot_imu)  # imu() -> (gravity in the torso frame, rate rad/s)
    deg = lr.step(values_deg, t_s)       # [servo degrees] in lr.servo_names order
    lr.infeasible                        # [[start_s, stop_s, why]] what the robot did not do
    lr.pose_error_deg()                  # median angle between person and robot segments

Each frame runs the same differential IK as offline retargeting (host/retarget/pose.py
solve_frames: warm start from the previous frame, the description's joint and velocity limits,
self-collision avoidance, the stance feet held flat where they stood, the centre of mass over
the support, the torso's bow capped, the hips as low as the person crouches), fed one frame at a
time. Live, the support phases come from the person's feet as they are now (a foot stands
within 0.07 leg lengths of the lower foot, for at least 0.1 s): when the person stands on one
foot the robot's weight moves onto that foot (0.5 s, then 0.1 s settled) and only then the other
foot swings, following the person's leg, until the person lands; the weight moves only for a
lift that has lasted LIFT_COMMIT_S (0.3 s): a lift too short for that (a dance step) keeps the
robot's foot down, the weight between the feet, and is listed in `infeasible`. The crouch follows
the person's hip height through a 0.3 s first-order lag, the torso's direction through 0.2 s.
With `imu` (the robot's own IMU: on the OP3 its OpenCR board read on the servo bus, LinkBridge(bus_imu=True)),
the torso's tilt against the plan's is fed back to the standing ankles each frame
(host/retarget/stabilise.py, the ankle strategy). A bus IMU's sample (LinkBridge: up, rate,
acceleration, the read's time) gives the tilt through the host's own filter of the board's gyro
and accelerometer (host/retarget/attitude.py), not the board's Madgwick roll and pitch. On one
foot, that leg's hip, knee and ankle pitch move at most STANCE_PITCH_DPS.
"""

import numpy as np

from host.retarget import pose, support
from host.retarget.segments import segment_directions
from protocol.errors import FormatError

# The centre-of-mass task's cost live. The offline planner holds the weight harder (pose.COM_COST,
# 3000, with retiming and a lead-in). Live there is no retiming; measured: at 3000 the OP3 twin
# falls on the live test clip (tests/test_retarget_live.py), at 300 it stands, which is what the
# live path was built and measured with (demo, CMU 131_03: stays up, pose error 20.6 deg).
LIVE_COM_COST = 300.0
# and live the arms are not put first (pose.FOREARM_WEIGHT, ARM_VEL_SCALE): without retiming, the
# live path was measured with both arm segments weighted alike, at full speed (4x on the upper
# arm and half speed tipped the OP3 twin over on that clip; the offline weights were not tried live)
LIVE_FOREARM_WEIGHT = 1.0
# the standing legs' segments follow the person this weakly (offline pose.py: 0.2)
LIVE_STANCE_LEG_WEIGHT = 0.2


# a lift the person holds this long moves the robot's weight (measured on the demo's 131_03
# replays, tools/replay_live.py: at 0 the weight swayed after every dance step, 0.3-0.4 stand)
LIFT_COMMIT_S = 0.3
# a swing foot stays this close to where it stood, horizontally (None: no bound); following a
# lunge 0.2 m forward dropped the hips over the stance knee (05_20-mb fell at 9.6 s)
SWING_REACH_M = 0.05
SWING_RAMP_S = 0.3     # a swing foot lifts (and comes back down) over this long
# the ankle feedback's tilt gain live (stabilise.KP, 0.8, on the staff path and here until
# 2026-12-03); with the host's tilt and the roll share at 2 deg, benchmarks/robot_live.py IMU
# column: 0.7 mean slip 6.08 -> 5.81 mm, 15 -> 16 of 26 over 5 mm, no falls (at ROLL_SHARE_DEG 1:
# 6.20 -> 5.92, 17 -> 16; KD 0.14 instead: 6.43, 16)
LIVE_KP = 0.7
# on one foot the standing leg's pitch joints (hip, knee, ankle) move at most this fast: a
# person's one-legged crouch at full speed (05_20-daz at 8.6-9.1 s: the knee 0 -> 59 deg in
# 0.5 s) left the loaded knee 27 deg behind and the torso 15 deg ahead of the plan (it fell as the
# stream ended); measured 120 dps: the same fall, 60: none (benchmarks/robot_live.py); None: off
STANCE_PITCH_DPS = 60.0
MIN_HEIGHT = 0.7       # the hips no lower than this fraction of their standing height
TICK_S = 0.005         # the IMU feedback between frames at most this often (the bridge's poll rate)
TRUNK_ROLL_DEG = 25.0  # live, the torso leans sideways at most this far
TRUNK_TAU_S = 0.2      # and follows the person's trunk through a first-order lag (a bow taken
                       # at the dancer's speed rocked the OP3 over its heels)
HEIGHT_TAU_S = 0.3     # the crouch follows the person through a first-order lag (a bounce faster
                       # than the body can carry its weight tips it over: 131_03 at 5.9 s)


class _Now:
    """A frame-indexed array whose every index is the current frame's value (solve_frames reads
    index f just after the caller has set it)."""
    __slots__ = ("v",)

    def __init__(self, v=None):
        self.v = v

    def __getitem__(self, f):
        return self.v


class _Column:
    """One frame of rows as a staff (values (nrows, 1)) for segments.person_frames."""

    def __init__(self, names, skeleton):
        self.names = list(names)
        self.skeleton = skeleton
        self.frames = 1
        self.meta = {"source": "the live link"}
        self.values = np.zeros((len(self.names), 1))


class LiveRetargeter:
    def __init__(self, robot_name, row_names, fps=30.0, skeleton=None, iterations=pose.ITERS,
                 collisions=True, balance=True, imu=None):
        from host.retarget.robotmodel import robot_body
        from host.retarget.segments import person_frames
        if skeleton is None:
            from device.body.human import human_model
            skeleton = human_model()
        self.body = body = robot_body(robot_name)
        self.servo_names = list(body.servo_names)
        self.fps = float(fps)
        self._col = _Column(row_names, skeleton)
        self._person_frames = person_frames
        self._needed = pose._needed(body)
        hp, wp = person_frames(self._col, self._needed)       # raises FormatError if unmappable
        if not segment_directions(hp, body.spec["segments"]):
            raise FormatError("the live link: no usable segments for %s" % body.name)
        self.balance = balance and body.humanoid
        # the robot's own IMU, imu() -> (gravity in the torso frame, angular rate rad/s): its
        # tilt against the plan's is turned back at the standing ankles (host/retarget/stabilise.py)
        self.imu = imu if self.balance else None
        self.stabiliser = None
        if self.imu is not None:
            from host.retarget.stabilise import AnkleStabiliser
            self.stabiliser = AnkleStabiliser(body, kp=LIVE_KP)
        self.D = {k: _Now() for k in body.spec["segments"]}
        self.D = {k: v for k, v in self.D.items() if k in segment_directions(hp, [k])}
        self._swing = {"l": _Now(False), "r": _Now(False)}
        self._height = _Now(1.0) if self.balance and "mid_hip" in wp else None
        self._u = _Now(0.0)
        self._w = {"l": _Now(0.0), "r": _Now(0.0)}
        self._gen = pose.solve_frames(body, self.D, self.fps, self.balance, self._swing["l"],
                                      self._swing["r"], iterations, collisions, self._height,
                                      converge_first=False, weights=(self._u, self._w), frames=1 << 62,
                                      com_cost=LIVE_COM_COST, upper_arm_weight=1.0,
                                      forearm_weight=LIVE_FOREARM_WEIGHT, arm_vel_scale=1.0,
                                      stance_leg_weight=LIVE_STANCE_LEG_WEIGHT,
                                      swing_reach_m=SWING_REACH_M)
        self._u_lin = 0.0            # the weight's ramp, linear in time (u = its cosine blend)
        self._settled_s = 0.0
        self._swung = {"l": False, "r": False}
        self._seen = {"l": True, "r": True}
        self._since = {"l": 0.0, "r": 0.0}
        self._lim = None
        self._plan = None
        self._pitch_idx = {s: [self.servo_names.index(s + j) for j in ("_hip_pitch", "_knee", "_ank_pitch")
                               if s + j in self.servo_names] for s in "lr"}
        self._tick_at = None
        self._el = {"l_foot": [], "r_foot": []}
        self._floor = None
        self._stand_z = None
        self._t_prev = None
        self._lifted = {}
        self.infeasible = []
        self.errors = []             # per frame: [angle deg per mapped segment]
        self._pending = None         # (servo deg, q, person directions) of the last frame, for idle()
        self.frames = 0
        self.min_height = MIN_HEIGHT
        self.height_tau_s = HEIGHT_TAU_S

    # -- the person's feet, causally -------------------------------------------------------
    def _contacts(self, wp, dt):
        """The person's feet now: a foot stands when its lowest point (ankle or toe) is within
        HEIGHT_LEGS leg lengths of the lower foot's (the model's hips are its fixed base, so the
        floor is where the lower foot is); a change counts once it has lasted MIN_PHASE_S."""
        lo = {s: min(wp[s + "_ankle"][0, 2], wp[s + "_toe"][0, 2] if s + "_toe" in wp else np.inf)
              for s in "lr"}
        if self._floor is None:
            self._leg = float(np.linalg.norm(wp["l_hip"][0] - wp["l_knee"][0])
                              + np.linalg.norm(wp["l_knee"][0] - wp["l_ankle"][0]))
        self._floor = min(lo.values())
        for s in "lr":
            now = bool(lo[s] - self._floor < support.HEIGHT_LEGS * self._leg)
            self._since[s] = 0.0 if now == self._seen[s] else self._since[s] + dt
            if self._since[s] >= support.MIN_PHASE_S:
                self._seen[s], self._since[s] = now, 0.0
        return dict(self._seen)

    def _support(self, t_s, on, dt):
        """The robot's support, causally: when the person stands on one foot, the weight moves
        onto the robot's same foot (WEIGHT_RAMP_S, then SETTLE_S), and only then the other foot
        swings (following the person's leg, SWING_RAMP_S in and out) until the person lands."""
        for s in "lr":
            if not on[s] and s not in self._lifted:
                self._lifted[s] = t_s
                self._swung[s] = False
            elif on[s] and s in self._lifted:
                a = self._lifted.pop(s)
                if not self._swung[s] and t_s - a >= support.MIN_PHASE_S:
                    self.infeasible.append([round(a, 3), round(t_s, 3), "%s foot lifted: kept down (no "
                                            "time to shift the weight first)" % ("left" if s == "l" else "right")])
        sw = [s for s in "lr" if self._swing[s].v]
        rate = dt / SWING_RAMP_S
        if sw:
            s = sw[0]
            w = self._w[s].v + (rate if not on[s] else -rate)
            self._w[s].v = float(np.clip(w, 0.0, 1.0))
            if self._w[s].v <= 0.0 and on[s]:
                self._swing[s].v = False
            want = 1.0 if s == "r" else -1.0
        else:
            # a lift moves the weight only once it has lasted LIFT_COMMIT_S: a dance's quick
            # steps (0.1-0.5 s) are done with both feet down without the weight swaying after them
            up = [s for s in "lr" if not on[s] and t_s - self._lifted.get(s, t_s) >= LIFT_COMMIT_S - 1e-9]
            want = 0.0 if len(up) != 1 else (1.0 if up[0] == "r" else -1.0)
            step = dt / pose.WEIGHT_RAMP_S
            self._u_lin = float(np.clip(want, self._u_lin - step, self._u_lin + step))
            if want != 0.0 and self._u_lin == want:
                self._settled_s += dt
                if self._settled_s >= pose.SETTLE_S - 1e-9:
                    self._swing[up[0]].v = True
                    self._swung[up[0]] = True
                    self._w[up[0]].v = 0.0
                    self._settled_s = 0.0
            else:
                self._settled_s = 0.0
        # u = sign 0.5 (1 - cos(pi |u_lin|)): no jump in acceleration at either end
        self._u.v = float(np.sign(self._u_lin) * 0.5 * (1.0 - np.cos(np.pi * abs(self._u_lin))))

    def _flat(self, dirs, on):
        """pose._flat_feet's pitch reference, from the standing frames seen so far."""
        out = dict(dirs)
        for k in ("l_foot", "r_foot"):
            if k not in dirs:
                continue
            d = dirs[k][0]
            el = float(np.arcsin(np.clip(d[2], -1, 1)))
            if on[k[0]] or not self._el[k]:
                self._el[k].append(el)
                del self._el[k][:-300]
            e0 = float(np.median(self._el[k]))
            out[k] = pose.pitch_foot(d[None], e0)
        return out

    def _trunk(self, d, dt):
        """The torso's direction live: its sideways lean capped at TRUNK_ROLL_DEG, through a
        first-order lag of TRUNK_TAU_S."""
        d = pose._unit(np.asarray(d, float))
        # roll = atan2(d_y, d_z) capped; the forward bow kept
        roll = np.arctan2(d[1], d[2])
        cap = np.radians(TRUNK_ROLL_DEG)
        if abs(roll) > cap:
            r = np.hypot(d[1], d[2])
            d = np.array([d[0], r * np.sin(np.sign(roll) * cap), r * np.cos(cap)])
        prev = getattr(self, "_trunk_d", None)
        if prev is not None and TRUNK_TAU_S > 0:
            a = min(1.0, dt / TRUNK_TAU_S)
            d = pose._unit(prev + a * (d - prev))
        self._trunk_d = d
        return d

    def step(self, values, t_s):
        """Servo degrees (lr.servo_names order) for one frame of the person's rows at time t_s."""
        body = self.body
        col = np.array([np.nan if v is None else v for v in values], float)
        if self.frames:
            bad = ~np.isfinite(col)
            col[bad] = self._col.values[bad, 0]          # a lost value keeps the last one
        self._col.values[:, 0] = col
        hp, wp = self._person_frames(self._col, self._needed)
        if self._t_prev is not None and t_s < self._t_prev:
            # a clock that stepped back (a sender restarted, its 24-bit time unwrapped back):
            # the lifts under way keep their age, else none lasts LIFT_COMMIT_S (the weight
            # stays, or goes back, between the feet) until the clock is where it was
            back = self._t_prev - t_s
            self._lifted = {s: a - back for s, a in self._lifted.items()}
        dt = 1.0 / self.fps if self._t_prev is None else max(0.0, t_s - self._t_prev)
        self._t_prev = t_s
        dirs = pose._mount(body, segment_directions(hp, list(self.D)))
        on = {"l": True, "r": True}
        if body.humanoid and all(k in wp for k in ("l_ankle", "r_ankle", "l_hip", "l_knee")):
            on = self._contacts(wp, dt)
            if self.balance:
                self._support(t_s, on, dt)
        dirs = self._flat(dirs, on)
        if self.balance and "trunk" in dirs:
            dirs["trunk"] = self._trunk(dirs["trunk"][0], dt)[None]
        for k, d in dirs.items():
            self.D[k].v = pose._unit(d[0])
        if self._height is not None:
            z = wp["mid_hip"][0, 2] - self._floor
            self._stand_z = z if self._stand_z is None else max(self._stand_z, z)
            h = float(np.clip(z / max(self._stand_z, 1e-6), self.min_height, 1.0))
            # a bounce faster than the body can carry its weight is smoothed (first order, tau)
            a = 1.0 if self.frames == 0 else min(1.0, dt / max(self.height_tau_s, 1e-9))
            self._height.v = self._height.v + a * (h - self._height.v)
        q = next(self._gen)
        self.q = q
        deg = body.to_servo_deg(q[None, body.qadr])
        if self.balance:
            deg = deg + body.to_servo_deg(self._sag_now(q))
        deg = deg[0]
        if self._lim is None:
            from device.servo.limiter import Limiter
            self._lim = Limiter(body.servos, start_deg=list(body.home_deg))
        if self.balance and self._plan is not None and STANCE_PITCH_DPS:
            deg = self._stance_pitch(deg, dt)
        self._plan = np.array(self._lim.step(list(deg), 0.0 if self.frames == 0 else dt))
        out = self._stabilised()
        # the pose error's bookkeeping waits for idle(): after the frame's bytes are out
        self.idle()
        self._pending = (out, q, dict((k, d.v.copy()) for k, d in self.D.items()))
        self.frames += 1
        return out

    def _stance_pitch(self, deg, dt):
        """On one foot, its leg's pitch joints at most STANCE_PITCH_DPS from the last plan:
        deg_j in [plan_j - v dt, plan_j + v dt]."""
        deg = np.array(deg, float)
        for s, other in (("l", "r"), ("r", "l")):
            if self._swing[other].v and not self._swing[s].v:
                for i in self._pitch_idx[s]:
                    step = STANCE_PITCH_DPS * dt
                    deg[i] = float(np.clip(deg[i], self._plan[i] - step, self._plan[i] + step))
        return deg

    def _sag_now(self, q):
        """pose._sag's feed-forward for this frame, moved with the weight (the live counterpart
        of pose._ramp_sag): the statics of one foot while a foot swings; with both feet down,
        the blend of the two statics by how far the weight has moved onto the stance foot,

            sag = (1 - |u_lin|) sag(both feet) + |u_lin| sag(stance foot alone)

        so nothing steps at a lift-off (the weight is over the stance foot, |u_lin| = 1) or at a
        landing (the weight moves back over WEIGHT_RAMP_S after it). Before, the statics
        switched between two feet and one in the frame a foot lifted or landed."""
        body = self.body
        stand = [np.array([not self._swing[s].v]) for s in "lr"]
        sag = pose._sag(body, q[None], stand[0], stand[1])
        a = abs(self._u_lin)
        if a <= 0.0 or not (stand[0][0] and stand[1][0]):
            return sag
        # u_lin > 0: the weight on the left foot (the right one lifts), < 0: on the right
        one = pose._sag(body, q[None], np.array([self._u_lin > 0]), np.array([self._u_lin < 0]))
        return (1.0 - a) * sag + a * one

    def _stabilised(self):
        """The last plan plus the IMU feedback now (within the joint limits)."""
        if self.stabiliser is None:
            return list(self._plan)
        try:
            s = self.imu()
        except (OSError, TypeError, ValueError, IndexError):
            # an IMU that did not answer (unplugged, None): this tick without feedback
            s = None
        # a bus IMU's read (up, rate, acc, its time): the tilt is the host's own estimate of the
        # board's gyro and accelerometer (AnkleStabiliser.measure), not the board's Madgwick
        gw = self.stabiliser.measure(s)
        g, w = gw if gw is not None else ((np.nan,) * 3, (np.nan,) * 3)
        dq = self.stabiliser.correct(self.q, g, w, {s: not self._swing[s].v for s in "lr"})
        return list(np.clip(self._plan + self.body.to_servo_deg(dq), self.body.lo_deg, self.body.hi_deg))

    @property
    def attitude(self):
        """The host's tilt estimate (TiltEstimator) of a bus IMU's gyro and acc, or None."""
        return None if self.stabiliser is None else self.stabiliser.attitude

    def tick(self, now_s):
        """Between frames, the robot's own balance loop (LinkBridge.poll calls it at its rate):
        the last frame's plan with the IMU feedback of now, or None (no IMU, no frame yet, or
        less than TICK_S since the last)."""
        if self.stabiliser is None or self._plan is None:
            return None
        if self._tick_at is not None and 0.0 <= now_s - self._tick_at < TICK_S - 1e-9:
            # (a clock that stepped back restarts the interval rather than stopping the loop)
            return None
        self._tick_at = now_s
        return self._stabilised()

    def idle(self):
        """The last frame's pose error (the robot's segments by forward kinematics against the
        person's): bookkeeping, done once its servo bytes are out (LinkBridge calls it after the
        send), not between the IMU read and the write."""
        if self._pending is None:
            return
        deg, q, person = self._pending
        self._pending = None
        R = pose.robot_directions(self.body, np.asarray(deg)[None], q[None, :7] if self.body.floating else None)
        self.errors.append([float(pose.angle_deg(R[k][0], person[k])) for k in R if k in person])

    def pose_error_deg(self):
        self.idle()
        allv = [e for row in self.errors for e in row]
        return float(np.median(allv)) if allv else None
