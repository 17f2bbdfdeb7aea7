"""Pololu Maestro emulator: compact + Pololu protocol, optional CRC-7, Get replies, errors,
serial timeout (error bit 5 -> every channel to its home setting).

    emu = MaestroEmulator(channels=24, crc=False, device=12, serial_timeout_s=0.5)
    emu.feed(bytes.fromhex("84 00 70 2E")); emu.positions[0] == 6000
    emu.feed(bytes.fromhex("90 00")) == bytes.fromhex("70 17")

Each channel's Min and Max (the settings Maestro Control Center writes over USB; the serial
protocol cannot change them) bound its target: a target outside them is clamped to them (0
stays "off"). A Maestro as it ships has every channel at 992-2000 us (Pololu Maestro User's
Guide, 3. Getting Started, "Default Settings"); limits_qus={channel: (min, max)} is one whose
user set them, as docs/robots.md tells a KHR-17 owner to (emulate maestro --robot NAME).

    MaestroEmulator(limits_qus=maestro_limits(load_robot("khr17-maestro")))

With a body (base.py): each channel's target pulse (qus; 0 = off), speed (0.25 us per 10 ms)
and acceleration (0.25 us per 10 ms per 80 ms) go to it; the body ramps the pulse as the
Maestro does, and Get Position / Get Moving State answer from that ramped pulse (a hobby
servo has no feedback: that is all a Maestro knows).

A power cut of the servos' supply (base.py: power_off/power_on, schedule_power_cut; the
Maestro itself on USB, answering on): every servo goes limp in the body, and the Maestro, which
cannot tell, keeps its targets (and its serial timeout). The power back, a hobby servo has no
state to restore: it drives at once, at its motor's full speed, to the pulse the Maestro sends
(taken as the channel's target: its speed ramp run out meanwhile, the harder case), whatever
the Maestro's speed and acceleration settings: the jump a PWM robot makes, and nothing the
host can see (no feedback; Get Position is the Maestro's own pulse).
"""

from protocol.crc import crc7_pololu
from device.servo.emulate.base import Emulator

# command -> number of data bytes (0x9F is variable)
_LEN = {0x84: 3, 0x87: 3, 0x89: 3, 0x8A: 4, 0x90: 1, 0x93: 0, 0xA1: 0, 0xA2: 0, 0x9F: None}
ERR_CRC = 1 << 3
ERR_PROTOCOL = 1 << 4
ERR_TIMEOUT = 1 << 5
FACTORY_MIN_QUS, FACTORY_MAX_QUS = 992 * 4, 2000 * 4     # every channel as the Maestro ships


def _first_command_byte(b, start, end):
    for k in range(start, min(end, len(b))):
        if b[k] & 0x80:
            return k
    return None


class MaestroEmulator(Emulator):
    NAME = "maestro"
    UNITS = "qus"
    BOARD_APART = True

    def __init__(self, channels=24, crc=False, device=12, serial_timeout_s=0.0, home=None, clock=None,
                 body=None, limits_qus=None):
        Emulator.__init__(self, clock, deg_per_unit=1.0 / 44.44, centre=6000, body=body)
        self.channels = channels
        # channel -> (Min, Max) in quarter-microseconds; a channel not given: the factory's
        self.limits_qus = dict(limits_qus or {})
        self.clamped = 0                # targets the channel limits cut (a robot not configured)
        self.crc = crc
        self.device = device
        self.serial_timeout_s = serial_timeout_s
        self.home = home or {}          # channel -> target on error (0 = off); missing = ignore
        self.speed = {}
        self.accel = {}
        self.err = 0
        self.buf = b""
        self.last_cmd = self.clock()

    def _feed(self, data):
        self.buf += data
        out = b""
        while self.buf:
            b = self.buf
            i = 0
            device_ok = True
            if b[0] == 0xAA:
                if len(b) < 3:
                    break
                device_ok = b[1] == self.device
                cmd = b[2] | 0x80
                i = 3
            elif b[0] == 0xFF:                              # Mini SSC
                if len(b) < 3:
                    break
                ch = b[1]
                if ch < self.channels:
                    self.record(ch, 4000 + int(b[2] * 4000 / 254))
                self.buf = b[3:]
                continue
            elif b[0] & 0x80:
                cmd = b[0]
                i = 1
            else:
                self.err |= ERR_PROTOCOL                    # data byte with no command
                self.errors += 1
                self.buf = b[1:]
                continue
            n = _LEN.get(cmd, -1)
            if n == -1:
                self.err |= ERR_PROTOCOL
                self.errors += 1
                self.buf = b[i:]
                continue
            # a byte with its MSB set inside the data aborts the packet and starts a new one
            extra = 1 if self.crc else 0
            k = _first_command_byte(b, i, i + (2 if n is None else n + extra))
            if k is None and n is None and len(b) >= i + 2:
                n = 2 + 2 * b[i]
                k = _first_command_byte(b, i, i + n + extra)
            if k is not None:
                self.err |= ERR_PROTOCOL
                self.errors += 1
                self.buf = b[k:]
                continue
            if n is None:
                break
            total = i + n + (1 if self.crc else 0)
            if len(b) < total:
                break
            pkt = b[:total]
            self.buf = b[total:]
            if self.crc and crc7_pololu(pkt[:-1]) != pkt[-1]:
                self.err |= ERR_CRC
                self.errors += 1
                continue
            if not device_ok:
                continue
            self.last_cmd = self.clock()
            out += self._run(cmd, pkt[i:i + n])
        return out

    def record(self, servo, units):
        Emulator.record(self, servo, units)
        self._drive(servo)

    def _lose_power(self):
        """The servos' supply cut: every channel's servo limp (the Maestro still pulses)."""
        if self.body is not None:
            for ch, target in self.positions.items():
                self.body.set_goal(ch, target or 0, 0.0, False)

    def _boot(self):
        """The supply back: each servo at once, unramped, to the pulse the Maestro sends."""
        if self.body is not None:
            for ch, target in self.positions.items():
                if target:
                    self.body.set_goal(ch, target, 0.0, True, 0.0)

    def _drive(self, ch):
        if self.body is None or ch not in self.positions:
            return
        if not self.powered:
            return                      # (the target kept: the servo limp until the power)
        target = self.positions[ch]
        # speed unit 0.25 us / 10 ms = 100 qus/s; acceleration unit 1 qus / 10 ms / 80 ms
        self.body.set_goal(ch, target, self.speed.get(ch, 0) * 100.0, target != 0,
                           self.accel.get(ch, 0) * 1250.0)

    def _target(self, ch, qus):
        """Set Target: within the channel's Min..Max (0: pulses off)."""
        if qus:
            lo, hi = self.limits_qus.get(ch, (FACTORY_MIN_QUS, FACTORY_MAX_QUS))
            if not lo <= qus <= hi:
                self.clamped += 1
                qus = max(lo, min(hi, qus))
        self.record(ch, qus)

    def _run(self, cmd, d):
        v = lambda k: d[k] | (d[k + 1] << 7)
        if cmd == 0x84:
            if d[0] < self.channels:
                self._target(d[0], v(1))
        elif cmd == 0x9F:
            n, first = d[0], d[1]
            for k in range(n):
                if first + k < self.channels:
                    self._target(first + k, v(2 + 2 * k))
        elif cmd == 0x87:
            self.speed[d[0]] = v(1)
            self._drive(d[0])
        elif cmd == 0x89:
            self.accel[d[0]] = v(1)
            self._drive(d[0])
        elif cmd == 0x90:
            p = self.positions.get(d[0], 0)
            r = self.body.read(d[0]) if self.body is not None and p else None
            if r is not None:
                p = int(r[0])
            return bytes((p & 0xFF, p >> 8))
        elif cmd == 0x93:
            if self.body is not None:
                states = [self.body.read(c) for c in self.positions if self.positions[c]]
                return b"\x01" if any(r is not None and r[2] for r in states) else b"\x00"
            return b"\x00"
        elif cmd == 0xA1:
            e = self.err
            self.err = 0
            return bytes((e & 0xFF, e >> 8))
        elif cmd == 0xA2:
            self._go_home()
        return b""

    def _go_home(self):
        for ch, t in self.home.items():
            self.record(ch, t)

    def tick(self):
        """Call now and then: applies the serial timeout (as the firmware's timer does)."""
        with self.lock:
            if self.serial_timeout_s > 0 and not (self.err & ERR_TIMEOUT) \
                    and self.clock() - self.last_cmd > self.serial_timeout_s:
                self.err |= ERR_TIMEOUT
                self.errors += 1
                self._go_home()
                self.changed.notify_all()
