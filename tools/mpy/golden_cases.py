"""Golden cases: the same code run on CPython (tools/gen_golden.py) and MicroPython (the tests).

    import golden_cases
    out = golden_cases.run_all()          # {"fxp": {...}, "ekf_q": {...}, ...}; None = module absent

Each case function returns JSON-able data: ints, strings, lists, dicts; bytes as hex strings
and floats as the hex of their IEEE-754 double (struct '<d'), so the comparison is bit for bit.
Randomness comes from an integer LCG, identical everywhere. To add a module: write a
case_<name>() and add it to CASES; a case whose module does not exist yet returns None.
MicroPython-safe (it runs there).
"""

import struct


def _hex(b):
    return "".join("%02x" % x for x in bytes(b))


def _fhex(v):
    if v is None:
        return None
    return _hex(struct.pack("<d", v))


class Lcg:
    """x' = (a x + c) mod 2^31: small, portable, deterministic."""

    def __init__(self, seed):
        self.x = seed & 0x7FFFFFFF

    def next(self):
        self.x = (1103515245 * self.x + 12345) & 0x7FFFFFFF
        return self.x

    def randint(self, lo, hi):
        return lo + self.next() % (hi - lo + 1)


def case_fxp():
    from device.core import fxp

    r = Lcg(1)
    out = {"round_shift": [], "div_round": [], "sin": [], "cos": [], "isqrt": [], "sqrt_q16": []}
    for i in range(60):
        a = r.randint(-(1 << 30), 1 << 30) * r.randint(-(1 << 20), 1 << 20)
        s = r.randint(1, 40)
        out["round_shift"].append([a, s, fxp.round_shift(a, s)])
        b = r.randint(-(1 << 25), 1 << 25) or 7
        out["div_round"].append([a, b, fxp.div_round(a, b)])
    for a, s in ((1, 1), (-1, 1), (3, 1), (-3, 1), (-6, 2), (-7, 2)):
        out["round_shift"].append([a, s, fxp.round_shift(a, s)])
    for i in range(80):
        x = r.randint(-(8 << 30), 8 << 30)
        out["sin"].append([x, fxp.sin_q30(x)])
        out["cos"].append([x, fxp.cos_q30(x)])
    for i in range(40):
        n = r.next() * r.next() * r.next()
        out["isqrt"].append([n, fxp.isqrt(n)])
        out["sqrt_q16"].append([n >> 40, fxp.sqrt_q(n >> 40, 16)])
    return out


def ekf_run(n=6, steps=120, seed=3):
    """A seeded fixed-point EKF run: per-step angles and the final state/covariance checksum."""
    from device.core.ekf_q import EkfQ

    r = Lcg(seed)
    f = EkfQ(n, 1 << 23, m_q32=[(j + 1) << 30 for j in range(n)], c_q20=1 << 17,
             g_q20=[(j % 3) << 20 for j in range(n)])
    trace = []
    for k in range(steps):
        z = []
        for j in range(n):
            if r.randint(0, 19) == 0:
                z.append(None)
            else:
                # a slow ramp per joint plus noise, in Q20 rad
                z.append(((k * (j + 1)) << 12) + r.randint(-(1 << 13), 1 << 13))
        zd = None
        if k % 4 == 0:
            zd = [((j + 1) << 16) for j in range(n)]
        f.step(z, zd, b_q20=[(j - 2) << 14 for j in range(n)])
        if k % 10 == 9:
            trace.append(f.checksum())
    return {"trace": trace, "x_q20": list(f.x_q20), "p_q40": list(f.p_q40),
            "checksum": f.checksum()}


def case_ekf_q():
    return {"small": ekf_run(), "wide": ekf_run(n=48, steps=20, seed=9)}


def case_staffcodec():
    from protocol import staffcodec as sc

    r = Lcg(5)
    out = {"encode": [], "decode": [], "unwrap": []}
    ranges = ((-90.0, 90.0), (0.0, 150.0), (-180.0, 180.0), (-0.05, 0.3))
    for bits in (8, 16):
        for lo, hi in ranges:
            vals = [lo + (hi - lo) * r.randint(-100, 1100) / 1000.0 for _ in range(12)]
            vals.append(None)
            codes = sc.encode_column(vals, [lo] * len(vals), [hi] * len(vals), bits)
            out["encode"].append([bits, _fhex(lo), _fhex(hi), [_fhex(v) for v in vals], codes])
            back = sc.decode_column(codes, [lo] * len(codes), [hi] * len(codes), bits)
            out["decode"].append([bits, [_fhex(v) for v in back]])
    u = sc.Unwrapper([True, False])
    for k in range(40):
        v = -180.0 + (k * 37 % 360)
        out["unwrap"].append([_fhex(x) for x in u.push([v, v])])
    return out


def case_staffheader():
    from protocol import staffheader

    h = staffheader.make(rows=[{"name": "l_knee_flex", "unit": "deg", "lo": -10.0, "hi": 150.0},
                               {"name": "head_ext", "unit": "m", "lo": -0.05, "hi": 0.05, "wrap": False},
                               {"name": "Hips.Zrotation", "unit": "deg", "lo": -180, "hi": 180,
                                "wrap": True}],
                         fps=120.0, bits=16, frames=1096, source="131_03.bvh",
                         captured="2026-11-29T18:00:00Z")
    text = staffheader.dumps(h)
    back = staffheader.loads(text)
    errors = []
    for bad in ('{"format": "x"}', '{"format": "motionstaff", "version": 1, "fps": 0}', "[1]",
                "not json"):
        try:
            staffheader.loads(bad)
            errors.append("accepted")
        except ValueError as e:
            errors.append(str(e))
    # the text itself is not compared: MicroPython's dicts do not keep insertion order, so
    # json.dumps orders the keys differently there (docs/micropython.md); its content is
    import json

    return {"parsed": json.loads(text), "fps": _fhex(back["fps"]), "rows": len(back["rows"]),
            "errors": errors}


def case_cobs():
    try:
        from protocol import cobs
    except ImportError:
        return None
    r = Lcg(7)
    out = []
    for n in (0, 1, 2, 253, 254, 255, 300, 600):
        data = bytes([r.randint(0, 255) if r.randint(0, 3) else 0 for _ in range(n)])
        enc = cobs.encode(data)
        out.append([_hex(data), _hex(enc), _hex(cobs.decode(enc)) if n else ""])
    return out


def case_crc():
    try:
        from protocol import crc
    except ImportError:
        return None
    r = Lcg(11)
    out = []
    for n in (0, 1, 9, 64, 257):
        data = bytes([r.randint(0, 255) for _ in range(n)])
        out.append([_hex(data), crc.crc32(data), crc.crc32_slow(data, 0x12345678),
                    crc.crc16_buypass(data), crc.crc7_pololu(data)])
    return out


def case_packets():
    try:
        from protocol import packets as pk
    except ImportError:
        return None
    enc = pk.Encoder(clock_us=lambda: 0)
    r = Lcg(13)
    wire = [enc.hello(time_us=5)]
    # header as fixed JSON text (a dict would serialise in another key order on MicroPython)
    rows = ",".join('{"name":"r%d","unit":"deg","lo":-90.0,"hi":90.0,"wrap":false}' % i
                    for i in range(18))
    h = ('{"format":"motionstaff","version":1,"fps":30.0,"bits":8,"frames":0,"rows":[%s],'
         '"skeleton":null,"source":"","captured":""}' % rows)
    wire += enc.header(h, time_us=6)
    for k in range(6):
        codes = [r.randint(0, 255) for _ in range(18)]
        if k == 3:
            codes[4] = None
        wire.append(enc.frame(codes, 8, time_us=1000 * k))
        wire.append(enc.frame([r.randint(0, 65535) for _ in range(5)], 16, time_us=77777 * k))
    wire.append(enc.heartbeat(123456, 6, 2, pk.STATE_STREAMING, time_us=99))
    dec = pk.Decoder()
    stream = b"".join(wire)
    # corrupt a copy: a flipped bit in frame 2 and junk between packets
    bad = bytearray(stream)
    bad[len(wire[0]) + len(wire[1]) + 9] ^= 0x10
    got = dec.feed(bytes(bad[:50])) + dec.feed(b"\x01\x02\x03\x00" + bytes(bad[50:]))
    return {"wire": [_hex(w) for w in wire], "schema": pk.SCHEMA,
            "delivered": [[p.name, p.seq, p.time_us, p.frame()[1] if p.is_frame() else sorted(p.fields.items())]
                          for p in got],
            "drops": sorted(dec.drops.items()), "gaps": dec.gaps}


def case_container():
    try:
        from protocol import container as ct
    except ImportError:
        return None
    out = {}
    if hasattr(ct, "encode_frame"):
        out["frames"] = [_hex(ct.encode_frame([1, 2, None, 255], 33, 8)),
                         _hex(ct.encode_frame([1000, 65535, 0], 66, 16))]
    if hasattr(ct, "encode_block"):
        payload = ct.encode_frame([1, 2, 3], 0, 8) + ct.encode_frame([4, 5, 6], 33, 8)
        out["block"] = _hex(ct.encode_block(0, payload, 2))
    return out


def case_servo():
    out = {}
    try:
        from device.servo import maestro
        out["maestro"] = [_hex(maestro.set_target(3, 6000)),
                          _hex(maestro.set_multiple_targets(0, [4000, 6000, 8000])),
                          _hex(maestro.set_target(1, 7000, device=12, crc=True))]
    except ImportError:
        pass
    try:
        from device.servo import ssc32
        out["ssc32"] = [_hex(ssc32.single(5, 1500, speed=100)),
                        _hex(ssc32.group_move([(0, 1000), (31, 2000)], time_ms=500))]
    except ImportError:
        pass
    try:
        from device.servo import lx16a
        out["lx16a"] = [_hex(lx16a.move_time_write(1, 500, 1000)), _hex(lx16a.load(2, True))]
    except ImportError:
        pass
    try:
        from device.servo import dynamixel
        out["dynamixel"] = [_hex(dynamixel.ping(1)), _hex(dynamixel.write(1, 116, 4, 2048)),
                            _hex(dynamixel.sync_write(116, 4, [(1, 1024), (2, 3072)]))]
    except ImportError:
        pass
    try:
        from device.servo import feetech
        out["feetech"] = [_hex(feetech.ping(1)), _hex(feetech.write(1, 42, feetech.word(-100)))]
    except ImportError:
        pass
    try:
        from device.servo import pca9685
        out["pca9685"] = [pca9685.prescale_for(50), _hex(pca9685.led_bytes(0, 307))]
    except ImportError:
        pass
    return out


CASES = (
    ("fxp", case_fxp),
    ("ekf_q", case_ekf_q),
    ("staffcodec", case_staffcodec),
    ("staffheader", case_staffheader),
    ("cobs", case_cobs),
    ("crc", case_crc),
    ("packets", case_packets),
    ("container", case_container),
    ("servo", case_servo),
)


def run_all(names=None):
    """{name: result or None (module absent)} for the chosen cases (all by default)."""
    out = {}
    for name, fn in CASES:
        if names is None or name in names:
            out[name] = fn()
    return out
