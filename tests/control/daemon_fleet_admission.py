#!/usr/bin/python3
"""daemon_fleet_admission.py - the fleet's coordinator is served at the
default [tls] admission (control/cp_admit.h, docs/config.md [tls]).

A 28-layer model, [tls] max_connections, unauth_per_source and auth_reserve
at their defaults. From one address (127.0.0.1) the test opens, all at once
as the fleet's dispatcher does, one WebSocket /flow?layer=L per layer (28)
and 4 HTTPS keep-alive connections: the daemon accepts all 32 before any has
finished its handshake. Every one must open (before: the fixed default of
16 unauthenticated connections per source refused the rest, and the
dispatcher lost 10 of its 27 upgrades). Then every layer gets one token over
its WebSocket (the fleet's masked stream, the layer named by the session)
and one over HTTPS POST /layers/L/residual-seed on the keep-alives, and every
seed is fetched back over the keep-alives: all 56 bit-exact. No connection
is refused or evicted (fanogate_tls_admission_total stays 0 for every
reason) and none stays unauthenticated."""
import asyncio
import json
import os
import re
import sys

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import (OUTCOMES, STATUS_STREAM, TOKEN, Daemon, check, metrics_text, parse_frames,  # noqa: E402
                            parse_status, reduce_pair_x, resolved_frame, seed)

LAYERS = 28
KEEPALIVES = 4
TOK_WS, TOK_HTTPS = 501, 502


def values(layer, tok, line):
    return [float((layer * 37 + tok * 11 + line * 5 + i) % 89) / 16.0 - 2.5 + 1e-3 * line for i in range(8)]


def masked_seed(layer, tok, line):
    """The fleet's frame: stream = seed band + (layer & 0x0F); the address names the layer."""
    return seed(layer & 0x0F, tok, line, values(layer, tok, line))


def expected(layer, tok):
    return resolved_frame(layer, tok, reduce_pair_x([(values(layer, tok, ln), 0) for ln in (1, 3, 5)]))


async def request(conn, method, path, body=b""):
    """One HTTP/1.1 request on a keep-alive (reader, writer): (status, body)."""
    reader, writer = conn
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
    if method == "POST":
        head += f"Content-Type: application/octet-stream\r\nContent-Length: {len(body)}\r\n"
    writer.write((head + "\r\n").encode() + body)
    await writer.drain()
    top = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    m = re.search(rb"(?im)^content-length:\s*(\d+)", top)
    data = await asyncio.wait_for(reader.readexactly(int(m.group(1)) if m else 0), 20)
    return int(top.split()[1]), data


async def open_all(d):
    ctx = d.ssl_ctx()
    hdrs = {"Authorization": "Bearer " + TOKEN}
    ws = [websockets.connect(f"wss://localhost:{d.port}/flow?layer={layer}", ssl=ctx, extra_headers=hdrs,
                             max_size=None, open_timeout=30) for layer in range(LAYERS)]
    https = [asyncio.open_connection("127.0.0.1", d.port, ssl=ctx, server_hostname="localhost",
                                     ssl_handshake_timeout=30) for _ in range(KEEPALIVES)]
    got = await asyncio.gather(*ws, *https, return_exceptions=True)
    bad = [(i, repr(g)) for i, g in enumerate(got) if isinstance(g, BaseException)]
    check(not bad, f"{LAYERS} WebSockets /flow?layer=L and {KEEPALIVES} HTTPS keep-alives opened at once from "
          f"one address: {len(got) - len(bad)} of {len(got)} ({bad[:3]})")
    return got[:LAYERS], got[LAYERS:]


async def over_ws(layer, sock):
    await sock.send(b"".join(masked_seed(layer, TOK_WS, ln) for ln in (5, 3, 1)))
    names = []
    for _ in range(3):
        fr = parse_frames(await asyncio.wait_for(sock.recv(), 20))
        check(len(fr) == 1 and fr[0][0] == STATUS_STREAM, f"wss layer {layer}: a status frame")
        st = parse_status(fr[0][3])
        check(st["dst_layer"] == layer, f"wss layer {layer}: the status names layer {layer} ({st['dst_layer']})")
        names.append(OUTCOMES[st["outcome"]])
    check(names == ["accepted", "accepted", "resolved"], f"wss /flow?layer={layer}: the third line resolves: {names}")


async def over_https(conn, layers):
    for layer in layers:
        for i, ln in enumerate((3, 5, 1)):
            st, body = await request(conn, "POST", f"/layers/{layer}/residual-seed", masked_seed(layer, TOK_HTTPS, ln))
            j = json.loads(body)
            want = "resolved" if i == 2 else "accepted"
            check(st == 200 and j["outcome"] == want and j["dst_layer"] == layer,
                  f"https POST layer {layer} line {ln}: {want} ({st} {j.get('outcome')})")


async def fetch_all(conn, layers):
    for layer in layers:
        for tok in (TOK_WS, TOK_HTTPS):
            st, body = await request(conn, "GET", f"/layers/{layer}/residual-seed/{tok}")
            check(st == 200 and body == expected(layer, tok),
                  f"GET /layers/{layer}/residual-seed/{tok} on a keep-alive: the seed, bit-exact ({st})")


async def fleet(d):
    wss, keep = await open_all(d)
    share = [range(k, LAYERS, KEEPALIVES) for k in range(KEEPALIVES)]
    await asyncio.gather(*(over_ws(layer, s) for layer, s in enumerate(wss)),
                         *(over_https(keep[k], share[k]) for k in range(KEEPALIVES)))
    await asyncio.gather(*(fetch_all(keep[k], share[k]) for k in range(KEEPALIVES)))
    m = metrics_text(d)
    for reason in ("per_source", "full", "evicted_unauth_share", "evicted_full"):
        n = re.search(r'^fanogate_tls_admission_total\{reason="%s"\} (\d+)$' % reason, m, re.M)
        check(n and int(n.group(1)) == 0, f"no connection {reason} ({n.group(1) if n else 'missing'})")
    n = re.search(r"^fanogate_tls_unauthenticated_connections (\d+)$", m, re.M)
    check(n and int(n.group(1)) == 0, f"every connection authenticated ({n.group(1) if n else 'missing'} not)")
    for s in wss:
        await s.close()
    for _, w in keep:
        w.close()


def main():
    # [tls] admission keys at their defaults: max_connections 1024, unauth_per_source auto, auth_reserve 0.25
    with Daemon(layers=LAYERS, max_conns=1024, handshake_ms=5000, idle_ms=60000, deadline_ms=30000,
                capacity=8192) as d:
        asyncio.run(fleet(d))


if __name__ == "__main__":
    main()
