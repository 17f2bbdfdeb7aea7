"""The crash-safe recording container of the capture unit (DESIGN 3.4): append-only, CRC per block.

    from protocol import container, staffheader
    h = staffheader.make(rows=[{"name": "knee", "unit": "deg", "lo": 0, "hi": 150}], fps=30)
    w = container.Writer("rec.msr", h, frames_per_block=1)
    w.write_frame([12, None], t_ms=0)      # codes (None = missing), one column
    w.close()
    rec = container.read("rec.msr")         # Recording: .header .frames .dropped_bytes .torn
    for index, t_ms, codes in rec.frames: ...

Layout (every integer big-endian):
    file header   MAGIC (8)  version u16  json_len u32  json (staff header, UTF-8)  crc32 u32
                  (the CRC covers everything before it in the file header)
    block         SYNC (4)  first_frame u32  nframes u16  payload_len u32  payload  crc32 u32
                  (the CRC covers first_frame .. payload, i.e. everything after SYNC)
    payload       nframes x [ t_ms u32 | missing mask ceil(rows/8) bytes, bit i = row i missing
                              (LSB first) | codes rows x u8 (8-bit) or u16 (16-bit) ]

The writer flushes after every block (to the OS) and syncs (fsync: to the medium) on a policy:
every sync_s seconds of frames (default 1 s: ceil(sync_s * fps) frames), after the file header
and at close. A power cut loses what was not synced: at most loss_bound_frames frames
(sync frames + frames_per_block - 1), checked through the power-cut twin
(device/hal/storage_sim.py); a SIGKILL loses only the block being written (the OS keeps the
page cache). The reader keeps every block whose CRC holds, stops at a
torn tail, skips a corrupted block by searching for the next SYNC, and reports the bytes it
dropped; a bad file header raises FormatError. Pure Python, MicroPython-safe.
"""

import struct

from protocol import crc as _crc
from protocol import staffheader
from protocol.errors import FormatError

MAGIC = b"MSREC\x1a\r\n"
VERSION = 1
SYNC = b"\xb1\x0c\x5f\xa7"
EXTENSION = ".msr"
_FILE_FMT = ">HI"        # version, json_len
_BLOCK_FMT = ">IHI"      # first_frame, nframes, payload_len
_BLOCK_HDR = 10
_U32 = ">I"
MAX_JSON = 16 * 1024 * 1024
MAX_FRAMES_PER_BLOCK = 65535


def mask_len(nrows):
    """Bytes of the missing mask for nrows rows."""
    return (nrows + 7) // 8


def frame_len(nrows, bits):
    """Bytes of one frame in a block payload."""
    return 4 + mask_len(nrows) + nrows * (bits // 8)


def encode_header(header):
    """The file header bytes for a staff header dict (checked)."""
    text = staffheader.dumps(header).encode("utf-8")
    head = MAGIC + struct.pack(_FILE_FMT, VERSION, len(text)) + text
    return head + struct.pack(_U32, _crc.crc32(head))


def encode_frame(codes, t_ms, bits):
    """One frame's payload bytes: t_ms, missing mask, codes (None = missing, stored as 0)."""
    n = len(codes)
    ml = mask_len(n)
    w = bits // 8
    out = bytearray(4 + ml + n * w)
    struct.pack_into(_U32, out, 0, int(t_ms) & 0xFFFFFFFF)
    top = (1 << bits) - 1
    at = 4 + ml
    for i in range(n):
        c = codes[i]
        if c is None:
            out[4 + (i >> 3)] |= 1 << (i & 7)
            c = 0
        elif c < 0 or c > top:
            raise ValueError("code %r of row %d is outside 0..%d" % (c, i, top))
        if w == 1:
            out[at + i] = c
        else:
            out[at + 2 * i] = c >> 8
            out[at + 2 * i + 1] = c & 0xFF
    return out


def encode_block(first_frame, frames_payload, nframes):
    """A whole block (SYNC .. CRC) around the concatenated frame payloads."""
    body = struct.pack(_BLOCK_FMT, first_frame, nframes, len(frames_payload)) + bytes(frames_payload)
    return SYNC + body + struct.pack(_U32, _crc.crc32(body))


def decode_frame(buf, at, nrows, bits):
    """(t_ms, codes) of the frame at offset at of buf."""
    t_ms = struct.unpack_from(_U32, buf, at)[0]
    ml = mask_len(nrows)
    base = at + 4 + ml
    codes = []
    for i in range(nrows):
        if buf[at + 4 + (i >> 3)] & (1 << (i & 7)):
            codes.append(None)
        elif bits == 8:
            codes.append(buf[base + i])
        else:
            codes.append((buf[base + 2 * i] << 8) | buf[base + 2 * i + 1])
    return t_ms, codes


class Writer:
    """Append-only writer: write_frame() per column, a block flushed every frames_per_block,
    synced every sync_s seconds of frames (fsync=True: every block; sync_s=0: never, only at
    close).

    dest is a path (created, truncated) or a binary file object; a file object with sync() is
    synced by it (device/capture/storage.py), else by os.fsync(fileno) where there is one.
    write_header=False: dest already holds encode_header(header) (storage.create_recording).

    syncer (device/capture/syncer.py): the policy's syncs run on it, off the caller's path:
    request(frames) starts one covering the frames flushed so far (False while the last is
    under way: asked again at the next block), done() -> the frames the last completed one
    covered, close() waits for the one under way. frames_synced then follows done(), and a cut
    loses at most frames_at_risk (frames - frames_synced) frames; max_frames_at_risk is the
    most it ever was. The header's sync and the last one at close stay synchronous.
    """

    def __init__(self, dest, header, frames_per_block=1, fsync=False, sync_s=1.0, write_header=True,
                 syncer=None):
        if frames_per_block < 1 or frames_per_block > MAX_FRAMES_PER_BLOCK:
            raise ValueError("frames_per_block must be in 1..%d" % MAX_FRAMES_PER_BLOCK)
        if sync_s is None or sync_s < 0:
            raise ValueError("sync_s must be >= 0 seconds")
        staffheader.check(header)
        self.header = header
        self.nrows = len(header["rows"])
        self.bits = header["bits"]
        self.frames_per_block = frames_per_block
        if fsync:
            self.sync_frames = 1
        elif sync_s > 0:
            # ceil(sync_s * fps), at least one frame
            n = sync_s * float(header["fps"])
            self.sync_frames = max(1, int(n) + (1 if n > int(n) + 1e-9 else 0))
        else:
            self.sync_frames = 0
        self.fsync = fsync
        self._own = isinstance(dest, str)
        self.f = open(dest, "wb") if self._own else dest
        self.frames = 0              # frames handed to write_frame
        self.frames_flushed = 0      # frames in blocks already written and flushed
        self.frames_synced = 0       # frames in blocks on the medium (after a sync)
        self.frames_requested = 0    # frames covered by the last sync asked of the syncer
        self.max_frames_at_risk = 0
        self.syncer = None if fsync else syncer     # fsync=True: every block synced, in place
        self.syncs = 0
        self.bytes_written = 0
        self._pending = bytearray()
        self._npending = 0
        if write_header:
            self._write(encode_header(header))
            self.sync()
        else:
            self.bytes_written = len(encode_header(header))

    @property
    def loss_bound_frames(self):
        """The most frames a power cut can lose by the sync policy (None: unbounded, sync_s=0);
        with a syncer, plus those written while a sync is under way (frames_at_risk)."""
        if not self.sync_frames:
            return None
        return self.sync_frames + self.frames_per_block - 1

    @property
    def frames_at_risk(self):
        """Frames handed to write_frame and not yet on the medium: what a cut now can lose."""
        return self.frames - self.frames_synced

    def _write(self, data):
        self.f.write(data)
        self.f.flush()
        self.bytes_written += len(data)

    def sync(self):
        """Put everything written on the medium (the file's sync(), else os.fsync)."""
        sync = getattr(self.f, "sync", None)
        if sync is not None:
            sync()
        else:
            try:
                import os
                os.fsync(self.f.fileno())
            except (ImportError, AttributeError, OSError, ValueError):
                pass
        self.frames_synced = self.frames_flushed
        self.syncs += 1

    def write_frame(self, codes, t_ms=0):
        """Append one column of codes (len == rows; None = missing) with its time in ms."""
        if self.f is None:
            raise ValueError("container writer is closed")
        if len(codes) != self.nrows:
            raise ValueError("frame has %d codes, the header has %d rows" % (len(codes), self.nrows))
        if self.syncer is not None:
            # the frames the last completed background sync covered are on the medium
            done = self.syncer.done()
            if done > self.frames_synced:
                self.frames_synced = done
                self.syncs += 1
        self._pending += encode_frame(codes, t_ms, self.bits)
        self._npending += 1
        self.frames += 1
        if self.frames - self.frames_synced > self.max_frames_at_risk:
            self.max_frames_at_risk = self.frames - self.frames_synced
        if self._npending >= self.frames_per_block:
            self.flush()

    def flush(self):
        """Write the pending frames as one block (nothing if none are pending)."""
        if self._npending:
            first = self.frames - self._npending
            self._write(encode_block(first, self._pending, self._npending))
            self.frames_flushed = self.frames
            self._pending = bytearray()
            self._npending = 0
            if self.syncer is not None:
                # due: sync_frames flushed since the last sync asked for (asked again at the
                # next block while the one under way has not completed)
                if self.sync_frames and self.frames_flushed - self.frames_requested >= self.sync_frames:
                    if self.syncer.request(self.frames_flushed):
                        self.frames_requested = self.frames_flushed
            elif self.sync_frames and self.frames_flushed - self.frames_synced >= self.sync_frames:
                self.sync()

    def close(self):
        """Flush the last block and close the file if we opened it (idempotent)."""
        if self.f is None:
            return
        self.flush()
        if self.syncer is not None:
            self.syncer.close()
        self.sync()
        if self._own:
            self.f.close()
        self.f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Recording:
    """What read() recovered: the header, the frames and an account of what was dropped.

    frames: list of (frame_index, t_ms, codes) in file order; dropped_bytes: bytes not in any
    good block; bad_blocks: blocks skipped for a bad CRC or length; torn: the file ended inside
    a block (a power cut while writing).
    """

    def __init__(self, header):
        self.header = header
        self.frames = []
        self.dropped_bytes = 0
        self.bad_blocks = 0
        self.torn = False

    @property
    def nframes(self):
        return len(self.frames)

    def missing_indices(self):
        """Frame indices absent between 0 and the last recovered frame."""
        have = set(f[0] for f in self.frames)
        last = max(have) if have else -1
        return [i for i in range(last + 1) if i not in have]

    def report(self):
        """One line for a person: frames recovered and what was lost."""
        s = "%d frames recovered" % len(self.frames)
        if self.torn:
            s += ", torn tail"
        if self.bad_blocks:
            s += ", %d bad blocks skipped" % self.bad_blocks
        if self.dropped_bytes:
            s += ", %d bytes dropped" % self.dropped_bytes
        return s


def read_header(buf, where="container"):
    """(header dict, offset of the first block) from the start of buf; FormatError if bad."""
    if len(buf) < len(MAGIC) + 6:
        raise FormatError("%s: too short for a recording container" % where)
    if bytes(buf[:len(MAGIC)]) != MAGIC:
        raise FormatError("%s: not a motionstaff recording (bad magic)" % where)
    version, jlen = struct.unpack_from(_FILE_FMT, buf, len(MAGIC))
    if version < 1 or version > VERSION:
        raise FormatError("%s: unknown container version %d (this reader knows 1..%d)"
                          % (where, version, VERSION))
    if jlen > MAX_JSON:
        raise FormatError("%s: header length %d is implausible" % (where, jlen))
    end = len(MAGIC) + 6 + jlen
    if len(buf) < end + 4:
        raise FormatError("%s: file header is truncated" % where)
    want = struct.unpack_from(_U32, buf, end)[0]
    if _crc.crc32(bytes(buf[:end])) != want:
        raise FormatError("%s: file header CRC mismatch" % where)
    header = staffheader.loads(bytes(buf[len(MAGIC) + 6:end]), where + ": header")
    return header, end + 4


def parse(buf, where="container"):
    """Recover a Recording from the bytes of a container (see the module docstring)."""
    header, at = read_header(buf, where)
    rec = Recording(header)
    nrows = len(header["rows"])
    bits = header["bits"]
    flen = frame_len(nrows, bits)
    n = len(buf)
    while at < n:
        if bytes(buf[at:at + 4]) != SYNC:
            nxt = _find(buf, SYNC, at + 1)
            rec.dropped_bytes += (nxt if nxt >= 0 else n) - at
            if nxt < 0:
                rec.torn = True
                break
            rec.bad_blocks += 1
            at = nxt
            continue
        if at + 4 + _BLOCK_HDR > n:
            rec.torn = True
            rec.dropped_bytes += n - at
            break
        first, nframes, plen = struct.unpack_from(_BLOCK_FMT, buf, at + 4)
        end = at + 4 + _BLOCK_HDR + plen
        if plen != nframes * flen or nframes == 0:
            # a corrupted length: skip to the next SYNC
            nxt = _find(buf, SYNC, at + 1)
            rec.dropped_bytes += (nxt if nxt >= 0 else n) - at
            rec.bad_blocks += 1
            if nxt < 0:
                break
            at = nxt
            continue
        if end + 4 > n:
            rec.torn = True
            rec.dropped_bytes += n - at
            break
        want = struct.unpack_from(_U32, buf, end)[0]
        if _crc.crc32(bytes(buf[at + 4:end])) != want:
            nxt = _find(buf, SYNC, at + 1)
            rec.dropped_bytes += (nxt if nxt >= 0 else n) - at
            rec.bad_blocks += 1
            if nxt < 0:
                break
            at = nxt
            continue
        p = at + 4 + _BLOCK_HDR
        for k in range(nframes):
            t_ms, codes = decode_frame(buf, p + k * flen, nrows, bits)
            rec.frames.append((first + k, t_ms, codes))
        at = end + 4
    rec.header = dict(header)
    rec.header["frames"] = len(rec.frames)
    return rec


def _find(buf, pat, start):
    try:
        return bytes(buf).find(pat, start) if not isinstance(buf, bytes) else buf.find(pat, start)
    except AttributeError:  # pragma: no cover - MicroPython bytearray without find
        m = len(pat)
        for i in range(start, len(buf) - m + 1):
            if bytes(buf[i:i + m]) == pat:
                return i
        return -1


def read(path):
    """Recover a Recording from a container file (FormatError on a bad file header)."""
    with open(path, "rb") as f:
        data = f.read()
    return parse(data, path)


def is_container(prefix):
    """True if the bytes start like a recording container."""
    return bytes(prefix[:len(MAGIC)]) == MAGIC
