"""What a recognised gesture does: an OSC message, a line on a serial port, or a program.

    from host.gestures.actions import Actions
    act = Actions(osc_target=("127.0.0.1", 9000), serial_baud=115200)
    act.perform(match)           # match: device.gestures.recognizer.Match with .command
    act.close()

A gesture's command is one string, by its prefix:

    osc:/tv/power 1 on                 OSC message to the run's --osc-target: address, then
                                       arguments (ints, floats, else strings); an argument
                                       {confidence} or {t_s} alone goes as a float, {name}
                                       alone as a string, and inside other text they are
                                       filled in (a string)
    osc://10.0.0.5:9000/tv/power 1     OSC message to that host and port
    serial:loop:// POWER ON            the line "POWER ON\\n" to the serial port URL (pyserial
                                       serial_for_url: /dev/ttyUSB0, COM3, loop://, socket://..);
                                       {name} {confidence} {t_s} are filled in
    exec:notify-send "gesture {name}"  a program run with an argument list (shlex split, never a
                                       shell); {name} {confidence} {t_s} are filled in
    shell:echo {name} >> gestures.log  a command line run by the system shell (/bin/sh -c; pipes,
                                       redirections); {name} {confidence} {t_s} are filled in
                                       shell-quoted, so a name cannot inject shell syntax
    (empty)                            nothing beyond the printed report

Only those three placeholders are replaced; any other brace stays as written (a JSON line
on a serial port goes out verbatim). Programs and shell commands run in the background with a timeout (`exec_timeout_s`), so the recogniser never
waits on them; at most one run per gesture at a time (a new match while it runs is skipped).
"""

import shlex
import subprocess

from device.outputs.osc import _client, send_bundle
from protocol.errors import FormatError


PLACEHOLDERS = ("name", "confidence", "t_s")


def fill(text, values):
    """text with {name} {confidence} {t_s} replaced from values; other braces left as they are."""
    for k in PLACEHOLDERS:
        text = text.replace("{%s}" % k, values[k])
    return text


def osc_args(args, match, values):
    """A command's OSC arguments for one match: an argument that is exactly {confidence} or
    {t_s} becomes that number (a float), {name} the name; other strings are filled in as text;
    numbers stay as parsed."""
    exact = {"{name}": match.name, "{confidence}": float(match.confidence),
             "{t_s}": float(match.t_end_s)}
    out = []
    for a in args:
        if isinstance(a, str):
            a = exact[a] if a in exact else fill(a, values)
        out.append(a)
    return out


def _split(command, text):
    """shlex.split, with a malformed quote named as the command's problem."""
    try:
        return shlex.split(text)
    except ValueError as e:
        raise FormatError("command %r: %s" % (command, str(e).lower())) from None


def _arg(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_command(command):
    """(kind, details) of a command string; FormatError if malformed.
    kind: osc|serial|exec|shell|none."""
    c = (command or "").strip()
    if not c:
        return "none", None
    kind, _, rest = c.partition(":")
    if kind == "osc":
        target = None
        if rest.startswith("//"):
            hostport, slash, path = rest[2:].partition("/")
            if not slash:
                raise FormatError("command %r: osc://HOST:PORT/ADDRESS needs an address" % c)
            h, _, p = hostport.rpartition(":")
            if not p.isdigit() or not 0 < int(p) < 65536:
                raise FormatError("command %r: bad port %r" % (c, p))
            target = (h or "127.0.0.1", int(p))
            rest = "/" + path
        parts = _split(c, rest)
        if not parts or not parts[0].startswith("/"):
            raise FormatError("command %r: an OSC address starts with '/'" % c)
        return "osc", (target, parts[0], [_arg(a) for a in parts[1:]])
    if kind == "serial":
        url, _, line = rest.strip().partition(" ")
        if not url:
            raise FormatError("command %r: serial:URL LINE needs a port URL" % c)
        return "serial", (url, line)
    if kind == "exec":
        argv = _split(c, rest)
        if not argv:
            raise FormatError("command %r: exec: needs a program" % c)
        return "exec", argv
    if kind == "shell":
        if not rest.strip():
            raise FormatError("command %r: shell: needs a command line" % c)
        return "shell", rest.strip()
    raise FormatError("command %r: must start with osc:, serial:, exec: or shell:" % c)


def _reason(e):
    """The readable part of an OSError or pyserial error ('could not open port X: [Errno 2] ...')."""
    text = getattr(e, "strerror", None) or str(e)
    return text.rsplit("] ", 1)[-1] if "[Errno" in text else text


class Actions:
    """Performs gesture commands (see the module docstring)."""

    def __init__(self, osc_target=("127.0.0.1", 9000), serial_baud=115200, exec_timeout_s=10.0,
                 dry_run=False):
        self.osc_target = osc_target
        self.serial_baud = serial_baud
        self.exec_timeout_s = exec_timeout_s
        self.dry_run = dry_run
        self._osc = {}
        self._serial = {}
        self._procs = {}
        self.log = []                 # (gesture name, kind, what) of every action performed

    def perform(self, match):
        kind, det = parse_command(match.command)
        if kind == "none":
            return None
        values = {"name": match.name, "confidence": "%.3f" % match.confidence, "t_s": "%.3f" % match.t_end_s}
        if kind == "osc":
            target, address, args = det
            args = osc_args(args, match, values)
            target = target or self.osc_target
            what = (target, address, args)
            if not self.dry_run:
                try:
                    if target not in self._osc:
                        self._osc[target] = _client(*target)
                    send_bundle(self._osc[target], [(address, args)])
                except ValueError as e:         # the host name does not resolve
                    raise ValueError("gesture %r: %s" % (match.name, e)) from None
                except OSError as e:
                    raise OSError("gesture %r: OSC target %s:%d: %s" % (match.name, target[0], target[1],
                                                                       e.strerror or e)) from None
        elif kind == "serial":
            url, line = det
            what = (url, fill(line, values))
            if not self.dry_run:
                self._write_line(match.name, url, what[1])
        else:
            if kind == "shell":         # values shell-quoted: a name is one word, never syntax
                what = fill(det, {k: shlex.quote(v) for k, v in values.items()})
            else:
                what = [fill(a, values) for a in det]
            if not self.dry_run:
                p = self._procs.get(match.name)
                if p is not None and p.poll() is None:
                    self.log.append((match.name, "skipped", what))
                    return None
                self._procs[match.name] = self._start(match.name, kind, what)
        self.log.append((match.name, kind, what))
        return kind, what

    @staticmethod
    def _start(name, kind, what):
        """The running process of an exec: argv or a shell: line; a failure names the gesture."""
        try:
            return subprocess.Popen(what, shell=kind == "shell", stdin=subprocess.DEVNULL)
        except OSError as e:
            raise OSError("gesture %r: %s: %s" % (name, what[0] if kind == "exec" else "shell",
                                                  e.strerror or e)) from None

    def _write_line(self, name, url, line):
        """line + newline to the serial port url (opened on first use); errors name both."""
        try:
            if url not in self._serial:
                import serial
                self._serial[url] = serial.serial_for_url(url, baudrate=self.serial_baud, timeout=1.0,
                                                          write_timeout=1.0)
            self._serial[url].write((line + "\n").encode("utf-8"))
            self._serial[url].flush()
        except (OSError, ValueError) as e:   # serial.SerialException is an OSError
            raise OSError("gesture %r: serial port %s: %s" % (name, url, _reason(e))) from None

    def serial_port(self, url):
        """The open serial port of a URL (for tests reading back what was written)."""
        return self._serial.get(url)

    def close(self):
        for c in self._osc.values():
            sock = getattr(c, "_sock", None)
            if sock is not None:
                sock.close()
        for s in self._serial.values():
            s.close()
        for p in self._procs.values():
            try:
                p.wait(timeout=self.exec_timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
