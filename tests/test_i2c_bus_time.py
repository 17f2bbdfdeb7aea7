"""The I2C twin charges every transaction its SCL periods (hand-counted here), clock stretching
where the chip does it, per bus; multiplexer switches cost their own write; the capture loop's
frame lasts at least the slowest bus's time; configs whose reads do not fit are refused."""

import pytest

from device.capture.busbudget import bus_budget, check_bus_budget, describe
from device.capture.config import PI4_BUSES, default_config, place_sensors
from device.hal import open_i2c
from device.hal.i2c_sim import RegisterDevice, SimI2C, transaction_bits
from device.hal.tca9548a import SimTCA9548A, TCA9548A
from device.sensors.bno055 import BNO055
from device.sensors.bno055_sim import STRETCH_PER_READ_BYTE_S, SimBNO055


def test_transaction_bits_by_hand():
    # register read of 32 bytes: S(1) + addr+W,ACK(9) + reg,ACK(9) + Sr(1) + addr+R,ACK(9)
    # + 32 x (8 + ACK)(288) + P(1) = 318
    assert transaction_bits("read_mem", 32) == 1 + 9 + 9 + 1 + 9 + 32 * 9 + 1 == 318
    # register write of 1 byte: S + addr+W,ACK + reg,ACK + data,ACK + P = 29
    assert transaction_bits("write_mem", 1) == 29
    # the TCA9548A's control write (no register byte): S + addr,ACK + byte,ACK + P = 20
    assert transaction_bits("write", 1) == 20
    assert transaction_bits("read", 2) == 29
    with pytest.raises(ValueError):
        transaction_bits("burst", 1)


@pytest.mark.parametrize("hz", [100000, 400000])
def test_bus_clock_charges_bits_at_its_rate(hz):
    bus = open_i2c("sim-i2c://1?hz=%d" % hz)
    assert bus.freq_hz == hz
    bus.attach(0x50, RegisterDevice())
    buf = bytearray(14)
    bus.readfrom_mem_into(0x50, 0x3B, buf)          # 30 + 9 * 14 = 156 periods
    bus.writeto_mem(0x50, 0x6B, b"\x00")             # 29
    assert bus.bits == 156 + 29
    assert bus.busy_s == pytest.approx((156 + 29) / hz, rel=1e-12)
    with pytest.raises(OSError):
        bus.readfrom_mem_into(0x51, 0, buf)         # nobody acknowledges: S + addr + NACK + P
    assert bus.bits == 156 + 29 + 11


def test_failed_transfer_costs_its_time():
    bus = SimI2C(freq_hz=100000)
    bus.attach(0x50, RegisterDevice())
    bus.fail(0x50, 1)
    with pytest.raises(OSError):
        bus.readfrom_mem_into(0x50, 0, bytearray(4))
    assert bus.bits == 30 + 36


def test_bad_clock_is_refused():
    with pytest.raises(ValueError, match="hz"):
        open_i2c("sim-i2c://1?hz=fast")
    with pytest.raises(ValueError, match="outside"):
        open_i2c("sim-i2c://1?hz=5000000")
    with pytest.raises(ValueError, match="unknown option"):
        open_i2c("sim-i2c://1?speed=1")


def _truth():
    return {"gyro_rad_s": (0.1, 0.2, -0.3), "accel_m_s2": (0.1, 0.0, 9.8),
            "mag_ut": (20.0, 1.0, -40.0), "quat_wxyz": (1.0, 0.0, 0.0, 0.0)}


def test_bno055_read_stretches_and_mux_switch_costs_a_write():
    bus = SimI2C(freq_hz=400000)
    mux = bus.attach(0x70, SimTCA9548A())
    mux.attach(0, 0x28, SimBNO055(truth=_truth))
    mux.attach(1, 0x28, SimBNO055(truth=_truth))
    t = TCA9548A(bus)
    a = BNO055(t.channel(0)).init()
    b = BNO055(t.channel(1)).init()
    bits0, stretch0 = bus.bits, bus.stretch_s
    b.read()                                      # channel 1 still selected (init): no switch
    # accel 6, gyro 6, quaternion 8 bytes: three register reads
    want = transaction_bits("read_mem", 6) * 2 + transaction_bits("read_mem", 8)
    assert bus.bits - bits0 == want == 270
    assert bus.stretch_s - stretch0 == pytest.approx(20 * STRETCH_PER_READ_BYTE_S)
    bits1 = bus.bits
    busy1 = bus.busy_s
    a.read()                                      # a channel switch first: one 20-period write
    assert bus.bits - bits1 == 270 + 20
    assert bus.busy_s - busy1 == pytest.approx(290 / 400000.0 + 20 * 180e-6)


def test_default_config_fits_at_30hz_per_bus():
    cfg = default_config(body="human")
    assert list(cfg["buses"]) == list(PI4_BUSES)
    from device.body.human import human_model
    specs = place_sensors(human_model(), buses=list(cfg["buses"]))
    assert len(specs) == 22 and {s["bus"] for s in specs} == set(PI4_BUSES)
    per = check_bus_budget(cfg, specs)
    # 5 BNO055 on the busiest bus: 5 x (270 periods at 400 kHz + 20 x 180 us) + 3 mux writes
    want = 5 * (270 / 4e5 + 20 * 180e-6) + 3 * 20 / 4e5
    assert max(b["s"] for b in per) == pytest.approx(want, rel=1e-9)
    assert want < 1 / 30.0
    assert sum(b["sensors"] for b in per) == 22
    assert "5 BNO055 x 20 B + 3 mux writes at 400 kHz = 21.5 ms" in describe(per[0])


def test_one_bus_at_100khz_is_refused_with_the_budget():
    cfg = default_config(body="human")
    cfg["buses"] = {"i2c-1": "sim-i2c://1?hz=100000"}
    from device.body.human import human_model
    specs = place_sensors(human_model(), bus="i2c-1")
    with pytest.raises(ValueError) as e:
        check_bus_budget(cfg, specs)
    msg = str(e.value)
    assert "\n" not in msg
    # 22 x (270 periods at 100 kHz + 3.6 ms stretch) + 12 channel writes (+ 1 to leave the
    # second multiplexer) of 20 periods
    per = bus_budget(cfg, specs)[0]
    assert per["mux_writes"] == 13
    assert per["s"] == pytest.approx(22 * (270e-5 + 20 * 180e-6) + 13 * 20e-5, rel=1e-9)
    assert "bus i2c-1: 22 BNO055 x 20 B + 13 mux writes at 100 kHz = 141.2 ms > 33.3 ms frame" in msg


def test_capture_loop_frame_waits_for_the_slowest_bus():
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    cfg = default_config(body="human", estimator="orient")
    cfg["subject"]["max_s"] = 2.0
    unit = build_unit(cfg)
    loop = CaptureLoop(unit)
    loop.run(frames=3)
    slowest = max(b["s"] for b in unit.bus_budget)
    assert max(unit.bus_s.values()) == pytest.approx(slowest, rel=1e-9)
    # virtual time: the clock stood at the slowest bus's time after frame 2's read
    assert loop.clock.now() >= 2 / 30.0 + slowest - 1e-12
    s = loop.stats.summary()
    assert s["bus_max_ms"] == pytest.approx(slowest * 1000, rel=1e-9)
    assert s["latency_p99_ms"] >= slowest * 1000


def test_real_buses_are_read_in_parallel_threads(monkeypatch):
    """Buses that are not twins are read one thread a bus (the pool); every sensor answers."""
    import device.hal as hal
    from device.capture.unit import build_unit
    monkeypatch.setitem(hal.I2C_BACKENDS, "wire-i2c", "device.hal.i2c_sim:SimI2C")
    cfg = default_config(body="humanoid18", chip="mpu6050", estimator="orient")
    cfg["buses"] = {n: u.replace("sim-i2c", "wire-i2c") for n, u in cfg["buses"].items()}
    unit = build_unit(cfg)
    try:
        assert unit._pool is not None and len(unit._bus_groups) == 5
        unit.read(0.0)
        r = unit.read(1 / 30.0)
        assert set(r) == {s["name"] for s in unit.specs} and all(v is not None for v in r.values())
        assert max(unit.bus_s.values()) > 0
    finally:
        unit.close()
