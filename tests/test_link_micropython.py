"""The link and the driver byte builders give the same bytes under MicroPython as under CPython."""

import random

from protocol import packets as pk


def test_packets_and_drivers_on_micropython(mpy):
    rng = random.Random(5)
    codes = [rng.randrange(256) for _ in range(48)]
    code = """
from protocol import packets as pk, crc, cobs
from device.servo import dynamixel as dx, feetech as ft, maestro as ma, lx16a as lx, ssc32
print(pk.SCHEMA, crc.crc32_slow(b"123456789"), crc.crc16_buypass(b"123456789"))
e = pk.Encoder(clock_us=lambda: 123456)
w = e.hello() + e.frame(%r) + e.frame([1, None, 3], 16)
print(w.hex())
d = pk.Decoder()
ps = d.feed(b"junk\\x00" + w[:7] + b"\\x00" + w)
print([p.name for p in ps], ps[2].frame(), d.drops["short"] + d.drops["cobs"] + d.drops["crc"])
print(dx.sync_write(116, 4, [(2, 5), (1, 0x00FDFFFF)]).hex(), ft.sync_write(42, 2, {1: ft.word(-100)}).hex())
print(ma.set_multiple_targets(0, [4000, 6000], crc=True).hex(), lx.group_move({1: 500}, 0).hex())
print(ssc32.group_move([(0, 1500), (1, 1600)], 1000))
""" % (codes,)
    out = mpy.run(code).strip().splitlines()
    from protocol import crc
    from device.servo import dynamixel as dx, feetech as ft, maestro as ma, lx16a as lx, ssc32
    e = pk.Encoder(clock_us=lambda: 123456)
    w = e.hello() + e.frame(codes) + e.frame([1, None, 3], 16)
    assert out[0] == "%d %d %d" % (pk.SCHEMA, 0xCBF43926, 0xFEE8)
    assert out[1] == w.hex()
    assert out[2] == "['HELLO', 'FRAME8', 'FRAME16M'] (16, [1, None, 3]) 2"
    assert out[3] == "%s %s" % (dx.sync_write(116, 4, [(2, 5), (1, 0x00FDFFFF)]).hex(),
                                ft.sync_write(42, 2, {1: ft.word(-100)}).hex())
    assert out[4] == "%s %s" % (ma.set_multiple_targets(0, [4000, 6000], crc=True).hex(),
                                lx.group_move({1: 500}, 0).hex())
    assert out[5] == str(ssc32.group_move([(0, 1500), (1, 1600)], 1000))
