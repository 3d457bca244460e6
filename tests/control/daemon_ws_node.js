#!/usr/bin/env node
// daemon_ws_node.js - WebSocket /flow against the npm `ws` client (the fleet's
// own WebSocket stack is Node): Bearer handshake over TLS, a message of
// coalesced frames answered with one status each, a layers=all subscriber
// receiving the resolved seed bit-exact (reference sum with Math.fround,
// one rounding per addition), ping/pong, close 1000, 401 without a token.
// Run through daemon_harness.py (FG_PORT, FG_DIR, FG_TOKEN, FG_HIDDEN).
'use strict';
const fs = require('fs');
const path = require('path');
let WebSocket;
try {
  WebSocket = require(path.join(__dirname, '..', 'node_modules', 'ws'));
} catch (e) {
  console.log('SKIP: npm ws not installed (cd tests && npm ci)');
  process.exit(77);
}

const port = process.env.FG_PORT, dir = process.env.FG_DIR, token = process.env.FG_TOKEN;
const hidden = Number(process.env.FG_HIDDEN || 8);
const ca = fs.readFileSync(path.join(dir, 'ca.pem'));
const url = `wss://localhost:${port}/flow`;
let failures = 0;
function check(cond, msg) {
  if (!cond) { console.log('FAIL: ' + msg); failures++; process.exitCode = 1; } else console.log('ok - ' + msg);
}

function frame(stream, seq, flags, body) {
  const h = Buffer.alloc(10);
  h.writeUInt16BE(stream, 0); h.writeUInt32BE(seq, 2); h.writeUInt8(flags, 6);
  h.writeUIntBE(body.length, 7, 3);
  return Buffer.concat([h, body]);
}
function seedBody(vals) {
  const b = Buffer.alloc(8 + 4 * vals.length);
  b.writeUInt32LE(0, 0); b.writeUInt32LE(1, 4);
  vals.forEach((v, i) => b.writeFloatLE(v, 8 + 4 * i));
  return b;
}
const seed = (layer, tok, line, vals, neg = 0) => frame(0xAF60 + layer, tok, (line << 4) | neg, seedBody(vals));

function open(query, headers) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url + query, { ca, headers, servername: 'localhost' });
    const q = [];
    const waiters = [];
    ws.on('message', (m) => { if (waiters.length) waiters.shift()(m); else q.push(m); });
    ws.next = (ms = 5000) => new Promise((res, rej) => {
      if (q.length) return res(q.shift());
      const t = setTimeout(() => rej(new Error('timeout')), ms);
      waiters.push((m) => { clearTimeout(t); res(m); });
    });
    ws.on('open', () => resolve(ws));
    ws.on('unexpected-response', (req, res) => reject(Object.assign(new Error('status'), { status: res.statusCode })));
    ws.on('error', reject);
  });
}

async function main() {
  const auth = { Authorization: 'Bearer ' + token };
  const sub = await open('?layers=all', auth);
  const tx = await open('', auth);
  check(true, 'handshake with Bearer token over TLS');
  const v = [[1], [3], [5]].map(([l], k) => Array.from({ length: hidden }, (_, i) => (i + 1) * (k + 1) * 0.1 - 0.37));
  tx.send(Buffer.concat([seed(1, 42, 3, v[1], 1), seed(1, 42, 5, v[2]), seed(1, 42, 1, v[0])]));
  const outcomes = [];
  for (let i = 0; i < 3; i++) {
    const m = await tx.next();
    check(m.length === 42 && m.readUInt16BE(0) === 0xFFFE && m.readUInt32BE(2) === 42, `status message ${i} (42 bytes, 0xFFFE, version 2)`);
    outcomes.push(m.readUInt8(11));
  }
  check(JSON.stringify(outcomes) === '[0,0,1]', 'outcomes accepted, accepted, resolved');
  // reference: ((x + attn) + ffn) in line order 1, 3, 5 with line 3 negated
  const ref = v[0].map((x, i) => Math.fround(Math.fround(Math.fround(x) - Math.fround(v[1][i])) + Math.fround(v[2][i])));
  const m = await sub.next();
  const exp = frame(0xAFA1, 42, 0x10, seedBody(ref));
  check(Buffer.compare(m, exp) === 0, 'subscriber received the resolved seed, bit-exact');
  const pong = new Promise((res) => tx.once('pong', res));
  tx.ping(Buffer.from('p'));
  check((await pong).toString() === 'p', 'ping answered with pong');
  const closed = new Promise((res) => tx.once('close', (code) => res(code)));
  tx.close(1000, 'done');
  check(await closed === 1000, 'close 1000 echoed');
  sub.close();
  try {
    await open('', {});
    check(false, 'no token refused');
  } catch (e) {
    check(e.status === 401, 'no token refused with 401');
  }
}

main().then(() => process.exit(failures ? 1 : 0), (e) => { console.log('FAIL: ' + e.stack); process.exit(1); });
