"""Emulators of every servo controller: parse bytes as the device does, reply where it replies,
record each servo's commanded position over time.

    from device.servo.emulate import make_emulator, PtyServer
    emu = make_emulator("maestro")           # or ssc32, lx16a, dynamixel, feetech, native
    with PtyServer(emu) as srv:              # a pseudo-terminal: srv.path is the serial port
        ...                                  # any program opens srv.path like a USB adapter
    emu.timeline                             # [(t_s, servo, units, deg), ...]
    emu.write_log("run.csv")                 # or .json

The PCA9685 is emulated at the I2C bus (SimPCA9685Bus, sim-i2c://), not behind a pty.
"""

import importlib

EMULATORS = {
    "maestro": ("device.servo.emulate.maestro", "MaestroEmulator"),
    "ssc32": ("device.servo.emulate.ssc32", "SSC32Emulator"),
    "lx16a": ("device.servo.emulate.lx16a", "LX16AEmulator"),
    "dynamixel": ("device.servo.emulate.dynamixel", "DynamixelEmulator"),
    "feetech": ("device.servo.emulate.feetech", "FeetechEmulator"),
    "feetech-scs": ("device.servo.emulate.feetech", "FeetechEmulator"),
    "native": ("device.servo.emulate.native", "NativeEmulator"),
    "pca9685": ("device.servo.emulate.pca9685", "SimPCA9685Bus"),
}


def make_emulator(name, **kw):
    if name not in EMULATORS:
        raise ValueError("unknown controller %r (known: %s)" % (name, ", ".join(sorted(EMULATORS))))
    mod, cls = EMULATORS[name]
    if name == "feetech-scs":
        kw.setdefault("series", "scs")
    return getattr(importlib.import_module(mod), cls)(**kw)


def __getattr__(name):
    if name == "PtyServer":
        from device.servo.emulate.pty import PtyServer
        return PtyServer
    raise AttributeError(name)
