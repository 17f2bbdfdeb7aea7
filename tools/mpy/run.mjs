// Run a script under the MicroPython WebAssembly port (npm @micropython/micropython-webassembly-pyscript
// 1.27) with motionstaff's MicroPython part (tools/mpy/manifest.json) in its filesystem under /lib.
//
//   node tools/mpy/run.mjs script.py                 # one shot: exit 0, or 1 on any exception
//   node tools/mpy/run.mjs --file sim/machine.py=tools/mpy/sim_machine.py - < script.py
//   node tools/mpy/run.mjs --serve                   # JSON lines on stdin -> JSON lines on stdout
//
// One shot: the script's stdout is passed through; an uncaught exception prints its traceback on
// stderr and exits 1; sys.exit(n) exits n. --file DEST=SRC adds a file (DEST relative to /lib).
// Serve mode: each request {"id", "code", "name"?, "fresh"?} is run in a fresh globals dict and
// answered {"id", "ok", "stdout", "error", "type"}; "fresh" first forgets our imported modules.
import { loadMicroPython } from "@micropython/micropython-webassembly-pyscript";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));

function usage(msg) {
  process.stderr.write("mpy run: " + msg + "\nusage: node run.mjs [--repo DIR] [--heap BYTES] " +
    "[--file DEST=SRC]... [--no-manifest] (SCRIPT.py | - | --serve)\n");
  process.exit(2);
}

function listPy(dir, out) {
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.statSync(p);
    if (st.isDirectory()) {
      if (name !== "__pycache__" && !name.startsWith(".")) listPy(p, out);
    } else if (name.endsWith(".py")) {
      out.push(p);
    }
  }
  return out;
}

// The manifest: {"paths": [files or folders, relative to the repo], "exclude": [files]}
export function manifestFiles(repo) {
  const man = JSON.parse(fs.readFileSync(path.join(HERE, "manifest.json"), "utf8"));
  const exclude = new Set((man.exclude || []).map((p) => path.normalize(p)));
  const files = [];
  for (const rel of man.paths) {
    const abs = path.join(repo, rel);
    if (!fs.existsSync(abs)) continue; // a module another part has not written yet
    const found = fs.statSync(abs).isDirectory() ? listPy(abs, []) : [abs];
    for (const f of found) {
      const r = path.relative(repo, f);
      if (!exclude.has(path.normalize(r))) files.push(r);
    }
  }
  return files;
}

function parseArgs(argv) {
  const o = { repo: path.resolve(HERE, "..", ".."), heap: 64 * 1024 * 1024, files: [],
              manifest: true, script: null, serve: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--repo") o.repo = path.resolve(argv[++i] || usage("--repo needs a folder"));
    else if (a === "--heap") o.heap = parseInt(argv[++i], 10) || usage("--heap needs bytes");
    else if (a === "--file") {
      const v = argv[++i] || usage("--file needs DEST=SRC");
      const eq = v.indexOf("=");
      if (eq <= 0) usage("--file needs DEST=SRC, not " + v);
      o.files.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (a === "--no-manifest") o.manifest = false;
    else if (a === "--serve") o.serve = true;
    else if (o.script === null) o.script = a;
    else usage("unexpected argument " + a);
  }
  if (!o.serve && o.script === null) usage("no script given");
  return o;
}

function mkdirFor(FS, file) {
  const dir = path.posix.dirname(file);
  if (dir && dir !== "/") FS.mkdirTree(dir);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let chunks = [];
  const mp = await loadMicroPython({
    heapsize: o.heap,
    linebuffer: false,
    stdout: (b) => { chunks.push(Buffer.from(b)); },
    stderr: (b) => { chunks.push(Buffer.from(b)); },
  });
  const take = () => { const s = Buffer.concat(chunks).toString("utf8"); chunks = []; return s; };
  const load = [];
  if (o.manifest) for (const rel of manifestFiles(o.repo)) load.push([rel, path.join(o.repo, rel)]);
  for (const [dest, src] of o.files) load.push([dest, path.resolve(src)]);
  for (const [dest, src] of load) {
    const target = "/lib/" + dest.split(path.sep).join("/");
    mkdirFor(mp.FS, target);
    mp.FS.writeFile(target, fs.readFileSync(src));
  }
  mp.FS.mkdirTree("/work");
  mp.FS.chdir("/work");
  // forget our packages between serve requests when asked ("fresh": true)
  const FORGET = "import sys\nfor _k in list(sys.modules):\n" +
    "    if _k.split('.')[0] in ('protocol', 'device', 'machine', 'sim', 'golden_check', 'fwtest'):\n" +
    "        del sys.modules[_k]\n";
  const runCode = (code, name) => {
    mp.FS.writeFile("/work/.request.py", code);
    // a script that dies with the heap locked (micropython.heap_lock) must not hang the runner
    mp.runPython(
      "try:\n" +
      "    exec(compile(open('/work/.request.py').read(), " + JSON.stringify(name) + ", 'exec'), " +
      "{'__name__': '__main__'})\n" +
      "finally:\n" +
      "    import micropython as _mp\n" +
      "    _mp.heap_lock()\n" +
      "    while _mp.heap_unlock():\n" +
      "        pass\n");
  };

  if (!o.serve) {
    const code = o.script === "-" ? fs.readFileSync(0, "utf8") : fs.readFileSync(o.script, "utf8");
    let status = 0;
    try {
      runCode(code, o.script === "-" ? "<stdin>" : o.script);
    } catch (e) {
      if (e && e.type === "SystemExit") {
        const m = /SystemExit:?\s*(\S*)\s*$/.exec(String(e.message).trim());
        status = m && m[1] !== "" ? (parseInt(m[1], 10) || (m[1] === "0" ? 0 : 1)) : 0;
      } else {
        process.stdout.write(take());
        process.stderr.write(e && e.message ? e.message : String(e));
        process.stderr.write("\n");
        process.exit(1);
      }
    }
    process.stdout.write(take());
    process.exit(status);
  }

  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let req;
    try { req = JSON.parse(line); } catch (e) { req = { id: null, code: "raise ValueError('bad request')" }; }
    const rep = { id: req.id, ok: true, stdout: "", error: "", type: "" };
    try {
      if (req.fresh) mp.runPython(FORGET);
      runCode(req.code || "", req.name || "<request>");
    } catch (e) {
      const type = (e && e.type) || "Error";
      const msg = (e && e.message) || String(e);
      if (type === "SystemExit" && /SystemExit:?\s*0?\s*$/.test(msg.trim())) {
        rep.ok = true;
      } else {
        rep.ok = false; rep.type = type; rep.error = msg;
      }
    }
    rep.stdout = take();
    process.stdout.write(JSON.stringify(rep) + "\n");
  }
}

main().catch((e) => { process.stderr.write("mpy run: " + (e && e.stack ? e.stack : e) + "\n"); process.exit(3); });
