"""The live link through the serial twin: paced at the baud rate, 4 KiB driver buffer, faults.

The product's streamer (device/servo/linkstream.py via PacketOutput) writes a real pty opened
by pyserial; the twin carries bytes at 115200 baud of a fake clock to the firmware receiver
(run on CPython by the native emulator). No sleeps: every clock is the test's.
"""

import random
import select

import serial

from device.capture.outputs import PacketOutput
from device.servo.emulate.native import NativeEmulator, default_config
from device.servo.emulate.serialtwin import LineFaults, SerialTwin
from device.servo.paced import PacedSender
from protocol import packets as pk, staffheader

RATE = 30.0


def _header(n=24, bits=8):
    return staffheader.make([{"name": "j%d" % i, "unit": "deg", "lo": 500.0, "hi": 2500.0}
                             for i in range(n)], fps=RATE, bits=bits)


class _Rig:
    """Unit (PacketOutput on a pyserial port) -> twin -> firmware receiver, on one fake clock."""

    def __init__(self, faults=None, n=24, baud=115200, buffer_bytes=4096):
        self.t = [0.0]
        clock = lambda: self.t[0]
        self.twin = SerialTwin(baud=baud, buffer_bytes=buffer_bytes, clock=clock, faults=faults)
        self.port = serial.serial_for_url(self.twin.path, baudrate=baud, timeout=0, write_timeout=0)
        self.out = PacketOutput(self.port, _header(n), bits=8, baud=baud, clock=clock,
                                buffer_bytes=buffer_bytes, record=True)
        self.emu = NativeEmulator(clock=clock, config=default_config(48, timeout_ms=500),
                                  log_frames=True)
        self.rng = random.Random(5)
        self.n = n

    def step(self, k, codes=None, sub=4):
        codes = codes or [self.rng.randrange(256) for _ in range(self.n)]
        self.out(k, self.t[0], None, codes)
        # the line and the receiver run between frames (sub-steps of the frame period)
        for _ in range(sub):
            self.t[0] += 1.0 / RATE / sub
            self.twin.send_back(self.emu.feed(self.twin.pump()))
        return codes

    def close(self):
        self.port.close()
        self.twin.close()


def test_paced_link_delivers_every_frame_and_never_overruns_the_buffer():
    rig = _Rig()
    for k in range(90):
        rig.step(k)
    r = rig.emu.receiver.counters()
    c = rig.out.counts()
    assert rig.twin.counts["overrun_bytes"] == 0
    assert rig.twin.counts["max_fill"] <= 4096
    assert c["frames_skipped"] == 0 and r["frames"] == 90 and r["dropped"] == 0
    assert r["headers"] >= 3 and r["wrong_rows"] == 0          # repeated every second
    rig.close()


def test_a_line_too_slow_for_the_frames_skips_whole_frames_only():
    # 9600 baud carries 960 B/s: 30 frames/s of 48 rows (~60 B) do not fit; frames are skipped
    rig = _Rig(n=48, baud=9600)
    for k in range(120):
        rig.step(k)
    c = rig.out.counts()
    r = rig.emu.receiver.counters()
    assert c["frames_skipped"] > 0 and c["frames_sent"] > 0
    assert rig.twin.counts["overrun_bytes"] == 0
    # every byte that crossed the line is a whole packet: no drops at the receiver at all
    assert r["dropped"] == 0
    in_flight = rig.twin.fill() // 50 + 2                       # still in the driver's buffer
    assert r["frames"] >= c["frames_sent"] - in_flight
    rig.close()


def test_a_saturated_line_still_repeats_the_header_every_second():
    t = [0.0]
    twin = SerialTwin(clock=lambda: t[0])
    port = serial.serial_for_url(twin.path, baudrate=115200, timeout=0, write_timeout=0)
    out = PacketOutput(port, _header(48), clock=lambda: t[0])
    for k in range(1500):                      # 300 frames/s asked, 190 fit
        out(k, t[0], None, [k % 256] * 48)
        t[0] += 1.0 / 300
        twin.pump()
    c = out.counts()
    assert c["header_repeats"] >= 5 and c["sent_header"] >= 5 * len(out.link._tails)
    assert c["frames_skipped"] > 0 and twin.counts["overrun_bytes"] == 0
    port.close()
    twin.close()


def test_the_old_unpaced_write_overruns_the_real_buffer():
    # an oracle for the twin: writing a burst beyond 4 KiB at once is what the issue saw fail
    t = [0.0]
    twin = SerialTwin(baud=115200, buffer_bytes=4096, clock=lambda: t[0])
    port = serial.serial_for_url(twin.path, baudrate=115200, timeout=0, write_timeout=0)
    n = port.write(b"\x55" * 12000)              # the kernel's pty takes most of it at once
    while twin.counts["written"] < n and select.select([twin.master], [], [], 5.0)[0]:
        twin.pump()                               # (the kernel hands the bytes over in chunks)
    assert twin.counts["written"] == n > 8000
    assert twin.counts["overrun_bytes"] == twin.counts["written"] - 4096
    t[0] = 0.1                                    # 0.1 s at 11520 B/s: 1152 bytes cross
    assert len(twin.pump()) == 1152
    port.close()
    twin.close()


class _ShortPort:
    """A driver that takes at most `take` bytes per write (a full USB FIFO)."""

    def __init__(self, take):
        self.take = take
        self.data = bytearray()

    def write(self, b):
        n = min(self.take, len(b))
        self.data += bytes(b[:n])
        return n


def test_a_short_write_is_completed_before_anything_else():
    t = [0.0]
    port = _ShortPort(7)
    ps = PacedSender(port, baud=115200, clock=lambda: t[0])
    enc = pk.Encoder(clock_us=lambda: 0)
    pkts = [enc.frame([k] * 20) for k in range(30)]
    sent = []
    for p in pkts:
        if ps.send(p):
            sent.append(p)
        t[0] += 0.001
    while ps.busy():
        pass
    assert ps.counts["short_writes"] > 0 and ps.counts.get("skipped_frame", 0) > 0
    assert bytes(port.data) == b"".join(sent)          # whole packets, in order, never cut
    got = pk.Decoder().feed(bytes(port.data))
    assert len(got) == len(sent)


def test_damage_and_unplug_deliver_no_corrupted_frame_and_recover_the_header():
    faults = LineFaults(rate=0.005, seed=3, unplug=[(2.0, 3.0)], start_s=0.0)
    rig = _Rig(faults=faults)
    sent_after = []
    for k in range(180):
        codes = rig.step(k)
        if k > 120:
            sent_after.append(codes)
    r = rig.emu.receiver.counters()
    assert r["frames"] > 100 and r["dropped"] > 0
    sent = rig.out.link.sent
    # every frame the firmware used is a frame the unit sent, under its (seq, time_us)
    log = rig.emu.frame_log
    assert len(log) > 100 and all(sent.get((s, t)) == codes for s, t, codes in log)
    assert r["failsafes"] >= 1                      # the unplug outlasted the 500 ms timeout
    assert rig.emu.receiver.state == pk.STATE_STREAMING
    # after the unplug every frame sent was used, but those the damage hit: a 38-byte frame
    # meets a damaged byte with p = 1 - 0.995^38 = 17%
    after = [key for key in sent if key[1] > 3.2e6]
    used = set((s, t) for s, t, _ in log)
    assert sum(1 for key in after if key in used) >= 0.7 * len(after)
    rig.close()


def test_receiver_reset_gets_the_header_back_within_a_second():
    rig = _Rig()
    for k in range(40):
        rig.step(k)
    rig.emu = NativeEmulator(clock=lambda: rig.t[0], config=default_config(48))   # browned out
    t_reset = rig.t[0]
    k = 40
    while rig.emu.receiver.header_id == 0 and k < 200:
        rig.step(k)
        k += 1
    assert rig.emu.receiver.header_id == rig.out.link.header_id
    assert rig.t[0] - t_reset < 0.5                 # asked for it (REQUEST), not the 1 s repeat
    assert rig.out.counts()["header_requests"] >= 1
    rig.close()


def test_wire_fifo_carries_whole_bytes_in_their_time_and_an_idle_line_stores_none():
    from device.servo.emulate.serialtwin import WireFifo
    w = WireFifo(11520.0)                       # 115200 baud, 8N1
    assert w.carry(1.0) == b""                  # idle: no credit kept
    w.fifo += bytes(range(100))
    assert w.carry(0.005) == bytes(range(57))   # 57.6 byte times: 57 cross, 0.6 kept
    assert w.carry(0.0035) == bytes(range(57, 97))   # 0.6 kept + 40.32: 40 cross
    assert w.carry(1.0) == bytes(range(97, 100)) and not w.fifo
    assert w.carry(1.0) == b"" and w.credit == 0.0
