"""What every servo driver offers the player (a plain base class, MicroPython-friendly).

    class MyDriver(Driver):
        NAME = "mine"; UNITS = "us"
        def send_positions(self, cmds): self.write(b"...")

cmds is a list of (channel or servo id, position in controller units, int). A driver writes
each frame in as few transactions as its protocol allows, counts bytes and errors in stats,
and offers the failsafe actions its controller has (torque_off, set_watchdog).

A request and its reply are a transaction: with_deadline(timeout_s) bounds every read until
end_deadline() to timeout_s from now on the driver's clock (drv.clock, seconds: time.monotonic
on a host, a twin's port clock in simulation), as the vendor SDKs' packet timeout does; the
port's own timeout is set to what is left before each read (pyserial's `timeout`, SimPort's)
and put back after. Without a clock each read waits at most timeout_s; a port without a
settable timeout (a MicroPython UART) keeps its own.
"""


# how long a request waits for its reply: ROBOTIS' dynamixel-sdk 4.1.0 and Feetech's
# scservo_sdk 1.0.0 (a fork of it) alike: port_handler.py setPacketTimeout(packet_length) =
# tx_time_per_byte * packet_length + LATENCY_TIMER * 2 + 2.0 ms, tx_time_per_byte = 1000 /
# baud * 10 ms, LATENCY_TIMER = 16 ms (the USB adapter's latency timer); one deadline from
# after the request for the whole reply
LATENCY_TIMER_S = 0.016
PACKET_EXTRA_S = 0.002


def packet_timeout_s(packet_length, baud):
    """The vendor SDKs' packet timeout (s) for a reply of packet_length bytes at baud."""
    # t = 10 bits / baud x packet_length + 2 x LATENCY_TIMER + 2 ms
    return packet_length * 10.0 / baud + 2 * LATENCY_TIMER_S + PACKET_EXTRA_S


class Driver:
    NAME = "base"
    UNITS = "units"
    HAS_WATCHDOG = False
    BAUD = 115200
    clock = None            # the deadline's clock (s); open_driver(..., clock=) sets it

    def __init__(self, port, echo=False):
        self.port = port
        # echo: a half-duplex bus (TX and RX on one wire) hands back every byte we send
        self.echo = echo
        self.stats = {"frames": 0, "commands": 0, "bytes": 0, "errors": 0, "timeouts": 0}
        self._deadline = None
        self._saved_timeout = None

    def port_baud(self):
        """The port's baud rate (pyserial's baudrate, SimPort's baud), else the protocol's."""
        for k in ("baudrate", "baud"):
            b = getattr(self.port, k, None)
            if isinstance(b, (int, float)) and b > 0:
                return float(b)
        return float(self.BAUD)

    def with_deadline(self, timeout_s):
        """The reads from now until end_deadline() end within timeout_s (see the docstring)."""
        port = self.port
        self._saved_timeout = None
        if hasattr(port, "timeout"):
            self._saved_timeout = (port.timeout,)
        self._deadline = (self.clock() + timeout_s) if self.clock is not None else None
        self._set_timeout(timeout_s)

    def end_deadline(self):
        self._deadline = None
        if self._saved_timeout is not None:
            self._set_timeout(self._saved_timeout[0])
            self._saved_timeout = None

    def _set_timeout(self, t):
        if self._saved_timeout is not None and self.port.timeout != t:
            self.port.timeout = t

    def write(self, data):
        try:
            n = self.port.write(data)
        except OSError:
            self.stats["errors"] += 1
            raise
        except Exception as e:
            if type(e).__name__ != "Full":
                raise
            # pyserial's loop:// raises queue.Full when nobody reads the other end
            self.stats["errors"] += 1
            raise OSError("servo port: write timed out (nothing reads the other end)")
        self.stats["bytes"] += len(data)
        if self.echo and self.read_exact(len(data)) != data:
            # our own bytes did not come back as sent: a collision or a noisy line
            self.stats["errors"] += 1
        return n

    def flush_input(self):
        """Drop what waits in the port before a request (a reply come after its timeout would
        be read as the next one's), or OSError: a port error here is one like any other
        (pyserial's PortNotOpenError is an OSError, but an unplugged tty's tcflush raises
        termios.error, which is not)."""
        port = self.port
        try:
            if hasattr(port, "reset_input_buffer"):
                port.reset_input_buffer()
            elif hasattr(port, "any"):
                # a MicroPython UART has no reset_input_buffer: the bytes any() says wait, read
                for _ in range(4):
                    n = port.any()
                    if not n or not port.read(n):
                        break
        except OSError:
            raise
        except Exception as e:
            raise OSError("servo port: input flush failed: %s" % e)

    def read_exact(self, n):
        """n bytes from the port, or what arrived before its timeout (counted)."""
        buf = b""
        while len(buf) < n:
            if self._deadline is not None:
                # what is left of the transaction's time (0: only bytes already in)
                self._set_timeout(max(0.0, self._deadline - self.clock()))
            got = self.port.read(n - len(buf))
            if not got:
                self.stats["timeouts"] += 1
                break
            buf += got
        return buf

    def start(self, servos):
        """Prepare the controller (torque on, speeds...). servos: list of (id, robot servo)."""

    def send_positions(self, cmds):
        raise NotImplementedError

    def torque_off(self, ids):
        """Make the servos limp where the controller can; return True if it did."""
        return False

    def set_watchdog(self, timeout_s):
        """Arm the controller's own communication watchdog; True if it has one."""
        return False

    def frame_bytes(self, n):
        """Bytes one frame of n servos costs on the wire (for the benchmarks)."""
        return len(self.encode_positions([(i, 1500) for i in range(n)]))

    def encode_positions(self, cmds):
        raise NotImplementedError

    def close(self):
        close = getattr(self.port, "close", None)
        if close is not None:
            close()
