"""Serve an emulator behind a pseudo-terminal: programs open PtyServer.path like a serial port.

    with PtyServer(make_emulator("dynamixel")) as srv:
        port = serial.serial_for_url(srv.path, baudrate=1000000, timeout=0.1)

A thread reads the master side (select with a timeout, so stop() is prompt), hands the bytes
to emulator.feed() and writes back its replies; on a quiet line it calls emulator.poll() if it
has one (the native emulator: the receiver firmware's loop, so its failsafe times out).
disconnect()/reconnect() simulate a port that disappears and comes back (the slave side is
closed and a new pty is made at a new path).

With baud, the bytes take their wire time on a half-duplex bus (a Dynamixel, Feetech or LX-16A
line; 10 bits a byte, 8N1), on the server's clock (wall time; a test passes its own clock and
sleep): a request of n bytes is in once the line has carried it, and the reply of m bytes after
it, so the client sees the reply no sooner than the hardware would give it:

    line_t = max(line_t, t_read) + n * 10 / baud      (the emulator acts then)
    line_t = line_t + k * reply_delay_s + m * 10 / baud    (the reply is written then)

(k status packets in the reply, emulator.status_packets(reply), else 1: in a sync read each
servo answers after its own return delay, in turn.)

Without baud nothing is paced (the live link's paced twin with buffers and faults is
serialtwin.py).
"""

import os
import select
import threading
import time
import tty

BITS_PER_BYTE = 10


def close_fds(*fds):
    """Close each open descriptor (None skipped), ignoring those already gone."""
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


class PtyServer:
    def __init__(self, emulator, baud=None, reply_delay_s=0.0, clock=time.monotonic, sleep=None):
        self.emulator = emulator
        self.baud = float(baud) if baud else None
        self.reply_delay_s = float(reply_delay_s)
        self._stop = threading.Event()
        # the wait ends at stop() (a 4 KB burst at 9600 baud is 4.3 s on the wire)
        self.clock, self.sleep = clock, (sleep if sleep is not None else self._stop.wait)
        self.line_t = 0.0           # (paced) when the line is free again, on clock()
        self._thread = None
        self.master = None
        self.slave = None
        self.path = None
        self.bytes_in = 0

    def _open(self):
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)

    def start(self):
        self._open()
        self.line_t = 0.0           # a new line: nothing of a stopped session's bytes on it
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pty-%s" % self.emulator.NAME, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        master = self.master
        while not self._stop.is_set():
            try:
                r, _, _ = select.select([master], [], [], 0.05)
            except (OSError, ValueError):
                return
            if not r:
                # a quiet line: an emulator with a loop of its own (the receiver firmware's
                # failsafe timeout) runs it, and its replies go out
                poll = getattr(self.emulator, "poll", None)
                reply = poll() if poll is not None else b""
                if reply:
                    try:
                        os.write(master, reply)
                    except OSError:
                        pass
                continue
            try:
                data = os.read(master, 4096)
            except OSError:          # the slave side went away (EIO): wait for stop
                if self._stop.wait(0.05):
                    return
                continue
            if not data:
                continue
            self.bytes_in += len(data)
            if self.baud:
                self._wait_line(len(data), 0.0)
                if self._stop.is_set():
                    return
            reply = self.emulator.feed(data)
            if reply and self.baud:
                count = getattr(self.emulator, "status_packets", None)
                self._wait_line(len(reply), (count(reply) if count else 1) * self.reply_delay_s)
                if self._stop.is_set():
                    return
            if reply:
                try:
                    os.write(master, reply)
                except OSError:
                    pass

    def _wait_line(self, nbytes, delay_s):
        """Until the half-duplex line has carried nbytes more (after delay_s), on clock()."""
        self.line_t = max(self.line_t, self.clock()) + delay_s + nbytes * BITS_PER_BYTE / self.baud
        d = self.line_t - self.clock()
        if d > 0:
            self.sleep(d)

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
            self._thread = None
        close_fds(self.master, self.slave)
        self.master = self.slave = None

    def disconnect(self):
        """The adapter is unplugged: both ends close; the path no longer works."""
        self.stop()

    def reconnect(self):
        """Plugged back in (at a new pty path, like a USB adapter that re-enumerates)."""
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
