"""Hardware abstraction: bus and camera backends chosen by URL, imported only when chosen.

    from device.hal import open_i2c, open_camera
    bus = open_i2c("sim-i2c://")          # SimI2C (a register-level simulated bus)
    bus = open_i2c("i2c://1")             # SmbusI2C on /dev/i2c-1 (needs smbus2)
    cam = open_camera("sim-cam://")       # SimCamera; "picam://0" needs picamera2

The I2C interface is the machine.I2C subset micropython-lib drivers use:
readfrom_mem_into(addr, reg, buf), writeto_mem(addr, reg, buf), writeto(addr, buf),
readfrom_into(addr, buf); a missing device or a bus fault raises OSError.
"""

# scheme -> "module:Class"; the module is imported only when its scheme is opened
I2C_BACKENDS = {
    "i2c": "device.hal.i2c_smbus:SmbusI2C",
    "sim-i2c": "device.hal.i2c_sim:SimI2C",
}
CAMERA_BACKENDS = {
    "picam": "device.sensors.camera_picam:PicamCamera",
    "sim-cam": "device.sensors.camera_sim:SimCamera",
}


def split_url(url):
    """("scheme", "rest") of "scheme://rest"; ValueError without a scheme."""
    if "://" not in url:
        raise ValueError("%r is not a URL (expected scheme://...)" % (url,))
    scheme, rest = url.split("://", 1)
    return scheme, rest


def _load(table, url, kind):
    scheme, rest = split_url(url)
    if scheme not in table:
        raise ValueError("unknown %s scheme %r in %r (valid: %s)"
                         % (kind, scheme, url, ", ".join(sorted(table))))
    mod, cls = table[scheme].split(":")
    # __import__ with a fromlist returns the submodule (CPython and MicroPython alike)
    return getattr(__import__(mod, None, None, [cls]), cls), rest


def open_i2c(url, **options):
    """An I2C bus object for a URL (i2c://N, sim-i2c://)."""
    cls, rest = _load(I2C_BACKENDS, url, "I2C")
    return cls.from_url(rest, **options)


def open_camera(url, **options):
    """A camera object for a URL (picam://N, sim-cam://)."""
    cls, rest = _load(CAMERA_BACKENDS, url, "camera")
    return cls.from_url(rest, **options)
