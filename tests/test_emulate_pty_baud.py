"""The servo emulators' pseudo-terminal paced at the bus's baud rate (PtyServer(baud=)): a
request and its reply take their wire time on a half-duplex line, on the server's clock."""

import select

import pytest

from device.servo.drivers import open_driver
from device.servo.emulate import make_emulator
from device.servo.emulate.pty import BITS_PER_BYTE, PtyServer


class FakeClock:
    """Virtual time: only the server's sleeps move it (no wall clock in the test)."""

    def __init__(self):
        self.t = 1000.0
        self.slept = []

    def __call__(self):
        return self.t

    def sleep(self, d):
        self.slept.append(d)
        self.t += d


def _count_wire(emu_name, baud, delay_s=0.0):
    clock = FakeClock()
    emu = make_emulator(emu_name)
    srv = PtyServer(emu, baud=baud, reply_delay_s=delay_s, clock=clock, sleep=clock.sleep).start()
    drv = open_driver(emu_name, srv.path)
    try:
        got = drv.read_position(1)                 # the only bytes on the line
        return got, clock, srv.bytes_in, emu
    finally:
        drv.close()
        srv.stop()


def test_a_read_waits_for_its_request_and_reply_on_the_wire():
    # Dynamixel protocol 2.0 READ of Present Position (4 bytes): 14 bytes out, 15 back
    got, clock, n_in, emu = _count_wire("dynamixel", 57600, delay_s=0.0005)
    assert got is not None and n_in == 14
    reply = 11 + 4
    want = (n_in + reply) * BITS_PER_BYTE / 57600 + 0.0005
    assert sum(clock.slept) == pytest.approx(want, rel=1e-9)


def test_unpaced_without_a_baud():
    emu = make_emulator("dynamixel")
    slept = []
    srv = PtyServer(emu, sleep=slept.append).start()
    drv = open_driver("dynamixel", srv.path)
    try:
        assert drv.read_position(1) is not None
    finally:
        drv.close()
        srv.stop()
    assert slept == []
