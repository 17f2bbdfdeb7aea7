"""Fresh-eyes review of issue 15 (live link, unit twins): each test is a break found by review,
fixed in the module it names. Deterministic: fake clocks and ports, seeded randomness."""

import pytest

from protocol import linkheader as lh, packets as pk


class _Sink:
    """A port that takes every byte (a fast line) and has nothing to read."""

    def __init__(self):
        self.out = b""

    def write(self, b):
        self.out += bytes(b)
        return len(b)

    def read(self, n):
        return b""


def _frames(wire):
    return [p for p in pk.Decoder().feed(wire) if p.is_frame()]


# --- torque off: an all-missing frame ---------------------------------------------------------

def test_capture_never_sends_torque_off_when_every_value_is_missing():
    # an all-missing column from the capture (every sensor lost for a frame) is not the
    # sender's torque off: the receiver must hold (its own failsafe), not drop the robot limp
    from device.capture.outputs import PacketOutput
    t = [0.0]
    port = _Sink()
    header = {"bits": 8, "fps": 30.0, "rows": [{"name": "r%d" % i, "lo": -90.0, "hi": 90.0}
                                              for i in range(4)]}
    out = PacketOutput(port, lh.from_staff(header), bits=8, clock=lambda: t[0])
    for k in range(5):
        t[0] = k / 30.0
        out(k, t[0], [0.0] * 4, [100, None, 120, 130] if k != 3 else [None] * 4)
    frames = _frames(port.out)
    assert len(frames) == 4
    assert all(any(c is not None for c in f.frame()[1]) for f in frames)
    assert out.counts()["frames_all_missing"] == 1


class _Drv:
    NAME = "stub"
    UNITS = "us"

    def __init__(self):
        self.stats = {"frames": 0, "commands": 0, "bytes": 0, "errors": 0, "timeouts": 0}
        self.sent = []
        self.torque = 0

    def start(self, servos):
        pass

    def send_positions(self, cmds):
        self.sent.append(cmds)

    def torque_off(self, ids):
        self.torque += 1
        return True

    def set_watchdog(self, s):
        return False


def _bridge():
    """(bridge, driver stub, clock cell, row names, encoder) for the khr17-maestro robot."""
    from device.servo.bridge import LinkBridge
    from device.servo.robot import load_robot
    robot = load_robot("khr17-maestro")
    t = [0.0]
    drv = _Drv()
    br = LinkBridge(robot, drv, clock=lambda: t[0])
    enc = pk.Encoder(clock_us=lambda: int(t[0] * 1e6))
    return br, drv, t, [s.name for s in robot.servos], enc


def test_the_bridge_obeys_torque_off_like_the_firmware():
    # SPEC 2: a frame whose every value is missing is the sender's torque off. The firmware
    # stops its pulses; the bridge (the other receiver) held the last command instead.
    br, drv, t, names, enc = _bridge()
    blob = lh.encode([(n, -90.0, 90.0) for n in names], 8, 30.0)
    br.feed(b"".join(enc.header(blob)))
    for k in range(5):
        t[0] += 0.02
        br.feed(enc.frame([128] * len(names)))
    assert drv.torque == 0
    t[0] += 0.02
    br.feed(enc.frame([None] * len(names)))
    assert drv.torque == 1 and br.player.in_failsafe


# --- the paced streamer ------------------------------------------------------------------------

def _rows(n, lo=-90.0, hi=90.0):
    return [("r%d" % i, lo, hi) for i in range(n)]


def test_frames_of_a_new_header_never_go_before_that_header():
    # set_header() with the same row count but other ranges: a frame coded for the new ranges
    # that slips onto the line before the new header's parts is decoded by the receiver with
    # the old ranges (a wrong position). Frames wait until the new header is on the line.
    from device.servo.linkstream import LinkStreamer
    t = [0.0]
    port = _Sink()
    a = lh.encode(_rows(14), 8, 30.0)
    b = lh.encode(_rows(14, -10.0, 10.0), 8, 30.0)
    ls = LinkStreamer(port, a, 8, clock=lambda: t[0], heartbeat_s=0, header_every_s=0)
    while ls.frame([100] * 14):               # fill the line to its budget (no time passes)
        pass
    ls.set_header(b)
    mark = len(port.out)
    for k in range(200):                      # the line drains a few bytes at a time
        t[0] += 0.0025
        ls.frame([100] * 14)
    pkts = pk.Decoder().feed(port.out[mark:])
    hb = lh.header_id(b)
    last_part = max(i for i, p in enumerate(pkts) if p.name == "HEADER" and p.fields["header_id"] == hb)
    first_frame = min(i for i, p in enumerate(pkts) if p.is_frame())
    assert first_frame > last_part


@pytest.mark.parametrize("n,bits", [(600, 16), (1000, 8)])
def test_a_header_whose_frames_cannot_fit_a_packet_is_refused_at_start(n, bits):
    # linkheader allows 1024 rows, a packet carries 1000 bytes: every frame raised FormatError
    # inside the capture loop (swallowed as an output error); refuse it before streaming
    from device.servo.linkstream import LinkStreamer
    from protocol.errors import FormatError
    with pytest.raises(FormatError, match="rows"):
        LinkStreamer(_Sink(), lh.encode(_rows(n), bits, 30.0), bits, clock=lambda: 0.0)


@pytest.mark.parametrize("baud,fps", [(9600, 30), (9600, 10), (115200, 30), (1000000, 240)])
def test_no_frame_waits_more_than_max_delay_in_the_driver(baud, fps):
    # PacedSender's promise: nothing waits more than max_delay_s (0.1 s) of line time in the
    # driver. At 9600 baud the budget was 1100 bytes (min_budget) raised to the header's size:
    # frames queued for > 1 s, a robot a second behind the subject.
    from device.servo.linkstream import LinkStreamer
    t = [0.0]
    ls = LinkStreamer(_Sink(), lh.encode(_rows(24), 8, float(fps)), 8, baud=baud,
                      clock=lambda: t[0], max_delay_s=0.1)
    s = ls.sender
    worst = 0.0
    sent = 0
    for k in range(fps * 5):
        t[0] = k / float(fps)
        if ls.frame([100 + (k % 50)] * 24) and k >= 2 * fps:  # after the first header's time
            sent += 1
            worst = max(worst, s.fill / s.bytes_per_s)      # this frame's last byte leaves then
    frame_s = 40 / s.bytes_per_s
    assert sent > fps                                       # the line still carries frames
    assert worst <= 0.1 + frame_s


# --- the I2C budget ---------------------------------------------------------------------------

def test_two_bus_names_for_one_controller_are_refused():
    # "a" and "b" are the same wires (/dev/i2c-1): the budget counted them as two buses read in
    # parallel, so 10 BNO055 "fit" where one bus carries them one after another
    from device.capture.config import check, default_config
    from protocol.errors import FormatError
    cfg = default_config(body="human")
    cfg["buses"] = {"a": "sim-i2c://1?hz=400000", "b": "sim-i2c://1?hz=100000"}
    with pytest.raises(FormatError, match="same I2C bus"):
        check(cfg)


@pytest.mark.parametrize("second", [{"addr": 0x28}, {"addr": 0x70},
                                    {"addr": 0x28, "mux": {"addr": 0x70, "channel": 1}}])
def test_two_sensors_on_one_address_of_one_bus_are_refused(second):
    # two chips answering one address on the same wires (or a chip on a multiplexer's address)
    # is a bus that cannot work; the twin attached the second over the first
    from device.capture.config import check, default_config
    from protocol.errors import FormatError
    cfg = default_config(body="human")
    s0 = {"name": "a", "chip": "bno055", "bus": "i2c-1", "addr": 0x28, "link": "pelvis",
          "mux": {"addr": 0x70, "channel": 1} if "mux" in second else None}
    if second["addr"] == 0x70:
        s0 = dict(s0, mux={"addr": 0x70, "channel": 0})
    s1 = {"name": "b", "chip": "bno055", "bus": "i2c-1", "addr": second["addr"], "link": "pelvis",
          "mux": second.get("mux")}
    cfg["sensors"] = [s0, s1]
    with pytest.raises(FormatError, match="address"):
        check(cfg)


# --- the power-cut twin: a new folder's own name ----------------------------------------------

def test_a_recording_in_a_new_folder_survives_a_later_cut():
    # --record-dir on a fresh card: the folder is created, a recording written, closed and
    # synced; the power goes later. On a real file system the folder's name is in its parent,
    # which was never fsync'ed: the folder (and the closed recording) are gone. The twin kept
    # every folder; new_recording did not sync the parent.
    from device.capture.storage import new_recording
    from device.hal.storage_sim import PowerCut, SimStorage
    from protocol import container, staffheader
    header = staffheader.make(rows=[{"name": "r0", "unit": "deg", "lo": 0, "hi": 180}], fps=30.0, bits=8)
    fs = SimStorage(seed=4)
    p, f = new_recording("cards/unit1", container.encode_header(header), fs, boot="0badc0de")
    w = container.Writer(f, header, write_header=False)
    for k in range(30):
        w.write_frame([k], k * 33)
    w.close()
    f.close()
    g = fs.open_new("cards/other.tmp")
    fs.cut_after_writes = fs.writes + 1
    with pytest.raises(PowerCut):
        g.write(b"x")
    fs.after_cut()
    assert container.parse(fs.read_bytes(p)).nframes == 30


def test_the_twin_loses_a_folder_whose_parent_was_never_synced():
    from device.hal.storage_sim import SimStorage
    fs = SimStorage(seed=1)
    fs.makedirs("a/b")
    f = fs.open_new("a/b/x")
    f.write(b"data")
    f.sync()                                  # the file and its entry in a/b: but a/b itself?
    fs.power_cut()
    fs.after_cut()
    assert not fs.exists("a/b/x") and not fs.isdir("a/b")


# --- clocks: MicroPython's ticks_ms wraps; a clock may step back ------------------------------

class _Ticks:
    """time.ticks_ms / ticks_diff of a MicroPython port (period 2^30 ms: 12.4 days)."""
    PERIOD = 1 << 30

    def __init__(self, ms):
        self.ms = ms

    def ticks_ms(self):
        return self.ms % self.PERIOD

    def ticks_diff(self, a, b):
        d = (a - b) % self.PERIOD
        return d - self.PERIOD if d >= self.PERIOD // 2 else d


def test_the_micropython_clock_survives_the_ticks_wrap(monkeypatch):
    # default_clock() was ticks_ms() / 1000: 12.4 days after boot it jumps back 1.07e6 s, and
    # the streamer's "now - last >= every" stopped the header repeats and heartbeats for 12 days
    import types
    from device.servo import paced
    t = _Ticks((1 << 30) - 500)
    fake = types.SimpleNamespace(ticks_ms=t.ticks_ms, ticks_diff=t.ticks_diff)
    monkeypatch.setattr(paced, "time", fake)
    clock = paced.default_clock()
    a = clock()
    t.ms += 1000                              # across the wrap
    assert clock() - a == pytest.approx(1.0)


def test_a_clock_that_steps_back_does_not_stop_header_repeats_or_heartbeats():
    from device.servo.linkstream import LinkStreamer
    t = [1000.0]
    port = _Sink()
    ls = LinkStreamer(port, lh.encode(_rows(4), 8, 30.0), 8, clock=lambda: t[0])
    ls.frame([1, 2, 3, 4])
    t[0] = 10.0                               # stepped back (an injected or unwrapped clock)
    for k in range(90):                       # 3 s of frames
        t[0] += 1 / 30.0
        ls.frame([1, 2, 3, 4])
    c = ls.counts()
    assert c["header_repeats"] >= 3 and c["heartbeats"] >= 3


# --- the header assembler's memory bound ------------------------------------------------------

def test_replaced_header_parts_count_against_the_memory_bound():
    # parts are counted when first seen; a part sent again longer (same id, valid CRC) replaced
    # it uncounted: 255 parts of 1 byte then of 990 bytes held 250 KB on a 264 KB Pico
    a = pk.HeaderAssembler(max_bytes=4096)
    hid = 0x1234
    enc = pk.Encoder(clock_us=lambda: 0)

    def part(i, n):
        b = enc.packet("HEADER", (pk.SCHEMA, hid, i, 255), b"\x01" * n)
        return pk.Decoder().feed(b)[0]
    for i in range(200):
        a.add(part(i, 1))
    for i in range(200):
        a.add(part(i, 990))
        assert sum(len(v) for v in a._parts.values()) <= 4096
    assert a.too_big >= 1


# --- a USB serial adapter unplugged and plugged back ------------------------------------------

class _Usb:
    """A USB serial port: once unplugged, every write raises (pyserial: EIO) until reopened."""

    def __init__(self):
        self.out = b""
        self.gone = False

    def write(self, b):
        if self.gone:
            raise OSError(5, "write failed: Input/output error")
        self.out += bytes(b)
        return len(b)

    def read(self, n):
        if self.gone:
            raise OSError(5, "read failed")
        return b""


def test_the_live_link_reopens_a_port_that_went_away():
    # pulling a USB adapter kills the file descriptor: the capture kept writing to the dead port
    # (write_errors forever) and never streamed again after the adapter came back
    from device.capture.outputs import PacketOutput
    t = [0.0]
    ports = [_Usb()]

    def reopen():
        if t[0] < 2.0:                        # still unplugged: the device node is missing
            raise OSError(2, "could not open port /dev/ttyUSB0")
        ports.append(_Usb())
        return ports[-1]
    out = PacketOutput(ports[0], lh.encode(_rows(4), 8, 30.0), bits=8, clock=lambda: t[0],
                       reopen=reopen)
    for k in range(120):                      # 4 s at 30 Hz, unplugged from 1 s
        t[0] = k / 30.0
        if k == 30:
            ports[0].gone = True
        out(k, t[0], [0.0] * 4, [1, 2, 3, k % 200])
    assert len(ports) == 2
    pkts = pk.Decoder().feed(ports[1].out)
    assert pkts[0].name == "HELLO" and any(p.name == "HEADER" for p in pkts)
    assert sum(p.is_frame() for p in pkts) >= 55           # 2 s after the replug, every frame
    assert out.counts()["reopens"] == 1


def test_the_capture_service_restarts_after_its_day_ends():
    # --duration 86400 exits 0 after a day; Restart=on-failure left the unit not capturing
    import configparser
    import os
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.read(os.path.join("device", "capture", "motionstaff-capture.service"))
    assert "--duration" in cp["Service"]["ExecStart"]
    assert cp["Service"]["Restart"] == "always"


def test_a_bad_link_port_is_refused_before_a_recording_is_made(tmp_path, capsys):
    # --link /dev/ttyUSB9 (wrong name): the recording was created first, then the port failed,
    # leaving a header-only recording; under systemd's restarts one more every 2 s
    from host.cli import main
    rd = tmp_path / "recs"
    assert main(["capture", "--body", "humanoid18", "--estimator", "orient", "--duration", "0.2",
                 "--link", str(tmp_path / "ttyNOPE"), "--record-dir", str(rd)]) == 2
    assert "ttyNOPE" in capsys.readouterr().err
    assert not rd.exists() or os_listdir(rd) == []


def os_listdir(p):
    import os
    return os.listdir(str(p))


@pytest.mark.parametrize("chip", ["bno055", "mpu6050"])
def test_a_bus_clock_faster_than_its_chips_is_refused(chip):
    # hz=1000000 is a valid URL, but a BNO055 / MPU-6050 / TCA9548A is a 400 kHz (fast mode)
    # part: the budget charged 1 MHz bit times and passed reads the wires cannot make
    from device.capture.busbudget import check_bus_budget
    from device.capture.config import default_config, place_sensors
    from device.body.human import human_model
    cfg = default_config(body="human", chip=chip)
    cfg["buses"] = dict((k, v.replace("hz=400000", "hz=1000000")) for k, v in cfg["buses"].items())
    specs = place_sensors(human_model(), chip=chip, buses=list(cfg["buses"]))
    with pytest.raises(ValueError, match="400 kHz"):
        check_bus_budget(cfg, specs)


def test_frames_of_another_bit_depth_than_the_header_are_refused_at_start():
    # PacketOutput(port, header_16bit, bits=8): every frame 8-bit under a 16-bit header, each
    # one dropped by the receiver as wrong_rows, forever
    from device.servo.linkstream import LinkStreamer
    from protocol.errors import FormatError
    with pytest.raises(FormatError, match="bits"):
        LinkStreamer(_Sink(), lh.encode(_rows(4), 16, 30.0), 8, clock=lambda: 0.0)


# --- servos that execute each command over a move time ----------------------------------------

class _MoveTimeDrv(_Drv):
    """An LX-16A-like driver: each command is executed over time_ms (MOVE_TIME_WRITE)."""
    time_ms = 0


def test_a_move_time_servo_never_exceeds_its_velocity_after_a_gap():
    # the Player's limiter allows a step of max_vel * 2 periods after a pause (dt clamped to
    # 2 / rate), and the LX-16A executes every step over one period (time_ms): twice the
    # velocity limit at the servo, in the servo's own time
    from device.servo.player import Player
    from device.servo.robot import load_robot
    robot = load_robot("khr17-maestro")
    for s in robot.servos:
        s.max_acc_dps2 = 0.0                  # no acceleration limit: velocity is the bound
    t = [0.0]
    drv = _MoveTimeDrv()
    pl = Player(robot, drv, row_names=[s.name for s in robot.servos], clock=lambda: t[0])
    pl.start()
    assert drv.time_ms > 0
    home = [s.home_deg for s in robot.servos]
    for dt, target in [(pl.period_s, home), (pl.period_s * 1.5, [h + 90 for h in home]),
                       (0.5, [h - 90 for h in home]), (pl.period_s, [h + 90 for h in home])]:
        t[0] += dt
        pl.send_frame(target)
    prev = dict((s.id, s.to_units(s.home_deg)) for s in robot.servos)
    for cmds in drv.sent:
        for s in robot.servos:
            u = dict(cmds)[s.id]
            vel_dps = abs(u - prev[s.id]) / abs(s.units_per_deg) / (drv.time_ms / 1000.0)
            assert vel_dps <= s.max_vel_dps * 1.02 + 1e-9, (s.name, vel_dps)
            prev[s.id] = u


# --- a header whose CRC is right but whose content is not usable ------------------------------

def test_a_link_header_with_an_infinite_range_is_refused():
    # lo = -inf passes "lo == lo and lo < hi"; the receiver adopted it and every frame then
    # raised OverflowError in map_rows (int(-inf)): counted errors instead of a refused header
    import struct
    from protocol.errors import FormatError
    good = lh.encode(_rows(2), 8, 30.0)
    bad = bytearray(good)
    struct.pack_into("<f", bad, 8, float("-inf"))            # row 0's lo
    with pytest.raises(FormatError, match="range"):
        lh.decode(bytes(bad))
    with pytest.raises(FormatError, match="range"):
        lh.encode([("a", float("-inf"), 0.0)], 8, 30.0)
    asm = pk.HeaderAssembler()
    enc = pk.Encoder(clock_us=lambda: 0)
    got = [asm.add(p) for p in pk.Decoder().feed(b"".join(enc.header(bytes(bad))))]
    assert got == [None] and asm.bad == 1


def test_the_native_driver_never_blocks_on_a_full_port():
    # open_driver opens every port with write_timeout=1.0: a Native write into a full driver
    # buffer (a USB CDC receiver that stopped reading) blocked the player for a second per
    # command; the paced sender's "never blocks" needs a non-blocking port
    from device.servo.drivers import open_driver
    drv = open_driver("native", "loop://")
    assert drv.port.write_timeout == 0
    drv.close()


def test_two_mpu9250_on_one_channel_collide_at_their_magnetometers():
    # each MPU-9250 brings an AK8963 at 0x0C onto the bus (bypass mode): 0x68 and 0x69 differ,
    # the magnetometers do not
    from device.capture.config import check, default_config
    from protocol.errors import FormatError
    cfg = default_config(body="human", chip="mpu9250")
    cfg["sensors"] = [{"name": n, "chip": "mpu9250", "bus": "i2c-1", "addr": a, "link": "pelvis",
                       "mux": None} for n, a in (("a", 0x68), ("b", 0x69))]
    with pytest.raises(FormatError, match="0x0c"):
        check(cfg)
    cfg["sensors"] = cfg["sensors"][:1]
    check(cfg)


def test_the_bridge_survives_a_header_whose_rows_drive_no_servo():
    # a valid header for another robot (or Native's servo-id rows): robot.row_map raised
    # ValueError out of LinkBridge.feed, ending the robot end's loop (no failsafe after it)
    br, drv, t, names, enc = _bridge()
    other = lh.encode([("x%d" % i, -1.0, 1.0) for i in range(3)], 8, 30.0)
    br.feed(b"".join(enc.header(other)))                 # before any good header
    br.feed(enc.frame([1, 2, 3]))
    good = lh.encode([(n, -90.0, 90.0) for n in names], 8, 30.0)
    br.feed(b"".join(enc.header(good)))
    for k in range(3):
        t[0] += 0.02
        br.feed(enc.frame([128] * len(names)))
    br.feed(b"".join(enc.header(other)))                 # and while streaming
    t[0] += 0.02
    br.feed(enc.frame([1, 2, 3]))
    assert br.counts["frames"] == 3 and br.counts["unusable_headers"] == 2
    t[0] += 5.0
    assert br.poll() is True                              # the failsafe still engages
