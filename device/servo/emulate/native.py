"""Emulator of our own receiver: decodes FRAME packets with protocol.packets.Decoder, maps rows
from the HEADER, records each row's pulse; a frame with every value missing = no pulses.

    emu = NativeEmulator(); emu.feed(wire_bytes); emu.positions[0] -> microseconds
"""

from protocol import packets as pk, staffcodec as sc
from device.servo.emulate.base import Emulator


class NativeEmulator(Emulator):
    NAME = "native"
    UNITS = "us"

    def __init__(self, clock=None):
        Emulator.__init__(self, clock, deg_per_unit=0.1, centre=1500)
        self.decoder = pk.Decoder()
        self.assembler = pk.HeaderAssembler()
        self.header = None
        self.state = None
        self.frames = 0
        self.bad = 0

    def _feed(self, data):
        for p in self.decoder.feed(data):
            if p.name == "HEADER":
                try:
                    h = self.assembler.add(p)
                except ValueError:
                    self.bad += 1
                    continue
                if h is not None:
                    self.header = h
            elif p.name == "HEARTBEAT":
                self.state = p.fields["state"]
            elif p.is_frame() and self.header is not None:
                bits, codes = p.frame()
                rows = self.header["rows"]
                if len(codes) != len(rows) or bits != self.header["bits"]:
                    self.bad += 1
                    continue
                self.frames += 1
                for r, c in zip(rows, codes):
                    sid = int(r["name"]) if r["name"].isdigit() else r["name"]
                    v = sc.decode(c, r["lo"], r["hi"], bits)
                    self.record(sid, None if v is None else int(round(v)))
        self.errors = self.bad + self.decoder.dropped()
        return b""

    def to_deg(self, servo, units):
        return float("nan") if units is None else (units - self.centre) * self.deg_per_unit
