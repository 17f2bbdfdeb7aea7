"""The sensor twins keep the chips' time (issue: twins kinder than the chips): a BNO055 does not
acknowledge its address for 650 ms after a reset or power-up (datasheet BST-BNO055-DS000 table
0-2 "POR time from reset to config mode", 3.3), its mode switches take 7 ms into CONFIG and 19 ms
out of it (table 3-6) and its data registers read zero until a switch into a fusion mode has
completed; an MPU-6050 answers 100 ms after DEVICE_RESET. Time is the simulated bus's clock
(SimI2C.now_s(): its transfers, its master's waits, the world's idle time): nothing sleeps.

The unit has one code path: its drivers wait through the bus (SimI2C.delay_ms charges the bus
clock, SmbusI2C's sleeps), and a sensor rejoining mid-capture re-initialises step by step on the
bus clock (SensorSlot), so the other sensors' frames keep flowing and no frame waits 650 ms.
"""

import pytest

from device.hal.i2c_sim import SimI2C
from device.sensors.bno055 import BNO055
from device.sensors.bno055_sim import SimBNO055
from device.sensors.health import SensorSlot
from device.sensors.mpu6050 import MPU6050
from device.sensors.mpu6050_sim import SimMPU6050

ADDR = 0x28
TRUTH = {"gyro_rad_s": (0.1, 0.0, 0.0), "accel_m_s2": (0.0, 0.0, 9.81), "mag_ut": (20.0, 0.0, -40.0),
         "quat_wxyz": (1.0, 0.0, 0.0, 0.0), "temp_c": 25.0}


def _byte(bus, reg, addr=ADDR):
    b = bytearray(1)
    bus.readfrom_mem_into(addr, reg, b)
    return b[0]


def _bno():
    bus = SimI2C()
    chip = bus.attach(ADDR, SimBNO055(truth=lambda: TRUTH))
    return bus, chip


def test_bus_clock_counts_transfers_waits_and_idle_time():
    bus, _chip = _bno()
    assert bus.now_s() == 0.0
    _byte(bus, 0x00)
    t1 = bus.now_s()
    assert t1 == pytest.approx(39 / 100000.0 + 180e-6)  # a 1-byte register read at 100 kHz, stretched
    bus.delay_ms(5)
    assert bus.now_s() == pytest.approx(t1 + 0.005) and bus.master_s == pytest.approx(t1 + 0.005)
    bus.advance_to(1.0)                                 # the world's time: the bus idles until then
    assert bus.now_s() == 1.0 and bus.master_s == pytest.approx(t1 + 0.005)
    bus.advance_to(0.5)                                 # never backwards
    assert bus.now_s() == 1.0


def test_bno055_nacks_for_650_ms_after_reset():
    bus, chip = _bno()
    assert _byte(bus, 0x00) == 0xA0
    bus.writeto_mem(ADDR, 0x3F, b"\x20")               # RST_SYS
    t0 = bus.now_s()
    with pytest.raises(OSError):
        _byte(bus, 0x00)
    bus.advance_to(t0 + 0.649)
    with pytest.raises(OSError):
        _byte(bus, 0x00)
    bus.advance_to(t0 + 0.650)
    assert _byte(bus, 0x00) == 0xA0 and chip.mode == 0


def test_bno055_powered_up_boots_for_650_ms():
    bus, chip = _bno()
    bus.advance_to(2.0)
    chip.power_on(bus.now_s())
    with pytest.raises(OSError):
        _byte(bus, 0x00)
    bus.advance_to(2.65)
    assert _byte(bus, 0x00) == 0xA0


def test_bno055_mode_switch_takes_its_time():
    bus, chip = _bno()
    bus.writeto_mem(ADDR, 0x3D, b"\x0c")               # CONFIG -> NDOF: 19 ms
    t0 = bus.now_s()
    q = bytearray(8)
    bus.readfrom_mem_into(ADDR, 0x20, q)
    assert q == bytes(8)                                # still in CONFIG: zeros
    bus.advance_to(t0 + 0.0185)
    bus.readfrom_mem_into(ADDR, 0x20, q)
    assert q == bytes(8)
    bus.advance_to(t0 + 0.019)
    bus.readfrom_mem_into(ADDR, 0x20, q)
    assert q[:2] == b"\x00\x40"                        # w = 1.0 (16384)
    # NDOF -> CONFIG: 7 ms; a profile written before the switch has completed is ignored
    bus.writeto_mem(ADDR, 0x3D, b"\x00")
    bus.writeto_mem(ADDR, 0x55, bytes(range(1, 23)))
    bus.advance_to(bus.now_s() + 0.007)
    assert _byte(bus, 0x3D) == 0 and chip.mode == 0 and chip.profile() == bytes(22)
    bus.writeto_mem(ADDR, 0x55, bytes(range(1, 23)))
    assert chip.profile() == bytes(range(1, 23))


def test_drivers_wait_on_the_bus_clock():
    bus, chip = _bno()
    imu = BNO055(bus).init()
    assert bus.now_s() >= 0.650 + 0.019 and chip.resets == 1
    assert imu.read()[2][0] == pytest.approx(1.0)
    # a driver that skips the waits fails on the twin as on the chip
    with pytest.raises(OSError):
        BNO055(bus, delay_ms=lambda ms: None).init()
    bus2 = SimI2C()
    bus2.attach(0x68, SimMPU6050(truth=lambda: ((0, 0, 0), (0, 0, 9.81), 25.0)))
    MPU6050(bus2, fifo_rate_hz=None).init()
    assert bus2.now_s() >= 0.100
    with pytest.raises(OSError):
        MPU6050(bus2, delay_ms=lambda ms: None).init()


def test_mpu6050_nacks_for_100_ms_after_reset():
    bus = SimI2C()
    bus.attach(0x68, SimMPU6050())
    bus.writeto_mem(0x68, 0x6B, b"\x80")
    t0 = bus.now_s()
    with pytest.raises(OSError):
        _byte(bus, 0x75, 0x68)
    bus.advance_to(t0 + 0.1)
    assert _byte(bus, 0x75, 0x68) == 0x68


def test_rejoin_does_not_hold_the_bus():
    """A BNO055 back from a power cut re-initialises across frames: no sample() waits longer than
    a frame's transfers, the other sensor on the bus is read every frame meanwhile."""
    bus = SimI2C()
    chip = bus.attach(ADDR, SimBNO055(truth=lambda: TRUTH))
    bus.attach(0x68, SimMPU6050(truth=lambda: ((0, 0, 0), (0, 0, 9.81), 25.0)))
    a = SensorSlot("a", BNO055(bus))
    b = SensorSlot("b", MPU6050(bus, fifo_rate_hz=None))
    assert a.start() and b.start()
    frame_s = 1 / 30.0
    bus.detach(ADDR)                                    # the power cut
    longest = 0.0
    got_b = 0
    back_at = None
    for k in range(90):
        t = 10.0 + k * frame_s
        bus.advance_to(t)
        if k == 10:
            chip = bus.attach(ADDR, SimBNO055(truth=lambda: TRUTH))
            chip.power_on(bus.now_s())
            back_at = t
        m0 = bus.master_s
        a.sample()
        got_b += b.sample() is not None
        longest = max(longest, bus.master_s - m0)
    assert got_b == 90 and a.alive and a.rejoins == 1
    assert longest < 0.01, longest                      # the 650 ms are waited out between frames
    # back within boot (0.65 s) + reset (0.65 s) + the backoff, not sooner
    assert a.samples > 0 and 1.3 <= (90 - a.samples) * frame_s - (back_at - 10.0) <= 1.3 + 9 * frame_s


def test_a_bno055_slower_than_its_typical_reset_still_joins(monkeypatch):
    """650 ms is the data sheet's typical reset time: a part that takes 700 ms is polled until it
    answers (never reset again for being slow), then reads every frame."""
    import device.sensors.bno055_sim as bs
    from device.hal.i2c_sim import SimI2C
    from device.sensors.bno055 import BNO055
    from device.sensors.health import SensorSlot
    monkeypatch.setattr(bs, "BOOT_S", 0.700)
    bus = SimI2C()
    chip = bus.attach(0x28, bs.SimBNO055())
    chip.truth = lambda: {"gyro_rad_s": (0, 0, 0), "accel_m_s2": (0, 0, 9.81), "mag_ut": (20, 0, -40),
                          "quat_wxyz": (1, 0, 0, 0), "temp_c": 24}
    slot = SensorSlot("imu", BNO055(bus))
    assert slot.start() and chip.resets == 1
    got = 0
    for _ in range(90):                     # 3 s at 30 Hz
        bus.advance_to(bus.now_s() + 1 / 30.0)
        got += slot.sample() is not None
    assert got == 90 and slot.errors == 0 and chip.resets == 1
