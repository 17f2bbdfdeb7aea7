"""The OpenCR board's IMU as its firmware runs it: the MPU9250's filters, the 200 Hz loop, Madgwick.

    imu = BoardImu(up=(0.0, 0.0, 1.0))          # powered up standing still, level
    imu.sense(t_s, rate_body_rad_s, force_body_g, dt_s)   # every physics step (the chip)
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
  between two runs the registers hold the last one's values (0-5 ms old at a read; here the
  loop runs at the first physics step past each 5 ms, so they can be up to 5 ms + a step old).
- computeIMU: the gyro is the mean of its last 3 samples (C int division: truncated toward
  zero), and |mean| <= 3 LSB is set to 0; Madgwick's updateIMU (beta 0.1, no magnetometer)
  takes gx = mean x 2000/32768 deg/s (the firmware's gRes, 0.1 % off the chip's 1/16.4) and
  the acc with dt = the time since the last run.
- dxl_node_op3.cpp fills Gyro = that mean, Acc = the chip's raw acc, Roll/Pitch/Yaw =
  (int16)((Madgwick angle - offset) x 10): 0.1 deg, truncated; offsets are 0 unless the host
  asks for a calibration (IMU Control), which no motionstaff path does. Yaw = getYaw() - 180 =
  the filter's yaw, integrated from the gyro alone: it drifts, as on the robot.
All in the board's own axes (the board sits half a turn about z in the OP3's body: the caller
turns body vectors into board vectors, device/servo/opencr.py MOUNT). Power-up: IMU.begin()
(in setup(), before the bus is opened) calibrates the gyro over 512 loop runs (2.56 s) and the
filter does not run meanwhile (computeIMU skips updateIMU while calibratingG > 0): a board
just booted answers level (q = 1, 0, 0, 0) and turns to the tilt at 2 beta rad/s at most.
This starts as a board powered up earlier in this pose: settled (the filter's attitude = the
body's tilt, yaw 0), answering from the first read.
Not modelled (each makes the twin kinder than a real board; measured, CMU 131_03 live replay,
tools/replay_live.py: a zero-g offset of +-60 mg x, y and +-80 mg z, the data sheet's
tolerance, still stands, pose error 18.79-18.84 deg against 18.81): the chip's zero-g offset
(60 mg: the tilt read 3.4 deg off about that axis), its sensitivity (+-3 %) and cross-axis
(+-2 %) tolerances (data sheet 3.1, 3.2, typical), the 1 kHz sample hold (up to 1 ms),
float32 arithmetic, and IMU Control (50): a write there starts the firmware's calibrations
(bit 3 stops the filter for 2.56 s); here it is only stored.
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


class BoardImu:
    """The chip and the firmware's IMU loop, in the board's axes, on the body's clock."""

    def __init__(self, up=(0.0, 0.0, 1.0), seed=0):
        up = [float(v) for v in up]
        if not all(math.isfinite(v) for v in up):
            up = [0.0, 0.0, 1.0]        # a body not finite at power-up: the chip starts level
        self.q = quat_from_tilt(up)
        self.rng = random.Random(seed)
        self.gyro_f = [0.0, 0.0, 0.0]                 # the chip's filtered rate, deg/s
        self.acc_f = [float(v) for v in up]           # the chip's filtered specific force, g
        self.hist = [[0] * FILTER_NUM for _ in range(3)]
        self.gyro = [0, 0, 0]                         # the registers' gyro (mean, dead band)
        self.acc = [_adc(v * ACC_LSB_PER_G) for v in up]
        self.t_last = None                            # the loop's last run
        self.due = None                               # its next, on the 5 ms grid
        self.runs = 0
        self._regs = None
        self._pack()

    def sense(self, t_s, rate_rad_s, force_g, dt_s):
        """One physics step of dt_s ending at t_s: the chip filters the body's rate and force
        (board axes); the firmware's loop runs if 5 ms have passed since its last run. A
        sample that is not finite, or whose filtered value is not (1e308 rad/s is inf deg/s; a
        body whose physics blew up), leaves the chip's filters as they were: the registers
        never hold a NaN's garbage, the loop still runs."""
        # y += (1 - e^(-dt/tau)) (x - y): a first-order lag of the DLPF's delay
        kg = 1.0 - math.exp(-dt_s / GYRO_DELAY_S)
        ka = 1.0 - math.exp(-dt_s / ACC_DELAY_S)
        try:
            g = [y + kg * (math.degrees(x) - y) for x, y in zip(rate_rad_s, self.gyro_f)]
            a = [y + ka * (x - y) for x, y in zip(force_g, self.acc_f)]
        except (TypeError, ValueError, OverflowError):
            g = a = None
        if g is not None and all(abs(v) < float("inf") for v in g + a):
            self.gyro_f, self.acc_f = g, a
        if self.t_last is None:
            self.t_last, self.due = t_s, t_s + UPDATE_S
        elif t_s >= self.due - 1e-9:
            # the loop runs at the first step past its due time (every 5 ms on average; the
            # firmware's dt is the time since its last run)
            self.compute(t_s - self.t_last)
            self.t_last = t_s
            while self.due <= t_s + 1e-9:
                self.due += UPDATE_S

    def compute(self, dt_s):
        """cIMU::computeIMU: read the chip, the gyro's mean and dead band, Madgwick."""
        acc = []
        for k in range(3):
            # raw = the chip's rounding of the filtered value (int16)
            raw_g = _adc(self.gyro_f[k] * GYRO_LSB_PER_DPS)
            h = self.hist[k]
            h[2], h[1], h[0] = h[1], h[0], raw_g
            # mean of the last 3 (int division), |mean| <= 3 -> 0
            m = _cdiv(h[0] + h[1] + h[2], FILTER_NUM)
            self.gyro[k] = 0 if abs(m) <= GYRO_DEADBAND_LSB else m
            acc.append(_adc((self.acc_f[k] + self.rng.gauss(0.0, ACC_NOISE_G)) * ACC_LSB_PER_G))
        self.acc = acc
        # the filter: gx = gyroADC x gRes deg/s, a = accADC (normalised inside)
        self.q = madgwick_imu(self.q, [v * GRES_DPS for v in self.gyro], [float(v) for v in acc], dt_s)
        self.runs += 1
        self._pack()

    def _pack(self):
        roll, pitch, yaw = angles_deg(self.q)
        # (int16)(angle x 10): truncated toward zero
        ang = [_int16(v * ANGLE_LSB_PER_DEG) for v in (roll, pitch, yaw)]
        self._regs = struct.pack("<9h", *(self.gyro + self.acc + ang))

    def registers(self):
        """The 18 bytes at 32..49: gyro x/y/z, acc x/y/z, roll, pitch, yaw (int16 LE)."""
        return self._regs
