"""Emulator of our own receiver: it runs the receiver firmware itself (device/firmware/receiver.py)
on a CPython stand-in for the board (device/servo/emulate/board.py), so it behaves exactly as
the Pico does: row mapping, limits, velocity limits in wall time, failsafe, torque off.

    emu = NativeEmulator(); reply = emu.feed(wire_bytes); emu.positions[0] -> microseconds
    emu.receiver.counters()          # the firmware's own counters
    emu.pulses_ns()                  # every PWM's duty (0 = released)
    emu.frame_log                    # with log_frames=True: (seq, time_us, codes) of frames used

Without a receiver config it makes one servo per row (pin i drives row i, 48 pins: an RP2350B has 48 GPIOs), with a
calibration that makes the pulse the row's value in microseconds (Native sends rows in us)
and limits 100..5000 us. positions/timeline record each frame's commanded pulse per servo
(the firmware's target after its clamp, None while released), by the row's name as servo id.
"""

from device.firmware.config import check as config_check
from device.firmware.receiver import Receiver
from device.servo.emulate.base import Emulator
from device.servo.emulate.board import Board

NROWS_MAX = 64
TICKS_MAX = 0x3FFFFFFF          # MicroPython's ticks_ms period is 2^30 ms


def default_config(n=48, timeout_ms=500, action="hold", max_vel_dps=100000.0):
    """A receiver config whose servo i is row i with pulse_us = the row's value (us)."""
    return {"format": "motionstaff-receiver", "version": 1,
            "uart": {"id": 0, "baud": 115200, "tx": 0, "rx": 1},
            "failsafe": {"timeout_ms": timeout_ms, "action": action}, "heartbeat_ms": 0,
            "servos": [{"name": "s%d" % i, "pin": i, "row": i, "scale": 1.0,
                        "offset_deg": -1500.0, "neutral_us": 1500.0, "direction": 1,
                        "us_per_deg": 1.0, "min_us": 100.0, "max_us": 5000.0, "home_deg": 1500.0,
                        "max_vel_dps": max_vel_dps} for i in range(n)]}


class _Observed(Receiver):
    # the firmware's Receiver, told to report each frame it used (no change to what it does)
    on_frame = None

    def _frame(self, now_ms):
        before = (self.no_map, self.wrong_rows)
        Receiver._frame(self, now_ms)
        if self.on_frame is not None and before == (self.no_map, self.wrong_rows):
            self.on_frame()


class NativeEmulator(Emulator):
    NAME = "native"
    UNITS = "us"

    def __init__(self, clock=None, config=None, rxbuf=1024, log_frames=False):
        Emulator.__init__(self, clock, deg_per_unit=0.1, centre=1500)
        self.board = Board(rxbuf)
        self.config = config_check(config or default_config())
        self.receiver = _Observed(self.config, self.board, uart=self.board.UART(0), nrows_max=NROWS_MAX)
        self.receiver.on_frame = self._on_frame
        self.frames = 0
        self.state = None
        self.log_frames = log_frames
        self.frame_log = []         # (seq, time_us, codes) of every frame used, with log_frames

    @property
    def decoder(self):
        return self.receiver.reader

    @property
    def header(self):
        r = self.receiver
        return None if r.rows is None else {"rows": r.rows, "bits": r.hbits, "id": r.header_id}

    def now_ms(self):
        # as the Pico: its ticks_ms is the microsecond timer // 1000, modulo 2^30 (MicroPython's
        # ticks period: it wraps after 12.4 days; the firmware takes differences by ticks_diff).
        # The clock's seconds, a difference of binary fractions, to the nearest us first (t =
        # k / 1000 s gives k even with t0 a monotonic clock's years of uptime), then floor
        # division (a time before t0 floors too: int() rounded -1.5 ms to -1)
        return (int(round((self.clock() - self.t0) * 1e6)) // 1000) & TICKS_MAX

    def _on_frame(self):
        r = self.receiver
        bank = r.bank
        rows = r.rows or []
        self.frames += 1
        if self.log_frames:
            rd = r.reader
            self.frame_log.append((rd.seq, rd.time_us, [None if rd.missing[i] else rd.codes[i]
                                                        for i in range(rd.nrows)]))
        for i in range(bank.n):
            ri = bank.row[i]
            if ri < 0 or ri >= len(rows):
                continue
            if not bank.active:
                units = None
            elif r.reader.missing[ri]:
                continue
            else:
                units = int(round(bank.target_ns[i] / 1000.0))
            name = rows[ri]["name"]
            self.record(int(name) if name.isdigit() else name, units)

    def _feed(self, data):
        uart = self.board.uart
        r = self.receiver
        now = self.now_ms()
        view = memoryview(bytes(data))
        # the UART ring holds rxbuf bytes: the firmware drains it every poll
        step = max(1, self.board.rxbuf // 2)
        for i in range(0, len(view), step):
            uart.inject(view[i:i + step])
            r.poll(now)
        if not len(view):
            r.poll(now)
        self.state = r.state
        c = r.counters()
        self.errors = c["dropped"] + c["bad_headers"] + c["wrong_rows"] + c["no_map"] + c["errors"]
        return uart.take_tx()

    def poll(self):
        """One pass of the firmware's loop now (its failsafe timeout, its ramp)."""
        with self.lock:
            self.receiver.poll(self.now_ms())
            self.state = self.receiver.state
        return self.board.uart.take_tx()

    def pulses_ns(self):
        return [p.duty_ns() for p in self.board.pwms]

    def to_deg(self, servo, units):
        return float("nan") if units is None else (units - self.centre) * self.deg_per_unit
