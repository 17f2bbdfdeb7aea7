"""Feetech STS/SCS bus emulator: checksum checked, ping/read/write/reg write/action/sync write/
sync read, status replies (not to broadcasts), torque enable, sign-magnitude goal positions.

    emu = FeetechEmulator(ids=(1, 2, 3), series="sts")
    emu.feed(ft.sync_write(42, 2, {1: ft.word(1000)})); emu.positions[1] == 1000

With a body (base.py): Goal Position, Torque Enable, Goal Speed (steps/s, 0 = the servo's
maximum), Acceleration (100 steps/s^2, 0 = none) and the P/D coefficients (21/22) go to it;
Present Position, Speed, Load and Moving are read from it before each read reply.

On STS a Goal Position write turns the torque on (a torque-off servo takes the goal and moves
there, at Goal Speed, 0 = its maximum): as the community's STS3215 notes have it (a Goal
Position write "automatically enables torque"; the vendor's memory table does not say), the
harder of the two readings: a host that streams goals to a servo that rebooted limp snaps it on.

A power cut (base.py: power_off/power_on, schedule_power_cut): while off and for BOOT_S after
the power returns no servo answers or acts, each joint limp from the cut; back, the SRAM area
(40 on) is at its power-up values (assumed: the vendor gives none): Torque Enable 0 (limp),
Acceleration 0, Goal Speed 0 (the maximum), Goal Position the present position; the EEPROM is
kept.
"""

from device.servo import feetech as ft
from device.servo.emulate.base import Emulator


P_COEF = 21
D_COEF = 22
PRESENT_SPEED = 58
PRESENT_LOAD = 60
MOVING = 66
ACC_UNIT = 100.0                    # steps/s^2 per Acceleration unit (STS)
# power back -> answering: assumed, as the Dynamixel's 0.5 s (Feetech gives no figure)
BOOT_S = 0.5
GOAL_TIME = 44


class FeetechEmulator(Emulator):
    NAME = "feetech"
    UNITS = "units"
    BOOT_S = BOOT_S

    def __init__(self, ids=tuple(range(1, 21)), series="sts", clock=None, body=None):
        per = 360.0 / 4096 if series != "scs" else 300.0 / 1024
        Emulator.__init__(self, clock, deg_per_unit=per, centre=2048 if series != "scs" else 512,
                          body=body)
        self.series = series
        self.signed = series != "scs"
        self.tables = {}
        for i in ids:
            t = bytearray(256)
            t[3:5] = ft.word(777, series, False)
            t[5] = i
            t[ft.PRESENT_POSITION:ft.PRESENT_POSITION + 2] = ft.word(self.centre, series, False)
            t[62] = 120
            t[63] = 35
            t[P_COEF] = 32                 # STS3215 defaults
            t[D_COEF] = 32
            self.tables[i] = t
        self.pending = {}
        self.buf = b""

    def _feed(self, data):
        self.buf += data
        out = b""
        while True:
            i = self.buf.find(b"\xff\xff")
            if i < 0:
                self.buf = self.buf[-1:]
                return out
            b = self.buf[i:]
            if len(b) < 6:
                self.buf = b
                return out
            if b[2] == 0xFF:                     # FF FF FF: resync one byte on
                self.buf = b[1:]
                continue
            n = b[3]
            if n < 2:
                self.errors += 1
                self.buf = b[2:]
                continue
            if len(b) < n + 4:
                self.buf = b
                return out
            pkt = b[:n + 4]
            if ft.checksum(pkt[2:-1]) != pkt[-1]:
                self.errors += 1
                self.buf = b[2:]
                continue
            self.buf = b[n + 4:]
            out += self._run(pkt[2], pkt[4], pkt[5:-1])

    def _ids(self, sid):
        return sorted(self.tables) if sid == ft.BROADCAST else ([sid] if sid in self.tables else [])

    def _write(self, sid, addr, data):
        t = self.tables[sid]
        t[addr:addr + len(data)] = data
        end = addr + len(data)
        if self.signed and addr <= ft.GOAL_POSITION and end >= ft.GOAL_POSITION + 2 \
                and not addr <= ft.TORQUE_ENABLE < end:
            t[ft.TORQUE_ENABLE] = 1             # STS: a goal turns the torque on
        if addr <= ft.TORQUE_ENABLE < addr + len(data) and t[ft.TORQUE_ENABLE] == 0:
            self.record(sid, None)
        if addr <= ft.GOAL_POSITION and addr + len(data) >= ft.GOAL_POSITION + 2:
            g = t[ft.GOAL_POSITION:ft.GOAL_POSITION + 2]
            if self.body is None:
                t[ft.PRESENT_POSITION:ft.PRESENT_POSITION + 2] = g
            self.record(sid, ft.unword(bytes(g), self.series, self.signed))
        if self.body is not None and (addr < ft.GOAL_SPEED + 2 and addr + len(data) > ft.TORQUE_ENABLE
                                      or addr <= D_COEF and addr + len(data) > P_COEF):
            self._drive(sid)

    def _drive(self, sid):
        t = self.tables[sid]
        s, sg = self.series, self.signed
        goal = ft.unword(bytes(t[ft.GOAL_POSITION:ft.GOAL_POSITION + 2]), s, sg)
        speed = abs(ft.unword(bytes(t[ft.GOAL_SPEED:ft.GOAL_SPEED + 2]), s, sg))
        acc = t[ft.ACCELERATION] * ACC_UNIT
        self.body.set_goal(sid, goal, float(speed), bool(t[ft.TORQUE_ENABLE]), acc,
                           t[P_COEF], t[D_COEF])

    def _lose_power(self):
        """Every servo unpowered: its joint limp (the motor driver off)."""
        self.pending.clear()
        self._limp_all(ft.TORQUE_ENABLE)

    def _boot(self):
        """The power back: torque off, Acceleration, Goal Time and Goal Speed 0, Goal Position
        at the present position (the joint where it fell)."""
        for s, t in self.tables.items():
            self._sense(s)
            t[ft.TORQUE_ENABLE] = 0
            t[ft.ACCELERATION] = 0
            t[GOAL_TIME:ft.GOAL_SPEED + 2] = bytes(4)
            t[ft.GOAL_POSITION:ft.GOAL_POSITION + 2] = t[ft.PRESENT_POSITION:ft.PRESENT_POSITION + 2]
            if self.body is not None:
                self._drive(s)

    def _sense(self, sid):
        r = self.body_state(sid)
        if r is None:
            return
        t = self.tables[sid]
        pos, load, moving, vel = r
        t[ft.PRESENT_POSITION:ft.PRESENT_POSITION + 2] = ft.word(pos, self.series, self.signed)
        if vel is not None:
            t[PRESENT_SPEED:PRESENT_SPEED + 2] = ft.word(int(round(vel)), self.series, True)
        permille = 0 if load is None else int(round(max(-1.0, min(1.0, load)) * 1000))
        # load: 0.1 % of the maximum, sign in bit 10
        raw = ft.sign_magnitude(permille, 10)
        t[PRESENT_LOAD:PRESENT_LOAD + 2] = ft.word(raw, self.series, False)
        t[MOVING] = 1 if moving else 0

    def _run(self, sid, inst, p):
        out = b""
        if inst == ft.PING:
            if sid in self.tables:
                out += ft.status(sid)
        elif inst == ft.READ and len(p) == 2 and sid in self.tables:
            self._sense(sid)
            out += ft.status(sid, 0, bytes(self.tables[sid][p[0]:p[0] + p[1]]))
        elif inst in (ft.WRITE, ft.REG_WRITE) and len(p) >= 2:
            for s in self._ids(sid):
                if inst == ft.WRITE:
                    self._write(s, p[0], p[1:])
                else:
                    self.pending[s] = (p[0], p[1:])
            if sid in self.tables:
                out += ft.status(sid)
        elif inst == ft.ACTION:
            for s in self._ids(sid):
                if s in self.pending:
                    self._write(s, *self.pending.pop(s))
        elif inst == ft.SYNC_WRITE and len(p) >= 2:
            a, n = p[0], p[1]
            k = 2
            while k + 1 + n <= len(p):
                if p[k] in self.tables:
                    self._write(p[k], a, p[k + 1:k + 1 + n])
                k += 1 + n
        elif inst == ft.SYNC_READ and len(p) >= 2:
            for s in p[2:]:
                if s in self.tables:
                    self._sense(s)
                    out += ft.status(s, 0, bytes(self.tables[s][p[0]:p[0] + p[1]]))
        return out

    def to_deg(self, servo, units):
        return float("nan") if units is None else (units - self.centre) * self.deg_per_unit
