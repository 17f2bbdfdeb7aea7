"""Link benchmarks: bytes a frame costs on the wire, frames/s each controller protocol allows,
and the packet decoder's throughput on a corrupted stream.

    .venv/bin/python benchmarks/link.py            # full run (>= 1e6 packets per stream)
    .venv/bin/python benchmarks/link.py --quick    # 1e5 packets

Frames/s = baud / 10 bits per byte / bytes per frame (8N1), writes only (no replies, no
inter-packet gaps). The vendor-SDK column is what the SDK's usual streaming call sends for the
same frame (computed from its packet sizes, see each row's note); the anchor for the decoder is
the same stream decoded by the PyPI `cobs` package's C decoder + binascii.crc32 (no framing
logic), measured in the same run.
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from protocol import packets as pk                     # noqa: E402
from device.servo import maestro, ssc32, lx16a, dynamixel, feetech  # noqa: E402
from device.servo.native import Native                 # noqa: E402
from device.servo.pca9685 import PCA9685               # noqa: E402


class _Null:
    def write(self, b):
        return len(b)


def frame_bytes_table():
    print("Bytes on the wire for one 48-joint frame, overhead included")
    codes = [random.Random(1).randrange(256) for _ in range(48)]
    w8 = pk.encode("FRAME8", 1, 1, (), bytes(codes))
    w16 = pk.encode("FRAME16", 1, 1, (), b"\x01\x02" * 48)
    print("  %-34s %5d bytes  (goal <= 60)  -> %6.0f frames/s at 115200 baud" % ("FRAME8 (48 x 8 bit)", len(w8), 11520.0 / len(w8)))
    print("  %-34s %5d bytes                -> %6.0f frames/s at 115200 baud" % ("FRAME16 (48 x 16 bit)", len(w16), 11520.0 / len(w16)))
    print()


def _sdk(name, n):
    """(bytes, note) of the vendor SDK's usual way to send n targets, or (None, note)."""
    if name == "maestro":
        return 4 * n, "Pololu Arduino lib setTarget() x n (0x84 each)"
    if name == "ssc32":
        return len(ssc32.group_move([(i, 1500) for i in range(n)], speed=600)), "ssc-32u set_positions (S600 per servo)"
    if name == "lx16a":
        return 10 * n, "pylx16a move() x n (MOVE_TIME_WRITE each)"
    if name == "dynamixel":
        return len(dynamixel.sync_write(116, 4, [(i, 2048) for i in range(n)])), "dynamixel-sdk GroupSyncWrite (same bytes)"
    if name == "feetech":
        per = (feetech.MAX_PACKET - 8) // 8
        return sum(len(feetech.sync_write(41, 7, [(i, b"\x00" * 7) for i in range(k, min(n, k + per))]))
                   for k in range(0, n, per)), "ftservo SyncWritePosEx (7 bytes/servo, <=250 B packets)"
    if name == "pca9685":
        return 5 * n, "Adafruit channel.duty_cycle x n (5 bytes each)"
    return None, "-"


def rates_table():
    print("Frames per second each controller protocol allows (writes only, 8N1 = 10 bits/byte)")
    print("  %-10s %8s %5s %8s %9s %9s %9s  %s" % ("controller", "baud", "n", "ours B", "ours f/s", "SDK B", "SDK f/s", "SDK call"))
    rows = [("maestro", 115200, maestro.Maestro(_Null())), ("ssc32", 115200, ssc32.SSC32(_Null(), time_ms=20)),
            ("lx16a", 115200, lx16a.LX16A(_Null())), ("dynamixel", 57600, dynamixel.Dynamixel(_Null())),
            ("dynamixel", 1000000, dynamixel.Dynamixel(_Null())), ("feetech", 1000000, feetech.Feetech(_Null())),
            ("native", 115200, Native(_Null(), bits=8)), ("native", 115200, Native(_Null(), bits=16)),
            ("pca9685", 400000, None)]
    for name, baud, drv in rows:
        for n in (18, 24, 48):
            if name == "pca9685":
                # I2C at 400 kHz: 9 clocks a byte + start/address per 16-channel board write
                b = (n + 15) // 16 * 2 + 4 * n
                sb, note = _sdk(name, n)
                f, fs = baud / 9.0 / b, baud / 9.0 / (sb + n)   # + address byte per SDK write
                print("  %-10s %8d %5d %8d %9.0f %9d %9.0f  %s" % ("pca9685", baud, n, b, f, sb + n, fs, note))
                continue
            note_n = ""
            if name == "maestro" and n > 24:
                # two 24-channel boards on one line: Pololu protocol, device numbers 12 and 13
                drv = maestro.Maestro(_Null(), boards=[12, 13])
            b = drv.frame_bytes(n) if name != "ssc32" else len(drv.encode_positions([(i, 1500) for i in range(n)]))
            sb, note = _sdk(name, n)
            if name == "maestro" and n > 24:
                sb = 6 * n
                note_n = " (2 boards, Pololu protocol)"
            if name == "lx16a":
                note_n = " (ours: WAIT_WRITE x n + MOVE_START, all start together)"
            label = name + ("16" if name == "native" and drv.bits == 16 else "")
            print("  %-10s %8d %5d %8d %9.0f %9s %9s  %s%s" % (label, baud, n, b, baud / 10.0 / b,
                                                             sb if sb else "-", "%.0f" % (baud / 10.0 / sb) if sb else "-",
                                                             note, note_n))
    print()


def _corrupted_stream(npackets, rate, mode, seed=1):
    rng = random.Random(seed)
    enc = pk.Encoder(clock_us=lambda: 0)
    base = [enc.frame([rng.randrange(256) for _ in range(48)]) for _ in range(1000)]
    clean = set(bytes(p[:-1]) for p in base)
    chunks = []
    for k in range(npackets):
        w = bytearray(base[k % 1000])
        if mode == "bytes":
            for i in range(len(w)):
                if rng.random() < rate:
                    w[i] = rng.randrange(256)
        elif rng.random() < rate:
            w[rng.randrange(len(w))] = rng.randrange(256)
        chunks.append(bytes(w))
    return b"".join(chunks), base


def decoder_table(npackets):
    print("Decoder throughput on a corrupted stream (one core), %d packets of 60 bytes" % npackets)
    print("  %-32s %9s %9s %10s %10s %12s" % ("stream", "MB/s", "anchor", "delivered", "dropped", "corrupted"))
    try:
        from cobs import cobs as cobs_c
    except ImportError:
        cobs_c = None
    import binascii
    for mode, rate, label in (("bytes", 0.10, "10% of bytes damaged"), ("packets", 0.10, "10% of packets damaged (1 byte)"),
                              ("packets", 0.0, "clean")):
        stream, base = _corrupted_stream(npackets, rate, mode)
        truth = {}
        dec0 = pk.Decoder()
        for p in dec0.feed(b"".join(base)):
            truth[(p.seq, p.tail)] = True
        dec = pk.Decoder()
        t0 = time.perf_counter()
        delivered = 0
        corrupted = 0
        step = 65536
        for i in range(0, len(stream), step):
            for p in dec.feed(stream[i:i + step]):
                delivered += 1
                if (p.seq, p.tail) not in truth:
                    corrupted += 1
        dt = time.perf_counter() - t0
        anchor = "-"
        if cobs_c is not None:
            t1 = time.perf_counter()
            for part in stream.split(b"\x00"):
                if part:
                    try:
                        body = cobs_c.decode(part)
                    except cobs_c.DecodeError:
                        continue
                    binascii.crc32(body[:-4])
            anchor = "%.2f" % (len(stream) / (time.perf_counter() - t1) / 1e6)
        print("  %-32s %9.2f %9s %10d %10d %12d" % (label, len(stream) / dt / 1e6, anchor, delivered,
                                                   dec.dropped(), corrupted))
    print("  (anchor: split + cobs C decode + binascii.crc32 only, same stream; goal >= 2 MB/s, 0 corrupted)")


def paced_table(seconds=5.0):
    """The product streamer over the serial twin, asked for more frames than the line carries."""
    import serial
    from device.servo.emulate.serialtwin import SerialTwin
    from device.servo.linkstream import LinkStreamer
    from protocol import staffheader
    print("The paced streamer over the serial twin (115200 baud, 4 KiB buffer, simulated time), 48 x 8-bit rows")
    print("  %-10s %10s %10s %12s %14s %12s" % ("asked f/s", "sent f/s", "skipped", "formula f/s", "max fill B", "overrun B"))
    h = staffheader.make([{"name": "j%d" % i, "unit": "deg", "lo": -90.0, "hi": 90.0} for i in range(48)],
                         fps=30.0, bits=8)
    for fps in (30, 100, 190, 300):
        t = [0.0]
        twin = SerialTwin(clock=lambda: t[0])
        port = serial.serial_for_url(twin.path, baudrate=115200, timeout=0, write_timeout=0)
        ls = LinkStreamer(port, h, 8, clock=lambda: t[0])
        n = int(seconds * fps)
        for k in range(n):
            ls.frame([k % 256] * 48, t[0])
            t[0] += 1.0 / fps
            twin.pump()
        c = ls.counts()
        # formula: the line's bytes/s minus the header (1 s repeats) and heartbeats, / 60 B a frame
        hdr = sum(len(p) for p in ls.enc.header(ls.blob, part_bytes=64)) + 40
        print("  %-10d %10.1f %10d %12.1f %14d %12d" % (fps, c["frames_sent"] / seconds, c["frames_skipped"],
                                                       min(fps, (11520.0 - hdr) / 60.0),
                                                       twin.counts["max_fill"], twin.counts["overrun_bytes"]))
        port.close()
        twin.close()
    print("  (formula: min(asked, (11520 B/s - header and heartbeat each second) / 60 B); sent counts the frames")
    print("   handed to the driver, so the ~1150 B still in its buffer at the end add ~%.1f f/s; same run)" % (1150 / 60.0 / seconds))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1e5 packets instead of 1e6")
    ap.add_argument("--packets", type=int, default=None)
    a = ap.parse_args()
    n = a.packets or (100000 if a.quick else 1000000)
    frame_bytes_table()
    rates_table()
    paced_table()
    decoder_table(n)


if __name__ == "__main__":
    main()
