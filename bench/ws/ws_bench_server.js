#!/usr/bin/env node
// ws_bench_server.js - the baseline for bench/ws: a Node `ws` WebSocket
// server over TLS doing the same per-message work fanogate's protocol needs
// at minimum: decode the 10-byte aeon-flow header of every frame in a binary
// message (u16 stream BE, u32 sequence BE, u8 flags, u24 length BE), and
// answer each frame with one 42-byte status frame (stream 0xFFFE, the
// 32-byte version-2 status of include/fg/wire.h) in its own
// binary message. No slot engine: fanogate does strictly more work.
// Usage: node ws_bench_server.js PORT CERT KEY   (prints "listening PORT", the bound one: PORT may be 0)
'use strict';
const fs = require('fs');
const https = require('https');
const path = require('path');
const WebSocket = require(path.join(__dirname, '..', '..', 'tests', 'node_modules', 'ws'));

const [port, cert, key] = process.argv.slice(2);
const server = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) });
const wss = new WebSocket.Server({ server, path: '/flow', perMessageDeflate: false, maxPayload: 1 << 20 });
wss.on('connection', (ws) => {
  ws.on('message', (m) => {
    let off = 0;
    while (off + 10 <= m.length) {
      const stream = m.readUInt16BE(off);
      const seq = m.readUInt32BE(off + 2);
      const flags = m.readUInt8(off + 6);
      const len = m.readUIntBE(off + 7, 3);
      if (off + 10 + len > m.length) break;
      const st = Buffer.alloc(42);
      st.writeUInt16BE(0xFFFE, 0);
      st.writeUInt32BE(seq, 2);
      st.writeUIntBE(32, 7, 3);
      st.writeUInt8(1, 10);
      st.writeUInt8((flags >> 4) & 7, 12);
      st.writeUInt16LE(stream & 31, 14);
      st.writeUInt32LE(len - 8, 22);
      ws.send(st);
      off += 10 + len;
    }
  });
});
// PORT 0: the kernel picks one; the line reports the bound port
server.listen(Number(port), '127.0.0.1', () => console.log('listening ' + server.address().port));
