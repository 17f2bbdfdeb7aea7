"""Fresh-eyes review of the OP3's bus IMU read (device/servo/opencr.py): the bus's bad bytes
(a stray byte, a reply's late tail, a corrupted length, another id's reply), a port without
reset_input_buffer (a MicroPython UART), a port error, and a board that goes silent with every > 1.
Each break found is a test here."""

import math

from hypothesis import given, settings, strategies as st

from device.servo import dynamixel as dx
from device.servo import opencr

from tests.test_opencr_imu import _Port


class _Uart:
    """A MicroPython UART: no reset_input_buffer; any() (the bytes waiting) with has_any."""

    def __init__(self, replies, has_any=False):
        self.p = _Port(replies)
        self.write, self.read = self.p.write, self.p.read
        if has_any:
            self.any = lambda: len(self.p.rx)


def _reply(pitch_rad=0.0, sid=200):
    up = (math.sin(pitch_rad), 0.0, math.cos(pitch_rad))
    return dx.status(sid, 0, opencr.encode(up, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)))


def _imu(port, **kw):
    return opencr.OpenCRImu(dx.Dynamixel(port), **kw)


def test_with_every_n_a_failed_read_does_not_hand_on_the_last_good_sample():
    # every=3, one good read then a silent board: the calls between reads gave the first
    # frame's tilt on (calls 4, 5, 7, 8), and the probe every PROBE_EVERY-th call fell between
    # reads (100, 200: not multiples of 3) and handed the first frame's tilt on as new, the
    # board itself asked only at call 300
    imu = _imu(_Port([_reply()]), every=3)
    got = [imu.read() for _ in range(2 * opencr.PROBE_EVERY + 1)]
    assert [k for k, s in enumerate(got) if s is not None] == [0, 1, 2]
    # the bus was asked at calls 0 (good), 3, 6, 9 (quiet 3), then the probes at 100 and 200
    assert imu.stats["reads"] == 1 + opencr.QUIET_LIMIT + 2
    assert imu.stats["timeouts"] == opencr.QUIET_LIMIT + 2


def test_a_board_that_comes_back_is_read_at_the_next_probe_whatever_every_is():
    good = [_reply()] + [b""] * 3 + [_reply(0.1)] * 5
    imu = _imu(_Port(good), every=3)
    got = [imu.read() for _ in range(opencr.PROBE_EVERY + 3)]
    assert got[opencr.PROBE_EVERY] is not None and got[opencr.PROBE_EVERY][0][0] > 0.09
    assert imu.quiet == 0


class _ClosedPort(_Port):
    def reset_input_buffer(self):
        # pyserial's PortNotOpenError (a SerialException: an OSError); an unplugged tty's
        # tcflush raises termios.error, which is not one
        raise OSError("Attempting to use a port that is not open")


def test_a_port_error_in_the_input_flush_is_none_and_counted_not_a_traceback():
    imu = _imu(_ClosedPort([_reply()]))
    assert imu.read() is None
    assert imu.stats["errors"] == 1


def test_an_unplugged_ttys_termios_error_in_the_flush_is_none_and_counted():
    import termios

    class _Gone(_Port):
        def reset_input_buffer(self):
            raise termios.error(5, "Input/output error")

    imu = _imu(_Gone([_reply()]))
    assert imu.read() is None
    assert imu.stats["errors"] == 1


def test_a_corrupted_length_does_not_wait_the_port_timeout_for_bytes_that_never_come():
    # one flipped bit in the length's low byte (20 -> 148): the read waited for 148 bytes, two
    # port timeouts (0.2 s on the robot's port) inside a 33 ms frame
    bad = bytearray(_reply())
    bad[5] ^= 0x80
    imu = _imu(_Port([bytes(bad)]))
    assert imu.sample() is None and imu.stats["bad"] == 1
    assert imu.driver.stats["timeouts"] == 0


def test_the_most_stuffed_reply_still_fits_the_length_bound():
    # params FF FF FD x 5 + FF: five stuffed FD, the longest reply the board can send
    regs = b"\xff\xff\xfd" * 5 + b"\xff"
    reply = dx.status(200, 0, regs)
    assert len(reply) == opencr.REPLY_BYTES + 5 and reply[5] == dx.status_len_max(opencr.BLOCK)
    imu = _imu(_Port([reply]))
    assert imu.sample() is not None and imu.stats["ok"] == 1


def test_a_stray_byte_before_the_reply_is_skipped_as_the_vendor_sdk_skips_it():
    # a byte on the line as the bus turns round (U2D2's direction switch): the SDK's rxPacket
    # hunts for the header; the read took the stray byte as the header's first and failed
    for junk in (b"\x00", b"\xff", b"\xff\xff", b"\xff\xff\xfd", b"\x55" * 9):
        imu = _imu(_Port([junk + _reply(0.2)]))
        s = imu.sample()
        assert s is not None and abs(s[0][0] - math.sin(0.2)) < 2e-3, junk
        assert imu.stats["ok"] == 1


def test_a_line_of_noise_is_bad_after_a_bounded_hunt_not_read_forever():
    imu = _imu(_Port([b"\x13" * 5000]))
    assert imu.sample() is None and imu.stats["bad"] == 1
    assert len(imu.driver.port.rx) > 4000      # it gave up after a reply's worth or so


def test_a_port_without_reset_recovers_from_a_late_tail():
    # a MicroPython UART has no reset_input_buffer: a reply cut short, its tail arriving with
    # the next reply, misaligned every read after it (7 bytes read of each 27, the backlog
    # growing 20 bytes a frame, never one good read again)
    r = _reply()
    port = _Uart([r[:-3], r[-3:] + r] + [r] * 10)
    imu = _imu(port)
    got = [imu.sample() is not None for _ in range(8)]
    assert got == [False] + [True] * 7
    assert port.p.rx == b""


def test_a_uart_without_reset_drops_a_late_reply_before_asking_again():
    # the board answered after the port's timeout: its reply waits in the UART; read next,
    # it is the last frame's tilt (and every read after is a frame late); any() drains it
    port = _Uart([b"", _reply(0.3), _reply(0.1)], has_any=True)
    imu = _imu(port)
    assert imu.sample() is None                  # the timeout (the reply is not there yet)
    port.p.rx += port.p.replies.pop(0)               # ...then comes, late
    s = imu.sample()
    assert s is not None and abs(s[0][0] - math.sin(0.1)) < 2e-3


def test_another_ids_reply_before_ours_is_passed_over_as_the_vendor_sdk_does():
    # a servo's late status on the shared bus ahead of the board's: the SDK's txRxPacket reads
    # on until the id it asked answers; the read took the servo's and failed
    other = dx.status(7, 0, b"\x01\x02\x03\x04")
    imu = _imu(_Port([other + _reply(0.2)]))
    s = imu.sample()
    assert s is not None and abs(s[0][0] - math.sin(0.2)) < 2e-3
    # only another id's: bad, not a timeout
    imu = _imu(_Port([other]))
    assert imu.sample() is None and imu.stats["bad"] == 1 and imu.stats["timeouts"] == 0


class _Chunky(_Port):
    """A port whose reads return at most `chunks` bytes each (a reply split across reads)."""

    def __init__(self, replies, chunks):
        _Port.__init__(self, replies)
        self.chunks = list(chunks)

    def read(self, n=1):
        k = self.chunks.pop(0) if self.chunks else n
        return _Port.read(self, max(1, min(n, k)))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=(16 + opencr.BLOCK) - 3).filter(lambda j: dx.HEADER not in j),
       st.lists(st.integers(1, 9), max_size=20), st.floats(-1.0, 1.0))
def test_any_junk_before_a_reply_split_anyhow_reads_the_reply(junk, chunks, pitch):
    imu = _imu(_Chunky([junk + _reply(pitch)], chunks))
    s = imu.sample()
    assert s is not None and abs(s[0][0] - math.sin(pitch)) < 2e-3
    assert imu.driver.port.rx == b""


def test_a_board_that_answers_only_a_fragment_backs_off_like_a_silent_one():
    # a board at another baud (its 27 bytes at 1 Mbaud are 2 garbled bytes at 57600) or a
    # dying line: each read waited the port's timeout (0.1 s) for the rest, every frame, and
    # was never backed off (only a read with no byte at all counted as quiet)
    port = _Port([b"\x7f\x13"] * 1000)
    imu = _imu(port)
    got = [imu.read() for _ in range(opencr.PROBE_EVERY)]
    assert got == [None] * opencr.PROBE_EVERY
    assert imu.stats["reads"] == opencr.QUIET_LIMIT and imu.stats["bad"] == opencr.QUIET_LIMIT
    assert imu.driver.stats["timeouts"] == opencr.QUIET_LIMIT       # one port timeout per read asked
    # a whole reply (even a bad one: no timeout waited) ends the quiet
    port.replies = [_reply()] * 5
    assert imu.read() is not None and imu.quiet == 0                 # call 101: the probe


def test_the_servos_present_position_read_shares_the_status_reader():
    """The header hunt, the length bound and passing over other ids live in the Dynamixel
    driver (read_status), not in the IMU's reader alone: a stray byte before a servo's
    Present Position reply and another servo's late status ahead of it no longer lose the read
    (read_exact(15) then parse took neither), and a UART without reset_input_buffer is flushed."""
    import struct
    pos = dx.status(3, 0, struct.pack("<i", 2100))
    drv = dx.Dynamixel(_Port([b"\x00" + dx.status(7, 0, struct.pack("<i", 5)) + pos]))
    assert drv.read_position(3) == 2100
    uart = _Uart([pos], has_any=True)
    uart.p.rx = b"\xff\x07"                                   # a late tail left waiting
    assert dx.Dynamixel(uart).read_position(3) == 2100
