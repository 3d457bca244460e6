#!/usr/bin/env node
// ws_bench_client.js - load generator for bench/ws: C TLS WebSocket
// connections, each keeping W messages in flight; every message is one
// residual-seed frame of S bytes (lines 1, 3, 5 in turn so fanogate's slots
// resolve); every frame is answered by one status message, matched in order.
// Prints one JSON line: msgs/s (answers per second) and latency percentiles
// (send -> status received) over the measured window after a warm-up.
// Usage: node ws_bench_client.js PORT CA TOKEN FRAME_BYTES CONNS WINDOW WARM_S RUN_S
'use strict';
const fs = require('fs');
const path = require('path');
const WebSocket = require(path.join(__dirname, '..', '..', 'tests', 'node_modules', 'ws'));

const [port, caPath, token, frameBytesS, connsS, windowS, warmS, runS] = process.argv.slice(2);
const frameBytes = Number(frameBytesS), conns = Number(connsS), win = Number(windowS);
const hidden = Math.floor((frameBytes - 18) / 4);
const ca = fs.readFileSync(caPath);

function seedFrame(layer, tok, line) {
  const b = Buffer.alloc(18 + 4 * hidden);
  b.writeUInt16BE(0xAF60 + layer, 0); b.writeUInt32BE(tok, 2); b.writeUInt8(line << 4, 6);
  b.writeUIntBE(8 + 4 * hidden, 7, 3);
  b.writeUInt32LE(0, 10); b.writeUInt32LE(1, 14);
  for (let i = 0; i < hidden; i++) b.writeFloatLE((i % 97) * 0.25 + line, 18 + 4 * i);
  return b;
}

let measuring = false, stopping = false, answered = 0, total = 0, errors = 0;
const lat = [];
const now = () => Number(process.hrtime.bigint()) / 1e3; // microseconds

function startConn(ci) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`wss://localhost:${port}/flow`, { ca, servername: 'localhost',
      headers: { Authorization: 'Bearer ' + token }, perMessageDeflate: false });
    const sent = [];
    let k = 0;
    // Frames are prebuilt per line; only the token sequence changes.
    const tmpl = [1, 3, 5].map((l) => seedFrame(ci % 4, 0, l));
    const send = () => {
      const line = k % 3;
      const tok = ci * 10000000 + Math.floor(k / 3);
      k++;
      const f = Buffer.from(tmpl[line]);
      f.writeUInt32BE(tok >>> 0, 2);
      sent.push(now());
      ws.send(f);
    };
    ws.on('open', () => { for (let i = 0; i < win; i++) send(); resolve(ws); });
    ws.on('message', (m) => {
      const t0 = sent.shift();
      if (m.length !== 42 /* 10-byte header + 32-byte status v2 */ || m.readUInt16BE(0) !== 0xFFFE) errors++;
      total++;
      if (measuring) { answered++; lat.push(now() - t0); }
      if (!stopping) send();
    });
    ws.on('error', (e) => { errors++; reject(e); });
  });
}

(async () => {
  const all = await Promise.all(Array.from({ length: conns }, (_, i) => startConn(i)));
  await new Promise((r) => setTimeout(r, Number(warmS) * 1000));
  measuring = true;
  const t0 = now();
  await new Promise((r) => setTimeout(r, Number(runS) * 1000));
  measuring = false;
  const secs = (now() - t0) / 1e6;
  stopping = true;
  lat.sort((a, b) => a - b);
  const pct = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : 0;
  console.log(JSON.stringify({ frame_bytes: frameBytes, conns, window: win, msgs_per_s: Math.round(answered / secs),
    p50_us: Math.round(pct(0.5)), p99_us: Math.round(pct(0.99)), samples: lat.length, total, errors }));
  all.forEach((ws) => ws.terminate());
  process.exit(0);
})().catch((e) => { console.error('client failed: ' + e.message); process.exit(1); });
