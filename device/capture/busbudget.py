"""The unit's I2C budget: each bus's time a frame, measured by running the unit's own drivers on
twins of its buses, checked against the frame period before anything is captured.

    from device.capture.busbudget import bus_budget, check_bus_budget
    per_bus = bus_budget(cfg, specs)     # [{"bus", "hz", "s", "chips": {"bno055": 5}, "bytes", ...}]
    check_bus_budget(cfg, specs)          # ValueError naming the first bus that does not fit:
    # "bus i2c-1: 22 BNO055 x 20 B at 100 kHz = 139.6 ms > 33.3 ms frame"

Every bus gets a SimI2C at its configured clock (the URL's hz=, default 100 kHz) with the same
simulated chips and TCA9548A multiplexers the sensor specs name (real i2c:// buses too: their
twin), the unit's drivers (device/capture/unit.py _driver) are initialised and read for three
frames (an MPU-6050's FIFO gets the samples its FIFO rate puts there in a frame), and the last
frame's bus time is the bus's figure: bytes, acknowledge, START/STOP, clock stretching (the
BNO055's) and the multiplexer channel writes (which add addresses, not bandwidth). Buses run in
parallel with each other, so a frame needs max over buses, and each bus alone must fit the
frame period.
"""

from device.hal import split_url
from device.hal.i2c_sim import SimI2C, parse_hz

FRAMES = 3
# the fastest SCL each part runs at (all fast mode, 400 kHz: BNO055 datasheet 4.6, MPU-6000/
# MPU-6050 and MPU-9250 product specifications, TCA9548A datasheet): a bus runs at its slowest
MAX_HZ = {"bno055": 400000, "mpu6050": 400000, "mpu9250": 400000, "tca9548a": 400000}


def _chip(spec):
    from device.capture.subject import Subject
    state = {"gyro_rad_s": (0.01, -0.02, 0.03), "accel_m_s2": (0.1, -0.2, 9.8),
             "mag_ut": (20.0, 1.0, -40.0), "quat_wxyz": (1.0, 0.0, 0.0, 0.0), "temp_c": 25.0}
    return Subject._new_chip({"chip": spec["chip"], "state": state})


def bus_budget(cfg, specs):
    """One dict per configured bus: bus, hz, s (bus time of one frame), chips {chip: count},
    bytes (data bytes moved a frame), mux_writes, stretch_s."""
    from device.capture.unit import _driver
    from device.hal.tca9548a import SimTCA9548A
    rate = float(cfg["rate_hz"])
    out = []
    for name, url in cfg["buses"].items():
        hz = parse_hz(split_url(str(url))[1])[1]
        bus = SimI2C(name=name, freq_hz=hz)
        mine = [s for s in specs if s["bus"] == name]
        drivers, chips, fifo = [], {}, []
        muxes = {}
        for s in mine:
            chip = _chip(s)
            mux = s.get("mux")
            if mux:
                m = bus.devices.get(mux["addr"]) or bus.attach(mux["addr"], SimTCA9548A())
                m.attach(mux["channel"], s["addr"], chip)
            else:
                bus.attach(s["addr"], chip)
            drv = _driver(s, bus, muxes)
            drv.init()
            drivers.append(drv)
            chips[s["chip"]] = chips.get(s["chip"], 0) + 1
            if hasattr(chip, "push_samples"):
                fifo.append((chip, s.get("fifo_rate_hz", 250)))
        log = []
        for k in range(FRAMES):
            for chip, hz_fifo in fifo:
                n = int(round(chip.sample_rate_hz() / rate)) if chip.fifo_enabled else 0
                chip.push_samples([((0.01, 0.0, 0.0), (0.0, 0.0, 9.8))] * n)
            before = (bus.busy_s, bus.stretch_s)
            if k == FRAMES - 1:
                bus.log = log
            for drv in drivers:
                drv.read()
        busy = bus.busy_s - before[0]
        out.append({"bus": name, "hz": hz, "s": busy, "chips": chips,
                    "bytes": sum(len(e[3]) for e in log if e[0] == "r"),
                    "mux_writes": sum(1 for e in log if e[2] is None),
                    "stretch_s": bus.stretch_s - before[1], "sensors": len(mine)})
    return out


def describe(b, period_s=None):
    """One line: "bus i2c-1: 5 BNO055 x 20 B + 3 mux writes at 400 kHz = 21.5 ms [> 33.3 ms frame]"."""
    n = max(1, b["sensors"])
    chips = " + ".join("%d %s" % (c, k.upper()) for k, c in sorted(b["chips"].items())) or "no sensors"
    s = "bus %s: %s x %d B" % (b["bus"], chips, int(round(b["bytes"] / float(n))))
    if b["mux_writes"]:
        s += " + %d mux writes" % b["mux_writes"]
    s += " at %g kHz = %.1f ms" % (b["hz"] / 1000.0, b["s"] * 1000.0)
    if period_s is not None:
        s += " %s %.1f ms frame" % (">" if b["s"] > period_s else "<=", period_s * 1000.0)
    return s


def check_bus_budget(cfg, specs, where="unit config"):
    """bus_budget(), or ValueError (one line) naming the first bus whose reads exceed the period."""
    period = 1.0 / float(cfg["rate_hz"])
    budget = bus_budget(cfg, specs)
    for b in budget:
        parts = list(b["chips"]) + (["tca9548a"] if b["mux_writes"] else [])
        for part in parts:
            top = MAX_HZ.get(part)
            if top is not None and b["hz"] > top:
                raise ValueError("%s: bus %s at %g kHz is faster than its %s runs (%g kHz): "
                                 "set hz=%d" % (where, b["bus"], b["hz"] / 1000.0, part.upper(),
                                                top / 1000.0, top))
        if b["s"] > period:
            raise ValueError("%s: %s at %g Hz (spread the sensors over more buses, or raise "
                             "the bus clock)" % (where, describe(b, period), float(cfg["rate_hz"])))
    return budget
