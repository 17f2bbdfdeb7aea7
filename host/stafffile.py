"""The staff file: a PNG (8/16-bit grey, alpha 0 where missing) with the header as JSON in zTXt.

    from host.stafffile import write_staff, read_staff
    write_staff("walk.png", staff)                  # grey (or grey+alpha when values are missing)
    write_staff("walk.png", staff, colour=True)      # 8 bits: palette PNG, palette = a colour map
    staff = read_staff("walk.png")                   # FormatError naming the file and the problem

Rows are dofs, columns frames, pixel = code. Why the IDAT is written here and not by Pillow:
Pillow cannot choose PNG filters per row, and the Sub filter (a row's difference along time)
is what makes a staff compress; each row gets the filter whose filtered bytes have the least
entropy, and the stream is deflated with zopfli when it is installed and the data is under 256 KiB
(5-11% smaller than zlib on the clips), zlib otherwise (level 9 up to 1 MiB, 6 above) with the
strategy (filtered, runs only, Huffman only) that deflates a sample of it smallest: an hour of
48 rows encodes in 0.2-0.7 s of CPU:
on the CMU clips the image data is about 10% smaller than Pillow's PNG of the same codes. Any PNG reader (Pillow, browsers, viewers) reads the file;
this reader uses Pillow, except for 16-bit grey+alpha, which Pillow reduces to 8 bits.
"""

import io
import os
import struct
import zlib

import numpy as np

from host.budget_check import checked, stamp
from host.pngrows import filter_rows, unfilter_rows
from host.rowtransform import choose, from_planes, low_order, sort_low, to_planes, unsort_low
from host.staff import Staff
from protocol import rowtransform, staffheader
from protocol.errors import FormatError

SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PIXELS = 89478485            # Pillow's decompression-bomb limit (rows x frames)
MAX_HEADER_BYTES = 16 << 20
MAX_FILE_BYTES = 1 << 29          # 512 MiB: more than MAX_PIXELS of 16-bit grey+alpha, uncompressed
COLOURMAP = "viridis"
_ORDERED = ("dxp", "dxs", "dxe")  # row transforms with an order per row ("to") and predicted rows ("tx")


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


ZOPFLI_MAX_BYTES = 256 << 10      # zopfli (effort 2+) only below this: ~25 us a byte, 5-11% smaller
ZOPFLI15_MAX_BYTES = 64 << 10     # 15 zopfli iterations (not 5) below this at effort 2: 0.3% smaller, +20% time
ZLIB9_MAX_BYTES = 1 << 20         # zlib level 9 below this, 6 above (9 costs 5x for 1% there)
TRIAL_PIECES = 16                 # zlib's strategy is chosen on this many pieces of the data ...
TRIAL_PIECE_BYTES = 32 << 10      # ... of at most deflate's window each, evenly spaced
# the strategies tried: string matches (what motion with repeats and still rows needs), runs
# only, Huffman codes only (what noise-like differences need: matches there cost more than
# they save, and each takes zlib's chain search)
TRIAL_STRATEGIES = (zlib.Z_FILTERED, zlib.Z_RLE, zlib.Z_HUFFMAN_ONLY)


def _zlib(data, level, strategy):
    co = zlib.compressobj(level, zlib.DEFLATED, 15, 9, strategy)
    return co.compress(data) + co.flush()


def _sample(data):
    """Evenly spaced pieces of data (all of it when it is no larger than the pieces)."""
    if len(data) <= TRIAL_PIECES * TRIAL_PIECE_BYTES:
        return data
    step = (len(data) - TRIAL_PIECE_BYTES) // (TRIAL_PIECES - 1)
    return b"".join(data[i * step:i * step + TRIAL_PIECE_BYTES] for i in range(TRIAL_PIECES))


def _deflate(data, effort):
    """zlib stream of data: zopfli for small data at effort 2+ (15 iterations up to 64 KiB or at
    effort 3, else 5), else zlib (level 9 up to 1 MiB, then 6) with the strategy of
    TRIAL_STRATEGIES that deflates a sample of the data smallest (effort 0: level 6, default
    strategy, no trial).

    Z_FILTERED (fewer string matches, more Huffman) suits PNG-filtered rows of real motion: on
    the clips it is 2-9% smaller than runs only and 30-100% smaller than Huffman codes only. On
    rows that are noise after the filter (the benchmark's random-walk hour) Huffman codes only
    are 12% smaller and 18x faster. The trial on at most 512 KiB costs one level-6 pass over it.
    """
    if effort >= 2 and len(data) <= ZOPFLI_MAX_BYTES:
        try:
            import zopfli.zlib

            return zopfli.zlib.compress(data, numiterations=15 if effort >= 3 or len(data) <= ZOPFLI15_MAX_BYTES else 5)
        except ImportError:
            pass
    if effort < 1:
        return _zlib(data, 6, zlib.Z_DEFAULT_STRATEGY)
    level = 9 if len(data) <= ZLIB9_MAX_BYTES else 6
    return _zlib(data, level, zlib_strategy(data))


def zlib_strategy(data):
    """The strategy of TRIAL_STRATEGIES whose level-6 deflate of a sample of data (_sample) is
    smallest (the first of equals)."""
    sample = _sample(data)
    return min((len(_zlib(sample, 6, s)), i, s) for i, s in enumerate(TRIAL_STRATEGIES))[2]


def palette_rgb(name=COLOURMAP):
    """(256, 3) uint8: the colour map a colour staff's palette holds (index = code)."""
    from matplotlib import colormaps

    return (colormaps[name](np.linspace(0.0, 1.0, 256))[:, :3] * 255.0 + 0.5).astype(np.uint8)


def transform_for(staff, colour=False, transform="auto"):
    """The row transform a staff is written with: "auto" is "dxe" for 16 bits (not a palette),
    else none ("none" or None: the pixels are the codes)."""
    if transform == "auto":
        return "dxe" if staff.bits == 16 and not colour else None
    if transform == "none":
        return None
    rowtransform.check(transform, "transform")
    if transform is not None and staff.bits != 16:
        raise ValueError("row transform %r needs a 16-bit staff" % transform)
    return transform


def encode_png(staff, colour=False, effort=2, transform="auto"):
    """The PNG bytes of a staff (effort 0 fast .. 3 smallest); transform: "auto", None, "d2p"
    (16 bits: the codes' second differences in byte planes, an 8-bit image of 2 x rows rows) or
    "dxp" (each row's order of difference chosen, rows that never move left out, rows predicted
    from earlier ones; the header's "to" and "tx" name them) or "dxs" (dxp, the low planes in
    the order of their high planes' sums) or "dxe" (dxs whose differences start at the first
frame: frame t of order min(t, n); the 16-bit default). The planes are written with PNG filter None: the differences are the
    prediction, and a filter over them costs (0.5% on the CMU clips)."""
    if staff.frames < 1:
        raise ValueError("a staff file needs at least one frame")
    if staff.frames * staff.nrows > MAX_PIXELS:
        raise ValueError("staff of %d x %d values is larger than %d pixels" % (staff.nrows, staff.frames, MAX_PIXELS))
    # an error bound is written only for values it holds for (an edit keeps the old one's meta)
    staff = checked(staff)
    tr = transform_for(staff, colour, transform)
    codes, missing = staff.codes()
    depth = staff.bits
    orders, refs = None, []
    if tr is not None:
        edge = tr in rowtransform.EDGE
        orders, refs = choose(codes, missing, edge) if tr in _ORDERED else (None, [])
        kept = missing if orders is None else missing[np.asarray(orders) >= 0]
        codes, missing, depth = to_planes(codes, orders, refs, edge), np.concatenate([kept, kept]), 8
        if tr in rowtransform.SORTED:
            order = low_order(codes[:len(kept)])
            codes, missing = sort_low(codes, order), sort_low(missing, order)
    has_alpha = bool(missing.any())
    if colour and staff.bits != 8:
        raise ValueError("--colour needs an 8-bit staff (a palette holds 256 codes)")
    if colour and has_alpha:
        raise ValueError("--colour: this staff has missing values, which a palette PNG cannot mark; "
                         "write it in grey")
    if has_alpha:
        alpha = np.where(missing, 0, (1 << depth) - 1).astype(codes.dtype)
        pix = np.stack([codes, alpha], axis=-1).reshape(codes.shape[0], -1)
        ctype = 4
    else:
        pix = codes
        ctype = 3 if colour else 0
    if depth == 16:
        raw = pix.astype(">u2").view(np.uint8).reshape(pix.shape[0], -1)
    else:
        raw = pix.astype(np.uint8)
    bpp = (2 if depth == 16 else 1) * (2 if has_alpha else 1)
    data = filter_rows(raw, bpp, choose=effort >= 1 and tr is None, fixed=1 if tr is None else 0)
    hdr_json = header_text(staff, tr, orders, refs)
    out = [SIGNATURE,
           _chunk(b"IHDR", struct.pack(">IIBBBBB", staff.frames, codes.shape[0], depth, ctype, 0, 0, 0)),
           _chunk(b"zTXt", staffheader.KEYWORD.encode("latin-1") + b"\0\0" + _deflate(hdr_json, effort))]
    if ctype == 3:
        out.append(_chunk(b"PLTE", palette_rgb().tobytes()))
    out.append(_chunk(b"IDAT", _deflate(data, effort)))
    out.append(_chunk(b"IEND", b""))
    return b"".join(out)


def header_text(staff, transform=None, orders=None, refs=()):
    """The staff's compact header (version 3) as UTF-8 JSON: what the zTXt chunk deflates
    ("t": the row transform, when there is one; "to", "tx": dxp's orders and predicted rows)."""
    from host.skeletoncode import dof_rows, encode_skeleton, is_bvh

    h = staff.header()
    code = encode_skeleton(staff.skeleton)
    if code is not None and not is_bvh(code):
        # the dofs as the reader will rebuild them (short JSON rounds the limits): the ranges
        # are coded against those
        from host.skeletoncode import decode_skeleton

        rows = dof_rows(decode_skeleton(code, None))
    else:
        rows = dof_rows(_skeleton_object(staff.skeleton))
    if rows is not None and is_bvh(code):
        # a BVH hierarchy's dof limits are derived again from the decoded motion: never "sk"
        rows = [r[:3] + (float("nan"), float("nan")) for r in rows]
    c = staffheader.pack(h, dof_rows=rows, skeleton_code=code)
    if transform is not None:
        c["t"] = transform
    if orders is not None:
        c["to"] = rowtransform.orders_text(orders)
    if refs:
        c["tx"] = rowtransform.refs_text(refs)
    return staffheader.dumps_compact(c).encode("utf-8")


def _skeleton_object(sk):
    if isinstance(sk, dict):
        from device.body.skeleton import Skeleton
        return Skeleton.from_dict(sk)
    return sk


def write_staff(path, staff, colour=False, effort=2, transform="auto"):
    """Write a staff as a PNG staff file."""
    try:
        data = encode_png(staff, colour=colour, effort=effort, transform=transform)
    except ValueError as e:
        raise ValueError("%s: %s" % (os.fspath(path), e)) from None
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


# ------------------------------------------------------------------------------------------
# reading

def _chunks(data, where):
    """(IHDR fields, header text or None, chunk kinds) after checking the chunk structure."""
    if data[:8] != SIGNATURE:
        raise FormatError("%s: not a PNG file" % where)
    pos, ihdr, text, kinds = 8, None, None, []
    while True:
        if pos + 8 > len(data):
            raise FormatError("%s: truncated (the file ends inside a chunk header, no IEND)" % where)
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if n > len(data) - pos - 12:
            raise FormatError("%s: truncated (chunk %r of %d bytes runs past the end)" % (where, kind, n))
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise FormatError("%s: chunk %r is corrupt (CRC mismatch)" % (where, kind))
        kinds.append(kind)
        if kind == b"IHDR":
            if n != 13:
                raise FormatError("%s: IHDR has %d bytes, not 13" % (where, n))
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind in (b"tEXt", b"zTXt", b"iTXt") and text is None:
            text = _text_chunk(kind, body, where)
        pos += 12 + n
        if kind == b"IEND":
            return ihdr, text, kinds


def _text_chunk(kind, body, where):
    key, _, rest = body.partition(b"\0")
    if key != staffheader.KEYWORD.encode("latin-1"):
        return None
    try:
        if kind == b"tEXt":
            return rest
        if kind == b"zTXt":
            return _inflate(rest[1:], where)
        # iTXt: compression flag, method, language tag \0, translated keyword \0, text
        flag = rest[0]
        tail = rest[2:].split(b"\0", 2)[2]
        return _inflate(tail, where) if flag else tail
    except (IndexError, zlib.error):
        raise FormatError("%s: the %s header chunk is corrupt" % (where, kind.decode())) from None


def _inflate(data, where):
    d = zlib.decompressobj()
    out = d.decompress(data, MAX_HEADER_BYTES)
    if d.unconsumed_tail:
        raise FormatError("%s: header text is larger than %d bytes" % (where, MAX_HEADER_BYTES))
    return out


def read_staff(path, skeleton_object=True):
    """Read a PNG staff file; FormatError if it is not one this reader can trust."""
    where = os.fspath(path)
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise FormatError("%s: %d bytes is larger than the %d a staff file can need" % (where, size, MAX_FILE_BYTES))
    with open(path, "rb") as f:
        data = f.read()
    return decode_png(data, where, skeleton_object)


def decode_png(data, where="staff.png", skeleton_object=True):
    ihdr, text, kinds = _chunks(data, where)
    if ihdr is None or kinds[0] != b"IHDR":
        raise FormatError("%s: PNG has no IHDR chunk first" % where)
    width, height, depth, ctype, _, _, interlace = ihdr
    if text is None:
        raise FormatError("%s: no motionstaff header (PNG text chunk %r)" % (where, staffheader.KEYWORD))
    h, sk_code, tr, (orders, refs) = _header(text, where)
    if width * height > MAX_PIXELS:
        raise FormatError("%s: %d x %d pixels is more than the %d this reader accepts" % (where, height, width, MAX_PIXELS))
    if tr is not None and h["bits"] != 16:
        raise FormatError("%s: header: row transform %r needs 16 bits, not %d" % (where, tr, h["bits"]))
    stored = len(h["rows"]) if orders is None else sum(1 for o in orders if o >= 0)
    planes = 1 if tr is None else 2
    if stored * planes != height:
        raise FormatError("%s: header has %d rows%s but the image has %d" % (
            where, len(h["rows"]), "" if tr is None else " (%d image rows with transform %s)" % (2 * stored, tr),
            height))
    if h["frames"] != width:
        raise FormatError("%s: header says %d frames but the image has %d columns" % (where, h["frames"], width))
    if depth != (h["bits"] if tr is None else 8):
        raise FormatError("%s: header says %d bits%s but the image has %d-bit samples" % (
            where, h["bits"], "" if tr is None else " in 8-bit planes (transform %s)" % tr, depth))
    if ctype not in (0, 3, 4) or (ctype == 3 and depth != 8):
        raise FormatError("%s: colour type %d / %d bits is not a staff (grey, grey+alpha or 8-bit palette)"
                          % (where, ctype, depth))
    if b"IDAT" not in kinds:
        raise FormatError("%s: no image data (IDAT)" % where)
    codes, missing = _pixels(data, ctype, depth, width, height, interlace, where)
    if tr is not None:
        n = stored
        if tr in rowtransform.SORTED:
            order = low_order(codes[:n])
            codes, missing = unsort_low(codes, order), unsort_low(missing, order)
        if (missing[:n] != missing[n:]).any():
            raise FormatError("%s: the byte planes of transform %s disagree on which values are missing" % (where, tr))
        codes = from_planes(codes, orders, width, refs, tr in rowtransform.EDGE)
        if orders is None:
            missing = missing[:n]
        else:
            full = np.zeros((len(orders), width), bool)
            full[np.asarray(orders) >= 0] = missing[:n]
            missing = full
    sk = h.get("skeleton")
    if sk_code is not None:
        from host.skeletoncode import decode_skeleton, is_bvh
        from host.staff import decode as decode_codes

        values = None
        if is_bvh(sk_code):
            values = decode_codes(codes, [r["lo"] for r in h["rows"]], [r["hi"] for r in h["rows"]], h["bits"], missing)
        sk = decode_skeleton(sk_code, values, where="%s: header: skeleton" % where)
        if not skeleton_object:
            sk = sk.to_dict()
    elif sk is not None and skeleton_object:
        from device.body.skeleton import Skeleton

        sk = Skeleton.from_dict(sk, where="%s: header: skeleton" % where)
    meta = {"source": h.get("source", ""), "captured": h.get("captured", "")}
    if h.get("max_error_mm") is not None:
        meta["max_error_mm"] = h["max_error_mm"]
    if h.get("max_error_bound") is not None:
        meta["max_error_bound"] = h["max_error_bound"]
    # the values read are the file's own: its bound holds for them as they are
    return stamp(Staff.from_codes(codes, missing, h["rows"], h["fps"], h["bits"], sk, meta))


def _header(text, where):
    """(expanded header, skeleton code or None, row transform or None, (dxp's orders or None,
    its predicted rows)) of a staff file's header text (version 1, 2 or 3)."""
    c = staffheader.parse(text, where="%s: header" % where)
    tr = rowtransform.check(c.get("t"), "%s: header" % where)
    if c.get("version") not in staffheader.COMPACT_READ:
        h = staffheader.unpack(c, where="%s: header" % where)
        return h, None, tr, _orders(c, tr, h, where)
    code = c.get("sk")
    rows = None
    if code is not None:
        from host.skeletoncode import decode_skeleton, dof_rows, is_bvh

        # names, units and wrap first (a BVH hierarchy's limits come with the decoded motion)
        rows = dof_rows(decode_skeleton(code, None, where="%s: header: skeleton" % where))
        if is_bvh(code):
            rows = [r[:3] + (float("nan"), float("nan")) for r in rows]
    h = staffheader.unpack(c, rows, where="%s: header" % where)
    return h, code, tr, _orders(c, tr, h, where)


def _orders(c, tr, h, where):
    """(dxp's, dxs's or dxe's orders per row ("to"), its predicted rows ("tx")), (None, []) for
    other transforms; FormatError when they are bad or stand without dxp, dxs or dxe."""
    if tr not in _ORDERED:
        for key, what in (("to", "row orders"), ("tx", "predicted rows")):
            if key in c:
                raise FormatError("%s: header: '%s' (%s) without the row transform dxp, dxs or dxe" % (where, key, what))
        return None, []
    orders = rowtransform.parse_orders(c.get("to"), len(h["rows"]), "%s: header" % where)
    return orders, rowtransform.parse_refs(c.get("tx"), orders, "%s: header" % where)


def _pixels(data, ctype, depth, width, height, interlace, where):
    if ctype == 4 and depth == 16:
        # Pillow reads 16-bit grey+alpha as 8 bits; unfilter the IDAT here instead
        if interlace:
            raise FormatError("%s: interlaced 16-bit grey+alpha is not supported" % where)
        raw = _idat(data, where, height * (1 + width * 4))
        rows = unfilter_rows(raw, height, width * 4, 4, where)
        px = rows.view(">u2").reshape(height, width, 2).astype(np.uint16)
        return px[..., 0], px[..., 1] == 0
    from PIL import Image

    try:
        im = Image.open(io.BytesIO(data), formats=["PNG"])
        im.load()
    except Exception as e:   # Pillow raises OSError, SyntaxError, zlib.error, ... on bad data
        raise FormatError("%s: image data is corrupt or truncated (%s)" % (where, str(e).splitlines()[0] if str(e) else type(e).__name__)) from None
    a = np.asarray(im)
    if ctype == 4:
        return a[..., 0].astype(np.uint8), a[..., 1] == 0
    if depth == 16:
        return a.astype(np.uint16), np.zeros(a.shape, bool)
    return a.astype(np.uint8), np.zeros(a.shape, bool)


def _idat(data, where, expected):
    pos, parts = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            parts.append(data[pos + 8:pos + 8 + n])
        pos += 12 + n
    try:
        d = zlib.decompressobj()
        out = d.decompress(b"".join(parts), expected + 1)
    except zlib.error:
        raise FormatError("%s: image data is corrupt or truncated" % where) from None
    if len(out) != expected:
        raise FormatError("%s: image data has %d bytes, expected %d (truncated?)" % (where, len(out), expected))
    return out
