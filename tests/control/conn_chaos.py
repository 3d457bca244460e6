#!/usr/bin/python3
"""conn_chaos.py - hostile peers against one daemon (seeded, bounded): raw
non-TLS bytes, TLS garbage instead of HTTP, truncated heads, resets in the
middle of a request (SO_LINGER 0), WebSocket sessions sending random frames
(masked, random opcodes and payloads) and random aeon-flow bytes, peers that
vanish with queued output. Afterwards the daemon must still answer
/healthz and a real resolution, and stop cleanly (exit 0, no sanitizer
report: checked by the harness)."""
import asyncio
import json
import os
import random
import socket
import ssl
import struct

import websockets

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import ws as fgws  # noqa: E402
from fgtest.harness import TOKEN, Daemon, check, http, seed  # noqa: E402

R = random.Random(int(os.environ.get("D1_SEED", "1234")))


def rst(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def raw_garbage(d, n):
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        s.sendall(bytes(R.getrandbits(8) for _ in range(R.randint(1, 600))))
        rst(s) if R.random() < 0.5 else s.close()


def tls_garbage(d, n):
    for i in range(n):
        try:
            s = d.tls_socket(timeout=5)
            kind = i % 4
            if kind == 0:
                s.sendall(bytes(R.getrandbits(8) for _ in range(R.randint(1, 3000))))
            elif kind == 1:
                s.sendall(b"POST /residual-seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
                          b"\r\nContent-Length: 5000\r\n\r\n" + b"\x00" * R.randint(0, 4000))
            elif kind == 2:
                s.sendall(b"GET /flow HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
            else:
                s.sendall(b"GET /residual-seed/1/" + str(R.randint(0, 99)).encode() + b" HTTP/1.1\r\nHost: x\r\n"
                          b"Authorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
            rst(s) if R.random() < 0.5 else s.close()
        except (ssl.SSLError, OSError):
            pass


def ws_frame(opcode, payload, fin=True, mask=True):
    """a client frame masked with a random key"""
    return fgws.ws_frame((0x80 if fin else 0) | opcode, payload, mask=mask,
                         key=bytes(R.getrandbits(8) for _ in range(4)))


def ws_garbage(d, n):
    for i in range(n):
        try:
            s = d.tls_socket(timeout=5)
            s.sendall(fgws.upgrade_request("/flow?layers=all", TOKEN))
            out = b""
            for _ in range(R.randint(1, 12)):
                r = R.random()
                if r < 0.4:  # random aeon-flow-ish bytes in a binary message
                    body = bytes(R.getrandbits(8) for _ in range(R.randint(0, 200)))
                    if R.random() < 0.5:
                        body = seed(R.randint(0, 5), R.randint(0, 50), R.choice([0, 1, 3, 5, 7]),
                                    [R.uniform(-1, 1) for _ in range(d.hidden)])[:R.randint(1, 60)] + body
                    out += ws_frame(2, body)
                elif r < 0.6:
                    out += ws_frame(R.randint(0, 15), bytes(R.getrandbits(8) for _ in range(R.randint(0, 130))),
                                    fin=R.random() < 0.7, mask=R.random() < 0.9)
                elif r < 0.7:
                    out += ws_frame(9, b"p")
                else:
                    out += bytes(R.getrandbits(8) for _ in range(R.randint(1, 40)))
            s.sendall(out)
            if R.random() < 0.5:
                s.settimeout(0.2)
                try:
                    s.recv(65536)
                except (socket.timeout, ssl.SSLError, OSError):
                    pass
            rst(s) if R.random() < 0.5 else s.close()
        except (ssl.SSLError, OSError):
            pass


async def still_works(d):
    url = f"wss://localhost:{d.port}/flow?layers=2"
    hdr = {"Authorization": "Bearer " + TOKEN}
    async with websockets.connect(url, ssl=d.ssl_ctx(), extra_headers=hdr) as ws:
        v = [0.5] * d.hidden
        await ws.send(seed(2, 999, 1, v) + seed(2, 999, 3, v) + seed(2, 999, 5, v))
        got = [await asyncio.wait_for(ws.recv(), 5) for _ in range(4)]
        check(any(g[:2] == b"\xaf\xa2" and g[2:6] == struct.pack(">I", 999) for g in got),
              "after the chaos: a slot still resolves and is pushed")


def main():
    with Daemon(handshake_ms=1000, max_conns=256) as d:
        raw_garbage(d, 60)
        tls_garbage(d, 80)
        ws_garbage(d, 120)
        st, h, b = http(d, "GET", "/healthz", token=None)
        check(st == 200 and json.loads(b)["status"] == "ok", "after the chaos: /healthz 200")
        asyncio.run(still_works(d))


if __name__ == "__main__":
    main()
