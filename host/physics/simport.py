"""An in-process serial port to a controller emulator, in the twin's simulated time.

    port = SimPort(emu, twin, baud=1000000)
    drv = open_driver("dynamixel", port)        # the real driver writes its real bytes
    # each byte takes its wire time (10 bits at the baud rate) on the twin's clock: the body
    # moves on while a frame is on the wire, and the emulator acts when the last byte is in

No pty, no threads: deterministic. Replies come back with their own wire time.
"""


class SimPort:
    def __init__(self, emulator, twin, baud):
        self.emu = emulator
        self.twin = twin
        self.baud = float(baud or 115200)
        self.rx = b""
        self.bus_t_s = 0.0
        self.bytes_out = 0
        self.bytes_in = 0
        self.timeout = 0.1

    def _wire(self, nbytes):
        # t_bus = max(t_bus, now) + bits / baud; the body runs on meanwhile
        self.bus_t_s = max(self.bus_t_s, self.twin.time_s) + nbytes * 10.0 / self.baud
        self.twin.advance_to(self.bus_t_s)

    def write(self, b):
        b = bytes(b)
        self._wire(len(b))
        self.bytes_out += len(b)
        self.rx += self.emu.feed(b)
        return len(b)

    def read(self, n=1):
        out, self.rx = self.rx[:n], self.rx[n:]
        if out:
            self._wire(len(out))
            self.bytes_in += len(out)
        return out

    @property
    def in_waiting(self):
        return len(self.rx)

    def reset_input_buffer(self):
        self.rx = b""

    def flush(self):
        pass

    def close(self):
        pass
