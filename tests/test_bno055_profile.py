"""The BNO055's calibration profile (datasheet 3.6.4 / 3.10): the real driver class over the simulated
bus and the register-level twin (read/write in CONFIG mode only, mode switches, CALIB_STAT after a
restore), `motionstaff calibrate` storing it, `capture` writing it back after init(), and a bad
profile in the calibration file as a one-line error. Seeded; nothing sleeps (the driver's waits
are recorded and charged to the simulated bus's clock, which the twin keeps its times on)."""

import json
import os

import numpy as np
import pytest

from device.capture.unit import build_unit
from device.hal.i2c_sim import SimI2C
from device.sensors.bno055 import (BNO055, OFFSET_FIELDS, PROFILE_LEN, as_profile, decode_offsets)
from device.sensors.bno055_sim import DEFAULT_OFFSETS, SimBNO055
from host.cli import main
from tests.bno_motion import Motion, calibrate_by_motion, poll
from tests.unit_config import write_unit_config

ADDR = 0x28
OPR_MODE, PROF = 0x3D, 0x55


def _profile(seed):
    """A plausible profile: int16 offsets and radii from a seeded generator."""
    rng = np.random.default_rng(seed)
    v = [int(x) for x in rng.integers(-400, 400, 9)] + [int(rng.integers(900, 1100)), int(rng.integers(500, 900))]
    return as_profile(dict(zip(OFFSET_FIELDS, v)))


def _chip(calib_stat=0xFF, mode="NDOF"):
    bus = SimI2C()
    chip = bus.attach(ADDR, SimBNO055(calib_stat=calib_stat))
    delays = []
    imu = BNO055(bus, mode=mode, delay_ms=_waits(bus, delays)).init()
    imu.calibration()                   # a transfer: the chip sees the mode switch completed
    del delays[:]
    return bus, chip, imu, delays


def _waits(bus, delays):
    """delay_ms recording each wait and charging it to the bus clock."""
    def wait(ms):
        delays.append(ms)
        bus.delay_ms(ms)
    return wait


def _writes(log):
    return [(reg, data) for kind, addr, reg, data in log if kind == "w"]


# -- driver and twin, register level ---------------------------------------------------------
def test_round_trip_read_write_read():
    bus, chip, imu, delays = _chip()
    assert imu.read_offsets() == bytes(PROFILE_LEN)          # nothing calibrated yet: zeros
    for seed in (1, 2, 3):
        p = _profile(seed)
        assert imu.write_offsets(p) == p
        assert imu.read_offsets() == p and chip.profile() == p
        f = decode_offsets(p)
        assert list(f) == list(OFFSET_FIELDS) and as_profile(f) == p
        assert imu.write_offsets(f) == p                     # the named fields work too
        assert imu.read_offsets() == p
    # a chip that calibrated itself (still, six poses, figure 8) holds its own profile
    bus2, chip2, imu2, _ = _chip(calib_stat=0xFF)
    assert imu2.read_offsets() == bytes(PROFILE_LEN)
    chip2.truth = m = Motion(bus2)
    assert calibrate_by_motion(bus2, imu2, m) == (3, 3, 3, 3)
    assert imu2.read_offsets() == DEFAULT_OFFSETS
    assert decode_offsets(DEFAULT_OFFSETS)["accel_radius"] == 1000


def test_driver_switches_to_config_mode_and_back():
    bus, chip, imu, delays = _chip()
    p = _profile(7)
    bus.log = []
    imu.write_offsets(p)
    assert _writes(bus.log) == [(OPR_MODE, b"\x00"), (PROF, p), (OPR_MODE, b"\x0c")]
    imu.calibration()                   # a transfer: the twin sees its mode switch completed
    assert delays == [7, 20] and chip.mode == 0x0C
    bus.log = []
    del delays[:]
    assert imu.read_offsets() == p
    assert [(k, reg) for k, _a, reg, _d in bus.log] == [("w", OPR_MODE), ("r", PROF), ("w", OPR_MODE)]
    assert _writes(bus.log) == [(OPR_MODE, b"\x00"), (OPR_MODE, b"\x0c")] and delays == [7, 20]
    # back to the driver's own fusion mode (IMU = 0x08)
    bus, chip, imu, delays = _chip(mode="IMU")
    bus.log = []
    imu.write_offsets(p)
    assert imu.calibration() == (0, 0, 0, 0)          # restored: in use, its levels start low
    assert _writes(bus.log)[-1] == (OPR_MODE, b"\x08") and chip.mode == 0x08
    # init() with a profile: reset, then the profile while still in CONFIG mode, then the mode
    bus, chip, _, _ = _chip()
    bus.log = []
    delays = []
    BNO055(bus, delay_ms=_waits(bus, delays), profile=p).init()
    w = _writes(bus.log)
    assert w[0] == (OPR_MODE, b"\x00") and (0x3F, b"\x20") in w
    assert w[-2:] == [(PROF, p), (OPR_MODE, b"\x0c")] and delays == [650, 20]
    assert chip.resets == 2 and chip.profile() == p


def test_twin_ignores_profile_writes_outside_config_mode():
    bus, chip, imu, _ = _chip()
    p = _profile(11)
    bus.writeto_mem(ADDR, PROF, p)                        # in NDOF: ignored, as on the chip
    assert chip.profile() == bytes(PROFILE_LEN) and imu.calibration() == (0, 0, 0, 0)
    assert imu.read_offsets() == bytes(PROFILE_LEN)
    imu.write_offsets(p)
    b = bytearray(PROFILE_LEN)
    bus.readfrom_mem_into(ADDR, PROF, b)                  # not valid outside CONFIG mode
    assert bytes(b) == bytes(PROFILE_LEN)
    bus.writeto_mem(ADDR, PROF, bytes(PROFILE_LEN))       # ignored again
    assert imu.read_offsets() == p
    # CALIB_STAT: the restored parts start at 0 and re-validate in a fusion mode (held still a
    # moment: gyro and accel; turned a little: mag and system); a reset forgets profile and levels
    chip.truth = m = Motion(bus)
    assert imu.calibration() == (0, 0, 0, 0)
    assert poll(bus, imu, 0.5) == (0, 3, 3, 0)
    m.kind = "tumble"
    assert poll(bus, imu, 1.0) == (3, 3, 3, 3)
    imu.init()
    assert imu.calibration() == (0, 0, 0, 0) and imu.read_offsets() == bytes(PROFILE_LEN)


def test_twin_restores_only_the_parts_written():
    bus, chip, imu, _ = _chip()
    chip.truth = m = Motion(bus)
    p = _profile(5)
    bus.writeto_mem(ADDR, OPR_MODE, b"\x00")
    bus.writeto_mem(ADDR, PROF + 12, p[12:18])            # before the 7 ms switch: ignored
    bus.delay_ms(7)
    bus.writeto_mem(ADDR, PROF + 12, p[12:18])            # gyro offsets only
    assert imu.read_offsets() == bytes(12) + p[12:18] + bytes(4)
    # a restored part re-validates quickly (gyro: 0.3 s still), the others from scratch
    assert poll(bus, imu, 0.5) == (0, 3, 0, 0)
    imu._enter_config()
    bus.writeto_mem(ADDR, PROF + 18, p[18:20])            # accel radius: the accel part
    imu._leave_config()
    assert poll(bus, imu, 0.5) == (0, 3, 3, 0)            # one still pose re-validates it
    imu.write_offsets(p)
    m.kind = "tumble"
    assert poll(bus, imu, 1.0) == (3, 3, 3, 3)


def test_bad_profiles_are_refused_before_any_transfer():
    bus, chip, imu, _ = _chip()
    bus.log = []
    for bad in (bytes(21), bytes(23), 22, "00" * 22, [0] * 21, [256] + [0] * 21,
                {"accel_offset_x": 1}, dict(zip(OFFSET_FIELDS, [40000] + [0] * 10))):
        with pytest.raises(ValueError, match="profile"):
            imu.write_offsets(bad)
        with pytest.raises(ValueError, match="profile"):
            BNO055(bus, profile=bad)
    assert bus.log == [] and chip.mode == 0x0C


def test_profile_on_micropython():
    from tools.mpy_run import run
    code = """
from device.hal import open_i2c
from device.sensors.bno055 import BNO055, decode_offsets
from device.sensors.bno055_sim import SimBNO055
bus = open_i2c("sim-i2c://")
chip = bus.attach(0x28, SimBNO055(calib_stat=0))
imu = BNO055(bus).init()
p = bytes(range(0, 44, 2))
imu.write_offsets(p)
print(imu.read_offsets() == p, imu.calibration(), decode_offsets(p)["mag_radius"])
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = ["device/hal/__init__.py", "device/hal/i2c_sim.py", "device/hal/busclock.py", "device/sensors/__init__.py",
             "device/sensors/bno055.py", "device/sensors/bno055_sim.py", "device/sensors/register.py"]
    try:
        out = run(code, files={f: os.path.join(root, f) for f in files})
    except FileNotFoundError as e:      # no Node: as tests/test_sensor_micropython.py
        pytest.skip("MicroPython runner unavailable: %s" % e)
    assert out.strip() == "True (0, 0, 0, 0) %d" % decode_offsets(bytes(range(0, 44, 2)))["mag_radius"]


# -- the commands ----------------------------------------------------------------------------
def unit_config(tmp_path, cal=None, sim=None, name="unit.json"):
    """Two BNO055s behind a multiplexer: p_imu calibrates fully, q_imu's mag stays at level 1."""
    sim = sim or {"p_imu": {}, "q_imu": {"calib_stat": 0xFD}}
    sensors = [
        {"name": "p_imu", "chip": "bno055", "bus": "main", "addr": 0x28, "link": "pelvis",
         "mux": {"addr": 0x70, "channel": 0}, "sim": sim["p_imu"]},
        {"name": "q_imu", "chip": "bno055", "bus": "main", "addr": 0x28, "link": "l_thigh",
         "mux": {"addr": 0x70, "channel": 1}, "sim": sim["q_imu"]},
    ]
    return write_unit_config(tmp_path, sensors, cal=cal, name=name)


@pytest.fixture
def calibrated(tmp_path, capsys):
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--config", str(unit_config(tmp_path)), "--out", str(out), "--yes",
                 "--rotate-s", "1"]) == 0
    return out, capsys.readouterr().out


def test_calibrate_stores_the_profile(calibrated):
    out, text = calibrated
    doc = json.loads(out.read_text())
    p, q = doc["sensors"]["p_imu"], doc["sensors"]["q_imu"]
    assert p["calib_stat"] == {"system": 3, "gyro": 3, "accel": 3, "mag": 3}
    assert p["profile"] == DEFAULT_OFFSETS.hex() and len(p["profile"]) == 2 * PROFILE_LEN
    assert p["profile_fields"] == decode_offsets(DEFAULT_OFFSETS)
    assert q["calib_stat"]["mag"] == 1 and "profile" not in q and "profile_fields" not in q
    assert "p_imu: calibration profile saved" in text and "q_imu" in text
    assert "no calibration profile saved" in text


def _calib(unit, name):
    slot = [s for s in unit.slots if s.name == name][0]
    return slot.driver.calibration()


def test_capture_restores_the_profile(calibrated, tmp_path, capsys):
    out, _ = calibrated
    from device.capture.config import load_config
    # the chips start uncalibrated (CALIB_STAT 0 after every reset)
    sim = {"p_imu": {}, "q_imu": {}}
    raw = build_unit(load_config(str(unit_config(tmp_path, sim=sim, name="raw.json"))))
    assert _calib(raw, "p_imu") == (0, 0, 0, 0)
    raw.close()
    cfg = load_config(str(unit_config(tmp_path, cal=str(out), sim=sim, name="unit-cal.json")))
    cfg["subject"]["outages"] = [{"sensor": "p_imu", "start_s": 0.8, "end_s": 1.0}]
    unit = build_unit(cfg)
    chip = unit.subject.sensors[unit.subject.index["p_imu"]]["chip_obj"]
    assert _calib(unit, "p_imu") == (0, 0, 0, 0)          # right after init(): restored, not yet valid
    assert chip.profile() == DEFAULT_OFFSETS and chip.resets == 1
    for k in range(1, 21):                                # the stance, still: 0.67 s
        unit.read(k / 30.0)
    assert _calib(unit, "p_imu") == (0, 3, 3, 0)          # gyro and accel re-validated
    assert _calib(unit, "q_imu") == (0, 1, 0, 0)          # no profile: calibrating from scratch
    # a power cut: the chip comes back reset, boots, the slot re-initialises it, the profile goes back
    slot = [s for s in unit.slots if s.name == "p_imu"][0]
    for k in range(21, 100):
        unit.read(k / 30.0)
    assert slot.rejoins == 1 and slot.alive
    fresh = unit.subject.sensors[unit.subject.index["p_imu"]]["chip_obj"]
    assert fresh is not chip and fresh.profile() == DEFAULT_OFFSETS and fresh.resets == 1
    unit.close()
    assert main(["capture", "--config", str(unit_config(tmp_path, cal=str(out), sim=sim, name="c2.json")),
                 "--duration", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["frames"] == 30


@pytest.mark.parametrize("profile, fields, says", [
    ("00" * 21, None, "got 42 characters"),
    ("zz" * 22, None, "got 44 characters"),
    ([0] * 23, None, "got 23 items"),
    (12, None, "got int"),
    (None, {"accel_offset_x": 1}, "got missing"),
    ("00" * 22, {k: 1 for k in OFFSET_FIELDS}, "'profile_fields' do not decode 'profile'"),
])
def test_bad_profile_is_a_one_line_error(calibrated, tmp_path, capsys, profile, fields, says):
    out, _ = calibrated
    doc = json.loads(out.read_text())
    e = doc["sensors"]["p_imu"]
    e.pop("profile_fields")
    if profile is None:
        e.pop("profile")
    else:
        e["profile"] = profile
    if fields is not None:
        e["profile_fields"] = fields
    bad = tmp_path / "bad-cal.json"
    bad.write_text(json.dumps(doc))
    assert main(["capture", "--config", str(unit_config(tmp_path, cal=str(bad), name="b.json")),
                 "--duration", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "bad-cal.json" in err[0] and "sensor p_imu" in err[0] and says in err[0], err[0]


def test_profile_only_for_a_bno055(tmp_path):
    from device.capture.calibration import load_calibration
    from protocol.errors import FormatError
    doc = {"format": "motionstaff-imu-calibration", "sensors": {
        "a": {"chip": "mpu6050", "profile": "00" * 22}}}
    with pytest.raises(FormatError, match="sensor a: 'profile' is a BNO055 calibration profile, but the chip is mpu6050"):
        load_calibration(doc)
    doc["sensors"]["a"] = {"chip": "bno055", "profile": list(range(22))}
    assert load_calibration(doc)["a"]["profile"] == bytes(range(22))


def test_the_unit_waits_the_data_sheet_times_on_every_bus():
    """One code path: the unit's drivers wait the reset and mode-switch times through their bus
    (BNO055: 650 ms after reset, 20 ms into a fusion mode; MPU-6050: 100 ms after reset); the
    twin charges them to its clock, as a real bus sleeps them."""
    from device.capture.unit import _driver
    from device.sensors.mpu6050_sim import SimMPU6050
    bus = SimI2C()
    bus.attach(0x28, SimBNO055())
    bus.attach(0x68, SimMPU6050())
    bno = _driver({"chip": "bno055", "addr": 0x28, "bus": "b"}, bus, {})
    assert bno.delay_ms is None
    t0 = bus.wait_s
    bno.init()
    assert bus.wait_s - t0 == pytest.approx(0.670)
    t0 = bus.wait_s
    _driver({"chip": "mpu6050", "addr": 0x68, "bus": "b"}, bus, {}).init()
    assert bus.wait_s - t0 == pytest.approx(0.100)
