// Boot the real MicroPython rp2 port (RPI_PICO UF2) on an emulated RP2040 (npm rp2040js) with a
// LittleFS image at the port's filesystem offset; feed UART0 at the line's baud rate in emulated
// time; record every pin's pulse widths from GPIO edges in emulated nanoseconds.
//
//   node tools/mpy/pico.mjs --uf2 U --bootrom B --fs IMG --job job.json      # batch: JSON out
//   node tools/mpy/pico.mjs --uf2 U --bootrom B --fs IMG --live [--baud N]   # stdin -> UART0
//
// job.json: {"uart": [[t_ns, "hex"], ...], "baud": 115200, "until_ns": N, "stop_text": "...",
//            "usb": [[t_ns, "text"], ...], "pins": [0, 1, ...]}. Bytes of a chunk leave the host's
// wire one after another, 10 bits each at `baud`, starting at t_ns (or when the previous chunk is
// done); a byte reaches the RX FIFO at its stop bit, and is lost (overrun) when the 32-byte FIFO
// is full, as on the chip. Batch output (stdout, one JSON object): {"usb": text printed over USB
// CDC, "tx": [[t_ns, "hex"]] UART0 bytes from the firmware, "pulses": [[t_ns, pin, width_ns]]
// one row per pulse-width change (width 0: the pulse that should have risen at t_ns did not),
// "end_ns", "wall_ms", "overruns", "stopped": "until" | "text"}.
// Live mode: stdin bytes go to UART0 (paced), emulated time follows wall time, stdout gets lines
// "tx HEX", "pulse T_NS PIN WIDTH_NS", "usb HEX", "lag MS" (emulation behind wall time).
//
// Work-around (rp2040js 1.4.1 bug, see ../shared/firmware/rp2040/README.md): the UART model sets
// its TX interrupt bit on every interrupt check, so once MicroPython enables the TX interrupt it
// is raised again each time the firmware clears it and the main program never runs. Here the
// UART raises only interruptStatus & interruptMask, and sets the TX bit only when a byte is
// written to the data register (the FIFO then drains at once, as the model has no TX FIFO).
import fs from "node:fs";
import { ConsoleLogger, LogLevel, Simulator, USBCDC } from "rp2040js";
import { decodeBlock } from "uf2";

const FLASH_FS_OFFSET = 0xa0000; // rp2 port, RPI_PICO: 2 MB flash, 1408 KB filesystem from here
const CYCLE_NS = 8; // 125 MHz
const UARTTXINTR = 1 << 5;

function die(msg) {
  process.stderr.write("pico: " + msg + "\n");
  process.exit(2);
}

function parseArgs(argv) {
  const o = { uf2: null, bootrom: null, fs: null, job: null, live: false, baud: 115200 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i] ?? die(a + " needs a value");
    if (a === "--uf2") o.uf2 = v();
    else if (a === "--bootrom") o.bootrom = v();
    else if (a === "--fs") o.fs = v();
    else if (a === "--job") o.job = v();
    else if (a === "--live") o.live = true;
    else if (a === "--baud") o.baud = parseInt(v(), 10);
    else die("unexpected argument " + a);
  }
  if (!o.uf2 || !o.bootrom) die("--uf2 and --bootrom are required");
  if (!o.live && !o.job) die("give --job FILE or --live");
  return o;
}

function readFile(path, what) {
  try {
    return fs.readFileSync(path);
  } catch (e) {
    die(what + " " + path + ": cannot be read");
  }
}

export function makeBoard(o) {
  const sim = new Simulator();
  const mcu = sim.rp2040;
  mcu.logger = new ConsoleLogger(LogLevel.Error);
  const rom = readFile(o.bootrom, "boot ROM");
  if (rom.length !== 16384) die("boot ROM " + o.bootrom + ": " + rom.length + " bytes, not 16384");
  mcu.loadBootrom(new Uint32Array(rom.buffer, rom.byteOffset, rom.length / 4));
  const img = readFile(o.uf2, "UF2");
  if (img.length === 0 || img.length % 512 !== 0) die("UF2 " + o.uf2 + ": not a UF2 image (size " + img.length + ")");
  let blocks = 0;
  for (let off = 0; off < img.length; off += 512) {
    let b;
    try {
      b = decodeBlock(new Uint8Array(img.buffer, img.byteOffset + off, 512));
    } catch (e) {
      die("UF2 " + o.uf2 + ": block " + off / 512 + " is corrupt (" + e.message + ")");
    }
    const at = b.flashAddress - 0x10000000;
    if (at < 0 || at + b.payload.length > FLASH_FS_OFFSET) die("UF2 " + o.uf2 + ": block outside the firmware area");
    mcu.flash.set(b.payload, at);
    blocks++;
  }
  if (blocks < 100) die("UF2 " + o.uf2 + ": only " + blocks + " blocks, not a MicroPython image");
  if (o.fs) {
    const lfs = readFile(o.fs, "filesystem image");
    if (lfs.length > 2 * 1024 * 1024 - FLASH_FS_OFFSET) die("filesystem image " + o.fs + ": larger than the Pico's 1408 KB");
    mcu.flash.set(lfs, FLASH_FS_OFFSET);
  }
  // the UART TX interrupt work-around (see the top of this file)
  for (const u of mcu.uart) {
    u.checkInterrupts = function () {
      this.rp2040.setInterrupt(this.irq, !!(this.interruptStatus & this.interruptMask));
    };
    const write = u.writeUint32.bind(u);
    u.writeUint32 = function (offset, value) {
      write(offset, value);
      if (offset === 0) {
        this.interruptStatus |= UARTTXINTR;
        this.checkInterrupts();
      }
    };
  }
  if (process.env.PICO_IRQ_STATS) {
    const counts = {};
    const entry = mcu.core.exceptionEntry.bind(mcu.core);
    mcu.core.exceptionEntry = (n) => { counts[n] = (counts[n] || 0) + 1; entry(n); };
    process.on("exit", () => process.stderr.write("exceptions " + JSON.stringify(counts) + "\n"));
  }
  mcu.core.PC = 0x10000000;
  return { sim, mcu, clock: sim.clock };
}

// Emulate until the clock reaches target_ns (or stop() returns true, checked between slices).
export const busy = { ns: 0 }; // emulated time the core spent executing (not waiting)
function runUntil(b, targetNs) {
  const { mcu, clock } = b;
  const core = mcu.core;
  while (clock.nanos < targetNs) {
    if (core.waiting) {
      const d = clock.nanosToNextAlarm;
      if (d <= 0 || clock.nanos + d > targetNs) clock.tick(targetNs - clock.nanos);
      else clock.tick(d);
    } else {
      const ns = core.executeInstruction() * CYCLE_NS;
      busy.ns += ns;
      clock.tick(ns);
    }
  }
}

// UART0 RX at the line rate: a queue of bytes, each entering the FIFO at its stop bit.
class Line {
  constructor(b, baud) {
    this.b = b;
    this.byteNs = Math.round(10e9 / baud);
    this.q = [];
    this.busyUntil = 0;
    this.overruns = 0;
    this.alarm = b.clock.createAlarm(() => this.tick());
    this.scheduled = false;
  }
  push(tNs, bytes) {
    const start = Math.max(tNs, this.busyUntil, this.b.clock.nanos);
    for (let i = 0; i < bytes.length; i++) this.q.push([start + (i + 1) * this.byteNs, bytes[i]]);
    this.busyUntil = start + bytes.length * this.byteNs;
    this.arm();
  }
  arm() {
    if (!this.q.length || this.scheduled) return;
    this.scheduled = true;
    this.alarm.schedule(Math.max(0, this.q[0][0] - this.b.clock.nanos));
  }
  tick() {
    this.scheduled = false;
    const u = this.b.mcu.uart[0];
    while (this.q.length && this.q[0][0] <= this.b.clock.nanos) {
      const [, v] = this.q.shift();
      if (u.rxFIFO.full) this.overruns++;
      else u.feedByte(v);
    }
    this.arm();
  }
}

// Pulse widths per pin from GPIO edges; a change of width (or a missing pulse) is one event.
class Pulses {
  constructor(b, onEvent) {
    this.events = [];
    this.onEvent = onEvent || ((e) => this.events.push(e));
    this.state = [];
    for (const pin of b.mcu.gpio) {
      const s = { rise: -1, width: -1, period: 0 };
      this.state[pin.index] = s;
      pin.addListener((v) => {
        const t = b.clock.nanos;
        if (v === 1) {
          if (s.rise >= 0) s.period = t - s.rise;
          s.rise = t;
        } else if (v === 0 && s.rise >= 0) {
          const w = t - s.rise;
          if (w !== s.width) {
            s.width = w;
            this.onEvent([s.rise, pin.index, w]);
          }
        }
      });
    }
  }
  // a pin that has pulsed and missed two periods: report width 0 from the first missing rise
  check(nowNs) {
    for (let i = 0; i < this.state.length; i++) {
      const s = this.state[i];
      if (s.width > 0 && s.period > 0 && nowNs - s.rise > 2 * s.period) {
        s.width = 0;
        this.onEvent([s.rise + s.period, i, 0]);
        s.rise = -1;
      }
    }
  }
}

// USB CDC (the REPL, print). Work-around 2: rp2040js's CDC host answers every OUT transfer the
// device arms at once, with zero bytes when it has nothing to send, so the device takes an
// interrupt and re-arms without end (~33,000 USB interrupts per emulated second, most of the
// CPU). A real host NAKs until it has data: here a read waits until there is something to send.
function usbPort(b, onText) {
  const cdc = new USBCDC(b.mcu.usbCtrl);
  let waiting = null; // size of the OUT transfer the device has armed, while we have nothing
  const complete = (size) => {
    const buf = new Uint8Array(Math.min(size, cdc.txFIFO.itemCount));
    for (let i = 0; i < buf.length; i++) buf[i] = cdc.txFIFO.pull();
    cdc.usb.endpointReadDone(cdc.outEndpoint, buf);
  };
  cdc.usb.onEndpointRead = (endpoint, size) => {
    if (endpoint !== cdc.outEndpoint) return;
    if (cdc.txFIFO.empty) waiting = size;
    else complete(size);
  };
  const pending = [];
  cdc.onSerialData = (buf) => onText(Buffer.from(buf));
  return {
    send(text) { for (const c of Buffer.from(text, "latin1")) pending.push(c); },
    // at most 64 bytes per call: the device's CDC input buffer drops what overflows it
    pump() {
      for (let k = 0; k < 64 && pending.length && !cdc.txFIFO.full; k++) cdc.sendSerialByte(pending.shift());
      if (waiting !== null && !cdc.txFIFO.empty) { const n = waiting; waiting = null; complete(n); }
    },
    get idle() { return pending.length === 0; },
  };
}

function batch(o) {
  let job;
  try {
    job = JSON.parse(fs.readFileSync(o.job, "utf8"));
  } catch (e) {
    die("job " + o.job + ": " + e.message);
  }
  const t0 = Date.now();
  const b = makeBoard(o);
  const line = new Line(b, job.baud || o.baud);
  const pulses = new Pulses(b);
  const tx = [];
  b.mcu.uart[0].onByte = (v) => {
    const t = b.clock.nanos;
    const last = tx[tx.length - 1];
    if (last && last[0] === t) last[1].push(v);
    else tx.push([t, [v]]);
  };
  let usbText = "";
  const stopTexts = [].concat(job.stop_text || []);
  const usb = usbPort(b, (buf) => { usbText += buf.toString("latin1"); });
  const usbIn = (job.usb || []).slice().sort((x, y) => x[0] - y[0]);
  const uartIn = (job.uart || []).slice().sort((x, y) => x[0] - y[0]);
  for (const [t, hex] of uartIn) line.push(t, Buffer.from(hex, "hex"));
  const until = job.until_ns || 60e9;
  const SLICE = 100000; // 100 us of emulated time between checks
  let stopped = "until";
  while (b.clock.nanos < until) {
    while (usbIn.length && usbIn[0][0] <= b.clock.nanos) usb.send(usbIn.shift()[1]);
    usb.pump();
    runUntil(b, Math.min(until, b.clock.nanos + SLICE));
    pulses.check(b.clock.nanos);
    if (stopTexts.some((t) => usbText.indexOf(t) >= 0)) { stopped = "text"; break; }
  }
  const out = {
    usb: usbText, tx: tx.map(([t, v]) => [t, Buffer.from(v).toString("hex")]), pulses: pulses.events,
    end_ns: b.clock.nanos, busy_ns: busy.ns, wall_ms: Date.now() - t0, overruns: line.overruns, stopped,
  };
  process.stdout.write(JSON.stringify(out) + "\n");
}

function live(o) {
  const b = makeBoard(o);
  const line = new Line(b, o.baud);
  const w = (s) => process.stdout.write(s + "\n");
  const pulses = new Pulses(b, (e) => w("pulse " + e[0] + " " + e[1] + " " + e[2]));
  let txBuf = [];
  b.mcu.uart[0].onByte = (v) => txBuf.push(v);
  usbPort(b, (buf) => w("usb " + buf.toString("hex")));
  // "ready BAUD": the firmware has set up UART0 (bytes sent before that are lost, as on a board).
  // From then on emulated time is wall time since ready + the emulated time at ready: a byte is
  // put on the line at its wall-clock arrival, so the host's spacing survives when the emulation
  // falls behind (it then runs late, by the "lag" it reports).
  const wall = () => Number(process.hrtime.bigint());
  let offset = wall(); // wall ns - emulated ns
  let ready = false;
  b.mcu.uart[0].onBaudRateChange = (baud) => {
    if (!ready && b.mcu.uart[0].intDivisor) {
      ready = true;
      offset = wall() - b.clock.nanos;
      w("ready " + baud);
    }
  };
  process.stdin.on("data", (d) => line.push(ready ? wall() - offset : b.clock.nanos, d));
  process.stdin.on("end", () => process.exit(0));
  let lagReported = 0;
  const step = () => {
    const target = wall() - offset;
    // at most 2 ms of emulated time per turn, so bytes from stdin are stamped promptly
    runUntil(b, Math.min(target, b.clock.nanos + 2e6));
    pulses.check(b.clock.nanos);
    if (txBuf.length) { w("tx " + Buffer.from(txBuf).toString("hex")); txBuf = []; }
    const lagMs = Math.floor((target - b.clock.nanos) / 1e6);
    if (ready && lagMs >= lagReported + 100) { lagReported = lagMs; w("lag " + lagMs); }
    setTimeout(step, b.clock.nanos >= target ? 1 : 0);
  };
  step();
}

const o = parseArgs(process.argv.slice(2));
if (o.live) live(o);
else batch(o);
