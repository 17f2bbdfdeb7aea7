"""Feedback from the robot's own IMU onto the standing legs (the ankle strategy, live and on a staff).

    from host.retarget.stabilise import AnkleStabiliser
    st = AnkleStabiliser(body)                      # host.retarget.robotmodel.RobotBody (humanoid)
    g_torso, w_torso = st.measure(sample)           # an IMU's read (below); None: no sample
    dq = st.correct(q_plan, g_torso, w_torso, stance={"l": True, "r": True})
    deg += body.to_servo_deg(dq)                    # (nservo,) model radians -> servo degrees

An IMU's read is (up, rate rad/s), the board's own tilt, or (up, rate, specific force g, t_s),
a bus IMU's registers with the read's time (device/servo/opencr.py OpenCRImu.timed): then the
tilt is the host's estimate from the gyro and accelerometer (host/retarget/attitude.py
TiltEstimator, one per stabiliser), not the board's Madgwick roll and pitch. Both paths read
it so: the live one (host/retarget/live.py) and the staff's (host/retarget/feedback.py).

The plan (the IK's whole-body qpos, root included) says how the torso should be tilted; the IMU
(gravity direction and angular rate in the torso's frame, what a real OP3's board reports) says
how it is. The difference delta (the torso turned from the plan about a horizontal axis) is the
whole body tipping over its feet: each standing foot is turned by a fraction of delta relative to
the torso, through its ankle pitch and roll, which with the sole on the floor turns the body back
towards the plan; the ankle's torque moves the centre of pressure towards the side the body falls
to (the ankle strategy; ROBOTIS' own OP3 balance feeds its IMU to the ankles too). With the rate
term it acts on the capture point of the linear inverted pendulum in angles,
x_cp / h = delta + omega / w0 (w0 = sqrt(g / h)).

    delta  = g_meas x g_plan                       (small angle; torso frame; heading left out)
    r      = KP delta + KD omega_perp              the foot's turn relative to the torso
    J_rel  = R_torso^T (J_rot,foot - J_rot,torso)[:, ankle pitch, roll]
    r_x   *= f_foot (both feet down)            the roll at the foot the body leans over
    dq     = argmin |J_rel dq - r|                 (2 joints, 3 rows: least squares)
    |dq| <= MAX_DEG per joint
    (a sample that is not one, NaN, inf, zero, None: no correction; g of any scale: its direction)

It runs each frame and, between frames, at the bridge's poll rate (LiveRetargeter.tick: the
demo's robot end polls 4 times a frame, 120 Hz), so a frame held back on the line (a damaged
stretch, an unplugged cable; the header repeat held frames up to 0.14 s when this was measured)
leaves the balance running. Measured in the twin on 14 replays
of the demo's clip (docs/robots.md): KP 0.8 with KD 0.10-0.13 s fell on none, KD 0.07 on 2, KP
1.2 / KD 0.12 on 1; closed only once per frame (30 Hz), KP 0.8 / KD 0.12 fell on 5 of 6 and
KP 0.4 / KD 0.02 was the best found. The opposite sign (pressing the sole flat, the foot turned
against delta) tipped the twin over within 1 s.
"""

import numpy as np

KP = 0.8              # of the tilt error turned back at the ankles (live: live.LIVE_KP)
KD_S = 0.12           # rate gain, seconds (1 / w0 of the OP3 as a pendulum: 0.14 s)
# with both feet down, the roll is turned back at the foot the body leans over, not at both: two
# ankle roll axes a hip width apart cannot both turn a closed chain (feet, legs, pelvis), and the
# servos pressed the soles sideways against each other. The share of a foot at lateral y (torso
# frame, from the other foot) for a lean of lean_y deg: clip(0.5 + sign(y) lean_y / (2 ROLL_SHARE_DEG), 0, 1).
# Measured (benchmarks/robot_live.py, IMU column, the board's own tilt, KP 0.8): at 1 deg mean slip
# 9.25 -> 7.05 mm; with the host's tilt (host/retarget/attitude.py): 0.5 deg 6.10, 1 deg 6.20, 2 deg
# 6.08 (15 of 26 over 5 mm, 17 at 1 deg), 3 deg 6.22; no roll at all with both feet down: 05_20-mb
# fell sideways in a weight shift (roll error 37 deg); 0.4 of it at both feet: 2 falls; the roll at
# the foot the body leans away from: 05_20-mb fell
ROLL_SHARE_DEG = 2.0
MAX_DEG = 12.0        # a correction never beyond this per ankle joint


class AnkleStabiliser:
    def __init__(self, body, kp=KP, kd_s=KD_S, max_deg=MAX_DEG, roll_share_deg=ROLL_SHARE_DEG):
        import mujoco
        self._mj = mujoco
        self.body = body
        self.kp, self.kd_s, self.max_rad = float(kp), float(kd_s), np.radians(max_deg)
        self.roll_share_deg = float(roll_share_deg or 0.0)     # 0: both feet take the roll
        m = body.model
        self.data = mujoco.MjData(m)
        self.torso = m.body(body.spec["torso"]).id
        self.feet = {s: m.body(n).id for s, n in body.spec["feet"].items()}
        names = list(body.servo_names)
        self.ankle = {s: [names.index(s + "_ank_pitch"), names.index(s + "_ank_roll")] for s in self.feet}
        self.last = {"delta_deg": np.zeros(3), "dq_deg": np.zeros(len(names))}
        self.invalid = 0      # IMU samples not used (non-finite, zero)
        self.attitude = None  # the host's tilt estimate (TiltEstimator), from the first timed read

    def measure(self, sample):
        """(g, w) arrays, the torso's up and rate rad/s (torso frame) from one IMU read, or
        None (no read, not 3-vectors, not finite, a zero up, the estimate's bad input).
        sample: (up, rate) or (up, rate, acc_g, t_s); with the accelerometer and the read's
        time the up is the host's estimate (TiltEstimator: the board's own up at most starts it)."""
        try:
            up, w = sample[0], sample[1]
            timed = len(sample) >= 4
        except (TypeError, IndexError, KeyError):
            return None
        if timed:
            if self.attitude is None:
                from host.retarget.attitude import TiltEstimator
                self.attitude = TiltEstimator()
            up = self.attitude.update(sample[3], up, w, sample[2])
        try:
            g = np.asarray(up, float).reshape(3)
            w = np.asarray(w, float).reshape(3)
        except (TypeError, ValueError, OverflowError):
            return None
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(w)) and np.max(np.abs(g)) > 1e-9):
            return None
        return g, w

    def correct(self, q, g_meas, w_meas, stance):
        """(nservo,) model radians to add for the standing feet (stance: {side: bool})."""
        mj, m, d, body = self._mj, self.body.model, self.data, self.body
        out = np.zeros(len(body.servo_names))
        R = np.zeros(9)
        mj.mju_quat2Mat(R, np.asarray(q[3:7], float))
        R = R.reshape(3, 3)
        g_plan = R[2, :]                      # R^T z: the plan's gravity in the torso frame
        try:
            g = np.asarray(g_meas, float).reshape(3)
            w = np.asarray(w_meas, float).reshape(3)
        except (TypeError, ValueError):
            g = w = np.full(3, np.nan)        # (not two 3-vectors: no sample)
        n = float(np.max(np.abs(g))) if np.all(np.isfinite(g)) else 0.0
        if not n > 1e-9 or not np.all(np.isfinite(w)):
            # no usable sample (NaN, inf, a zero vector): no correction, not a NaN that would
            # hold the ankles wherever they were
            self.last = {"delta_deg": np.zeros(3), "dq_deg": out.copy()}
            self.invalid = self.invalid + 1
            return out
        # g = g / |g| (scaled by its largest entry first: no overflow): an accelerometer's m/s^2,
        # or any scale, is a direction here
        g = g / n if n > 1e150 or n < 1e-150 else g
        ng = float(np.linalg.norm(g))
        if abs(ng - 1.0) > 1e-9:
            g = g / ng
        delta = np.cross(g, g_plan)
        w_perp = w - np.dot(w, g) * g         # the heading's rate left out
        r = self.kp * delta + self.kd_s * w_perp
        double = all(stance.get(k, False) for k in self.feet)
        # lean_y = (g_plan - g)_y: which way the torso leans sideways from the plan (deg)
        lean_y = float(np.degrees(g_plan[1] - g[1]))
        d.qpos[:] = q
        mj.mj_kinematics(m, d)
        mj.mj_comPos(m, d)
        jp, jr_t, jr_f = np.zeros((3, m.nv)), np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mj.mj_jacBody(m, d, jp, jr_t, self.torso)
        for s, on in stance.items():
            if not on or s not in self.feet:
                continue
            mj.mj_jacBody(m, d, jp, jr_f, self.feet[s])
            cols = body.dadr[self.ankle[s]]
            J = R.T @ (jr_f[:, cols] - jr_t[:, cols])
            rs = r
            if double and self.roll_share_deg:
                # the foot's side y in the torso frame, against the other foot (not the torso's
                # origin: a torso rolled ~10 deg on its hips, or shifted over one foot, has both
                # feet on one side of it, and the roll went to both ankles or to neither)
                o = [k for k in self.feet if k != s][0]
                y = float((R.T @ (d.xpos[self.feet[s]] - d.xpos[self.feet[o]]))[1])
                f = float(np.clip(0.5 + np.sign(y) * lean_y / (2.0 * self.roll_share_deg), 0.0, 1.0))
                rs = r * np.array([f, 1.0, 1.0])
            dq = np.linalg.lstsq(J, rs, rcond=None)[0]
            out[self.ankle[s]] = np.clip(dq, -self.max_rad, self.max_rad)
        self.last = {"delta_deg": np.degrees(delta), "dq_deg": np.degrees(out)}
        return out
