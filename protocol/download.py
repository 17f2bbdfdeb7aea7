"""Download protocol messages on top of the packet envelope (protocol/packets.py, SPEC.md).

    from protocol import download as dl
    from protocol import packets as pk
    enc = pk.Encoder()
    wire = dl.list_request(enc, req=1)                       # host -> unit
    wire = dl.get_request(enc, 2, "rec0001.msr", offset=0, length=dl.WINDOW)
    for w in dl.reply_chunks(enc, 2, 0, data, last=True):   # unit -> host, <= CHUNK bytes each
        ...
    text = dl.encode_listing([("rec0001.msr", 12345, 0x1234abcd)])
    entries = dl.decode_listing(text)                        # [(name, size, crc32)]
    dl.safe_name("../x")                                     # False: never a path

The listing is UTF-8 text, one recording a line: name TAB size TAB crc32 (8 hex digits) LF.
The whole-file CRC-32 lets the host check a download end to end after resuming; every chunk is
already CRC-32 checked by its packet. Names are plain file names of at most 64 characters from
[A-Za-z0-9._-], not starting with "."; anything else is refused by both ends. Pure Python,
MicroPython-safe (no f-strings, % formatting only).
"""

from protocol import packets as pk
from protocol.errors import FormatError

CHUNK = pk.MAX_PAYLOAD - 7          # DOWNLOAD_REPLY fixed part "<HIB" is 7 bytes: 993
WINDOW = 16 * CHUNK                 # bytes asked for by one GET (the host re-asks after a gap)
MAX_NAME = 64
MAX_LISTING = 1 << 20
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"


def safe_name(name):
    """True for a plain recording name that cannot leave the folder it is written to."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        return False
    if name[0] == "." or name in (".", ".."):
        return False
    for ch in name:
        if ch not in _NAME_CHARS:
            return False
    return True


def encode_listing(entries):
    """UTF-8 listing bytes of [(name, size, crc32)]."""
    out = []
    for name, size, crc in entries:
        if not safe_name(name):
            raise FormatError("listing: unsafe recording name %r" % (name,))
        out.append("%s\t%d\t%08x\n" % (name, size, crc & 0xFFFFFFFF))
    return "".join(out).encode()


def decode_listing(data):
    """[(name, size, crc32)] of listing bytes; FormatError on a malformed line (names are NOT
    checked here: the caller refuses unsafe ones by name, so the user hears about them)."""
    try:
        text = bytes(data).decode()
    except UnicodeError:
        raise FormatError("listing: not UTF-8")
    out = []
    for i, line in enumerate(text.split("\n")):
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise FormatError("listing line %d: expected name, size, crc" % (i + 1))
        try:
            size = int(parts[1])
            crc = int(parts[2], 16)
        except ValueError:
            raise FormatError("listing line %d: bad size or crc" % (i + 1))
        if size < 0 or size > 0xFFFFFFFF:
            raise FormatError("listing line %d: size %d out of range" % (i + 1, size))
        out.append((parts[0], size, crc))
    return out


def list_request(enc, req):
    return enc.packet("DOWNLOAD_LIST", (req & 0xFFFF,))


def get_request(enc, req, name, offset, length):
    if not safe_name(name):
        raise FormatError("download: unsafe recording name %r" % (name,))
    return enc.packet("DOWNLOAD_GET", (req & 0xFFFF, offset, min(length, 65535)), name.encode())


def reply_chunks(enc, req, offset, data, last=True):
    """DOWNLOAD_REPLY packets carrying data from `offset`, CHUNK bytes each; FLAG_LAST on the
    final one when `last` (an empty data gives one empty LAST reply)."""
    out = []
    n = len(data)
    at = 0
    while True:
        piece = data[at:at + CHUNK]
        end = at + len(piece) >= n
        flags = pk.FLAG_LAST if (end and last) else 0
        out.append(enc.packet("DOWNLOAD_REPLY", (req & 0xFFFF, offset + at, flags), bytes(piece)))
        at += len(piece)
        if end:
            return out


def error_reply(enc, req, code, message):
    return enc.packet("DOWNLOAD_ERROR", (req & 0xFFFF, code), message.encode()[:200])
