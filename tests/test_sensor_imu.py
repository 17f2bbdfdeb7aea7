"""IMU drivers against their register-level twins, the multiplexer, faults, stale and rejoin."""

import math
import subprocess
import sys

import pytest

from device.hal import open_i2c
from device.hal.i2c_sim import SimI2C, RegisterDevice
from device.hal.tca9548a import TCA9548A, SimTCA9548A
from device.sensors.bno055 import BNO055
from device.sensors.bno055_sim import SimBNO055
from device.sensors.health import SensorSlot
from device.sensors.mpu6050 import MPU6050, ACCEL_RANGES_G, GYRO_RANGES_DPS
from device.sensors.mpu6050_sim import SimMPU6050


def test_registry_lazy_and_unknown_scheme():
    out = subprocess.run([sys.executable, "-c", "import sys, device.hal; device.hal.open_i2c('sim-i2c://');"
                          "print('smbus2' in sys.modules, 'device.hal.i2c_smbus' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    with pytest.raises(ValueError, match="valid: i2c, sim-i2c"):
        open_i2c("spi://0")
    assert isinstance(open_i2c("sim-i2c://x"), SimI2C)


@pytest.mark.parametrize("arange", ACCEL_RANGES_G)
@pytest.mark.parametrize("grange", GYRO_RANGES_DPS)
def test_mpu6050_scales_round_trip(arange, grange):
    bus = SimI2C()
    chip = bus.attach(0x68, SimMPU6050())
    truth = ((0.5, -1.0, 2.0), (1.0, -3.0, 9.5), 30.0)
    chip.truth = lambda: truth
    imu = MPU6050(bus, accel_range_g=arange, gyro_range_dps=grange).init()
    assert chip.regs[0x1B] == GYRO_RANGES_DPS.index(grange) << 3
    assert chip.regs[0x1C] == ACCEL_RANGES_G.index(arange) << 3
    assert chip.regs[0x6B] == 0x01 and chip.resets == 1
    g, a, t = imu.read()
    lsb_g = math.radians(1) / (131.0 * 250 / grange)
    lsb_a = 9.80665 / (16384.0 / (arange // 2))
    for i in range(3):
        assert abs(g[i] - truth[0][i]) <= lsb_g / 2 + 1e-12
        if abs(truth[1][i]) < arange * 9.80665:
            assert abs(a[i] - truth[1][i]) <= lsb_a / 2 + 1e-12
    assert abs(t - 30.0) < 0.01


def test_mpu6050_saturates_and_sleeps():
    bus = SimI2C()
    chip = bus.attach(0x68, SimMPU6050())
    chip.truth = lambda: ((100.0, 0, 0), (0, 0, 200.0), 25.0)
    imu = MPU6050(bus, accel_range_g=2, gyro_range_dps=250)
    raw = bytearray(14)
    bus.readfrom_mem_into(0x68, 0x3B, raw)
    assert raw == bytes(14)                      # asleep after power-on
    imu.init()
    ax, ay, az, t, gx, gy, gz = imu.read_raw()
    assert gx == 32767 and az == 32767


def test_mpu9250_who_am_i_and_wrong_chip():
    bus = SimI2C()
    bus.attach(0x68, SimMPU6050(who_am_i=0x71))
    assert MPU6050(bus).init().model == "MPU-9250"
    bus.attach(0x69, RegisterDevice({0x75: 0x12}))
    with pytest.raises(OSError, match="not an MPU-6050"):
        MPU6050(bus, addr=0x69).init()


def test_bno055_quaternion_raw_and_modes():
    bus = SimI2C()
    chip = bus.attach(0x28, SimBNO055())
    q = (math.cos(0.3), 0.0, math.sin(0.3), 0.0)
    chip.truth = lambda: {"gyro_rad_s": (0.1, -0.2, 0.3), "accel_m_s2": (0.5, 0.0, 9.8),
                          "mag_ut": (20.0, -5.0, -40.0), "quat_wxyz": q, "temp_c": 24}
    imu = BNO055(bus, mode="NDOF")
    assert imu.read_all()[3] == (0.0, 0.0, 0.0, 0.0) or chip.mode == 0
    imu.init()
    g, a, m, qq = imu.read_all()        # (the twin sees its mode switch done at a transfer)
    assert chip.mode == 0x0C and chip.regs[0x3B] == 0x02 and chip.resets == 1
    assert all(abs(qq[i] - q[i]) <= 0.5 / 16384 for i in range(4))
    assert all(abs(g[i] - (0.1, -0.2, 0.3)[i]) <= 0.5 / 900 for i in range(3))
    assert all(abs(a[i] - (0.5, 0.0, 9.8)[i]) <= 0.005 for i in range(3))
    assert all(abs(m[i] - (20.0, -5.0, -40.0)[i]) <= 1 / 32 for i in range(3))
    # raw-only mode: no fused quaternion
    BNO055(bus, mode="AMG").init()
    assert BNO055(bus).read_quaternion() == (0.0, 0.0, 0.0, 0.0)
    assert BNO055(bus).calibration() == (0, 0, 0, 0)         # 0 after a reset (power-up)


def test_bno055_unit_sel_mg():
    bus = SimI2C()
    chip = bus.attach(0x28, SimBNO055())
    chip.truth = lambda: {"gyro_rad_s": (0, 0, 0), "accel_m_s2": (0, 0, 9.80665),
                          "quat_wxyz": (1, 0, 0, 0)}
    BNO055(bus).init()
    bus.writeto_mem(0x28, 0x3B, bytes([0x03]))    # accel in mg
    b = bytearray(6)
    bus.readfrom_mem_into(0x28, 0x08, b)
    assert int.from_bytes(b[4:6], "little", signed=True) == 1000


def test_mux_routes_identical_addresses():
    bus = SimI2C()
    mux = bus.attach(0x70, SimTCA9548A())
    chips = [mux.attach(ch, 0x68, SimMPU6050()) for ch in range(8)]
    for k, c in enumerate(chips):
        c.truth = (lambda k=k: ((0.01 * k, 0, 0), (0, 0, 9.8), 25.0))
    tca = TCA9548A(bus)
    imus = [MPU6050(tca.channel(ch)).init() for ch in range(8)]
    for k, imu in enumerate(imus):
        assert abs(imu.read()[0][0] - 0.01 * k) < 1e-3
    assert mux.control == 1 << 7
    with pytest.raises(OSError):                 # no channel selected: nothing answers
        bus.writeto(0x70, bytes([0]))
        MPU6050(bus).read()
    with pytest.raises(ValueError):
        tca.channel(8)


def _frame(bus, slot, dt_s=1 / 30.0):
    """One frame: a sample, then the frame's time passes on the bus clock."""
    r = slot.sample()
    bus.advance_to(bus.now_s() + dt_s)
    return r


def test_slot_retries_stale_and_rejoin():
    bus = SimI2C()
    chip = bus.attach(0x68, SimMPU6050())
    chip.truth = lambda: ((0, 0, 0), (0, 0, 9.8), 25.0)
    slot = SensorSlot("imu", MPU6050(bus), retries=2)
    assert slot.start()
    bus.fail(0x68, 2)                             # two errors: absorbed by the retries
    assert slot.sample() is not None and slot.errors == 2 and slot.alive
    bus.fail(0x68, 3)                             # three: stale this frame
    assert slot.sample() is None and not slot.alive
    # the chip loses power and comes back in its reset state
    bus.detach(0x68)
    for _ in range(20):
        assert slot.sample() is None
    chip2 = bus.attach(0x68, SimMPU6050())
    chip2.truth = chip.truth
    got = [_frame(bus, slot) for _ in range(10)]          # frames of 1/30 s: the reset's 100 ms pass
    assert got[-1] is not None and slot.alive and slot.rejoins == 1
    assert chip2.regs[0x6B] == 0x01               # re-initialised after rejoining
    assert slot.stale_frames >= 21


def test_slot_never_started_sensor_joins_later():
    bus = SimI2C()
    slot = SensorSlot("late", BNO055(bus), retries=0)
    assert not slot.start()
    assert slot.sample() is None
    chip = bus.attach(0x28, SimBNO055())
    chip.truth = lambda: {"gyro_rad_s": (0, 0, 0), "accel_m_s2": (0, 0, 9.8), "quat_wxyz": (1, 0, 0, 0)}
    got = [_frame(bus, slot) for _ in range(40)]          # its 650 ms reset passes between frames
    assert got[-1] is not None and slot.rejoins == 0


def test_mpu6050_fifo_records_count_overflow_and_reset():
    bus = SimI2C()
    chip = bus.attach(0x68, SimMPU6050())
    chip.truth = lambda: ((0, 0, 0), (0, 0, 9.8), 25.0)
    imu = MPU6050(bus, fifo_rate_hz=200, accel_range_g=4, gyro_range_dps=500).init()
    assert imu.fifo_rate_hz == 200.0 and chip.sample_rate_hz() == 200.0
    assert chip.regs[0x23] == 0x78 and chip.regs[0x6A] == 0x40 and chip.regs[0x19] == 4
    samples = [((0.01 * k, -0.02 * k, 0.5), (0.1 * k, 0.0, 9.8)) for k in range(20)]
    chip.push_samples(samples)
    cnt = bytearray(2)
    bus.readfrom_mem_into(0x68, 0x72, cnt)
    assert cnt[0] << 8 | cnt[1] == 240
    got = imu.read()[3]
    assert len(got) == 20
    for (g, a), (gt, at) in zip(got, samples):
        assert max(abs(x - y) for x, y in zip(g, gt)) <= math.radians(1) / 65.5 / 2 + 1e-12
        assert max(abs(x - y) for x, y in zip(a, at)) <= 9.80665 / 8192 / 2 + 1e-12
    assert imu.read()[3] == []
    chip.push_samples(samples * 5)                  # 1200 bytes: the oldest are dropped
    assert len(chip.fifo) == 1024 and chip.regs[0x3A] & 0x10
    assert imu.read()[3] == [] and imu.overflows == 1 and len(chip.fifo) == 0
    chip.push_samples(samples[:3])
    assert len(imu.read()[3]) == 3
    MPU6050(bus).init()                              # without FIFO mode nothing is queued
    chip.push_samples(samples)
    assert len(chip.fifo) == 0


def test_golden_init_transactions():
    """The exact register traffic of each driver's init (datasheet order), as a golden list."""
    bus = SimI2C()
    bus.attach(0x68, SimMPU6050())
    bus.attach(0x28, SimBNO055())
    mux = bus.attach(0x70, SimTCA9548A())
    mux.attach(1, 0x69, SimMPU6050())
    bus.log = []
    MPU6050(bus, accel_range_g=8, gyro_range_dps=1000, dlpf=3, fifo_rate_hz=250).init()
    assert bus.log == [("r", 0x68, 0x75, b"\x68"), ("w", 0x68, 0x6B, b"\x80"), ("w", 0x68, 0x6B, b"\x01"),
                       ("w", 0x68, 0x19, b"\x03"), ("w", 0x68, 0x1A, b"\x03"), ("w", 0x68, 0x1B, b"\x10"),
                       ("w", 0x68, 0x1C, b"\x10"), ("w", 0x68, 0x6A, b"\x04"), ("w", 0x68, 0x23, b"\x78"),
                       ("w", 0x68, 0x6A, b"\x40")]
    bus.log = []
    BNO055(bus, mode="IMU").init()
    # (CHIP_ID read again after the reset: a chip slower than the typical 650 ms is waited for)
    assert bus.log == [("r", 0x28, 0x00, b"\xa0"), ("w", 0x28, 0x3D, b"\x00"), ("w", 0x28, 0x3F, b"\x20"),
                       ("r", 0x28, 0x00, b"\xa0"),
                       ("w", 0x28, 0x07, b"\x00"), ("w", 0x28, 0x3B, b"\x02"), ("w", 0x28, 0x3D, b"\x08")]
    bus.log = []
    tca = TCA9548A(bus)
    ch = tca.channel(1)
    MPU6050(ch).read_raw()
    MPU6050(ch).read_raw()                          # the selection is cached: one mux write
    assert [e for e in bus.log if e[1] == 0x70] == [("w", 0x70, None, b"\x02")]


def test_mpu9250_magnetometer_through_bypass_and_mux():
    from device.sensors.ak8963 import MPU9250
    from device.sensors.ak8963_sim import SimMPU9250
    bus = SimI2C()
    mux = bus.attach(0x70, SimTCA9548A())
    chip = mux.attach(4, 0x68, SimMPU9250(asa=(0x90, 0x70, 0x80)))
    chip.truth = lambda: ((0, 0, 0), (0, 0, 9.8), 25.0)
    chip.mag_truth = lambda: (20.0, -5.0, -40.0)
    ch = TCA9548A(bus).channel(4)
    buf = bytearray(1)
    with pytest.raises(OSError):                    # before the bypass, nothing at 0x0C
        ch.readfrom_mem_into(0x0C, 0x00, buf)
    imu = MPU9250(ch).init()
    assert imu.model == "MPU-9250" and chip.regs[0x37] == 0x02
    assert imu.mag.adj == ((0x90 - 128) / 256 + 1, (0x70 - 128) / 256 + 1, 1.0)
    g, a, t, m = imu.read()
    assert all(abs(m[i] - (20.0, -5.0, -40.0)[i]) <= 0.15 for i in range(3))
