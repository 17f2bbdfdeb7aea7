"""The robot's own IMU fed back onto a retargeted staff while it plays (closed-loop balance).

    from host.retarget.feedback import StaffFeedback
    fb = StaffFeedback(res, "op3-dynamixel", imu=partial(bus_imu.timed, player.clock))
    # res: pose.retarget_to_robot(...); bus_imu = device.servo.opencr.imu_reader(robot, driver,
    # fps): the OpenCR board on the bus, read with the player's clock
    player.play(res.staff.values, res.staff.fps, adjust=fb)  # each frame + the ankles' correction

A staff played open loop is a plan: a one-legged pose with the other leg raised high (the
Bandai dance at 41.2 s of the person's time) is statically feasible, but the servos' give and
the body's dynamics drift it a little each frame, and nothing turns the drift back: the OP3
twin tipped backwards over 1.4 s, its centre of mass moving 120 mm behind the plan's. This puts
the live path's ankle strategy (host/retarget/stabilise.py, the IMU's tilt against the plan's
at the standing ankles) on each frame the player sends; as live, the tilt of a timed bus read
(OpenCRImu.timed) is the host's estimate from the board's gyro and accelerometer
(host/retarget/attitude.py), not the board's Madgwick. Frame k's servo degrees become

    deg_k + gain_k to_servo_deg(AnkleStabiliser.correct(qpos_plan[k], g_imu, w_imu, standing[k]))

clipped to the description's limits (the player's limiter after it stays the last word), on
one foot only (standing[k] for one side, the plan's support; gain_k fades it in over RAMP_S
after the lift-off and out before the landing): with both soles down the ankles would fight
through the floor. An IMU that does not answer (any exception, None, NaN, inf, a zero
vector) leaves that frame as planned, counted in `missed`. Where a frame's plan is not known
(a staff of the robot's own rows, no `res.qpos`) nothing is added. The IMU is the robot's own,
read through its bus: on the OP3 the OpenCR board (device/servo/opencr.py), by `motionstaff play
--imu-feedback` on the robot and `motionstaff simulate --imu-feedback` on the emulator that
answers with the twin's IMU (the same bytes and their bus time).
"""

import numpy as np

# the correction fades in over this long after a lift-off and out before a landing: around
# them the swing foot still touches, and the ankle turned under a closed chain drags the soles
# (05_20-mb whole: 12.3 mm of slip in double support with an on/off gain, 8.8 open loop)
RAMP_S = 0.3


def _single_support_gain(standing, ramp_frames):
    """(F,) in [0, 1]: 0 on both feet (or none), rising to 1 over ramp_frames inside each
    single-support run and falling back before its end."""
    sl, sr = np.asarray(standing[0], bool), np.asarray(standing[1], bool)
    single = sl ^ sr
    out = np.zeros(single.size)
    edges = np.flatnonzero(np.diff(np.r_[0, single.astype(np.int8), 0]))
    n = max(1.0, float(ramp_frames))
    for a, b in zip(edges[::2], edges[1::2]):
        k = np.arange(a, b)
        out[a:b] = np.clip(np.minimum(k - a + 1, b - k) / n, 0.0, 1.0)
    return out


class StaffFeedback:
    def __init__(self, res, robot_name, imu, **gains):
        from host.retarget.robotmodel import robot_body
        from host.retarget.stabilise import AnkleStabiliser
        self.body = robot_body(robot_name)
        self.plan = np.asarray(res.qpos, float)
        if res.contacts is None:
            n = self.plan.shape[0]
            self.standing = (np.ones(n, bool), np.ones(n, bool))
        else:
            self.standing = tuple(np.asarray(c, bool) for c in res.contacts)
        self.gain = _single_support_gain(self.standing, RAMP_S * float(res.staff.fps))
        self.imu = imu
        self.stabiliser = AnkleStabiliser(self.body, **gains)   # kp, kd_s, max_deg
        self.rows = [res.staff.row_index(n) for n in self.body.servo_names]
        self.frames = 0
        self.missed = 0
        self.max_dq_deg = 0.0

    def report(self, summary, bus_imu=None):
        """The run's feedback figures: frames, imu_missed, adjust_errors (frames it raised on,
        sent as planned: Player.play's summary), max_ankle_deg, and the bus IMU's reads."""
        out = {"frames": self.frames, "imu_missed": self.missed,
               "adjust_errors": summary.get("adjust_errors", 0), "max_ankle_deg": round(self.max_dq_deg, 2)}
        if self.stabiliser.attitude is not None:
            out["tilt"] = dict(self.stabiliser.attitude.stats)    # the host's estimate's reads
        if bus_imu is not None:
            out.update(imu="bus", imu_every=bus_imu.every, imu_reads=dict(bus_imu.stats))
        return out

    def __call__(self, k, column):
        """Frame k's column (staff row order) with the standing ankles' correction added."""
        self.frames += 1
        if not 0 <= k < self.plan.shape[0]:
            return column
        try:
            sample = self.imu()
        except Exception:
            # (whatever the IMU's driver raises: OSError, a bus error, a bug)
            sample = None
        # (up, rate) or a bus IMU's (up, rate, acc, t_s): then the tilt is the host's estimate
        # of the board's gyro and accelerometer, as live (AnkleStabiliser.measure)
        gw = self.stabiliser.measure(sample)
        if gw is None:
            # no usable sample (None, not two 3-vectors, NaN, inf, a zero vector)
            self.missed += 1
            return column
        g, w = gw
        stance = {"l": bool(self.standing[0][k]), "r": bool(self.standing[1][k])}
        if stance["l"] == stance["r"]:
            # both soles down close the chain: the two ankles' turns fight and drag the soles
            # (the gait-pig C3D's first 3 s: slip 2.9 mm open loop, 10.2 with feedback there)
            return column
        dq_deg = self.gain[k] * self.body.to_servo_deg(self.stabiliser.correct(self.plan[k], g, w, stance))
        out = list(column)
        for j, r in enumerate(self.rows):
            v = out[r]
            if dq_deg[j] == 0.0 or v is None or v != v:
                continue
            out[r] = float(min(max(float(v) + dq_deg[j], self.body.lo_deg[j]), self.body.hi_deg[j]))
        self.max_dq_deg = max(self.max_dq_deg, float(np.max(np.abs(dq_deg))))
        return out
