#!/usr/bin/python3
"""daemon_points.py - peer churn: TLS peers map to Fano points through their role
(tokens file role "attn" = point e2). Two wss clients of role attn: closing
one keeps the point up; closing both marks e2 down, so lines 0, 3 and 4 (the
lines through e2) are degraded (fanoctl lines, the JSON ack of a line-3
contribution says degraded + shadow_mode, the audit log records the line
changes); a reconnecting attn client restores them."""
import asyncio
import json
import os
import subprocess
import sys

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import Daemon, check, fanoctl_or_skip, http, seed  # noqa: E402
from fgtest.wait import until  # noqa: E402

ATTN = "k-attn-token-0123456789abcdef"
V3 = [0.25] * 8


def lines(d, fanoctl):
    return {ln["line"]: ln["state"] for ln in d.ctl_json("lines", fanoctl=fanoctl)["lines"]}


def attn_peers(d, fanoctl):
    return sum(1 for x in d.ctl_json("peers", fanoctl=fanoctl)["tls_peers"]
               if x["role"] == "attn" and x["state"] == "websocket")


async def connect(d):
    return await websockets.connect(f"wss://localhost:{d.port}/flow", ssl=d.ssl_ctx(),
                                    extra_headers={"Authorization": "Bearer " + ATTN})


async def scenario(d, fanoctl):
    through = {0, 3, 4}
    check(all(s == "shadow" for s in lines(d, fanoctl).values()), "all lines shadow at start")
    a = await connect(d)
    b = await connect(d)
    check(until(lambda: attn_peers(d, fanoctl) == 2, 5), "both attn peers registered")
    await a.close()
    check(until(lambda: attn_peers(d, fanoctl) == 1, 5), "one attn peer left")
    # not a readiness wait: proving an absence (e2 must stay up with one
    # attn peer left), so a bounded look after the close
    await asyncio.sleep(0.3)
    check(all(s == "shadow" for s in lines(d, fanoctl).values()), "one attn peer left: point e2 stays up")
    await b.close()
    check(until(lambda: all(lines(d, fanoctl)[i] == "degraded" for i in through)),
          f"both attn peers gone: lines 0, 3, 4 degraded: {lines(d, fanoctl)}")
    ls = lines(d, fanoctl)
    check(all(ls[i] == "shadow" for i in range(7) if i not in through), f"the other lines untouched: {ls}")
    st, h, body = http(d, "POST", "/residual-seed", seed(0, 900, 3, V3))
    j = json.loads(body)
    check(j["degraded"] and j["shadow_mode"], f"ack of a line-3 contribution: degraded + shadow_mode: {j}")
    c = await connect(d)
    check(until(lambda: all(lines(d, fanoctl)[i] == "shadow" for i in through)),
          f"an attn peer is back: lines 0, 3, 4 restored: {lines(d, fanoctl)}")
    st, h, body = http(d, "POST", "/residual-seed", seed(0, 901, 3, V3))
    check(not json.loads(body)["degraded"], "ack after the restore: not degraded")
    await c.close()


def main():
    fanoctl = fanoctl_or_skip()
    d = Daemon(deadline_ms=30000)
    with open(f"{d.dir}/tokens", "a") as f:
        f.write(f"{ATTN} attn\n")
    with d:
        asyncio.run(scenario(d, fanoctl))

        def changes():
            p = subprocess.run([fanoctl, "audit", "tail", "--json", "-n", "1000", f"{d.dir}/audit.log"],
                               capture_output=True, text=True, timeout=20)
            recs = [json.loads(x) for x in p.stdout.splitlines() if x.strip().startswith("{")]
            ch = [r for r in recs if r["type"] == "line" and r["line"] in (0, 3, 4)]
            return ch, {r["line"] for r in ch if r["to"] == "degraded"}, {r["line"] for r in ch if r["from"] == "degraded"}
        # the line changes reach the log through the audit thread: bounded poll
        until(lambda: changes()[1:] == ({0, 3, 4}, {0, 3, 4}), 5)
        ch, down, up = changes()
        check(down == {0, 3, 4} and up == {0, 3, 4}, f"audit log: lines 0, 3, 4 degraded and restored: {ch}")
    print("ok")


if __name__ == "__main__":
    main()
