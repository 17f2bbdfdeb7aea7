"""Fuzz the receiver firmware (device/firmware/receiver.py, run on CPython on the board stand-in
device/servo/emulate/board.py) with link packets: spliced and damaged headers, frames of the
wrong row count or depth, garbage, truncated packets, all-missing frames, and stream stops.

    from tools.linkfuzz import fuzz
    res = fuzz(packets=100000, seed=1)
    res["exits"], res["errors"], res["failsafe_late"], res["pulse_out_of_limits"], res["too_fast"]

Every poll is checked: the receiver never raises (exits) and never catches an exception of its
own (errors: a bug it survived), every pulse is 0 or inside the servo's limits and moves at most
its velocity limit over the poll interval, and each time the stream stops the failsafe is
engaged within timeout_ms (+ one poll interval). Used by tests/test_receiver_never_dies.py
(few packets) and benchmarks/robust_link.py (10^6).
"""

import random

from device.firmware.receiver import Receiver
from device.servo.emulate.board import Board
from protocol import linkheader as lh, packets as pk

NSERVO = 12
TIMEOUT_MS = 200
POLL_MS = 5


def config(action="hold"):
    return {"format": "motionstaff-receiver", "version": 1,
            "failsafe": {"timeout_ms": TIMEOUT_MS, "action": action}, "heartbeat_ms": 500,
            "servos": [{"name": "s%d" % i, "pin": i, "row": "r%d" % (i % 14), "neutral_us": 1500,
                        "direction": 1, "us_per_deg": 10.0, "min_us": 900, "max_us": 2100,
                        "max_vel_dps": 300.0, "home_deg": 0.0} for i in range(NSERVO)]}


def _headers(enc):
    blobs = [lh.encode([("r%d" % i, -90.0, 90.0) for i in range(14)], 8, 30.0),
             lh.encode([("r%d" % i, -30.0, 30.0) for i in range(14)], 8, 30.0),   # same shape
             lh.encode([("r%d" % i, -60.0, 60.0) for i in range(9)], 16, 50.0)]
    return blobs, [enc.header(b, part_bytes=40) for b in blobs]


class _Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.enc = pk.Encoder(clock_us=lambda: 0)
        self.blobs, self.parts = _headers(self.enc)

    def packet(self):
        rng = self.rng
        r = rng.random()
        if r < 0.08:                         # one part of some header
            ps = self.parts[rng.randrange(3)]
            return ps[rng.randrange(len(ps))]
        if r < 0.11:                         # a whole header
            return b"".join(self.parts[rng.randrange(3)])
        if r < 0.13:                         # a forged part: right CRC, wrong id / junk tail
            tail = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60)))
            return pk.encode("HEADER", 0, 0, (pk.SCHEMA, rng.choice([rng.getrandbits(32), lh.header_id(self.blobs[0])]),
                                              rng.randrange(4), rng.randrange(1, 5)), tail)
        if r < 0.70:                         # frames: right or wrong row count, depth, missing
            n = rng.choice([14, 14, 14, 9, 13, 15, 1, 64, 65])
            bits = 16 if rng.random() < 0.2 else 8
            codes = [None if rng.random() < 0.05 else rng.randrange(1 << bits) for _ in range(n)]
            if rng.random() < 0.01:
                codes = [None] * n           # torque off
            return self.enc.frame(codes, bits)
        if r < 0.78:                         # other valid packets
            k = rng.randrange(4)
            if k == 0:
                return self.enc.heartbeat(1, 2, 3, 1, rng.getrandbits(32))
            if k == 1:
                return self.enc.request_header(rng.getrandbits(32))
            if k == 2:
                return self.enc.hello()
            return self.enc.packet("DOWNLOAD_LIST", (rng.randrange(65536),))
        if r < 0.90:                         # a damaged packet (or a truncated one)
            w = bytearray(self.enc.frame([rng.randrange(256) for _ in range(14)]))
            if rng.random() < 0.5:
                w[rng.randrange(len(w) - 1)] = rng.randrange(256)
            else:
                w = w[:rng.randrange(1, len(w))]
            return bytes(w)
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))   # garbage


def fuzz(packets=10000, seed=1, action=None, stop_every=200):
    """Feed `packets` fuzzed packets with stops; returns the counts described above."""
    rng = random.Random(seed ^ 0x5EED)
    gen = _Gen(seed)
    res = {"packets": 0, "exits": 0, "errors": 0, "stops": 0, "failsafe_late": 0,
           "pulse_out_of_limits": 0, "too_fast": 0, "polls": 0, "frames_used": 0,
           "wrong_rows": 0, "bad_headers": 0, "dropped": 0, "released": 0, "headers": 0,
           "never_headed_failsafes": 0}
    actions = ("hold", "home", "release")
    while res["packets"] < packets:
        # a receiver (re)boots: a fresh board, some action, then a burst of traffic and a stop
        board = Board(rxbuf=1024)
        cfg = config(action or actions[rng.randrange(3)])
        rx = Receiver(cfg, board, uart=board.UART(0))
        bank = rx.bank
        lo, hi = bank.min_ns, bank.max_ns
        vel = bank.vel_ns_per_ms
        now = rng.randrange(1 << 20)
        last = [p.duty_ns() for p in board.pwms]
        n_burst = rng.randrange(1, stop_every)
        for j in range(n_burst + 1):
            if j < n_burst:
                data = b"".join(gen.packet() for _ in range(rng.randrange(1, 4)))
                res["packets"] += 1
                # the UART ring holds rxbuf bytes; the firmware drains it every poll
                for i in range(0, len(data), 512):
                    board.uart.inject(data[i:i + 512])
                    _poll(rx, now, res)
                dt = rng.choice([0, 1, POLL_MS, 33])
            else:
                # the stream stops: poll every POLL_MS until timeout_ms + 3 polls have passed
                res["stops"] += 1
                since = rx.last_frame_ms if rx.last_frame_ms is not None else rx.start_ms
                engaged = now if rx.state == pk.STATE_FAILSAFE else None
                end = now + TIMEOUT_MS + 3 * POLL_MS
                while now < end:
                    now += POLL_MS
                    _poll(rx, now, res)
                    _check(board, lo, hi, vel, last, POLL_MS, res)
                    if engaged is None and rx.state == pk.STATE_FAILSAFE:
                        engaged = now
                # engaged at the first poll after timeout_ms without a valid frame
                if engaged is None or (engaged - since > TIMEOUT_MS + POLL_MS and engaged != end - TIMEOUT_MS - 3 * POLL_MS):
                    res["failsafe_late"] += 1
                if rx.headers == 0 and rx.state == pk.STATE_FAILSAFE:
                    res["never_headed_failsafes"] += 1
                break
            now += dt
            _poll(rx, now, res)
            _check(board, lo, hi, vel, last, dt, res)
        c = rx.counters()
        res["errors"] += c["errors"]
        for k in ("wrong_rows", "bad_headers", "dropped", "released", "headers"):
            res[k] += c[k]
        res["frames_used"] += c["frames"] - c["wrong_rows"] - c["no_map"]
    return res


def _poll(rx, now, res):
    res["polls"] += 1
    try:
        rx.poll(now)
    except BaseException:
        res["exits"] += 1


def _check(board, lo, hi, vel, last, dt, res):
    # dt: ms since the previous check; the bank clamps its own dt to 100 ms
    d = min(dt, 100)
    for i, p in enumerate(board.pwms):
        v = p.duty_ns()
        if v != 0 and not lo[i] <= v <= hi[i]:
            res["pulse_out_of_limits"] += 1
        if v != 0 and last[i] != 0 and abs(v - last[i]) > vel[i] * d:
            res["too_fast"] += 1
        last[i] = v
