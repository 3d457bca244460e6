#!/usr/bin/python3
"""daemon_lanes.py - the daemon in lanes mode: the DPDK dataplane owns the slot
shards (drivers-config ring profile: no NIC, --no-huge when hugepages are
missing) and every TLS frame crosses include/fg/boundary.h lanes to its
owner lcore and back (FG_BM_CONTRIB -> FG_BM_OUTCOME; RESOLVED, CONFLICT and
EXPIRED messages become pushes and GET answers). Same answers as local mode:
JSON acks, WebSocket statuses, the resolved seed bit-exact, expiry.
Skips (77) when the daemon was built without DPDK or the EAL cannot start."""
import asyncio
import json
import os
import sys
import time
import urllib.request

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import (SKIP, STATUS_STREAM, TOKEN, Daemon, OUTCOMES, check, http, http_read_response,
                            parse_frames, parse_status, reduce_pair_x, resolved_frame, seed)

V = {1: [1.5, -2.0, 0.1, 3e-7, 5.0, 6.0, 7.0, 8.0], 3: [0.3, 0.2, 0.1, 1e5, 5.0, 6.0, -7.0, 8.0],
     5: [2.0, 2.0, 2.0, 2.0, -1.0, 1e-30, 7.0, 0.0]}


def post(d, body):
    st, h, b = http(d, "POST", "/residual-seed", body)
    return st, json.loads(b)


async def ws_part(d):
    ctx = d.ssl_ctx()
    hdrs = {"Authorization": "Bearer " + TOKEN}
    url = f"wss://localhost:{d.port}/flow"
    async with websockets.connect(url + "?layers=all", ssl=ctx, extra_headers=hdrs) as sub, \
            websockets.connect(url, ssl=ctx, extra_headers=hdrs) as tx:
        await tx.send(seed(1, 60, 3, V[3]) + seed(1, 60, 1, V[1]) + seed(1, 60, 5, V[5], neg=1))
        outs = []
        for _ in range(3):
            fr = parse_frames(await asyncio.wait_for(tx.recv(), 5))
            check(fr[0][0] == STATUS_STREAM, "status message over the lanes")
            outs.append(OUTCOMES[parse_status(fr[0][3])["outcome"]])
        check(sorted(outs) == ["accepted", "accepted", "resolved"], "3 frames through the lanes: " + str(outs))
        m = await asyncio.wait_for(sub.recv(), 5)
        check(m == resolved_frame(1, 60, reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 1)])),
              "resolved seed from the lcore pushed bit-exact")


async def many_slots(d, n):
    """n slots spread over every lane (fg_shard_of), all resolved and pushed."""
    ctx = d.ssl_ctx()
    hdrs = {"Authorization": "Bearer " + TOKEN}
    url = f"wss://localhost:{d.port}/flow"
    async with websockets.connect(url + "?layers=all", ssl=ctx, extra_headers=hdrs) as sub, \
            websockets.connect(url + "?status=0", ssl=ctx, extra_headers=hdrs) as tx:
        for t in range(n):
            await tx.send(b"".join(seed(t % 4, 5000 + t, ln, V[ln]) for ln in (1, 3, 5)))
        got = set()
        for _ in range(n):
            fr = parse_frames(await asyncio.wait_for(sub.recv(), 5))[0]
            got.add((fr[0] - 0xAFA0, fr[1]))
        check(got == {(t % 4, 5000 + t) for t in range(n)}, f"{n} slots over every lane: all resolved and pushed")


def main():
    for lcores in (1, 2):
        run(lcores)


def run(lcores):
    extra = f"[dataplane]\nlcores = {lcores}\n"
    with Daemon(dp_profile="ring", expect_start=False, deadline_ms=2000, extra=extra) as d:
        if not d.lanes_up("SKIP: the dataplane did not start here (built without DPDK, or the EAL refused):\n{log}"):
            sys.exit(SKIP)
        st, h, b = http(d, "GET", "/healthz", token=None)
        check(json.loads(b)["mode"] == "dataplane", "healthz says mode dataplane")
        st, j = post(d, seed(2, 50, 5, V[5]))
        check(st == 200 and j["outcome"] == "accepted" and j["line"] == 5, "POST accepted by the owner lcore")
        st, j = post(d, seed(2, 50, 5, V[5]))
        check(j["outcome"] == "duplicate", "duplicate from the lcore")
        st, j = post(d, seed(2, 50, 1, V[1]))
        st, j = post(d, seed(2, 50, 3, V[3]))
        check(st == 200 and j["outcome"] == "resolved" and j["fully_resolved"], "resolved by the lcore")
        st, h, b = http(d, "GET", "/residual-seed/2/50")
        check(st == 200 and b == resolved_frame(2, 50, reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])),
              "GET answered from the lanes' RESOLVED message, bit-exact")
        st, j = post(d, seed(0, 51, 1, V[1]))
        st, j = post(d, seed(0, 51, 1, V[3]))
        check(st == 409 and j["outcome"] == "conflict", "conflict from the lcore")
        st, h, b = http(d, "GET", "/residual-seed/0/51")
        check(st == 409, "GET of the poisoned slot: 409 (CONFLICT message)")
        # Three POSTs pipelined on one connection, one TLS record each: the
        # 2nd and 3rd arrive while the 1st waits for its lcore's outcome
        # (the receive stays armed, the records wait in the TLS stash) and
        # are answered in order once it is in.
        s = d.tls_socket()
        for ln in (1, 3, 5):
            body = seed(1, 54, ln, V[ln])
            s.sendall(b"POST /residual-seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
                      b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        outs, rest = [], b""
        for _ in range(3):
            st, _, b, rest = http_read_response(s, buf=rest)
            outs.append((st, json.loads(b)["outcome"]))
        s.close()
        check(outs == [(200, "accepted"), (200, "accepted"), (200, "resolved")],
              f"pipelined POSTs behind an outcome wait: answered in order ({outs})")
        st, j = post(d, seed(3, 52, 1, V[1])[:-1])
        check(st == 400 and j["outcome"] == "malformed", "malformed body refused before the lanes")
        st, j = post(d, seed(3, 53, 1, V[1]))
        time.sleep(d.deadline_ms / 1000 + 0.4)  # not readiness: waits out the slot deadline under test
        st, h, b = http(d, "GET", "/residual-seed/3/53")
        check(st == 504 and json.loads(b)["error"] == "expired", "EXPIRED message from the lcore: GET 504")
        asyncio.run(ws_part(d))
        asyncio.run(many_slots(d, 40))
        st, h, b = http(d, "GET", "/healthz", token=None)
        check(json.loads(b)["lanes"] == lcores, f"healthz: {lcores} lane(s), one per lcore")
        # Owed answers are polled for before sleeping ([dataplane] answer_spin_us,
        # default 50): each POST above left a request outstanding at a batch end.
        met = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
        val = {ln.split()[0]: float(ln.split()[1]) for ln in met.splitlines() if ln.startswith("fanogate_lane_")}
        check(val.get("fanogate_lane_answer_spins_total", 0) >= 1, "the control plane polled for owed answers")
        check("fanogate_lane_wakeups_total" in val, "lane wake-ups are counted in /metrics")
        # The engine's hop histograms: every request crossed the lane, was
        # stamped by its lcore and answered; every resolved seed crossed back.
        hop = {}
        for ln in met.splitlines():
            if ln.startswith("fanogate_engine_hop_seconds_"):
                name, v = ln.split()
                hop[name] = float(v)
        cnt = {h: hop.get(f'fanogate_engine_hop_seconds_count{{hop="{h}"}}', -1)
               for h in ("answer", "to_lcore", "back_to_cp", "seed_to_cp")}
        check(cnt["answer"] >= 40 * 3 and cnt["answer"] == cnt["to_lcore"] == cnt["back_to_cp"],
              f"every request's hops are timed (answer = to_lcore = back_to_cp >= 120): {cnt}")
        check(cnt["seed_to_cp"] >= 40 + 2, f"every resolved seed's crossing is timed: {cnt}")
        for h, n in cnt.items():
            check(hop.get(f'fanogate_engine_hop_seconds_bucket{{hop="{h}",le="+Inf"}}') == n,
                  f"{h}: the +Inf bucket holds every record")


if __name__ == "__main__":
    main()
