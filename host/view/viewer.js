// motionstaff viewer: bodies as line segments from /body/N.json, drawn on a 2D canvas with our
// own orbit projection (no libraries, nothing from the internet); the staff image under it.
"use strict";
const V = window.viewer = {
  bodies: [], frame: 0, pos: 0, playing: false, dir: 1, speed: 1, az: -60, el: 15, zoom: 1,
  ready: false, frames: 0, fps: 30, draws: 0,
};
const $ = (id) => document.getElementById(id);
const scene = $("scene"), staffCv = $("staff");
const rad = Math.PI / 180;

function fit(cv) {
  const r = cv.getBoundingClientRect();
  const w = Math.max(1, Math.round(r.width)), h = Math.max(1, Math.round(r.height));
  if (cv.width !== w || cv.height !== h) { cv.width = w; cv.height = h; }
}

// world (x, y, z; Z up) -> view: turn by azimuth about Z, then tilt by elevation
function project(p, cx, cy, s) {
  const ca = Math.cos(V.az * rad), sa = Math.sin(V.az * rad);
  const ce = Math.cos(V.el * rad), se = Math.sin(V.el * rad);
  const x1 = ca * p[0] + sa * p[1], y1 = -sa * p[0] + ca * p[1];
  const depth = ce * y1 + se * p[2], up = -se * y1 + ce * p[2];
  return [cx + s * x1, cy - s * up, depth];
}

function drawBody(ctx, b, f, x0, w, h) {
  const c = [b.centre[3 * f], b.centre[3 * f + 1], b.centre[3 * f + 2]];
  const s = V.zoom * Math.min(w, h) / (2.2 * b.half_m);
  const cx = x0 + w / 2, cy = h / 2;
  ctx.save();
  ctx.beginPath(); ctx.rect(x0, 0, w, h); ctx.clip();
  // floor grid, 0.5 m squares, sliding under a travelling body
  ctx.strokeStyle = "#cfcfcf"; ctx.lineWidth = 1;
  const g = Math.pow(10, Math.round(Math.log10(b.half_m))) / 2, n = 6, ox = c[0] - Math.round(c[0] / g) * g, oy = c[1] - Math.round(c[1] / g) * g;
  for (let i = -n; i <= n; i++) {
    for (const [a, bb] of [[[i * g - ox, -n * g - oy], [i * g - ox, n * g - oy]],
                           [[-n * g - ox, i * g - oy], [n * g - ox, i * g - oy]]]) {
      const p = project([a[0], a[1], b.floor_z - c[2]], cx, cy, s);
      const q = project([bb[0], bb[1], b.floor_z - c[2]], cx, cy, s);
      ctx.beginPath(); ctx.moveTo(p[0], p[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
    }
  }
  // segments, far ones first
  const S = b.shapes, base = f * S * 6, segs = [];
  for (let k = 0; k < S; k++) {
    const o = base + 6 * k, d = b.segments;
    const p = project([d[o] - c[0], d[o + 1] - c[1], d[o + 2] - c[2]], cx, cy, s);
    const q = project([d[o + 3] - c[0], d[o + 4] - c[1], d[o + 5] - c[2]], cx, cy, s);
    segs.push([p, q, (p[2] + q[2]) / 2, k]);
  }
  segs.sort((a, bb) => bb[2] - a[2]);
  ctx.lineCap = "round";
  for (const [p, q, , k] of segs) {
    ctx.strokeStyle = b.colours[k];
    ctx.lineWidth = Math.max(2, 2 * b.radius_m[k] * s * 0.9);
    ctx.beginPath(); ctx.moveTo(p[0], p[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
  }
  ctx.fillStyle = "#333"; ctx.font = "12px system-ui, sans-serif";
  ctx.fillText(b.name, x0 + 8, 16);
  ctx.restore();
}

function drawStaff() {
  fit(staffCv);
  const ctx = staffCv.getContext("2d"), b = V.bodies[0];
  ctx.imageSmoothingEnabled = false;
  ctx.clearRect(0, 0, staffCv.width, staffCv.height);
  if (b && b.img.complete) ctx.drawImage(b.img, 0, 0, staffCv.width, staffCv.height);
  const x = (V.frame + 0.5) / Math.max(1, V.frames) * staffCv.width;
  ctx.strokeStyle = "#ff3030"; ctx.lineWidth = 2;
  ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, staffCv.height); ctx.stroke();
}

function draw() {
  fit(scene);
  const ctx = scene.getContext("2d");
  ctx.fillStyle = "#fdfdfd"; ctx.fillRect(0, 0, scene.width, scene.height);
  const n = V.bodies.length, w = scene.width / Math.max(1, n);
  V.bodies.forEach((b, i) => drawBody(ctx, b, Math.min(V.frame, b.frames - 1), i * w, w, scene.height));
  drawStaff();
  $("frame").textContent = "frame " + V.frame + " / " + (V.frames - 1) + "   t = " +
    (V.frame / V.fps).toFixed(2) + " s" + (V.playing ? (V.dir > 0 ? "  \u25B6" : "  \u25C0") : "");
  $("scrub").value = V.frame;
  V.draws++;
}

function setFrame(f) {
  V.frame = Math.max(0, Math.min(V.frames - 1, Math.round(f)));
  V.pos = V.frame;
  draw();
}

let last = null;
function tick(ts) {
  if (V.playing && last !== null) {
    V.pos += (ts - last) / 1000 * V.fps * V.speed * V.dir;
    if (V.pos > V.frames - 1) V.pos = 0;          // loop
    if (V.pos < 0) V.pos = V.frames - 1;
    const f = Math.floor(V.pos);
    if (f !== V.frame) { V.frame = f; draw(); }
  }
  last = ts;
  requestAnimationFrame(tick);
}

function setPlaying(on) { V.playing = on; $("play").textContent = on ? "Pause" : "Play"; draw(); }

function wire() {
  $("play").onclick = () => setPlaying(!V.playing);
  $("fwd").onclick = () => { V.dir = 1; setPlaying(true); };
  $("back").onclick = () => { V.dir = -1; setPlaying(true); };
  $("stepf").onclick = () => { setPlaying(false); setFrame(V.frame + 1); };
  $("stepb").onclick = () => { setPlaying(false); setFrame(V.frame - 1); };
  $("speed").oninput = (e) => { V.speed = parseFloat(e.target.value); $("speedval").textContent = V.speed.toFixed(1) + "x"; };
  $("zoomin").onclick = () => { V.zoom = Math.min(8, V.zoom * 1.25); draw(); };
  $("zoomout").onclick = () => { V.zoom = Math.max(0.2, V.zoom / 1.25); draw(); };
  $("az").oninput = (e) => { V.az = parseFloat(e.target.value); draw(); };
  $("el").oninput = (e) => { V.el = parseFloat(e.target.value); draw(); };
  $("scrub").oninput = (e) => setFrame(parseInt(e.target.value, 10));
  let drag = null;
  scene.onpointerdown = (e) => { drag = [e.clientX, e.clientY, V.az, V.el]; scene.setPointerCapture(e.pointerId); };
  scene.onpointermove = (e) => {
    if (!drag) return;
    V.az = ((drag[2] - (e.clientX - drag[0]) * 0.5 + 540) % 360) - 180;
    V.el = Math.max(-89, Math.min(89, drag[3] + (e.clientY - drag[1]) * 0.5));
    $("az").value = V.az; $("el").value = V.el; draw();
  };
  scene.onpointerup = () => { drag = null; };
  scene.onwheel = (e) => { e.preventDefault(); V.zoom = Math.max(0.2, Math.min(8, V.zoom * (e.deltaY < 0 ? 1.1 : 1 / 1.1))); draw(); };
  const scrubStaff = (e) => { const r = staffCv.getBoundingClientRect(); setFrame((e.clientX - r.left) / r.width * V.frames - 0.5); };
  let sdrag = false;
  staffCv.onpointerdown = (e) => { sdrag = true; scrubStaff(e); };
  staffCv.onpointermove = (e) => { if (sdrag) scrubStaff(e); };
  staffCv.onpointerup = () => { sdrag = false; };
  window.onkeydown = (e) => {
    if (e.key === " ") { setPlaying(!V.playing); e.preventDefault(); }
    else if (e.key === "ArrowRight") $("stepf").onclick();
    else if (e.key === "ArrowLeft") $("stepb").onclick();
  };
  window.onresize = draw;
}

async function main() {
  const list = await (await fetch("/bodies.json")).json();
  for (const item of list) {
    const b = await (await fetch(item.body)).json();
    b.img = new Image();
    await new Promise((ok) => { b.img.onload = ok; b.img.onerror = ok; b.img.src = item.staff; });
    V.bodies.push(b);
  }
  V.frames = Math.max(...V.bodies.map((b) => b.frames));
  V.fps = V.bodies[0].fps;
  $("scrub").max = V.frames - 1;
  wire();
  draw();
  V.ready = true;
  document.body.dataset.ready = "1";
  requestAnimationFrame(tick);
}
main();
