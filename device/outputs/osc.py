"""Stream staff frames live over UDP as OSC (python-osc), one bundle per frame.

    from device.outputs.osc import OscOutput
    out = OscOutput(["l_knee_flex", "r_knee_flex"], host="127.0.0.1", port=9000, per_row=True)
    out(frame_index=0, t_s=0.0, values=[12.5, 30.0], codes=None)   # the capture-loop signature
    out.close()

Address space (prefix "/motionstaff" by default, all floats are 32-bit):

    /motionstaff/rows   s s s ...     the row names, in order: sent with the first frame and
                                      again every `announce_every_s` seconds of the
                                      frames' time, forwards or backwards (late listeners)
    /motionstaff/units  s s s ...     the rows' units ("deg", "m", ...), sent with /rows
    /motionstaff/frame  i f f f ...   frame index, time in s, then one value per row (row
                                      units; NaN = missing)
    /motionstaff/row/<name>  f        one message per row with its value (per_row=True only)

Messages of one frame travel in one OSC bundle (immediate time tag), so a receiver sees a
frame whole or not at all; only where that bundle would exceed MAX_DATAGRAM bytes (python-osc's
and socketserver's receive buffer, 8192: the /rows announcement plus --per-row messages of a
staff with a hundred rows) is it split into several bundles, in order, /frame always whole.
UDP loses packets silently; nothing waits for the receiver. The client socket is non-blocking:
a datagram the system cannot take because its send buffer is full (BlockingIOError, EAGAIN,
ENOBUFS) is dropped and counted in `dropped`, and the stream goes on; any other send error
ends it with one line naming the target.
"""

import errno
import math
import socket

MAX_DATAGRAM = 8192
_BUNDLE_HEAD = 16             # "#bundle\0" and the time tag
RESERVED = " #*,/?[]{}"       # characters OSC reserves in an address part
_BUFFER_FULL = {errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS}


def parse_target(text, default_port=9000):
    """'HOST:PORT', ':PORT', 'PORT', 'HOST' or '[IPV6]:PORT' -> (host, port); ValueError when
    malformed."""
    text = (text or "").strip()
    host, port = "127.0.0.1", default_port
    if not text:
        return host, port
    if text.startswith("["):
        h, close, rest = text[1:].partition("]")
        if not close or not h or (rest and not rest.startswith(":")):
            raise ValueError("OSC target %r: write an IPv6 address as [ADDRESS]:PORT" % text)
        host, text = h, rest
        if not text:
            return host, port
    if text.isdigit():
        port = int(text)
    elif ":" in text:
        h, p = text.rsplit(":", 1)
        host = h or host
        if ":" in h:
            raise ValueError("OSC target %r: write an IPv6 address as [ADDRESS]:PORT" % text)
        if not p.isdigit():
            raise ValueError("OSC target %r: port %r is not a number" % (text, p))
        port = int(p)
    else:
        host = text
    if not 0 < port < 65536:
        raise ValueError("OSC target %r: port must be 1..65535" % text)
    return host, port


def _client(host, port, what="OSC target"):
    try:
        from pythonosc.udp_client import UDPClient
    except ImportError:  # pragma: no cover - python-osc is in the host and pi extras
        raise ImportError("OSC output needs python-osc (pip install python-osc)") from None
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError("OSC port must be 1..65535, not %r" % (port,))
    try:
        return UDPClient(host, port)
    except socket.gaierror as e:
        raise ValueError("%s %s:%d: host %r not found (%s)" % (what, host, port, host, e.strerror)) from None


def _message(address, args):
    from pythonosc.osc_message_builder import OscMessageBuilder
    b = OscMessageBuilder(address=address)
    for a in args:
        if isinstance(a, str):
            b.add_arg(a, "s")
        elif isinstance(a, bool) or (isinstance(a, int) and not isinstance(a, float)):
            b.add_arg(int(a), "i")
        else:
            b.add_arg(float(a), "f")
    return b.build()


def _bundle(built):
    """One OSC bundle (immediate time tag) of built OscMessages."""
    from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
    bb = OscBundleBuilder(IMMEDIATELY)
    for m in built:
        bb.add_content(m)
    return bb.build()


def send_bundle(client, messages):
    """Send [(address, args), ...] as one OSC bundle with an immediate time tag."""
    client.send(_bundle([_message(address, args) for address, args in messages]))


def split_bundles(built, limit=MAX_DATAGRAM):
    """Built OscMessages, in order, as groups whose bundle stays within limit bytes (a message
    bigger than that travels alone)."""
    groups, size = [], limit + 1
    for m in built:
        n = 4 + len(m.dgram)                  # each bundle element is size-prefixed
        if size + n > limit:
            groups.append([])
            size = _BUNDLE_HEAD
        groups[-1].append(m)
        size += n
    return groups


def send_buffer_full(e):
    """True for an OSError that only says the socket's send buffer is full right now (the
    client socket is non-blocking): BlockingIOError, EAGAIN/EWOULDBLOCK or ENOBUFS."""
    return isinstance(e, BlockingIOError) or getattr(e, "errno", None) in _BUFFER_FULL


def send_frame(client, messages, what):
    """Send one frame's [(address, args), ...]: one bundle, or several in order where one would
    exceed MAX_DATAGRAM. Returns the number of datagrams dropped because the send buffer was
    full (a live stream goes on without them); any other send error names what ('OSC target
    HOST:PORT')."""
    dropped = 0
    for group in split_bundles([_message(address, args) for address, args in messages]):
        try:
            client.send(_bundle(group))
        except OSError as e:
            if not send_buffer_full(e):
                raise OSError("%s: %s" % (what, e.strerror or e)) from None
            dropped += 1
    return dropped


def check_prefix(prefix):
    """'/a/b' for a prefix 'a/b' or '/a/b/'; ValueError when empty or with reserved characters."""
    parts = [p for p in str(prefix).split("/") if p]
    bad = sorted(set(c for p in parts for c in p if c in RESERVED))
    if not parts or bad:
        raise ValueError("OSC prefix %r: give an address like /motionstaff%s"
                         % (prefix, "" if not bad else " (no %s)" % " ".join(repr(c) for c in bad)))
    return "/" + "/".join(parts)


def _safe(name):
    """An OSC address part for a row name (no spaces, '#', '*', ',', '/', '?', '[', ']', '{', '}')."""
    return "".join("_" if c in RESERVED else c for c in name)


class OscOutput:
    """Sends each frame as OSC (see the module docstring). Callable as a capture-loop output."""

    def __init__(self, row_names, host="127.0.0.1", port=9000, prefix="/motionstaff", per_row=False,
                 units=None, announce_every_s=1.0):
        self.row_names = [str(n) for n in row_names]
        if not self.row_names:
            raise ValueError("OSC output needs at least one row name")
        self.units = [str(u) for u in units] if units is not None else [""] * len(self.row_names)
        if len(self.units) != len(self.row_names):
            raise ValueError("OSC output: %d units for %d rows" % (len(self.units), len(self.row_names)))
        prefix = check_prefix(prefix)
        self.prefix = prefix
        self.per_row = bool(per_row)
        self.row_addresses = ["%s/row/%s" % (prefix, _safe(n)) for n in self.row_names]
        self.announce_every_s = float(announce_every_s)
        self.host, self.port = host, port
        self.client = _client(host, port)
        self._last_t = None           # the time of the previous frame
        self._travelled_s = 0.0       # time travelled since the last /rows announcement
        self.frames_sent = 0
        self.dropped = 0              # datagrams dropped: the send buffer was full

    def messages(self, frame_index, t_s, values):
        """The (address, args) messages of one frame."""
        vals = [float(v) if v is not None else math.nan for v in values]
        if len(vals) != len(self.row_names):
            raise ValueError("OSC output: frame has %d values for %d rows" % (len(vals), len(self.row_names)))
        out = []
        if self._announce_due(float(t_s)):
            out.append((self.prefix + "/rows", self.row_names))
            out.append((self.prefix + "/units", self.units))
        out.append((self.prefix + "/frame", [int(frame_index), float(t_s)] + vals))
        if self.per_row:
            out.extend((a, [v]) for a, v in zip(self.row_addresses, vals))
        return out

    def _announce_due(self, t_s):
        """True on the first frame and whenever the frames' times have travelled
        announce_every_s since the last announcement, forwards or backwards (play --reverse,
        a --loop restart)."""
        if self._last_t is None:
            due = True
        else:
            self._travelled_s += abs(t_s - self._last_t)
            due = self._travelled_s >= self.announce_every_s - 1e-9     # rounding of k / fps sums
        self._last_t = t_s
        if due:
            self._travelled_s = 0.0
        return due

    def __call__(self, frame_index, t_s, values, codes=None):
        self.dropped += send_frame(self.client, self.messages(frame_index, t_s, values),
                                   "OSC target %s:%d" % (self.host, self.port))
        self.frames_sent += 1

    def close(self):
        sock = getattr(self.client, "_sock", None)
        if sock is not None:
            sock.close()
