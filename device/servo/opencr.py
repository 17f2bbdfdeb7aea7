"""The ROBOTIS OP3's IMU: its OpenCR board, Dynamixel Protocol 2.0 device 200 on the servos' bus.

    from device.servo.opencr import OpenCRImu
    imu = OpenCRImu(driver)              # driver: the robot's Dynamixel driver (its port, its bus)
    imu.read()   # ((gx, gy, gz) unit up vector in the torso frame, (wx, wy, wz) rad/s) or None
    imu.request().hex(" ")               # ff ff fd 00 c8 07 00 02 20 00 10 00 b3 2f

One READ of 16 bytes at 32 (gyro x/y/z, acc x/y/z, roll, pitch: int16 each, little-endian),
one status reply of 27 bytes, CRC-16 checked (device/servo/dynamixel.py). A reply that does
not come (timeout), does not check (CRC, length, id) or carries an error is None: the caller
keeps its plan for that frame (host/retarget/feedback.py counts it missed). A reply whose
accelerometer reads exactly 0, 0, 0 (a table the firmware has not written yet) is None too,
counted not_ready: never a level torso. At power-up the board does not answer for about 2.9 s
(its gyro calibration): imu.wait_ready(sleep) waits for it before the robot moves, and takes
the standing reference (STAND_READS still reads at home: the chip's accelerometer offset,
which the firmware never calibrates, and the board's tilt against the torso's upright home),
taken off every read() after.

The control table, from ROBOTIS' own code (cited in docs/robots.md, "The OP3's IMU on the bus"):
- ROBOTIS-GIT/OpenCR 68ec75d8a400949580ecf263e0105ea9743b878e,
  arduino/opencr_arduino/opencr/libraries/OP3/examples/opencr_op3/dxl_node_op3.h: ID 200
  (0xC8), model number 0x7400; int16 Gyro_X/Y/Z at 32/34/36, Acc_X/Y/Z at 38/40/42,
  Roll/Pitch/Yaw at 44/46/48. dxl_hw_op3.cpp: gyro = the chip's calibrated ADC, acc = its raw
  ADC, roll/pitch/yaw = (int16)(Madgwick angle deg x 10) (0.1 deg, truncated).
  libraries/IMU/MPU9250.cpp (and ICM20648.cpp): gyro full scale 2000 deg/s, acc 2 g;
  IMU.cpp: a 3-sample mean of the gyro, |value| <= 3 set to 0, updated at 200 Hz.
- ROBOTIS-GIT/ROBOTIS-Framework 288e048adeb5195dae49626d044a30190fbab46c,
  robotis_device/devices/sensor/OPEN-CR.device: the same addresses, 2 bytes each, gyro and
  acc signed.
- ROBOTIS-GIT/ROBOTIS-OP3 3bc2bd514e8ee6054e9726d23c8c0b13236f84f0,
  open_cr_module/src/open_cr_module.cpp and its .h: rad/s = -raw x, -raw y, +raw z times
  2000 / 32800 deg/s; g = -raw x, -raw y, +raw z times 2 / 32768; published in "body_link"
  (x forward, y left, z up: the MuJoCo OP3's torso frame too). The board sits turned half a
  turn about z in the body: body axis = MOUNT x board axis, for gyro and acc alike.

Tilt comes from roll and pitch (the board's own fused attitude: an accelerometer alone would
tip with every sway of the body), rate from the gyro, both turned into the torso frame.
MicroPython-safe (struct, math, no numpy): it runs wherever the Dynamixel driver does.
"""

import math
import struct

from device.servo import dynamixel as dx

OPENCR_ID = 200
MODEL_NUMBER = 0x7400
GYRO_X = 32
ACC_X = 38
ROLL = 44
PITCH = 46
YAW = 48
IMU_CONTROL = 50
BLOCK = 16                          # gyro x/y/z, acc x/y/z, roll, pitch
GYRO_LSB_PER_DPS = 32800 / 2000.0   # 16.4: MPU9250 at +-2000 deg/s (open_cr_module GYRO_FACTOR)
ACC_LSB_PER_G = 32768 / 2.0         # 16384: +-2 g (open_cr_module ACCEL_FACTOR)
ANGLE_LSB_PER_DEG = 10.0            # roll/pitch/yaw in 0.1 deg
GYRO_DEADBAND_LSB = 3               # IMU.cpp: |gyro| <= 3 reads 0
MOUNT = (-1, -1, 1)                 # body_link axis = MOUNT * board axis (open_cr_module.cpp)
REPLY_BYTES = 11 + BLOCK            # header 4, id, len 2, 0x55, error, params, CRC 2
# the reply's wait on the line, as the servos' (XM430 Return Delay Time default 250 x 2 us):
# the board's own default is 0, its firmware answers from its main loop (at least as late)
RETURN_DELAY_S = 0.0005
# a board that does not answer (absent, unpowered, at another baud) costs the driver's packet
# timeout (device/servo/dynamixel.py: the SDK's, 34.27 ms for this reply at 1 Mbaud) on
# every read: after QUIET_LIMIT reads in a row that waited it out (nothing came, or not all of a
# reply) it is asked only every PROBE_EVERY-th call (None in between)
QUIET_LIMIT = 3
PROBE_EVERY = 100
# how long a robot end waits for its board at start (wait_ready): the firmware's power-up
# (emulate/opencr_imu.py: 0.325 s of the chip's set-up, 512 gyro calibration runs at 200 Hz)
# with room for a slow boot
WAIT_READY_S = 5.0
# the standing reference a robot end takes once the board answers, standing still at home:
# STAND_READS good reads with the gyro under STILL_RAD_S; the torso's up at home on flat feet
# is STAND_UP (the OP3's zero pose: its torso upright, host/physics/twin.py tilt 0.0 there).
# What the board reads against it (the MPU-9250's zero-g offset, up to 60-80 mg: 3-5 deg, and
# its sensitivity errors at that pose; the firmware never calibrates the accelerometer) is
# taken off every later read: the robot's own data only, as a standing calibration is
STAND_READS = 25
STILL_RAD_S = 0.05
STAND_UP = (0.0, 0.0, 1.0)
# a reference further from home than a chip within its spec reads there is refused (counted
# stand_refused, taken again): the zero-g offset (+-60 mg x, y, +-80 mg z) and, at 1 g, the
# cross-axis (+-2 %: x, y) and sensitivity (+-3 %: z) errors, 80, 80, 110 mg, and the torso's
# own tilt at home (its servos' zeros, the board's seat: 2 deg, 35 mg; the OP3 twin's seed-200
# chip reads 81 mg on x there): 120 mg each, 7 deg. A robot lying down or held tilted reads up
# to 1 g off: taken, that would be "upright" for ever after
ACC_OFF_MAX_G = (0.12, 0.12, 0.12)
# and a board whose own up is further than this from STAND_UP (the same errors: 0.12 g on
# x and y over 1 - 0.12 g, 10.9 deg)
UP_OFF_MAX_DEG = 11.0


def request():
    """The READ of the IMU block: ff ff fd 00 c8 07 00 02 20 00 10 00 b3 2f."""
    return dx.read(OPENCR_ID, GYRO_X, BLOCK)


def _int16(v):
    return max(-32768, min(32767, int(v)))


def encode(up, rate_rad_s, acc_g):
    """The 16 register bytes from 32 the board would hold for a torso whose up vector (unit,
    torso frame), angular rate (rad/s) and specific force (g) are these (the emulator's side)."""
    ux, uy, uz = up
    # roll_body = atan2(uy, uz), pitch_body = atan2(-ux, sqrt(uy^2 + uz^2)) (ZYX, from the up vector)
    roll_deg = math.degrees(math.atan2(uy, uz))
    pitch_deg = math.degrees(math.atan2(-ux, math.sqrt(uy * uy + uz * uz)))
    gyro = []
    for k in range(3):
        # raw = board axis x 16.4 LSB per deg/s, the chip's rounding; |raw| <= 3 reads 0
        raw = _int16(round(MOUNT[k] * math.degrees(rate_rad_s[k]) * GYRO_LSB_PER_DPS))
        gyro.append(0 if -GYRO_DEADBAND_LSB <= raw <= GYRO_DEADBAND_LSB else raw)
    # raw = board axis x 16384 LSB per g
    acc = [_int16(round(MOUNT[k] * acc_g[k] * ACC_LSB_PER_G)) for k in range(3)]
    # the board's angles are its own frame's: half a turn about z negates roll and pitch;
    # (int16)(deg x 10) truncates toward zero
    angles = [_int16(-roll_deg * ANGLE_LSB_PER_DEG), _int16(-pitch_deg * ANGLE_LSB_PER_DEG)]
    return struct.pack("<8h", *(gyro + acc + angles))


def decode(params):
    """(up (3,), rate rad/s (3,), specific force g (3,)) in the torso frame from the 16 bytes,
    or None (not 16 bytes)."""
    if len(params) != BLOCK:
        return None
    v = struct.unpack("<8h", params)
    # rate_body = MOUNT * raw / 16.4 deg/s
    rate = tuple(math.radians(MOUNT[k] * v[k] / GYRO_LSB_PER_DPS) for k in range(3))
    acc = tuple(MOUNT[k] * v[3 + k] / ACC_LSB_PER_G for k in range(3))
    # roll_body = -roll_board, pitch_body = -pitch_board (0.1 deg)
    r = math.radians(-v[6] / ANGLE_LSB_PER_DEG)
    p = math.radians(-v[7] / ANGLE_LSB_PER_DEG)
    # up in the torso frame = R^T z = (-sin p, cos p sin r, cos p cos r) for R = Rz Ry(p) Rx(r)
    up = (-math.sin(p), math.cos(p) * math.sin(r), math.cos(p) * math.cos(r))
    return up, rate, acc


def _home_like(acc_off, up):
    """True when a standing reference's offset (g) and mean up are what a chip within its spec
    reads at home (ACC_OFF_MAX_G, UP_OFF_MAX_DEG), not a robot lying down or held tilted."""
    if not all(abs(acc_off[k]) <= ACC_OFF_MAX_G[k] for k in range(3)):
        return False
    n = math.sqrt(sum(v * v for v in up))
    if not n > 0.5:
        return False
    # tilt = acos(up . STAND_UP / |up|)
    c = sum(up[k] * STAND_UP[k] for k in range(3)) / n
    return math.degrees(math.acos(max(-1.0, min(1.0, c)))) <= UP_OFF_MAX_DEG


class OpenCRImu:
    """The board read through the robot's Dynamixel driver, once per call (one frame; every
    Nth with every=N, the last sample between); a board whose reads timed out QUIET_LIMIT
    times in a row is asked every PROBE_EVERY-th call only. stats: reads, ok, timeouts, bad (CRC, length, id),
    errors (an error bit, a port error), skipped (calls a silent board was not asked)."""

    def __init__(self, driver, sid=OPENCR_ID, every=1):
        self.driver = driver
        self.sid = sid
        self.every = max(1, int(every))   # read every Nth call (a line without room for each)
        self.calls = 0
        self.quiet = 0                    # reads in a row that timed out
        self.stats = {"reads": 0, "ok": 0, "timeouts": 0, "bad": 0, "errors": 0}
        self.last = None                  # the last good (up, rate, acc)
        self.last_t = None                # the clock at its read (timed)
        self.ready = False                # the standing reference is taken (wait_ready)
        self.standing = False             # the robot stands still at home: reads count for it
        self.acc_off = None               # g, torso frame: the standing reference's offset
        self.up_off = None                # the board's up against STAND_UP
        self._stand = []                  # the still reads so far

    def request(self):
        return dx.read(self.sid, GYRO_X, BLOCK)

    def sample(self):
        """(up, rate, acc) in the torso frame, or None (timeout, bad reply, an error bit)."""
        s = self._sample()
        # a failed read ends the last sample's life: the calls between reads give None, not
        # a tilt from before the board went silent
        self.last = s
        return s

    def _sample(self):
        self.stats["reads"] += 1
        waited = self.driver.stats["timeouts"]
        try:
            # the driver's Protocol 2.0 status read (device/servo/dynamixel.py): the input
            # flushed, the header hunted for, the length bounded, other ids passed over
            self.driver.flush_input()
            self.driver.write(self.request())
            data, r = self.driver.read_status(self.sid, BLOCK)
        except OSError:
            self.stats["errors"] += 1
            return None
        # a read that waited out its packet timeout, for nothing or for the rest of a fragment
        # (a board at another baud, a dying line), is quiet: backed off like a silent board
        waited = self.driver.stats["timeouts"] > waited
        self.quiet = self.quiet + 1 if waited else 0
        if not data:
            self.stats["timeouts"] += 1
            return None
        if r is None or r[0] != self.sid:
            self.stats["bad"] += 1
            return None
        if r[1]:
            self.stats["errors"] += 1
            return None
        if len(r[2]) == BLOCK and not any(r[2][6:12]):
            # an accelerometer reading exactly 0, 0, 0 (the table's RAM before the firmware's
            # loop first wrote it; a chip at rest or falling still reads its zero-g offset and
            # noise): not a reading of anything, never "level"
            self.stats["not_ready"] = self.stats.get("not_ready", 0) + 1
            return None
        s = decode(r[2])
        if s is None:
            self.stats["bad"] += 1
            return None
        self.stats["ok"] += 1
        if not self.ready:
            if self.standing:
                self._standing(s)
            else:
                self._stand = []          # (moving, ramping home: no read of the reference's)
        return s

    def _standing(self, s):
        """A read taken standing at home before the robot moves: the reference, once
        STAND_READS still ones came (a read with the gyro past STILL_RAD_S starts it again)."""
        if max(abs(v) for v in s[1]) > STILL_RAD_S:
            self._stand = []
            return
        self._stand.append(s)
        if len(self._stand) < STAND_READS:
            return
        n = float(len(self._stand))
        # offset = mean(read) - what a torso at home reads (1 g along STAND_UP, up = STAND_UP)
        acc_off = tuple(sum(r[2][k] for r in self._stand) / n - STAND_UP[k] for k in range(3))
        up = tuple(sum(r[0][k] for r in self._stand) / n for k in range(3))
        self._stand = []
        if not _home_like(acc_off, up):
            self.stats["stand_refused"] = self.stats.get("stand_refused", 0) + 1
            return
        self.acc_off = acc_off
        self.up_off = tuple(up[k] - STAND_UP[k] for k in range(3))
        self.ready = True

    def corrected(self, s):
        """(up, rate, acc) with the standing reference taken off: acc - acc_off,
        (up - up_off) / |.| (the raw sample before the reference is taken)."""
        if self.acc_off is None:
            return s
        up = [s[0][k] - self.up_off[k] for k in range(3)]
        n = math.sqrt(up[0] * up[0] + up[1] * up[1] + up[2] * up[2])
        up = tuple(v / n for v in up) if n > 0.5 else s[0]
        return up, s[1], tuple(s[2][k] - self.acc_off[k] for k in range(3))

    def wait_ready(self, sleep, timeout_s=WAIT_READY_S, every_s=0.02, stand=None, clock=None):
        """Ask the board every every_s (sleep(s) lets that time pass: the robot's clock, the
        robot standing still at home) until it answers and the standing reference is taken
        (STAND_READS still reads): True, or False after timeout_s. stand() after each read
        keeps the robot standing (Player.stand_by: home, torque on, the failsafe fed), as
        LinkBridge does frame by frame. The OpenCR does not answer at
        all while its firmware calibrates the gyro at power-up (IMU.begin() in setup(), before
        the port opens: about 2.9 s), and the robot's balance needs it (ROBOTIS' framework
        waits for the board the same way). The backoff of a silent board is not applied here.
        With a clock (s; default the driver's, device/servo/base.py) the cycles start every
        every_s on it, a read's wait counted in its cycle: a silent board's read waits the
        packet timeout (device/servo/dynamixel.py: 34.3 ms at 1 Mbaud, more than every_s), so
        the robot stands by once a read, about 29 times a second, until the board answers;
        timeout_s is then the clock's. Without one, every_s is slept after each cycle and
        timeout_s counts cycles of every_s."""
        clock = clock or getattr(self.driver, "clock", None)
        n = int(timeout_s / every_s) + 1
        t0 = due = clock() if clock is not None else None
        # the reference's reads are the ones after stand() said the robot is at home (True:
        # Player.stand_by's limiter at home); without stand, the caller's word it stands
        home = stand is None
        for _ in range(n):                  # (a cycle is every_s at least: n of them cover timeout_s)
            if self.stand_sample(home) is not None:
                self.quiet = 0
            if self.ready:
                return True
            if stand is not None:
                home = stand() is True
            if clock is None:
                sleep(every_s)
                continue
            now = clock()
            if now - t0 >= timeout_s:
                break
            # next cycle at due + every_s, or now when this one ran longer (a read's timeout)
            due = max(due + every_s, now)
            if due > now:
                sleep(due - now)
        return False

    def stand_sample(self, at_home):
        """sample(), its read counted for the standing reference when at_home (the robot
        standing at home, its servos there); not at home, the reference's reads start again."""
        self.standing = bool(at_home)
        try:
            return self.sample()
        finally:
            self.standing = False

    def read(self, acc=False):
        """(up, rate rad/s) in the torso frame, as host/retarget/feedback.py reads an IMU, or
        None; with acc, (up, rate, specific force g) (host/retarget/attitude.py's input). With
        every > 1 the calls between reads give the last sample (no bus time)."""
        self.calls += 1
        k = self.calls - 1
        if self.quiet >= QUIET_LIMIT:
            if k % PROBE_EVERY:
                self.stats["skipped"] = self.stats.get("skipped", 0) + 1
                return None               # a silent board: not every frame's timeout
            s = self.sample()             # the probe asks the bus, whatever every's phase
        elif k % self.every:
            s = self.last
        else:
            s = self.sample()
        if s is None:
            return None
        s = self.corrected(s)
        return (s[0], s[1], s[2]) if acc else (s[0], s[1])

    def timed(self, clock):
        """read(acc=True) and the time of its sample, clock() just after the bus read that
        brought it (a call between reads gives the last sample and its time, so a filter
        integrating the gyro over the times does not count it twice): (up, rate rad/s,
        specific force g, t_s), the host's tilt filter's input (host/retarget/attitude.py), or None."""
        reads = self.stats["reads"]
        s = self.read(acc=True)
        if self.stats["reads"] != reads:
            self.last_t = clock()
        if s is None:
            return None
        return (s[0], s[1], s[2], self.last_t)


def check_imu(robot):
    """The robot's bus IMU ({"board", "id"}), or ValueError: a robot without a known IMU."""
    spec = getattr(robot, "imu", None)
    if not spec:
        raise ValueError("robot %s has no known IMU (its description names no \"imu\" board)" % robot.name)
    return spec


def imu_reader(robot, driver, fps=None):
    """The bus IMU the robot description names ("imu": {"board": "opencr", "id": 200}), read
    as often as its line has room at fps (device/servo/linebudget.py), or ValueError."""
    from device.servo.linebudget import line_budget
    spec = check_imu(robot)
    every = line_budget(robot, fps).get("imu_every") or 0
    if not every:
        raise ValueError("robot %s: its frame leaves no room on the line for the IMU's read at %g fps"
                         % (robot.name, fps or robot.rate_hz))
    return OpenCRImu(driver, spec["id"], every)
