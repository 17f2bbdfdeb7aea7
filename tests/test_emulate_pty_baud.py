"""The servo emulators' pseudo-terminal paced at the bus's baud rate (PtyServer(baud=)): a
request and its reply take their wire time on a half-duplex line, on the server's clock."""

import os
import select
import threading

import pytest

from device.servo.drivers import open_driver
from device.servo.emulate import make_emulator
from device.servo.emulate.pty import BITS_PER_BYTE, PtyServer
from tests.test_capture_loop import FakeTime as FakeClock   # virtual time: only the server's sleeps move it


def _count_wire(emu_name, baud, delay_s=0.0):
    clock = FakeClock()
    emu = make_emulator(emu_name)
    srv = PtyServer(emu, baud=baud, reply_delay_s=delay_s, clock=clock.mono, sleep=clock.sleep).start()
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
    assert sum(clock.sleeps) == pytest.approx(want, rel=1e-9)


def _read_once(srv):
    """One Present Position read through the running server, then stop it."""
    drv = open_driver("dynamixel", srv.path)
    try:
        assert drv.read_position(1) is not None
    finally:
        drv.close()
        srv.stop()


def test_unpaced_without_a_baud():
    emu = make_emulator("dynamixel")
    slept = []
    srv = PtyServer(emu, sleep=slept.append).start()
    _read_once(srv)
    assert slept == []


def test_stop_is_prompt_while_a_long_burst_is_on_the_wire():
    """A 4 KB burst at 9600 baud is 4.3 s on the wire: stop() ends the server's wait (it was a
    plain sleep: stop() gave up after its 2 s join, and the thread lived on to serve the next
    pty that reconnect() opened at the same descriptor)."""
    emu = make_emulator("dynamixel")
    waiting = threading.Event()
    srv = None

    def clock():
        # a still clock: each wait is for the whole burst so far; say so once it passes 2.5 s
        if srv is not None and srv.line_t > 1002.5:
            waiting.set()
        return 1000.0
    srv = PtyServer(emu, baud=9600, clock=clock).start()
    fd = os.open(srv.path, os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, bytes(4096))
        assert waiting.wait(30.0)
        thread = srv._thread
        srv.stop()
        assert not thread.is_alive()
    finally:
        os.close(fd)
        srv.stop()


def test_a_sync_read_waits_for_each_servos_return_delay():
    """A sync read of 3 servos: each answers after its own Return Delay Time, in turn (0.5 ms
    each on an XM430), not one delay for all three (an SDK GroupSyncRead of the OP3's 20 servos
    came back 9.5 ms sooner than the bus gives it)."""
    from device.servo import dynamixel as dx
    clock = FakeClock()
    emu = make_emulator("dynamixel", ids=(1, 2, 3))
    srv = PtyServer(emu, baud=57600, reply_delay_s=0.0005, clock=clock.mono, sleep=clock.sleep).start()
    fd = os.open(srv.path, os.O_RDWR | os.O_NOCTTY)
    try:
        req = dx.sync_read(dx.PRESENT_POSITION, 4, [1, 2, 3])
        os.write(fd, req)
        got = b""
        while len(got) < 3 * 15:
            got += os.read(fd, 64)
    finally:
        os.close(fd)
        srv.stop()
    assert got.count(dx.HEADER) == 3
    want = (len(req) + len(got)) * BITS_PER_BYTE / 57600 + 3 * 0.0005
    assert sum(clock.sleeps) == pytest.approx(want, rel=1e-9)


def test_a_reconnected_line_starts_free():
    """stop() ends a wait with the line still busy (line_t ahead of the clock): the pty that
    reconnect() opens is a new line, its first read waits for its own bytes only (it waited
    for the rest of the old 4 KB burst too, 4.3 s at 9600)."""
    clock = FakeClock()
    emu = make_emulator("dynamixel")
    waits = []
    # the first session's waits are cut short (as stop() cuts them): the clock does not move
    srv = PtyServer(emu, baud=9600, clock=clock.mono, sleep=waits.append).start()
    fd = os.open(srv.path, os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, bytes(4096))
        assert emu.wait_for(lambda e: srv.bytes_in >= 4096, 30.0)
    finally:
        os.close(fd)
        srv.stop()
    assert srv.line_t > clock.mono() + 4.0
    srv.sleep = clock.sleep
    srv.reconnect()
    _read_once(srv)
    assert sum(clock.sleeps) == pytest.approx((14 + 15) * BITS_PER_BYTE / 9600, rel=1e-9)
