"""The Feetech driver waits for a reply as Feetech's scservo_sdk does: one packet timeout from
the request (tx time + 2 x the 16 ms USB latency timer + 2 ms), the header hunted for."""

import pytest

from device.servo import feetech as ft
from device.servo.base import packet_timeout_s


class _ClockPort:
    """A port on a virtual clock: read() returns what has arrived, else waits out its timeout."""

    def __init__(self, replies, baudrate=1000000):
        self.t = 0.0
        self.timeout = 0.1
        self.baudrate = baudrate
        self.replies = list(replies)        # bytes handed back after each request
        self.rx = b""
        self.written = []

    def clock(self):
        return self.t

    def reset_input_buffer(self):
        self.rx = b""

    def write(self, data):
        self.written.append(bytes(data))
        if self.replies:
            self.rx += self.replies.pop(0)
        return len(data)

    def read(self, n):
        if not self.rx:
            self.t += self.timeout
            return b""
        got, self.rx = self.rx[:n], self.rx[n:]
        return got


def _driver(replies):
    port = _ClockPort(replies)
    drv = ft.Feetech(port, series="sts")
    drv.clock = port.clock
    return drv, port


def test_a_silent_servo_costs_the_sdks_packet_timeout_not_the_ports():
    drv, port = _driver([b""])
    assert drv.read_position(3) is None
    assert port.t == pytest.approx(packet_timeout_s(8, 1e6))      # 34.08 ms, not 0.1 s
    assert packet_timeout_s(8, 1e6) == pytest.approx(0.00008 + 0.032 + 0.002)
    assert port.timeout == 0.1                                      # put back


def test_the_header_is_hunted_for_past_stray_bytes():
    reply = ft.status(3, 0, ft.word(2100, "sts"))
    drv, port = _driver([b"\x00\xff" + reply])
    assert drv.read_position(3) == 2100
    drv, port = _driver([b"\x17" * 9 + reply])                      # more than a reply's worth
    assert drv.read_position(3) is None and drv.stats["errors"] == 1


def test_another_ids_reply_is_an_error_not_a_position():
    drv, _ = _driver([ft.status(4, 0, ft.word(100, "sts"))])
    assert drv.read_position(3) is None and drv.stats["errors"] == 1
