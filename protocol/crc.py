"""Named CRCs for the serial link and the servo protocols (pure Python, MicroPython-safe).

    from protocol import crc
    crc.crc32(b"123456789") == crc.CRC32_CHECK          # 0xCBF43926
    crc.crc32(b"6789", crc.crc32(b"12345"))             # chained, like binascii.crc32
    crc.crc16_buypass(b"123456789") == 0xFEE8           # Dynamixel Protocol 2.0
    crc.crc7_pololu(b"\\x83\\x01") == 0x17                # Pololu Maestro optional CRC-7

CRC-32 (catalogue name CRC-32/ISO-HDLC, the one in zlib/binascii/Ethernet): width 32,
poly 0x04C11DB7 (reflected 0xEDB88320), init 0xFFFFFFFF, refin = refout = true,
xorout 0xFFFFFFFF, check 0xCBF43926. binascii.crc32 is used where present (CPython and
MicroPython both have it); the table fallback gives identical results.
"""

try:
    import binascii as _binascii
    _fast_crc32 = getattr(_binascii, "crc32", None)
except ImportError:  # a MicroPython build without binascii
    _fast_crc32 = None

CRC32_POLY_REFLECTED = 0xEDB88320
CRC32_CHECK = 0xCBF43926
CRC16_BUYPASS_POLY = 0x8005
CRC16_BUYPASS_CHECK = 0xFEE8
CRC7_POLOLU_POLY_REFLECTED = 0x91

_T32 = None
_T16 = None


def _table32():
    global _T32
    if _T32 is None:
        t = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ CRC32_POLY_REFLECTED if c & 1 else c >> 1
            t.append(c)
        _T32 = t
    return _T32


def crc32_slow(data, crc=0):
    """Table-driven CRC-32/ISO-HDLC; crc is the value of the data before (chaining)."""
    t = _table32()
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32(data, crc=0):
    """CRC-32/ISO-HDLC of data, continuing from crc (0 to start); an unsigned 32-bit int."""
    if _fast_crc32 is not None:
        return _fast_crc32(data, crc) & 0xFFFFFFFF
    return crc32_slow(data, crc)


def _table16():
    global _T16
    if _T16 is None:
        t = []
        for i in range(256):
            c = i << 8
            for _ in range(8):
                c = ((c << 1) ^ CRC16_BUYPASS_POLY) if c & 0x8000 else (c << 1)
            t.append(c & 0xFFFF)
        _T16 = t
    return _T16


def crc16_buypass(data, crc=0):
    """CRC-16/BUYPASS (UMTS): poly 0x8005, init 0, no reflection, xorout 0, check 0xFEE8."""
    t = _table16()
    c = crc
    for b in data:
        c = ((c << 8) & 0xFFFF) ^ t[((c >> 8) ^ b) & 0xFF]
    return c


def crc7_pololu(data, crc=0):
    """Pololu's CRC-7: width 7, poly 0x09 (0x91 reflected), refin/refout, init 0, xorout 0."""
    c = crc
    for b in data:
        c ^= b
        for _ in range(8):
            if c & 1:
                c ^= CRC7_POLOLU_POLY_REFLECTED
            c >>= 1
    return c
