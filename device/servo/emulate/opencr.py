"""The OP3's OpenCR board on the emulated Dynamixel bus: device 200 answering with the body's IMU.

    board = OpenCRBoard(body=twin)         # DynamixelEmulator(ids, imu_id=200, body=twin) makes it
    board.run(200, dx.READ, struct.pack("<HH", 32, 16))   # its status packet, the twin's IMU in it

Its control table is the firmware's (device/servo/opencr.py cites it): model 0x7400, firmware 2,
id, baud, return delay, status return level; gyro, acc, roll, pitch, yaw at 32..49 in the
board's raw units, IMU control at 50.

The IMU registers are the firmware's, not the body's now (emulate/opencr_imu.py: the chip's
filters, the 200 Hz loop, the gyro's 3-sample mean and dead band, Madgwick's roll, pitch and a
yaw that drifts): a body that has attach_sensor (host/physics/twin.py) calls the board on every
physics step with its torso's rate (body.imu(), with the twin's seeded noise) and specific force
(body.specific_force_g(); a body without it: 1 g along its up vector), and a read gets what
the board's last 5 ms loop left there (0-5 ms old). A body without attach_sensor (a test's
stub) is sampled at the read and quantised as the board quantises (device/servo/opencr.py
encode), yaw 0; a sample that is not finite leaves the registers as they were. Without a
body the board stands still and level. A read past the table is answered with a Data Length
error, as the firmware.
"""

import struct

from device.servo import dynamixel as dx
from device.servo import opencr
from device.servo.emulate.opencr_imu import BoardImu

TABLE_BYTES = 51                 # sizeof(dxl_mem_op3_t)
DATA_LENGTH_ERROR = 0x05
WRITABLE = (3, 4, 5, 16, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 50)


def _board(v):
    """A torso-frame vector in the board's axes (half a turn about z: MOUNT is its own inverse)."""
    return [opencr.MOUNT[k] * float(v[k]) for k in range(3)]


class OpenCRBoard:
    def __init__(self, sid=opencr.OPENCR_ID, body=None, seed=None):
        self.sid = sid
        self.body = body
        t = bytearray(TABLE_BYTES)
        struct.pack_into("<H", t, 0, opencr.MODEL_NUMBER)
        t[2] = 2                         # DXL_NODE_OP3_FW_VER
        t[3] = sid
        t[4] = 3                         # DXL_NODE_OP3_BAUD (1 Mbps)
        t[16] = 2                        # Status Return Level
        t[31] = 120                      # Present Voltage, 0.1 V
        self.table = t
        self.reads = 0
        self.imu = None                  # the firmware's IMU loop, on a body with a clock hook
        attach = getattr(body, "attach_sensor", None)
        if attach is not None:
            up, _ = body.imu()
            # seed: the board's own chip (its offsets, sensitivities, noise); the default is its id
            self.imu = BoardImu(_board(up), seed=sid if seed is None else seed)
            self.table[opencr.GYRO_X:opencr.YAW + 2] = self.imu.registers()
            attach(self._on_step)

    def close(self):
        """Take the board off its body (a discarded emulator's board no longer runs on the twin)."""
        detach = getattr(self.body, "detach_sensor", None)
        if self.imu is not None and detach is not None:
            detach(self._on_step)

    def answering(self):
        """False while the firmware is still in its setup() (IMU.begin()'s calibration): no reply."""
        if self.imu is None:
            return True
        return self.imu.answering(self.body.time_s)

    def _on_step(self, body):
        """Every physics step: the chip sees the torso's rate and specific force (board axes)."""
        up, rate = body.imu()
        # a body without an accelerometer model: 1 g along its up vector (as sense())
        force = getattr(body, "specific_force_g", None)
        acc = force() if force is not None else up
        self.imu.sense(body.time_s, _board(rate), _board(acc), body.dt_s)
        if self.imu.runs != self._runs:
            self._runs = self.imu.runs
            # the firmware's loop copies the IMU into the table after each run
            self.table[opencr.GYRO_X:opencr.YAW + 2] = self.imu.registers()

    _runs = 0

    def sense(self):
        """The IMU registers sampled now (a body without a clock hook; yaw 0)."""
        if self.imu is not None:
            return
        if self.body is None:
            up, rate, acc = (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)
        else:
            up, rate = self.body.imu()
            force = getattr(self.body, "specific_force_g", None)
            acc = force() if force is not None else up
        try:
            regs = opencr.encode([float(v) for v in up], [float(v) for v in rate], [float(v) for v in acc])
        except (ValueError, OverflowError):
            return          # a sample that is not finite (NaN, inf): the registers stay as they were
        self.table[opencr.GYRO_X:opencr.GYRO_X + opencr.BLOCK] = regs

    def read(self, a, n):
        """The status packet to a read of n bytes at a (a sync read's share too; b"" while
        the firmware has not opened its port)."""
        if not self.answering():
            return b""
        if a >= TABLE_BYTES:
            return dx.status(self.sid, DATA_LENGTH_ERROR)
        if a < opencr.YAW + 2 and a + n > opencr.GYRO_X:
            self.sense()
            self.reads += 1
        return dx.status(self.sid, 0, bytes(self.table[a:a + n]).ljust(n, b"\0"))

    def _write(self, a, data):
        for k, b in enumerate(data):
            if a + k in WRITABLE:
                self.table[a + k] = b

    def run(self, sid, inst, p):
        """The reply to a ping, read or write addressed to the board (b"" when none, and while
        the firmware has not opened its port; a sync read's share is read())."""
        if not self.answering():
            return b""
        if inst == dx.PING:
            return dx.status(self.sid, 0, struct.pack("<HB", opencr.MODEL_NUMBER, self.table[2]))
        if inst == dx.READ and len(p) == 4 and sid == self.sid:
            a, n = struct.unpack("<HH", p)
            return self.read(a, n)
        if inst == dx.WRITE and len(p) >= 2 and sid == self.sid:
            self._write(p[0] | (p[1] << 8), p[2:])
            return dx.status(self.sid, 0)
        return b""
