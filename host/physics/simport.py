"""An in-process serial port to a controller emulator, in the twin's simulated time.

    port = SimPort(emu, twin, baud=1000000)
    drv = open_driver("dynamixel", port)        # the real driver writes its real bytes
    # each byte takes its wire time (10 bits at the baud rate) on the twin's clock: the body
    # moves on while a frame is on the wire, and the emulator acts when the last byte is in

No pty, no threads: deterministic. Replies come back after the servo's return delay
(reply_delay_s; XM430 default Return Delay Time 250 x 2 us = 0.5 ms) and their own wire time.
"""

REPLY_DELAY_S = {"dynamixel": 0.0005}      # XM430 control table 9, default 250 (2 us units)


class SimPort:
    def __init__(self, emulator, twin, baud, reply_delay_s=0.0):
        self.emu = emulator
        self.reply_delay_s = reply_delay_s
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
        reply = self.emu.feed(b)
        if reply and self.reply_delay_s:
            self.bus_t_s += self.reply_delay_s
        self.rx += reply
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
