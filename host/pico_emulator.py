"""The emulated Pico (rp2040js + MicroPython's rp2 port): where it is, what fits the board, live runs.

    from host import pico_emulator as pe
    where = pe.locate()                   # OSError naming what is missing (node, npm, UF2, ROM)
    pe.check_board(cfg)                   # FormatError if receiver.json does not fit an RPI_PICO
    with pe.LivePico(where, image_path, baud=115200, on_pulse=f, on_tx=g) as pico:
        pico.write(wire_bytes)            # into UART0, paced at the baud rate in emulated time

The Node side is tools/mpy/pico.mjs (npm rp2040js + uf2, installed by tools/setup_mpy.sh); the
firmware is ../shared/firmware/rp2040/ beside the repo. MOTIONSTAFF_MPY_DIR and
MOTIONSTAFF_RP2040_DIR point elsewhere (an installed package has neither beside it).
"""

import hashlib
import os
import shutil
import struct
import subprocess
import threading

from protocol.errors import FormatError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UF2_NAME = "RPI_PICO-v1.27.0.uf2"
ROM_NAME = "bootrom-b1.bin"
ROM_SHA256 = "90b31e108faedfa6bbcfcc33ba05dac61e645108cfbbdc385f8dafc71fde44ae"
UF2_MAGIC = (0x0A324655, 0x9E5D5157, 0x0AB16F30)
# GPIOs on the Pico's header (GP23-25 and GP29 are the SMPS, VBUS sense, LED and VSYS/3 ADC)
HEADER_PINS = tuple(range(0, 23)) + (26, 27, 28)
UART_PINS = {0: ((0, 12, 16, 28), (1, 13, 17)), 1: ((4, 8, 20), (5, 9, 21))}
PWM_OUTPUTS = 16   # 8 slices x 2 channels; GPn drives slice (n >> 1) & 7, channel n & 1


class Where:
    def __init__(self, node, script, uf2, bootrom):
        self.node, self.script, self.uf2, self.bootrom = node, script, uf2, bootrom

    def argv(self):
        return [self.node, self.script, "--uf2", self.uf2, "--bootrom", self.bootrom]


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        raise OSError("%s: %s cannot be read" % (path, what))


def _check_uf2(path):
    data = _read(path, "the MicroPython UF2")
    if len(data) < 512 * 100 or len(data) % 512:
        raise OSError("%s: not a MicroPython UF2 image (%d bytes)" % (path, len(data)))
    for off in range(0, len(data), 512):
        m0, m1 = struct.unpack_from("<II", data, off)
        (m2,) = struct.unpack_from("<I", data, off + 508)
        if (m0, m1, m2) != UF2_MAGIC:
            raise OSError("%s: UF2 block %d is corrupt (bad magic)" % (path, off // 512))


def _check_rom(path):
    data = _read(path, "the RP2040 boot ROM")
    if hashlib.sha256(data).hexdigest() != ROM_SHA256:
        raise OSError("%s: not the RP2040 B1 boot ROM (%d bytes, wrong checksum)" % (path, len(data)))


def _shared_firmware():
    # ../shared/firmware/rp2040 beside the repo (a git worktree may sit one level deeper)
    up = REPO
    for _ in range(3):
        up = os.path.dirname(up)
        d = os.path.join(up, "shared", "firmware", "rp2040")
        if os.path.isdir(d):
            return d
    return os.path.join(os.path.dirname(REPO), "shared", "firmware", "rp2040")


def locate(firmware_dir=None):
    """Where node, pico.mjs and the firmware are; OSError with one line naming what is missing."""
    node = shutil.which("node")
    if node is None:
        raise OSError("emulate pico: Node.js is not installed (node not on PATH; apt-get install nodejs npm)")
    mpy = os.environ.get("MOTIONSTAFF_MPY_DIR") or os.path.join(REPO, "tools", "mpy")
    script = os.path.join(mpy, "pico.mjs")
    if not os.path.isfile(script):
        raise OSError("emulate pico: %s is missing (a source checkout's tools/mpy, or set "
                      "MOTIONSTAFF_MPY_DIR)" % script)
    for pkg in ("rp2040js", "uf2"):
        if not os.path.isfile(os.path.join(mpy, "node_modules", pkg, "package.json")):
            raise OSError("emulate pico: npm package %s is not installed in %s (run tools/setup_mpy.sh)"
                          % (pkg, mpy))
    fw = firmware_dir or os.environ.get("MOTIONSTAFF_RP2040_DIR") or _shared_firmware()
    uf2 = os.path.join(fw, UF2_NAME)
    rom = os.path.join(fw, ROM_NAME)
    _check_uf2(uf2)
    _check_rom(rom)
    return Where(node, script, uf2, rom)


def pwm_channel(pin):
    """(slice, channel) of a GPIO's PWM output on the RP2040."""
    return (pin >> 1) & 7, pin & 1


def check_board(cfg, where="receiver.json"):
    """FormatError if a (checked) receiver config does not fit a Raspberry Pi Pico."""
    servos = cfg["servos"]
    if len(servos) > PWM_OUTPUTS:
        raise FormatError("%s: %d servos, but the RP2040 has %d PWM outputs (8 slices x 2 channels)"
                          % (where, len(servos), PWM_OUTPUTS))
    u = cfg["uart"]
    if u["id"] not in UART_PINS:
        raise FormatError("%s: uart id %d: the RP2040 has UART0 and UART1" % (where, u["id"]))
    txs, rxs = UART_PINS[u["id"]]
    if u["tx"] not in txs or u["rx"] not in rxs:
        raise FormatError("%s: UART%d cannot use tx GP%d / rx GP%d (tx: %s; rx: %s)"
                          % (where, u["id"], u["tx"], u["rx"], txs, rxs))
    used = {}
    for i, s in enumerate(servos):
        pin = s["pin"]
        if pin not in HEADER_PINS:
            raise FormatError("%s: servos[%d] %r: GP%d is not a pin on the Pico's header"
                              % (where, i, s.get("name"), pin))
        if pin in (u["tx"], u["rx"]):
            raise FormatError("%s: servos[%d] %r: GP%d is the link UART's pin" % (where, i, s.get("name"), pin))
        ch = pwm_channel(pin)
        if ch in used:
            raise FormatError("%s: servos[%d] GP%d and servos[%d] GP%d share PWM slice %d channel %s "
                              "(one duty for both)" % (where, used[ch][0], used[ch][1], i, pin, ch[0],
                                                       "AB"[ch[1]]))
        used[ch] = (i, pin)
    return cfg


class LivePico:
    """pico.mjs --live: UART0 in real time; pulse changes and UART0 output through callbacks."""

    def __init__(self, where, image_path, baud=115200, on_pulse=None, on_tx=None, on_usb=None):
        argv = where.argv() + ["--fs", image_path, "--live", "--baud", str(int(baud))]
        self.on_pulse, self.on_tx, self.on_usb = on_pulse, on_tx, on_usb
        self.usb = bytearray()
        self.lag_ms = 0
        self.ready = threading.Event()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.err = b""
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        self._e = threading.Thread(target=self._read_err, daemon=True)
        self._e.start()

    def _read_err(self):
        self.err = self.p.stderr.read()

    def _read(self):
        for line in self.p.stdout:
            kind, _, rest = line.decode("ascii", "replace").strip().partition(" ")
            if kind == "pulse" and self.on_pulse:
                t, pin, w = rest.split()
                self.on_pulse(float(t), int(pin), float(w))
            elif kind == "tx" and self.on_tx:
                self.on_tx(bytes.fromhex(rest))
            elif kind == "usb":
                self.usb += bytes.fromhex(rest)
                if self.on_usb:
                    self.on_usb(bytes.fromhex(rest))
            elif kind == "lag":
                self.lag_ms = int(rest)
            elif kind == "ready":
                self.baud = int(rest)
                self.ready.set()

    def write(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def alive(self):
        return self.p.poll() is None

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self._t.join(timeout=5)
        self._e.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def add_arguments(p):
    """`emulate pico` options (only those no other emulator has added already)."""
    have = set(s for a in p._actions for s in a.option_strings)
    if "--robot" not in have:
        p.add_argument("--robot", help="pico: robot description (name or JSON) to make receiver.json from")
    if "--mapping" not in have:
        p.add_argument("--mapping", help="pico: which of the robot's row mappings to use")
    if "--config" not in have:
        p.add_argument("--config", help="pico: a ready receiver.json")
    if "--firmware" not in have:
        p.add_argument("--firmware", help="pico: folder with the MicroPython UF2 and the boot ROM "
                                          "(default ../shared/firmware/rp2040 beside the repo)")


def receiver_config(args):
    """The checked receiver.json dict of `emulate pico` (--config or --robot), fitted to the board."""
    from device.firmware import config

    if getattr(args, "config", None):
        cfg = config.load(args.config)
        name = args.config
    elif getattr(args, "robot", None):
        from host.commands import deploy

        cfg = deploy.receiver_config(args.robot, getattr(args, "mapping", None))
        name = "robot %s" % args.robot
    else:
        raise FormatError("emulate pico: give --robot NAME or --config receiver.json")
    return check_board(cfg, name)


class _Bridge:
    """PtyServer's emulator: bytes from the pty go to the Pico's UART0 (replies come on_tx)."""
    NAME = "pico"

    def __init__(self):
        self.pico = None

    def feed(self, data):
        self.pico.write(data)
        return b""


def serve(args, stop):
    """Run `emulate pico` until stop (a threading.Event) is set; returns (pulse rows, pico)."""
    from device.servo.emulate.pty import PtyServer
    from host import pico_image

    where = locate(getattr(args, "firmware", None))
    cfg = receiver_config(args)
    from host.commands import deploy

    img = pico_image.littlefs_image(pico_image.board_files(deploy.plan(True), cfg))
    import tempfile

    log = open(args.log, "w") if args.log else None
    if log is not None:
        log.write("time_s,pin,pulse_us\n")
    rows = [0]
    bridge = _Bridge()
    srv = PtyServer(bridge)

    def on_pulse(t_ns, pin, w_ns):
        rows[0] += 1
        if log is not None:
            log.write("%.6f,%d,%.3f\n" % (t_ns / 1e9, pin, w_ns / 1000.0))
            log.flush()

    def on_tx(data):
        if srv.master is not None:
            try:
                os.write(srv.master, data)
            except OSError:
                pass

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fs.img")
        with open(path, "wb") as f:
            f.write(img)
        pico = LivePico(where, path, cfg["uart"]["baud"], on_pulse=on_pulse, on_tx=on_tx)
        bridge.pico = pico
        try:
            # the pty appears once the firmware has opened its UART (boot + imports: ~0.3 s)
            while not pico.ready.wait(0.05):
                if stop.is_set():
                    return rows[0], pico
                if not pico.alive():
                    raise OSError("emulate pico: the emulator stopped during boot: %s"
                                  % pico.err.decode("utf-8", "replace").strip()[-300:])
            srv.start()
            print(srv.path, flush=True)
            while not stop.wait(0.05):
                if not pico.alive():
                    raise OSError("emulate pico: the emulator stopped: %s"
                                  % pico.err.decode("utf-8", "replace").strip()[-300:])
        finally:
            srv.stop()
            pico.close()
            if log is not None:
                log.close()
    return rows[0], pico
