"""Serve an emulator behind a pseudo-terminal: programs open PtyServer.path like a serial port.

    with PtyServer(make_emulator("dynamixel")) as srv:
        port = serial.serial_for_url(srv.path, baudrate=1000000, timeout=0.1)

A thread reads the master side (select with a timeout, so stop() is prompt), hands the bytes
to emulator.feed() and writes back its replies; on a quiet line it calls emulator.poll() if it
has one (the native emulator: the receiver firmware's loop, so its failsafe times out). The
bytes are not paced here; the live link's paced twin is serialtwin.py. disconnect()/reconnect() simulate a port that
disappears and comes back (the slave side is closed and a new pty is made at a new path).
"""

import os
import select
import threading
import tty


def close_fds(*fds):
    """Close each open descriptor (None skipped), ignoring those already gone."""
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


class PtyServer:
    def __init__(self, emulator):
        self.emulator = emulator
        self._stop = threading.Event()
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
            reply = self.emulator.feed(data)
            if reply:
                try:
                    os.write(master, reply)
                except OSError:
                    pass

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
