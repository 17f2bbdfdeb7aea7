"""The controller table: name -> (module, class), imported lazily; open_driver by name + port.

    from device.servo.drivers import open_driver, CONTROLLERS
    drv = open_driver("dynamixel", "/dev/ttyUSB0", baud=1000000)
    drv = open_driver("pca9685", "sim-i2c://")          # I2C URL for the PCA9685
    drv = open_driver("feetech-scs", "loop://")

Serial ports are opened with serial.serial_for_url, so real ports, pty paths, loop:// and
spy:// all work. An unknown controller name raises ValueError listing the known ones.
"""

import importlib
import inspect

CONTROLLERS = {
    "maestro": ("device.servo.maestro", "Maestro", {}),
    "ssc32": ("device.servo.ssc32", "SSC32", {}),
    "pca9685": ("device.servo.pca9685", "PCA9685", {}),
    "lx16a": ("device.servo.lx16a", "LX16A", {}),
    "dynamixel": ("device.servo.dynamixel", "Dynamixel", {}),
    "feetech": ("device.servo.feetech", "Feetech", {"series": "sts"}),
    "feetech-scs": ("device.servo.feetech", "Feetech", {"series": "scs"}),
    "native": ("device.servo.native", "Native", {}),
}


def driver_class(name):
    if name not in CONTROLLERS:
        raise ValueError("unknown controller %r (known: %s)" % (name, ", ".join(sorted(CONTROLLERS))))
    mod, cls, _ = CONTROLLERS[name]
    return getattr(importlib.import_module(mod), cls)


def open_port(url, baud, timeout_s=0.1):
    import serial
    try:
        return serial.serial_for_url(url, baudrate=baud, timeout=timeout_s, write_timeout=1.0)
    except serial.SerialException as e:
        raise OSError("%s: %s" % (url, e))
    except (KeyError, IndexError):
        # pyserial's own message for a loop:// URL it cannot parse ("loop://?x") is a format
        # string with unescaped braces: it raises KeyError instead
        raise OSError("%s: not a port or URL pyserial can open (loop://, socket://HOST:PORT, "
                      "rfc2217://HOST:PORT, a device path)" % url)


def driver_options(name, opts):
    """The constructor keywords of controller `name`: its defaults and opts, each one checked
    (ValueError naming an unknown option and the known ones)."""
    cls = driver_class(name)
    kw = dict(CONTROLLERS[name][2])
    kw.update(opts)
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        known = [n for n in list(params)[2:]]
        bad = sorted(set(kw) - set(known))
        if bad:
            raise ValueError("%s: unknown controller option %r (known: %s)"
                             % (name, bad[0], ", ".join(known) or "none"))
    return kw


def open_driver(name, port, baud=None, timeout_s=0.1, clock=None, **opts):
    """A driver on a port URL (or an already open port / I2C bus object); clock (s): the one a
    reply's deadline reads (device/servo/base.py: time.monotonic, a SimPort's clock)."""
    cls = driver_class(name)
    kw = driver_options(name, opts)
    if name == "pca9685":
        from device.servo.i2c import open_i2c
        bus = open_i2c(port) if isinstance(port, str) else port
        return cls(bus, **kw)
    if isinstance(port, str):
        port = open_port(port, baud or cls.BAUD, timeout_s)
    if clock is not None and "clock" in inspect.signature(cls.__init__).parameters:
        kw["clock"] = clock                 # a driver that paces on a clock (Native)
    drv = cls(port, **kw)
    if clock is not None:
        drv.clock = clock
    return drv
