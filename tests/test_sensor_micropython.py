"""The I2C drivers, the simulated bus, the multiplexer and SensorSlot run unchanged on MicroPython."""

import ast
import os

import pytest

from device.hal.i2c_sim import SimI2C
from device.hal.tca9548a import SimTCA9548A, TCA9548A
from device.sensors.bno055 import BNO055
from device.sensors.bno055_sim import SimBNO055
from device.sensors.health import SensorSlot
from device.sensors.mpu6050 import MPU6050
from device.sensors.mpu6050_sim import SimMPU6050

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ["device/hal/__init__.py", "device/hal/i2c_sim.py", "device/hal/busclock.py", "device/hal/tca9548a.py",
         "device/sensors/__init__.py", "device/sensors/mpu6050.py", "device/sensors/mpu6050_sim.py",
         "device/sensors/bno055.py", "device/sensors/bno055_sim.py", "device/sensors/health.py",
         "device/sensors/ak8963.py", "device/sensors/ak8963_sim.py", "device/sensors/register.py"]

CODE = """
from device.hal import open_i2c
from device.hal.tca9548a import TCA9548A, SimTCA9548A
from device.sensors.mpu6050 import MPU6050
from device.sensors.mpu6050_sim import SimMPU6050
from device.sensors.bno055 import BNO055
from device.sensors.bno055_sim import SimBNO055
from device.sensors.health import SensorSlot
bus = open_i2c("sim-i2c://")
mux = bus.attach(0x70, SimTCA9548A())
a = mux.attach(2, 0x68, SimMPU6050())
a.truth = lambda: ((0.25, -0.5, 1.0), (0.5, -2.0, 9.5), 31.0)
b = mux.attach(3, 0x28, SimBNO055())
b.truth = lambda: {"gyro_rad_s": (0.1, 0.2, -0.3), "accel_m_s2": (0.1, 0.0, 9.8),
                   "mag_ut": (20.0, 1.0, -40.0), "quat_wxyz": (0.8, 0.0, 0.6, 0.0)}
t = TCA9548A(bus)
imu = MPU6050(t.channel(2), accel_range_g=8, gyro_range_dps=1000).init()
print(imu.model, imu.read_raw())
slot = SensorSlot("b", BNO055(t.channel(3)))
print(slot.start(), slot.sample())
bus.fail(0x28, 5)
print(slot.sample(), slot.alive, slot.errors)
print(slot.sample() is not None, slot.alive)
from device.sensors.ak8963 import MPU9250
from device.sensors.ak8963_sim import SimMPU9250
c = mux.attach(5, 0x68, SimMPU9250(asa=(0x90, 0x70, 0x80)))
c.truth = a.truth
c.mag_truth = lambda: (20.0, -5.0, -40.0)
m = MPU9250(t.channel(5)).init().read()[-1]
print(" ".join("%.4f" % x for x in m))
"""


def test_drivers_on_micropython():
    from tools.mpy_run import run, MpyError
    try:
        out = run(CODE, files={f: os.path.join(REPO, f) for f in FILES})
    except FileNotFoundError as e:      # no Node: the shared fixture's policy decides
        pytest.skip("MicroPython runner unavailable: %s" % e)
    bus = SimI2C()
    mux = bus.attach(0x70, SimTCA9548A())
    a = mux.attach(2, 0x68, SimMPU6050())
    a.truth = lambda: ((0.25, -0.5, 1.0), (0.5, -2.0, 9.5), 31.0)
    b = mux.attach(3, 0x28, SimBNO055())
    b.truth = lambda: {"gyro_rad_s": (0.1, 0.2, -0.3), "accel_m_s2": (0.1, 0.0, 9.8),
                       "mag_ut": (20.0, 1.0, -40.0), "quat_wxyz": (0.8, 0.0, 0.6, 0.0)}
    t = TCA9548A(bus)
    imu = MPU6050(t.channel(2), accel_range_g=8, gyro_range_dps=1000).init()
    slot = SensorSlot("b", BNO055(t.channel(3)))
    lines = out.strip().splitlines()
    assert lines[0] == "%s %s" % (imu.model, imu.read_raw())
    ok, reading = slot.start(), slot.sample()
    # MicroPython prints floats with its own repr: compare the numbers
    got = ast.literal_eval("(" + lines[1].replace(" ", ", ", 1) + ")")
    assert got[0] == ok
    flat = lambda r: [x for part in r for x in part]
    assert all(abs(x - y) < 1e-12 for x, y in zip(flat(got[1]), flat(reading)))
    bus.fail(0x28, 5)
    assert lines[2] == "%s %s %s" % (slot.sample(), slot.alive, slot.errors)
    assert lines[3] == "%s %s" % (slot.sample() is not None, slot.alive)
    from device.sensors.ak8963 import MPU9250
    from device.sensors.ak8963_sim import SimMPU9250
    c = mux.attach(5, 0x68, SimMPU9250(asa=(0x90, 0x70, 0x80)))
    c.truth = a.truth
    c.mag_truth = lambda: (20.0, -5.0, -40.0)
    m = MPU9250(t.channel(5)).init().read()[-1]
    assert lines[4] == " ".join("%.4f" % x for x in m)
