"""Lynxmotion SSC-32U emulator: ASCII lines run on CR, ESC cancels, spaces/LF ignored; group
moves with S and T; Q, QP, VA.. queries answered.

    emu = SSC32Emulator(); emu.feed(b"#5P1600#10P750T2500\\r"); emu.positions[5] == 1600
    emu.feed(b"QP5\\r") == bytes((160,))
"""

import re

from device.servo.emulate.base import Emulator

_ITEM = re.compile(r"#(\d+)P(\d+)(?:S(\d+))?")


class SSC32Emulator(Emulator):
    NAME = "ssc32"
    UNITS = "us"

    def __init__(self, clock=None):
        Emulator.__init__(self, clock, deg_per_unit=0.09, centre=1500)
        self.line = b""
        self.moves = []

    def _feed(self, data):
        out = b""
        for b in data:
            if b == 0x0D:
                out += self._line(self.line.decode("ascii", "replace").upper())
                self.line = b""
            elif b == 0x1B:
                self.line = b""
            elif b in (0x20, 0x09, 0x0A):
                continue
            elif len(self.line) < 1000:
                self.line += bytes((b,))
        return out

    def _line(self, s):
        if not s:
            return b""
        if s == "Q":
            return b"."
        if s.startswith("QP"):
            return bytes(min(255, self.positions.get(int(x), 0) // 10)
                         for x in re.findall(r"QP(\d+)", s))
        if s.startswith("V"):
            return bytes(0 for _ in re.findall(r"V([A-H])", s))
        if s.startswith("STOP"):
            return b""
        m = re.fullmatch(r"((?:#\d+P\d+(?:S\d+)?)+)(?:T(\d+))?", s)
        if m is None:
            if re.fullmatch(r"#\d+PO-?\d+", s) or re.fullmatch(r"(#\d+[HL])+", s):
                return b""
            self.errors += 1
            return b""
        for ch, pw, sp in _ITEM.findall(m.group(1)):
            ch, pw = int(ch), int(pw)
            if ch < 32 and (pw == 0 or 500 <= pw <= 2500):
                self.record(ch, pw)
            else:
                self.errors += 1
        self.moves.append(m.group(2))
        return b""
