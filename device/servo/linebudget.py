"""Does one frame of a robot's commands fit its controller's serial line at its command rate?

    from device.servo.linebudget import line_budget, check_line
    b = line_budget(robot)     # {"bytes": 114, "line_ms": 1.14, "period_ms": 10.0, "fits": True, ...}
    line_budget(op3, fps=120)  # ... "imu_bytes": 41, "imu_ms": 0.91, "imu_every": 1
    check_line(robot)          # FormatError: the robot, its bytes, line time, and the rate that fits

A UART carries 10 bits a byte (8N1: start, 8 data, stop) at the robot's baud (its controller's
default when the description gives none): a frame of commands for every servo (the driver's
own bytes: encode_positions, the longest of the frames with every servo at home, at its min and
at its max) takes bytes x 10 / baud on the wire. The player sends one every 1 / rate_hz; what
does not fit queues in the adapter's buffer and every frame after it is later than the one
before, until the buffer is full and writes block (the twin of the line, device/servo/paced.py,
skips such frames whole; a real driver stalls the player). A frame fits when its line time is at most LINE_SHARE of the period: the
rest is for the controller's replies (torque, watchdog, present position) and the USB serial
adapter's latency timer (an FT232R's default is 16 ms; 1 ms when set low). A robot with its IMU
on the bus (the OP3's OpenCR board) also reads it once a frame: the read's request, reply and
return delay share the same budget (imu_every says how often it fits). An I2C controller
(PCA9685) is not a UART: its bus time is the I2C budget's, not this one's.

A bus servo's player also asks, now and then, whether the servos still have power (a read of
Torque Enable: device/servo/player.py); probe_budget says how often that read fits beside the
frames (and the IMU's), at most every POWER_PROBE_S:

    probe_budget(robot)        # {"probe_bytes": 26, "probe_ms": 0.76, "probe_every": 1, "probe_s": 0.1}
"""

from protocol.errors import FormatError

BITS_PER_BYTE = 10
LINE_SHARE = 0.8
# the power probe's period at most (s): a servo that lost its power is found within it (and
# the read's timeout); a tenth of a second, against a robot that falls for about half a second
POWER_PROBE_S = 0.1


class _NullPort:
    def write(self, data):
        return len(data)

    def read(self, n=1):
        return b""


def frame_bytes(robot):
    """Bytes of one frame of commands for every servo of the robot (its driver's own), or None
    (a controller that is not on a UART)."""
    from device.servo.drivers import driver_class, driver_options
    if robot.controller == "pca9685":
        return None
    drv = driver_class(robot.controller)(_NullPort(), **driver_options(robot.controller, robot.options))
    # the longest frame: every servo at home, at its min, at its max (an ASCII protocol's
    # positions have as many bytes as digits: the SSC-32's P900 is a byte shorter than P2500)
    frames = [[(s.id, s.to_units(s.home_deg)) for s in robot.servos],
              [(s.id, s.min) for s in robot.servos], [(s.id, s.max) for s in robot.servos]]
    try:
        return max(len(drv.encode_positions(cmds)) for cmds in frames)
    except NotImplementedError:
        return drv.frame_bytes(len(robot.servos))


def imu_read(robot, baud, budget_ms, frame_ms):
    """{imu_bytes, imu_ms, imu_every} of the bus IMU's read (device/servo/opencr.py: request
    and reply, the reply's return delay) beside a frame of frame_ms in budget_ms: read every
    imu_every-th frame (1: each; None: not even one in a while fits)."""
    from device.servo import opencr
    n = len(opencr.request()) + opencr.REPLY_BYTES
    # read time = bytes x 10 bits / baud + the reply's return delay
    ms = 1000.0 * (n * BITS_PER_BYTE / float(baud) + opencr.RETURN_DELAY_S)
    spare = budget_ms - frame_ms
    every = None
    if spare > 0:
        # the smallest N with frame_ms + ms / N <= budget_ms
        every = max(1, int(-(-ms // spare)))
    return {"imu_bytes": n, "imu_ms": ms, "imu_every": every}


def probe_budget(robot, fps=None):
    """{probe_bytes, probe_ms, probe_every, probe_s} of the player's power probe (request and
    reply of read_torque_enabled, the reply's return delay) in what the frames (and the bus
    IMU's reads) leave of LINE_SHARE of the period: once every probe_every frames, so every
    probe_s = max(POWER_PROBE_S, probe_every periods); None without a probe (no feedback: a
    PWM servo's controller, a UART-less one)."""
    from device.servo.drivers import driver_class, driver_options
    cls = driver_class(robot.controller)
    if not hasattr(cls, "read_torque_enabled"):
        return None
    drv = cls(_NullPort(), **driver_options(robot.controller, robot.options))
    req, rep = drv.probe_bytes()
    b = line_budget(robot, fps)
    # probe time = (request + reply) x 10 bits / baud + the reply's return delay
    ms = 1000.0 * ((req + rep) * BITS_PER_BYTE / float(b["baud"]) + drv.RETURN_DELAY_S)
    used = b["line_ms"]
    if b.get("imu_every"):
        used += b["imu_ms"] / b["imu_every"]
    spare = b["share"] * b["period_ms"] - used
    # the smallest N with used + ms / N <= the budget (None: not even one in a while fits)
    every = max(1, int(-(-ms // spare))) if spare > 0 else None
    period_s = b["period_ms"] / 1000.0
    probe_s = POWER_PROBE_S if every is None else max(POWER_PROBE_S, every * period_s)
    return {"probe_bytes": req + rep, "probe_ms": ms, "probe_every": every, "probe_s": probe_s}


def line_budget(robot, fps=None):
    """{bytes, baud, line_ms, period_ms, share, fits, max_rate_hz} of one frame (fits None: not
    a UART) at rate_hz (or fps, a staff's frame rate); a robot with a bus IMU (its "imu") adds
    imu_bytes, imu_ms and imu_every (imu_read)."""
    from device.servo.drivers import driver_class
    n = frame_bytes(robot)
    period_ms = 1000.0 / (fps or robot.rate_hz)
    if n is None:
        return {"bytes": None, "baud": None, "line_ms": None, "period_ms": period_ms, "share": LINE_SHARE,
                "fits": None, "max_rate_hz": None}
    baud = robot.baud or driver_class(robot.controller).BAUD
    # line time = bytes x 10 bits / baud
    line_ms = 1000.0 * n * BITS_PER_BYTE / baud
    out = {"bytes": n, "baud": baud, "line_ms": line_ms, "period_ms": period_ms, "share": LINE_SHARE,
           "fits": line_ms <= LINE_SHARE * period_ms,
           "max_rate_hz": LINE_SHARE * 1000.0 / line_ms}
    if getattr(robot, "imu", None):
        out.update(imu_read(robot, baud, LINE_SHARE * period_ms, line_ms))
    return out


def check_line(robot, where=None):
    """FormatError when a frame of the robot's commands does not fit its line at rate_hz, or
    when its driver refuses the description (an unknown controller or option, a channel no
    board has): one line naming `where`."""
    where = where or "robot %s" % robot.name
    try:
        b = line_budget(robot)
    except (ValueError, TypeError) as e:
        raise FormatError("%s: controller %r: %s" % (where, robot.controller, e)) from None
    if b["fits"] is False:
        raise FormatError(
            "%s: a frame of %d servos is %d bytes on the %s line, %.1f ms at %d baud, more than %d %% "
            "of the %.1f ms period of rate_hz %g: lower rate_hz to %d or less, or raise the baud"
            % (where, len(robot.servos), b["bytes"], robot.controller,
               b["line_ms"], b["baud"], round(100 * LINE_SHARE), b["period_ms"], robot.rate_hz,
               int(b["max_rate_hz"])))
    return b
