"""Servo models: position control with the data sheet's stall torque, no-load speed and deadband.

    from host.physics.servo import SPECS, ServoBank
    bank = ServoBank(SPECS["xm430-w350"], n=20)
    bank.set_goal(3, goal_rad=0.5, vel_limit_rad_s=0.0, acc_limit_rad_s2=0.0, torque_on=True)
    tau_nm = bank.torque(q_rad, qd_rad_s, dt_s)    # every physics step -> MuJoCo motor ctrl

Each servo, every step (vectorised over the bank):
  1. its own profile generator (Dynamixel Profile Velocity/Acceleration, Feetech Goal Speed/
     Acceleration, the Maestro's speed/acceleration) moves a setpoint towards the goal;
  2. the encoder quantises the joint angle (4096 steps/rev; a pot servo: none) and errors
     inside the deadband count as zero;
  3. a PD law gives the motor's duty u in [-1, 1] (gains from the controller's registers);
  4. the DC motor gives torque = stall * (u - omega / omega_no_load): at full duty the torque
     falls linearly from the stall torque to 0 at the no-load speed, and at u = 0 the shorted
     winding brakes (back-EMF);
  5. backlash: the gear transmits the torque only once the lash (XM430 0.25 deg, STS3215 0.5
     deg, data sheets) is taken up on the side the motor pushes (the encoder is on the output);
  6. torque off = zero torque (the driver is off: the joint keeps only the model's passive
     gear damping, friction and rotor armature).

Data sheet values (docs/robots.md has the sources):
  XM430-W350 (ROBOTIS e-manual, X series table): 3.8 N m stall, 43 rpm no-load at 11.1 V (the
    OP3's 3-cell LiPo at its nominal voltage; 4.1 N m and 46 rpm at 12 V), 4096 pulse/rev;
    Position P Gain 800 default, KPP = P/128, output PWM limit 885 -> u = KPP * e_pulse / 885.
  STS3215 12 V (C018, Feetech data sheet via the SO-ARM100 test report): 30 kg cm = 2.94 N m,
    0.222 s/60 deg = 45 rpm, 4096 steps/rev; P coefficient 32 default (LeRobot writes 16).
  Hobby PWM servo, Hitec HS-422 at 6 V (Hitec data sheet): 4.1 kg cm = 0.40 N m,
    0.16 s/60 deg, dead band 8 us (= 0.72 deg at 2000 us / 180 deg, 11.1 us/deg).
"""

import math
import os

import numpy as np

RPM = 2.0 * math.pi / 60.0
KGCM = 9.80665 / 100.0


class ServoSpec:
    def __init__(self, name, stall_nm, no_load_rad_s, deadband_rad, resolution_rad, kp_duty_per_rad,
                 kd_duty_per_rad_s, source, backlash_rad=0.0):
        self.name = name
        self.backlash_rad = backlash_rad
        self.stall_nm = stall_nm
        self.no_load_rad_s = no_load_rad_s
        self.deadband_rad = deadband_rad
        self.resolution_rad = resolution_rad
        self.kp_duty_per_rad = kp_duty_per_rad          # at the controller's default gain
        self.kd_duty_per_rad_s = kd_duty_per_rad_s
        self.source = source

    @property
    def braking_nm_s(self):
        # back-EMF braking of the shorted motor: d tau / d omega = stall / omega_no_load
        return self.stall_nm / self.no_load_rad_s


PULSE_RAD = 2.0 * math.pi / 4096


def dynamixel_kp(p_gain):
    # KPP = P/128; PWM = KPP * e[pulse]; duty = PWM / 885  ->  duty per rad
    return (p_gain / 128.0) / 885.0 / PULSE_RAD


def dynamixel_kd(d_gain):
    # KPD = D/16 on the error rate in pulse/ms (assumed units; the default D is 0)
    return (d_gain / 16.0) / 885.0 / PULSE_RAD * 1e-3


# STS3215: Menagerie's identified kp 17.8 N m/rad for the SO-101 at LeRobot's P = 16
STS_KP_PER_P = 17.8 / 2.94 / 16.0


def feetech_kp(p_coef):
    return STS_KP_PER_P * p_coef


def feetech_kd(d_coef):
    # assumed: D 32 -> 0.01 duty per rad/s (small next to the motor's own braking)
    return 0.01 * d_coef / 32.0


SPECS = {
    # at 11.1 V: a 3S LiPo's nominal voltage (12.6 V full, lower under load); at 12 V (a bench
    # supply) the e-manual gives 4.1 N m and 46 rpm: the twin takes the battery's, no kinder
    "xm430-w350": ServoSpec("XM430-W350 (11.1 V)", 3.8, 43 * RPM, 0.0, PULSE_RAD, dynamixel_kp(800),
                            dynamixel_kd(0), "ROBOTIS e-manual X series table, XM430-W350 at 11.1 V",
                            backlash_rad=math.radians(0.25)),
    "sts3215": ServoSpec("STS3215 (12 V)", 30 * KGCM, (math.pi / 3) / 0.222, 1 * PULSE_RAD,
                         PULSE_RAD, feetech_kp(32), feetech_kd(32),
                         "Feetech STS3215 C018 data sheet (12 V), as quoted in SO-ARM100 issue 134",
                         backlash_rad=math.radians(0.5)),
    # pot feedback: no quantisation; proportional band: full duty beyond 10 deg (assumed)
    "hs-422": ServoSpec("Hitec HS-422 (6 V)", 4.1 * KGCM, (math.pi / 3) / 0.16,
                        math.radians(8.0 / 11.11 / 2), 0.0, 1.0 / math.radians(10.0), 0.0,
                        "Hitec HS-422 data sheet (6 V)"),
}

CONTROLLER_SPEC = {"dynamixel": "xm430-w350", "feetech": "sts3215", "maestro": "hs-422"}


class ServoBank:
    """n servos of one spec; arrays in servo order; angles in MJCF joint radians."""

    def __init__(self, spec, n, q0_rad=None):
        self.spec = spec
        self.n = n
        q0 = np.zeros(n) if q0_rad is None else np.array(q0_rad, dtype=float)
        self.goal = q0.copy()
        self.setpoint = q0.copy()
        self.setpoint_vel = np.zeros(n)
        self.vel_limit = np.zeros(n)          # 0 = none
        self.acc_limit = np.zeros(n)          # 0 = none
        self.on = np.zeros(n, dtype=bool)
        self.kp = np.full(n, spec.kp_duty_per_rad)
        self.kd = np.full(n, spec.kd_duty_per_rad_s)
        self.duty = np.zeros(n)
        self.tau = np.zeros(n)
        self.saturated = np.zeros(n, dtype=bool)
        self.counts = (0, 0)
        self.gap = np.zeros(n)                # backlash: motor side - joint (rad)

    def set_goal(self, i, goal_rad, vel_limit_rad_s=0.0, acc_limit_rad_s2=0.0, torque_on=True,
                 kp=None, kd=None):
        if torque_on and not self.on[i]:
            self.setpoint_vel[i] = 0.0
        self.goal[i] = goal_rad
        self.vel_limit[i] = max(0.0, vel_limit_rad_s)
        self.acc_limit[i] = max(0.0, acc_limit_rad_s2)
        self.on[i] = bool(torque_on)
        if kp is not None:
            self.kp[i] = kp
        if kd is not None:
            self.kd[i] = kd

    def torque(self, q_rad, qd_rad_s, dt_s):
        """Motor torques (N m) for joint angles and velocities; advances the profiles by dt."""
        s = self.spec
        self.counts = _servo_step(q_rad, qd_rad_s, dt_s, self.goal, self.setpoint, self.setpoint_vel,
                    self.vel_limit, self.acc_limit, self.on, self.kp, self.kd, self.duty, self.tau,
                    self.saturated, self.gap, s.resolution_rad, s.deadband_rad, s.stall_nm,
                    s.no_load_rad_s, 0.5 * s.backlash_rad)
        return self.tau

    def moving(self, qd_rad_s, threshold_rad_s):
        return (self.on & (self.setpoint != self.goal)) | (np.abs(qd_rad_s) > threshold_rad_s)


def _servo_step_py(q, qd, dt, goal, sp, spv, vlim, alim, on, kp, kd, duty, tau, sat, gap, res, deadband,
                   stall, w0, half_lash):
    """One control step of every servo in place; returns (servos at full duty, servos on)."""
    nsat = 0
    non = 0
    for i in range(q.shape[0]):
        if not on[i]:
            # torque off: the profile follows the joint (re-enabled, it starts from there)
            sp[i] = q[i]
            spv[i] = 0.0
            duty[i] = 0.0
            tau[i] = 0.0
            sat[i] = False
            continue
        non += 1
        # --- profile: v_max = min(v_limit, sqrt(2 a |e|)), v slews by at most a dt ---
        e = goal[i] - sp[i]
        if e == 0.0:
            spv[i] = 0.0
        elif vlim[i] <= 0.0 and alim[i] <= 0.0:
            sp[i] = goal[i]
            spv[i] = 0.0
        else:
            vmax = vlim[i] if vlim[i] > 0.0 else 1e30
            if alim[i] > 0.0:
                vmax = min(vmax, math.sqrt(2.0 * alim[i] * abs(e)))
            vdes = vmax if e > 0 else -vmax
            dv = vdes - spv[i]
            if alim[i] > 0.0:
                dv = max(-alim[i] * dt, min(alim[i] * dt, dv))
            v = spv[i] + dv
            nxt = sp[i] + v * dt
            if (goal[i] - nxt) * e <= 0.0 or v >= 1e29 or v <= -1e29:
                sp[i] = goal[i]
                spv[i] = 0.0
            else:
                sp[i] = nxt
                spv[i] = v
        # --- encoder: whole steps ---
        qm = math.floor(q[i] / res + 0.5) * res if res > 0.0 else q[i]
        err = sp[i] - qm
        # --- deadband: no drive inside it ---
        if abs(err) <= deadband:
            err = 0.0
        # --- duty u = kp e + kd (v_setpoint - omega), clamped to full duty ---
        u = kp[i] * err + kd[i] * (spv[i] - qd[i])
        sat[i] = abs(u) >= 1.0
        if sat[i]:
            nsat += 1
        u = max(-1.0, min(1.0, u))
        # --- DC motor: tau = stall (u - omega / omega_0), within +-stall ---
        t = stall * (u - qd[i] / w0)
        t = max(-stall, min(stall, t))
        duty[i] = u
        if half_lash > 0.0:
            # backlash: the (massless) motor side runs ahead of the joint at the free relative
            # speed omega_0 tau / stall, gap = motor - joint in [-b/2, b/2]; the gear transmits
            # only while the gap is closed on the side tau pushes
            g = gap[i] + w0 * (t / stall) * dt
            g = max(-half_lash, min(half_lash, g))
            gap[i] = g
            if not ((t > 0.0 and g >= half_lash) or (t < 0.0 and g <= -half_lash)):
                t = 0.0
        tau[i] = t
    return nsat, non


_servo_step = _servo_step_py
if os.environ.get("MOTIONSTAFF_NUMBA", "1") != "0":
    try:                                # the `fast` extra; the plain loop is the same code
        import numba
        _servo_step = numba.njit(cache=True)(_servo_step_py)
    except ImportError:
        pass


def warm_up():
    """Compile the servo step now (numba), not in the first physics step."""
    ServoBank(SPECS["xm430-w350"], 1).torque(np.zeros(1), np.zeros(1), 0.002)
