"""The OpenCR board's IMU as its firmware runs it: the MPU9250's filters, the 200 Hz loop, Madgwick.

    imu = BoardImu(up=(0.0, 0.0, 1.0))          # powered up (its first sense), seed 200's chip
    imu.sense(t_s, rate_body_rad_s, force_body_g, dt_s)   # every physics step (the chip)
    imu.answering(t_s)                          # False for ~2.9 s: its power-up calibration
    imu.registers()                             # the 18 bytes at 32..49 the board holds now

What the OP3's host reads at 32..49 is not the body now. ROBOTIS' firmware
(ROBOTIS-GIT/OpenCR 68ec75d8a400949580ecf263e0105ea9743b878e, arduino/opencr_arduino/opencr/
libraries/IMU/IMU.cpp, MadgwickAHRS.cpp, MPU9250.cpp; OP3/examples/opencr_op3/dxl_hw_op3.cpp,
dxl_node_op3.cpp) makes it so:
- MPU9250.cpp: gyro +-2000 deg/s (16.4 LSB per deg/s), acc +-2 g (16384 LSB per g, so an
  impact past 2 g clips), both through the chip's DLPF setting 3. The MPU-9250 register map
  gives 41 Hz and 5.9 ms of delay (gyro), 44.8 Hz and 4.88 ms (acc); modelled here as a
  first-order lag of that delay, updated on every physics step (an assumption: the chip's
  filter is not published beyond the table, and a first-order lag of the same delay passes
  less than 41 Hz, so it is no kinder).
- IMU.cpp, cIMU::update: the loop runs computeIMU once 5000 us have passed (200 Hz);
  between two runs the registers hold the last one's values (0-5.1 ms old at a read).
- computeIMU: the gyro is the mean of its last 3 samples (C int division: truncated toward
  zero), and |mean| <= 3 LSB is set to 0; Madgwick's updateIMU (beta 0.1, no magnetometer)
  takes gx = mean x 2000/32768 deg/s (the firmware's gRes, 0.1 % off the chip's 1/16.4) and
  the acc with dt = the time since the last run.
- dxl_node_op3.cpp fills Gyro = that mean, Acc = the chip's raw acc, Roll/Pitch/Yaw =
  (int16)((Madgwick angle - offset) x 10): 0.1 deg, truncated; offsets are 0 unless the host
  asks for a calibration (IMU Control), which no motionstaff path does. Yaw = getYaw() - 180 =
  the filter's yaw, integrated from the gyro alone: it drifts, as on the robot.
All in the board's own axes (the board sits half a turn about z in the OP3's body: the caller
turns body vectors into board vectors, device/servo/opencr.py MOUNT).
Each board's chip (drawn from its seed, default its bus id 200; MPU-9250 product spec
PS-MPU-9250A-01 rev 1.1, tables 3.1, 3.2, uniform over each initial tolerance): acc zero-g
offset +-60 mg x, y, +-80 mg z (60 mg tilts gravity 3.4 deg), acc and gyro sensitivity +-3 %,
cross-axis +-2 %, gyro zero-rate output +-5 deg/s. The firmware calibrates only the gyro
(MPU9250.cpp gyro_init: calibratingG = 512; acc_init leaves calibratingA 0, the acc's zero is
never taken at power-up): gyroZero = (sum of the 512 runs' raw gyro) >> 9, subtracted after;
the accelerometer's offset and every sensitivity error stay in the registers and in Madgwick.
Power-up (opencr_op3.ino setup() -> dxl_node_op3_init: dxl_hw_op3_init() -> IMU.begin() runs
before dxlOpenPort): MPU9250::begin + init wait 0.325 s (delays), then IMU.begin() loops
update() until the 512 calibration runs are done (2.555 s more at 200 Hz): the board does not
answer at all for about 2.9 s (emulate/opencr.py gives no reply). Madgwick skips the runs while
calibratingG > 0 and starts at q = 1, 0, 0, 0: a board just up reads level and turns to the
tilt at 2 beta rad/s (11.5 deg/s) at most. The table's RAM is zeros until the first loop
after the port opened wrote it (device/servo/opencr.py refuses an all-zero acc).
The loop (cIMU::update: a run once micros() - tTime >= 5000 us, tTime = the run's start) runs
on its own clock: each gap 5 ms plus the main loop's lateness (0-0.1 ms, seeded; an
assumption: ROBOTIS publish no figure), at its own time inside a physics step, the chip's
filters advanced to it with the step's sample held (the physics gives the body only at its
2 ms steps: that bounds the input, not the loop's time).
Not modelled (each kinder than a real board): the ZRO's and zero-g offset's drift with
temperature after the calibration (spec: +-30 deg/s and +-1.5 mg/C over -40..85 C), the 1 kHz
sample hold (up to 1 ms), float32 arithmetic, and IMU Control (50): a write there starts the
firmware's calibrations; here it is only stored.
Noise: the chip's acc noise, 300 ug/sqrt(Hz) over 44.8 Hz (MPU-9250 data sheet 3.2), about
2.5 mg RMS, seeded; the gyro's noise is the body's (host/physics/twin.py Twin.imu: 0.01 rad/s
RMS, above the chip's 0.1 deg/s).
"""

import math
import random
import struct

# the registers' scales and the dead band are the host reader's (device/servo/opencr.py cites
# them): 16.4 LSB per deg/s (MPU9250 FSR 2000 dps), 16384 LSB per g (FSR 2 g), |gyro| <= 3 -> 0
from device.servo.opencr import ACC_LSB_PER_G, ANGLE_LSB_PER_DEG, GYRO_DEADBAND_LSB, \
    GYRO_LSB_PER_DPS, _int16

UPDATE_S = 0.005                    # IMU.h begin(hz = 200): update_us = 1000000 / 200
GRES_DPS = 2000.0 / 32768.0         # IMU.cpp gRes (what the filter multiplies the gyro by)
FILTER_NUM = 3                      # IMU.cpp: the gyro's moving mean
BETA = 0.1                          # MadgwickAHRS.cpp betaDef
GYRO_DELAY_S = 0.0059               # MPU-9250 register map, DLPF_CFG 3
ACC_DELAY_S = 0.00488               # MPU-9250 register map, A_DLPFCFG 3
ACC_NOISE_G = 300e-6 * math.sqrt(44.8 * math.pi / 2)   # noise density x sqrt(noise bandwidth)
# MPU-9250 product spec (PS-MPU-9250A-01 rev 1.1) initial tolerances, 25 C:
ACC_ZERO_G_TOL_G = (0.060, 0.060, 0.080)   # table 3.2, zero-g initial calibration tolerance
SENS_TOL = 0.03                     # tables 3.1, 3.2: sensitivity scale factor tolerance +-3 %
CROSS_TOL = 0.02                    # tables 3.1, 3.2: cross-axis sensitivity +-2 %
GYRO_ZRO_TOL_DPS = 5.0              # table 3.1: initial ZRO tolerance +-5 deg/s
DEFAULT_SEED = 200                  # a board's default: its bus id (every OP3 ships as 200)
CAL_RUNS = 512                      # MPU9250.cpp MPU_CALI_COUNT: gyro_init's calibratingG
# MPU9250::begin + init before the first run: delay(100), delay(100) after the reset, 25 x
# delay(1), delay(100)
INIT_S = 0.1 + 0.1 + 0.025 + 0.1
LOOP_JITTER_S = 0.0001              # the main loop's lateness past 5000 us (assumption)


def _adc(v):
    """The chip's output: rounded, saturated at int16 (a value past 2^1023 too: no OverflowError)."""
    return int(round(max(-32768.0, min(32767.0, v))))


def _cdiv(a, b):
    """C's int division: truncated toward zero."""
    q = abs(a) // b
    return q if a >= 0 else -q


def quat_from_tilt(up):
    """The Madgwick quaternion (q0..q3) of a sensor whose up vector (its own axes) is up, yaw 0:
    q = qz(0) qy(pitch) qx(roll)."""
    ux, uy, uz = up
    # roll = atan2(uy, uz), pitch = atan2(-ux, sqrt(uy^2 + uz^2))
    r = math.atan2(uy, uz)
    p = math.atan2(-ux, math.sqrt(uy * uy + uz * uz))
    cr, sr, cp, sp = math.cos(r / 2), math.sin(r / 2), math.cos(p / 2), math.sin(p / 2)
    return [cp * cr, cp * sr, sp * cr, -sp * sr]


def madgwick_imu(q, g_dps, a, dt_s, beta=BETA):
    """One Madgwick::updateIMU step (MadgwickAHRS.cpp), returns the new q."""
    q0, q1, q2, q3 = q
    gx, gy, gz = (math.radians(v) for v in g_dps)
    # qdot = 1/2 q x (0, w)
    d0 = 0.5 * (-q1 * gx - q2 * gy - q3 * gz)
    d1 = 0.5 * (q0 * gx + q2 * gz - q3 * gy)
    d2 = 0.5 * (q0 * gy - q1 * gz + q3 * gx)
    d3 = 0.5 * (q0 * gz + q1 * gy - q2 * gx)
    ax, ay, az = a
    if not (ax == 0.0 and ay == 0.0 and az == 0.0):
        n = 1.0 / math.sqrt(ax * ax + ay * ay + az * az)
        ax, ay, az = ax * n, ay * n, az * n
        # s = J^T f: the gradient of the error between the measured and the predicted gravity
        s0 = 4 * q0 * q2 * q2 + 2 * q2 * ax + 4 * q0 * q1 * q1 - 2 * q1 * ay
        s1 = (4 * q1 * q3 * q3 - 2 * q3 * ax + 4 * q0 * q0 * q1 - 2 * q0 * ay - 4 * q1
              + 8 * q1 * q1 * q1 + 8 * q1 * q2 * q2 + 4 * q1 * az)
        s2 = (4 * q0 * q0 * q2 + 2 * q0 * ax + 4 * q2 * q3 * q3 - 2 * q3 * ay - 4 * q2
              + 8 * q2 * q1 * q1 + 8 * q2 * q2 * q2 + 4 * q2 * az)
        s3 = 4 * q1 * q1 * q3 - 2 * q1 * ax + 4 * q2 * q2 * q3 - 2 * q2 * ay
        ns = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2 + s3 * s3)
        if ns > 0.0:
            # qdot -= beta s / |s|
            d0 -= beta * s0 / ns
            d1 -= beta * s1 / ns
            d2 -= beta * s2 / ns
            d3 -= beta * s3 / ns
    # q += qdot dt, then |q| = 1
    q0, q1, q2, q3 = q0 + d0 * dt_s, q1 + d1 * dt_s, q2 + d2 * dt_s, q3 + d3 * dt_s
    n = 1.0 / math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    return [q0 * n, q1 * n, q2 * n, q3 * n]


def angles_deg(q):
    """Madgwick::computeAngles, in degrees: (roll, pitch, yaw)."""
    q0, q1, q2, q3 = q
    roll = math.atan2(q0 * q1 + q2 * q3, 0.5 - q1 * q1 - q2 * q2)
    pitch = math.asin(max(-1.0, min(1.0, -2.0 * (q1 * q3 - q0 * q2))))
    yaw = math.atan2(q1 * q2 + q0 * q3, 0.5 - q2 * q2 - q3 * q3)
    return math.degrees(roll), math.degrees(pitch), math.degrees(yaw)


def _draw_offsets(rng):
    """One board's chip, drawn within the MPU-9250 product spec's initial tolerances (PS-MPU-9250A-01
    rev 1.1, tables 3.1 and 3.2; uniform over each bound, the spec gives no distribution):
    acc zero-g offset +-60 mg x, y and +-80 mg z, acc and gyro sensitivity +-3 %, cross-axis
    sensitivity +-2 %, gyro zero-rate output (ZRO) +-5 deg/s. M[i][j] = delta_ij (1 + s_i) +
    (1 - delta_ij) c_ij: chip = M body + offset."""
    def matrix():
        return [[1.0 + rng.uniform(-SENS_TOL, SENS_TOL) if i == j else rng.uniform(-CROSS_TOL, CROSS_TOL)
                 for j in range(3)] for i in range(3)]
    acc_m = matrix()
    acc_b = [rng.uniform(-b, b) for b in ACC_ZERO_G_TOL_G]
    gyro_m = matrix()
    gyro_b = [rng.uniform(-GYRO_ZRO_TOL_DPS, GYRO_ZRO_TOL_DPS) for _ in range(3)]
    return acc_m, acc_b, gyro_m, gyro_b


_IDENTITY = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def _affine(m, b, v):
    """m v + b (3x3, 3)."""
    return [m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2] + b[i] for i in range(3)]


class BoardImu:
    """The chip and the firmware's IMU loop, in the board's axes, on the body's clock, from
    power-up (the first sense())."""

    def __init__(self, up=(0.0, 0.0, 1.0), seed=DEFAULT_SEED, tolerances=True):
        up = [float(v) for v in up]
        if not all(math.isfinite(v) for v in up):
            up = [0.0, 0.0, 1.0]        # a body not finite at power-up: the chip starts level
        # this board's chip: its tolerances drawn from the seed (the same seed, the same board)
        # (tolerances=False: a chip exactly to its nominal figures, for tests of the firmware's
        # own arithmetic; no product path builds one)
        self.acc_m, self.acc_b, self.gyro_m, self.gyro_b = _draw_offsets(random.Random(seed)) \
            if tolerances else (_IDENTITY, [0.0] * 3, _IDENTITY, [0.0] * 3)
        self.rng = random.Random(seed * 7919 + 1)       # the acc's noise
        self.jitter = random.Random(seed * 7919 + 2)    # the loop's lateness
        self.q = [1.0, 0.0, 0.0, 0.0]                 # Madgwick::Madgwick(): q0 = 1 (level)
        self.gyro_f = _affine(self.gyro_m, self.gyro_b, [0.0, 0.0, 0.0])   # deg/s, the chip's
        self.acc_f = _affine(self.acc_m, self.acc_b, up)                    # g, the chip's
        self.hist = [[0] * FILTER_NUM for _ in range(3)]
        self.gyro = [0, 0, 0]                         # the registers' gyro (mean, dead band)
        self.acc = [0, 0, 0]
        self.gyro_zero = [0, 0, 0]                    # MPU9250.cpp gyroZero (LSB)
        self.gyro_sum = [0, 0, 0]                     # g[axis]: the calibration's sum
        self.calibrating = CAL_RUNS                   # calibratingG (gyro_init)
        self.t_on = None                              # power-up (the first sense)
        self.t_chip = None                            # the chip's filters are at this time
        self.t_last = None                            # the loop's last run
        self.due = None                               # its next
        self.open_s = None                            # dxlOpenPort: the board answers from here
        self.runs = 0
        self._regs = bytes(18)                        # the table's RAM before the first loop
        self._table_written = False

    def answering(self, t_s):
        """True once the firmware has opened its Dynamixel port (setup() done): before it, the
        board does not answer at all (IMU.begin() blocks setup() in its calibration)."""
        return self.open_s is not None and t_s >= self.open_s - 1e-12

    def _chip(self, t_s, rate_dps, force_g):
        """The chip's DLPF from t_chip to t_s with this input held."""
        dt = t_s - self.t_chip
        if dt <= 0.0:
            return
        if rate_dps is not None:
            # y += (1 - e^(-dt/tau)) (x - y): a first-order lag of the DLPF's delay
            kg = 1.0 - math.exp(-dt / GYRO_DELAY_S)
            ka = 1.0 - math.exp(-dt / ACC_DELAY_S)
            g, a = self.gyro_f, self.acc_f
            self.gyro_f = [g[0] + kg * (rate_dps[0] - g[0]), g[1] + kg * (rate_dps[1] - g[1]),
                           g[2] + kg * (rate_dps[2] - g[2])]
            self.acc_f = [a[0] + ka * (force_g[0] - a[0]), a[1] + ka * (force_g[1] - a[1]),
                          a[2] + ka * (force_g[2] - a[2])]
        self.t_chip = t_s

    def sense(self, t_s, rate_rad_s, force_g, dt_s):
        """One physics step of dt_s ending at t_s: the chip filters the body's rate and force
        (board axes, held over the step), through this chip's offsets and sensitivities; the
        firmware's loop runs at its own times within the step (every UPDATE_S plus the loop's
        jitter), not at the step's end. A sample that is not finite (1e308 rad/s is inf deg/s;
        a body whose physics blew up) leaves the chip's filters as they were: the registers
        never hold a NaN's garbage, the loop still runs."""
        try:
            rate = _affine(self.gyro_m, self.gyro_b, [math.degrees(rate_rad_s[0]), math.degrees(rate_rad_s[1]),
                                                      math.degrees(rate_rad_s[2])])
            force = _affine(self.acc_m, self.acc_b, [float(force_g[0]), float(force_g[1]), float(force_g[2])])
            # finite: inf - inf and NaN are NaN, and NaN != NaN
            chk = rate[0] + rate[1] + rate[2] + force[0] + force[1] + force[2]
            if chk - chk != 0.0:
                rate = force = None
        except (TypeError, ValueError, OverflowError, IndexError):
            rate = force = None
        if self.t_on is None:
            # power-up at the step's start: MPU9250::begin()'s delays, then the first run
            self.t_on = self.t_chip = t_s - dt_s
            self.due = self.t_on + INIT_S
        runs = self.runs
        while self.due <= t_s + 1e-12:
            self._chip(self.due, rate, force)
            self.compute(self.due - (self.t_last if self.t_last is not None else self.due - UPDATE_S))
            self.t_last = self.due
            # cIMU::update: a run once micros() - tTime >= 5000 us; the main loop comes round
            # late by up to its own iteration (LOOP_JITTER_S, an assumption: not published)
            self.due += UPDATE_S + self.jitter.uniform(0.0, LOOP_JITTER_S)
        self._chip(t_s, rate, force)
        if not self._table_written:
            if not self.answering(t_s):
                return
            # dxl_node_op3_loop: the first pass after the port opened copies the IMU to the table
            # (a read before it gets the RAM's zeros)
            self._table_written = True
            self._pack()
        elif self.runs != runs:
            # the registers change only with a run of the loop
            self._pack()

    def compute(self, dt_s):
        """cIMU::computeIMU: read the chip, gyro_common (the power-up calibration, then the
        zero subtracted), the gyro's mean and dead band, Madgwick (not while calibrating)."""
        acc = []
        cal = self.calibrating > 0
        for k in range(3):
            # raw = the chip's rounding of the filtered value (int16)
            raw_g = _adc(self.gyro_f[k] * GYRO_LSB_PER_DPS)
            if cal:
                # g[axis] += gyroADC; gyroZero = g >> 9 (floor: an arithmetic shift)
                self.gyro_sum[k] += raw_g
                self.gyro_zero[k] = self.gyro_sum[k] >> 9
            else:
                raw_g -= self.gyro_zero[k]
            h = self.hist[k]
            h[2], h[1], h[0] = h[1], h[0], raw_g
            # mean of the last 3 (int division), |mean| <= 3 -> 0
            m = _cdiv(h[0] + h[1] + h[2], FILTER_NUM)
            self.gyro[k] = 0 if abs(m) <= GYRO_DEADBAND_LSB else m
            # the acc is never calibrated at power-up (calibratingA = 0: acc_cali_start is
            # only IMU Control's): the registers and the filter get the chip's raw value
            acc.append(_adc((self.acc_f[k] + self.rng.gauss(0.0, ACC_NOISE_G)) * ACC_LSB_PER_G))
        if cal:
            self.calibrating -= 1
        self.acc = acc
        if self.calibrating == 0:
            # the filter: gx = gyroADC x gRes deg/s, a = accADC (normalised inside); it skips
            # the runs while calibratingG > 0 (the last calibration run is filtered)
            self.q = madgwick_imu(self.q, [v * GRES_DPS for v in self.gyro], [float(v) for v in acc], dt_s)
            if self.open_s is None:
                # IMU.begin() returns, setup() opens the port
                self.open_s = self.due
        self.runs += 1

    def _pack(self):
        roll, pitch, yaw = angles_deg(self.q)
        # (int16)(angle x 10): truncated toward zero
        ang = [_int16(v * ANGLE_LSB_PER_DEG) for v in (roll, pitch, yaw)]
        self._regs = struct.pack("<9h", *(self.gyro + self.acc + ang))

    def registers(self):
        """The 18 bytes at 32..49: gyro x/y/z, acc x/y/z, roll, pitch, yaw (int16 LE); zeros
        until the firmware's loop has first written them."""
        return self._regs
