"""The robot's body behind a controller emulator: MuJoCo stepped in simulated time.

    from host.physics.twin import Twin
    from device.servo.emulate import make_emulator
    twin = Twin("op3-dynamixel", seed=0)
    emu = make_emulator("dynamixel", ids=twin.ids, clock=twin.clock, body=twin)
    ... driver writes bytes to emu.feed(...) ...
    twin.advance(0.02)                  # simulated seconds (deterministic)
    twin.servo_deg()                    # achieved joint angles, servo degrees, servo order
    twin.torso_height_m(), twin.tilt_deg()

The emulator hook (host-agnostic, device/servo/emulate/base.py documents it):
    body.set_goal(servo_id, position_units, velocity_limit, torque_on, accel_limit=0,
                  p_gain=None, d_gain=None)   # limits in position units/s and units/s^2, 0 = none
    body.read(servo_id) -> (present_position_units, load (-1..1 of stall, + the way the units
                            count; None = no sensor), moving), or None for a servo it lacks
A PWM servo (Maestro) has no feedback: read gives the Maestro's own output pulse (its ramped
target), load None.
    body.attach_sensor(fn)    # fn(body) after every physics step: a sensor with its own loop
                              # (the OP3's OpenCR board: emulate/opencr.py) samples the body
                              # on the body's clock, not when a request arrives
    body.detach_sensor(fn)    # and off again (the emulator's close())

Start: the robot stands on its feet at the zero pose (home_deg), every servo's torque off,
as at power-up; physics only advances in advance()/step() (or run_realtime in a thread).
The seed jitters the initial joint angles by at most 0.01 deg: same seed, same run.
"""

import math
import threading
import time

import numpy as np

from host.physics.models import ACC_SENSOR, GYRO_SENSOR, RobotModel, load_robot
from host.physics.servo import CONTROLLER_SPEC, SPECS, ServoBank, dynamixel_kd, dynamixel_kp, \
    feetech_kd, feetech_kp, warm_up

MOVING_THRESHOLD_RAD_S = 10 * 0.229 * 2 * math.pi / 60      # Dynamixel default Moving Threshold
IMU_NOISE_BLOCK = 1024
_IMU_NOISE_SD = np.array([math.radians(0.2)] * 3 + [0.01] * 3)


class Twin:
    def __init__(self, robot, seed=0, controller=None):
        import mujoco
        self._mj = mujoco
        self.rm = robot if isinstance(robot, RobotModel) else load_robot(robot)
        rm = self.rm
        self.controller = controller or rm.description.controller
        self.spec = SPECS[CONTROLLER_SPEC.get(self.controller, "xm430-w350")] \
            if controller and controller != rm.description.controller else rm.servo_spec
        self.model = rm.model
        self.data = mujoco.MjData(self.model)
        self.dt_s = float(self.model.opt.timestep)
        self.n = len(rm.servo_names)
        self.ids = [s.id for s in rm.servos]
        self.index = dict((s.id, k) for k, s in enumerate(rm.servos))
        self.feedback = self.controller != "maestro"
        # per servo id: (index, rad per unit from neutral, neutral, units per rad of the limits)
        self._conv = {}
        for k, s in enumerate(rm.servos):
            rad_per_unit = math.radians(rm.sign[s.name] / (s.direction * s.units_per_deg))
            self._conv[s.id] = (k, rad_per_unit, s.neutral, s.units_per_deg * 180.0 / math.pi)
        rng = np.random.default_rng(seed)
        self._imu_rng = np.random.default_rng([seed, 1])
        self._noise, self._noise_k = np.zeros((0, 6)), 0
        self._g_norm = float(np.linalg.norm(self.model.opt.gravity))
        self._gyro_adr = self._acc_adr = None
        for k in range(self.model.nsensor):
            name = self.model.sensor(k).name
            if name == GYRO_SENSOR:
                self._gyro_adr = int(self.model.sensor_adr[k])
            elif name == ACC_SENSOR:
                self._acc_adr = int(self.model.sensor_adr[k])
        d = self.data
        d.qpos[:] = self.model.qpos0
        if rm.floating:
            d.qpos[:7] = rm.root_qpos0
        home = np.array([s.home_deg for s in rm.servos])
        q0 = np.radians(rm.qpos_deg(home)) + np.radians(rng.uniform(-0.01, 0.01, self.n))
        d.qpos[rm.qadr] = q0
        mujoco.mj_forward(self.model, d)
        self.bank = ServoBank(self.spec, self.n, q0)
        warm_up()
        self.lock = threading.RLock()
        self.steps = 0
        self.sensors = []                       # fn(twin) after every step (attach_sensor)
        self.sat_steps = 0                      # servo-steps at full duty
        self.on_steps = 0                       # servo-steps with torque on
        self.torso_id = self.model.body(rm.segments.get("torso", rm.segments.get("base"))).id
        self._is_floor = np.array([self.model.geom_bodyid[g] == 0 for g in range(self.model.ngeom)])
        self._foot_side = np.zeros(self.model.ngeom, dtype=int)
        for side, code in (("l", 1), ("r", 2)):
            for g in rm.foot_geoms.get(side, ()):
                self._foot_side[g] = code

    # --- time -----------------------------------------------------------------------------
    @property
    def time_s(self):
        return self.steps * self.dt_s

    def clock(self):
        return self.time_s

    def step(self, n=1):
        m, d, bank, rm = self.model, self.data, self.bank, self.rm
        for _ in range(n):
            with self.lock:                     # per step: the bus side never waits long
                q = d.qpos[rm.qadr]
                qd = d.qvel[rm.dadr]
                d.ctrl[rm.act_id] = bank.torque(q, qd, self.dt_s)
                self._mj.mj_step(m, d)
                self.steps += 1
                self.sat_steps += bank.counts[0]
                self.on_steps += bank.counts[1]
                for fn in self.sensors:
                    fn(self)

    def attach_sensor(self, fn):
        """fn(twin) is called after every physics step, inside the step (the twin's lock held)."""
        self.sensors.append(fn)

    def detach_sensor(self, fn):
        """Stop calling fn after each step (a closed emulator's board); one not attached is a no-op."""
        with self.lock:
            self.sensors = [f for f in self.sensors if f != fn]

    def advance(self, seconds):
        """Step until simulated time has moved on by `seconds` (whole steps)."""
        target = self.steps + int(round(seconds / self.dt_s))
        if target > self.steps:
            self.step(target - self.steps)

    def advance_to(self, t_s):
        target = int(round(t_s / self.dt_s))
        if target > self.steps:
            self.step(target - self.steps)

    def run_realtime(self, stop, rate=1.0, chunk_s=0.005):
        """Step paced by the wall clock until stop (a threading.Event) is set. A machine too
        slow to keep up runs behind (simulated time never skips)."""
        t0 = time.monotonic()
        s0 = self.time_s
        while not stop.is_set():
            due = s0 + (time.monotonic() - t0) * rate
            if due > self.time_s:
                self.advance_to(min(due, self.time_s + 4 * chunk_s))
            stop.wait(chunk_s)

    # --- the emulator hook ------------------------------------------------------------------
    def _servo(self, servo_id):
        k = self.index.get(servo_id)
        if k is None:
            raise KeyError(servo_id)
        return k, self.rm.servos[k]

    def _units_per_rad(self, s):
        return s.units_per_deg * 180.0 / math.pi

    def set_goal(self, servo_id, position_units, velocity_limit=0.0, torque_on=True, accel_limit=0.0,
                 p_gain=None, d_gain=None):
        c = self._conv.get(servo_id)
        if c is None:
            return
        k, rad_per_unit, neutral, upr = c
        # joint angle = sign * (units - neutral) / (direction * units_per_deg), in radians
        goal = (position_units - neutral) * rad_per_unit
        kp = kd = None
        if self.controller == "dynamixel":
            kp = dynamixel_kp(p_gain) if p_gain is not None else None
            kd = dynamixel_kd(d_gain) if d_gain is not None else None
        elif self.controller == "feetech":
            kp = feetech_kp(p_gain) if p_gain is not None else None
            kd = feetech_kd(d_gain) if d_gain is not None else None
        with self.lock:
            self.bank.set_goal(k, goal, float(velocity_limit) / upr, float(accel_limit) / upr,
                               torque_on, kp, kd)

    def read(self, servo_id):
        if servo_id not in self.index:
            return None
        k, s = self._servo(servo_id)
        rm = self.rm
        with self.lock:
            qd = float(self.data.qvel[rm.dadr[k]])
            # a released servo's profile follows the joint: only its speed says it moves
            moving = bool((self.bank.on[k] and self.bank.setpoint[k] != self.bank.goal[k])
                          or abs(qd) > MOVING_THRESHOLD_RAD_S)
            if not self.feedback:
                return rm.qpos_rad_to_units(s.name, float(self.bank.setpoint[k])), None, moving
            q = float(self.data.qpos[rm.qadr[k]])
            # load is signed as the units count (as Present Velocity): the joint's torque
            # times the mounting's sign
            load = float(self.bank.tau[k]) / self.spec.stall_nm * rm.sign[s.name] * (1.0 if s.direction > 0 else -1.0)
            return rm.qpos_rad_to_units(s.name, q), load, moving

    def velocity_units(self, servo_id):
        """Present velocity in position units per second (signed as the units)."""
        k, s = self._servo(servo_id)
        rm = self.rm
        with self.lock:
            qd = float(self.data.qvel[rm.dadr[k]])
        return qd * rm.sign[s.name] * s.direction * self._units_per_rad(s)

    # --- state --------------------------------------------------------------------------------
    def servo_deg(self):
        return self.rm.servo_deg(np.degrees(self.data.qpos[self.rm.qadr]))

    def setpoint_deg(self):
        return self.rm.servo_deg(np.degrees(self.bank.setpoint))

    def imu(self):
        """The robot's own IMU on its torso (OP3: the OpenCR board's MPU9250 in the body):
        (gravity direction in the torso frame, unit (3,), angular rate in the torso frame rad/s
        (3,)), as the board's fused output gives them (roll and pitch; the heading drifts on a
        real IMU and is not given). Seeded noise: 0.2 deg of tilt, 0.01 rad/s of rate (RMS).
        The rate is MuJoCo's gyro sensor at the torso (host/physics/models.py), of the state
        mj_step started from, as the torso's axes (xmat) are."""
        with self.lock:
            R = self.data.xmat[self.torso_id].reshape(3, 3)
            # g_torso = R^T z_world
            g = R[2, :].copy()
            w = self.data.sensordata[self._gyro_adr:self._gyro_adr + 3].copy() \
                if self._gyro_adr is not None else np.zeros(3)
        noise = self._imu_noise()
        g = g + noise[:3]
        return g / math.sqrt(float(g @ g)), w + noise[3:]

    def _imu_noise(self):
        """The next (6,) of the seeded noise: 0.2 deg on each up component, 0.01 rad/s on each
        rate (drawn IMU_NOISE_BLOCK samples at a time: the same seed, the same sequence)."""
        if self._noise_k >= len(self._noise):
            self._noise = self._imu_rng.normal(0.0, 1.0, (IMU_NOISE_BLOCK, 6)) * _IMU_NOISE_SD
            self._noise_k = 0
        self._noise_k += 1
        return self._noise[self._noise_k - 1]

    def specific_force_g(self):
        """What an accelerometer on the torso reads, in g, torso frame (3,): gravity's
        reaction plus the body's own acceleration (+1 g up at rest): MuJoCo's accelerometer
        sensor at the torso frame's origin (host/physics/models.py), computed in mj_step (its
        rnePostConstraint) of the state the step started from. No noise here (the OpenCR
        board's chip adds its own, device/servo/emulate/opencr_imu.py)."""
        m, d = self.model, self.data
        with self.lock:
            if self._acc_adr is not None:
                f = d.sensordata[self._acc_adr:self._acc_adr + 3].copy()
                return f / self._g_norm
            out = np.zeros(6)
            self._mj.mj_rnePostConstraint(m, d)
            # at the torso frame's origin, in world axes (a body's "local" is its inertia frame)
            self._mj.mj_objectAcceleration(m, d, self._mj.mjtObj.mjOBJ_XBODY, self.torso_id, out, 0)
            R = d.xmat[self.torso_id].reshape(3, 3).copy()
        # f_torso = R^T a_world / |g|
        return R.T @ out[3:] / self._g_norm

    def torso_height_m(self):
        return float(self.data.xpos[self.torso_id][2])

    def tilt_deg(self):
        # angle between the torso's z axis and the world's: acos(R[2, 2])
        r22 = float(self.data.xmat[self.torso_id][8])
        return math.degrees(math.acos(max(-1.0, min(1.0, r22))))

    def contacts(self):
        """(self-collision contacts, {side: foot on floor}) of the current state."""
        d = self.data
        n = d.ncon
        feet = dict((side, False) for side in self.rm.foot_geoms)
        if n == 0:
            return 0, feet
        g = d.contact.geom[:n]
        dist = d.contact.dist[:n]
        floor = self._is_floor[g]
        touching = floor[:, 0] | floor[:, 1]
        selfc = int(np.count_nonzero(~touching & (dist < 0)))
        other = np.where(floor[:, 0], g[:, 1], g[:, 0])[touching & (dist < 1e-3)]
        sides = self._foot_side[other]
        for side, code in (("l", 1), ("r", 2)):
            if side in feet:
                feet[side] = bool(np.any(sides == code))
        return selfc, feet

    def body_poses(self, names=None):
        """{segment: (pos list, quat wxyz list)} of the segments, for recordings."""
        out = {}
        for seg, b in self.rm.segments.items():
            if names is not None and seg not in names:
                continue
            i = self.model.body(b).id
            out[seg] = (self.data.xpos[i].tolist(), self.data.xquat[i].tolist())
        return out
