"""Hiwonder LX-16A bus emulator: several servos on one wire, checksum checked, reads answered
(not for broadcasts), MOVE_TIME_WAIT_WRITE armed until MOVE_START, load/unload.

    emu = LX16AEmulator(ids=(1, 2, 3)); emu.feed(bytes.fromhex("55 55 01 07 01 F4 01 00 00 01"))
    emu.positions[1] == 500;  emu.loaded[1] is True

A power cut (base.py: power_off/power_on, schedule_power_cut): silent while off and for BOOT_S
(assumed 0.5 s: no figure found) after; back, every motor unloaded (LOAD_OR_UNLOAD 0: assumed,
Hiwonder's protocol document's default as remembered, not checked here) and no move armed; a MOVE_TIME_WRITE loads it again (as here before: a goal
streamed to a servo that rebooted drives it there in the move's time).
"""

import struct

from device.servo import lx16a as lx
from device.servo.emulate.base import Emulator


class LX16AEmulator(Emulator):
    NAME = "lx16a"
    UNITS = "units"
    BOOT_S = 0.5

    def __init__(self, ids=tuple(range(1, 21)), echo=False, clock=None):
        Emulator.__init__(self, clock, deg_per_unit=0.24, centre=500)
        self.ids = set(ids)
        self.echo = echo
        self.buf = b""
        self.armed = {}
        self.loaded = dict((i, False) for i in ids)
        self.vin_mv = 7400
        self.temp_c = 35

    def _feed(self, data):
        self.buf += data
        out = data if self.echo else b""
        while True:
            i = self.buf.find(b"\x55\x55")
            if i < 0:
                self.buf = self.buf[-1:] if self.buf.endswith(b"\x55") else b""
                return out
            b = self.buf[i:]
            if len(b) < 4:
                self.buf = b
                return out
            n = b[3]
            if n < 3 or n > 10:
                self.errors += 1
                self.buf = b[2:]
                continue
            if len(b) < n + 3:
                self.buf = b
                return out
            r = lx.parse_reply(b[:n + 3])
            if r is None:
                self.errors += 1
                self.buf = b[2:]
                continue
            self.buf = b[n + 3:]
            out += self._run(*r)

    def _run(self, sid, cmd, p):
        targets = sorted(self.ids) if sid == lx.BROADCAST else ([sid] if sid in self.ids else [])
        reply = b""
        for s in targets:
            if cmd == lx.MOVE_TIME_WRITE and len(p) == 4:
                self.loaded[s] = True
                self.record(s, struct.unpack("<H", p[:2])[0])
            elif cmd == lx.MOVE_TIME_WAIT_WRITE and len(p) == 4:
                self.armed[s] = struct.unpack("<H", p[:2])[0]
            elif cmd == lx.MOVE_START:
                if s in self.armed:
                    self.loaded[s] = True
                    self.record(s, self.armed.pop(s))
            elif cmd == lx.LOAD_OR_UNLOAD_WRITE and len(p) == 1:
                self.loaded[s] = bool(p[0])
                if not p[0]:
                    self.record(s, None)
            elif sid != lx.BROADCAST or cmd == lx.ID_READ:
                reply += self._read(s, cmd)
        return reply

    def _lose_power(self):
        for s in sorted(self.ids):
            if self.loaded.get(s):
                self.record(s, None)
            self.loaded[s] = False
        self.armed.clear()

    def _read(self, s, cmd):
        if cmd == lx.POS_READ:
            return lx.packet(s, cmd, struct.pack("<h", self.positions.get(s) or 0))
        if cmd == lx.VIN_READ:
            return lx.packet(s, cmd, struct.pack("<H", self.vin_mv))
        if cmd == lx.TEMP_READ:
            return lx.packet(s, cmd, bytes((self.temp_c,)))
        if cmd == lx.ID_READ:
            return lx.packet(s, cmd, bytes((s,)))
        if cmd == lx.LOAD_OR_UNLOAD_READ:
            return lx.packet(s, cmd, bytes((1 if self.loaded.get(s) else 0,)))
        return b""

    def to_deg(self, servo, units):
        return float("nan") if units is None else (units - self.centre) * self.deg_per_unit
