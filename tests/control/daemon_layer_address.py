#!/usr/bin/python3
"""daemon_layer_address.py - layers beyond 15 addressed the fleet's way (wire.md 3)
over the TLS ingresses, in local mode and (when the dataplane starts on the
ring profile) in lanes mode.

A 28-layer model; the fleet's dispatcher writes dst_layer & 0x0F into the
stream id and names the layer by the address: HTTPS POST
/layers/<L>/residual-seed and a WebSocket bound with /flow?layer=<L>. For
every layer, one token arrives over each ingress with its stream masked to 4
bits; layers L and L + 16 share every stream id and every token, so a
folded layer would conflict. Checked: every seed resolves, bit-exact (GET
/layers/<L>/residual-seed/<token> and the old unbound GET), the completing
contribution answers bitset 0x7f with landed 0x2a, no conflict, no epoch
change; a stream whose nibble is not L & 0x0F is refused by name
(layer_mismatch, HTTP 400 and a status frame) and counted
(fanogate_tls_malformed_total{reason="layer_mismatch"}); the old unbound
paths still work."""
import asyncio
import json
import urllib.request

import websockets

import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import (OUTCOMES, STATUS_STREAM, TOKEN, check, hdr, http, local_then_lanes, parse_frames,
                        parse_status, reduce_pair_x, resolved_frame, seed)

LAYERS = 28


def values(layer, tok, line):
    return [float((layer * 131 + tok * 17 + line * 7 + i) % 97) / 8.0 - 3.0 + 1e-3 * line for i in range(8)]


def masked_seed(layer, tok, line, vals):
    """The fleet's frame: stream = seed band + (layer & 0x0F)."""
    return seed(layer & 0x0F, tok, line, vals)


def post(d, body, path):
    st, h, b = http(d, "POST", path, body)
    return st, (json.loads(b) if h.get("content-type") == "application/json" else b)


def metric(d, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith(name + " "):
                return float(ln.split()[-1])
    return None


def expected(layer, tok):
    return resolved_frame(layer, tok, reduce_pair_x([(values(layer, tok, 1), 0), (values(layer, tok, 3), 0),
                                                     (values(layer, tok, 5), 0)]))


async def over_ws(d, mode, tok):
    ctx = d.ssl_ctx()
    hdrs = {"Authorization": "Bearer " + TOKEN}
    for layer in range(LAYERS):
        async with websockets.connect(f"wss://localhost:{d.port}/flow?layer={layer}", ssl=ctx,
                                      extra_headers=hdrs, max_size=None) as ws:
            await ws.send(b"".join(masked_seed(layer, tok, ln, values(layer, tok, ln)) for ln in (5, 3, 1)))
            sts = []
            for _ in range(3):
                fr = parse_frames(await asyncio.wait_for(ws.recv(), 10))
                check(len(fr) == 1 and fr[0][0] == STATUS_STREAM, f"{mode}: wss layer {layer}: a status frame")
                sts.append(parse_status(fr[0][3]))
            names = [OUTCOMES[s["outcome"]] for s in sts]
            check(names == ["accepted", "accepted", "resolved"] and all(s["dst_layer"] == layer for s in sts),
                  f"{mode}: wss /flow?layer={layer}: masked frames resolve under layer {layer}: {names} "
                  f"{[s['dst_layer'] for s in sts]}")
            check(sts[2]["bitset"] == 0x7F and sts[2]["landed"] == 0x2A,
                  f"{mode}: wss layer {layer}: the resolving status says bitset 0x7f landed 0x2a: {sts[2]}")
            if layer == 17:
                # nibble 2 on a session bound to 17 (17 & 0x0F = 1)
                await ws.send(seed(2, tok + 1000, 1, values(layer, tok, 1)))
                fr = parse_frames(await asyncio.wait_for(ws.recv(), 10))
                st = parse_status(fr[0][3])
                check(OUTCOMES[st["outcome"]] == "malformed" and st["reason"] == REASON_LAYER_MISMATCH
                      and st["dst_layer"] == 17,
                      f"{mode}: wss layer 17: a stream with nibble 2 is refused as layer_mismatch: {st}")


REASON_LAYER_MISMATCH = 28  # enum fg_reason (include/fg/wire.h), append-only


def scenario(d, mode):
    e0 = json.loads(http(d, "GET", "/healthz", token=None)[2])["model_epoch"]
    tok_https, tok_ws = 700, 701
    for layer in range(LAYERS):
        path = f"/layers/{layer}/residual-seed"
        for i, ln in enumerate((3, 5, 1)):
            st, j = post(d, masked_seed(layer, tok_https, ln, values(layer, tok_https, ln)), path)
            want = "resolved" if i == 2 else "accepted"
            check(st == 200 and j["outcome"] == want and j["dst_layer"] == layer,
                  f"{mode}: POST {path} line {ln} (stream 0x{0xAF60 + (layer & 15):04X}): {want}: {st} {j}")
        check(j["bitset"] == 0x7F and j["landed"] == 0x2A and j["fully_resolved"],
              f"{mode}: layer {layer}: the completing contribution answers bitset 0x7f, landed 0x2a: {j}")
    asyncio.run(over_ws(d, mode, tok_ws))
    for layer in range(LAYERS):
        for tok in (tok_https, tok_ws):
            st, h, b = http(d, "GET", f"/layers/{layer}/residual-seed/{tok}")
            check(st == 200 and b == expected(layer, tok),
                  f"{mode}: GET /layers/{layer}/residual-seed/{tok}: the seed, bit-exact ({st})")
        st, h, b = http(d, "GET", f"/residual-seed/{layer}/{tok_https}")
        check(st == 200 and b == expected(layer, tok_https), f"{mode}: the unbound GET still serves layer {layer}")
    # refused by name: nibble 2 on layer 17's address
    st, j = post(d, seed(2, 900, 1, values(17, 900, 1)), "/layers/17/residual-seed")
    check(st == 400 and j["error"] == "layer_mismatch" and not j["ack"],
          f"{mode}: POST /layers/17 with stream 0xAF62: 400 layer_mismatch: {st} {j}")
    st, j = post(d, seed(3, 900, 1, values(3, 900, 1)), "/layers/28/residual-seed")
    check(st == 400 and j["error"] == "bad_layer", f"{mode}: a layer beyond the model in the path: 400 bad_layer")
    st, j = post(d, hdr(0xAF81, 5, 1, 16) + bytes(16), "/layers/17/canonical")
    check(st in (200, 400) and j.get("error") != "layer_mismatch",
          f"{mode}: canonical path of layer 17 takes stream 0xAF81: {st} {j}")
    # the old unbound path: layer = offset
    st, j = post(d, seed(4, 901, 1, values(4, 901, 1)), "/residual-seed")
    check(st == 200 and j["dst_layer"] == 4 and j["outcome"] == "accepted", f"{mode}: unbound POST still works")
    e1 = json.loads(http(d, "GET", "/healthz", token=None)[2])["model_epoch"]
    check(e1 == e0, f"{mode}: no conflict, no epoch change ({e0} -> {e1})")
    n = metric(d, 'fanogate_tls_malformed_total{reason="layer_mismatch"}')
    check(n is not None and n >= 2, f"{mode}: layer_mismatch counted ({n})")
    n = metric(d, 'fanogate_tls_outcomes_total{outcome="conflict"}')
    check(n == 0, f"{mode}: no conflict counted ({n})")


def main():
    local_then_lanes(scenario, deadline_ms=30000, layers=LAYERS, capacity=8192)
    print("ok")


if __name__ == "__main__":
    main()
