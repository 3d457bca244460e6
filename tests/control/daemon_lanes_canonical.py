#!/usr/bin/python3
"""daemon_lanes_canonical.py - canonical reports sent over wss:// in dataplane
(lanes) mode reach the shadow audit: the daemon on the ring profile, a slot
resolved by its owner lcore from three seeds sent over a WebSocket, then the
canonical report for it over the same WebSocket; the audit log must hold a
clean verdict for that slot, and a wrong canonical report for a second slot a
divergent one (fanoctl audit tail --json). The lcore reports only the
canonical frames it received over UDP (FG_BM_CANONICAL), so the control
plane must audit the ones it hands over itself.
Skips (77) without fanoctl, or when the dataplane cannot start here."""
import asyncio
import os
import sys

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.wait import until  # noqa: E402
from fgtest.harness import audit_records, fanoctl_or_skip, SKIP, STATUS_STREAM, TOKEN, OUTCOMES, Daemon, canonical, check, parse_frames, \
    parse_status, reduce_pair_x, seed

V = {1: [1.5, 2.0, -1.0, 0.5, 3.0, 4.0, 5.0, 6.0], 3: [0.25] * 8, 5: [-2.0, 1e-3, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]}
REF = reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])


async def ws_part(d):
    hdrs = {"Authorization": "Bearer " + TOKEN}
    async with websockets.connect(f"wss://localhost:{d.port}/flow", ssl=d.ssl_ctx(), extra_headers=hdrs) as ws:
        for tok, canon in ((70, REF), (71, [x + 1.0 for x in REF])):
            await ws.send(b"".join(seed(0, tok, ln, V[ln]) for ln in (1, 3, 5)))
            outs = []
            for _ in range(3):
                fr = parse_frames(await asyncio.wait_for(ws.recv(), 5))
                outs.append(OUTCOMES[parse_status(fr[0][3])["outcome"]])
            check(sorted(outs) == ["accepted", "accepted", "resolved"], f"slot 0/{tok} resolved by the lcore: {outs}")
            await ws.send(canonical(0, tok, canon))
            fr = parse_frames(await asyncio.wait_for(ws.recv(), 5))
            check(fr[0][0] == STATUS_STREAM, f"canonical report 0/{tok} answered with a status")


def verdicts(fanoctl, log):
    return {r["token_seq"]: r["verdict"] for r in audit_records(fanoctl, log) if r["type"] == "verdict"}


def main():
    fanoctl = fanoctl_or_skip()
    with Daemon(dp_profile="ring", expect_start=False, deadline_ms=30000, extra="[dataplane]\nlcores = 2\n") as d:
        if not d.lanes_up("SKIP: the dataplane did not start here (built without DPDK, or the EAL refused):\n{log}"):
            sys.exit(SKIP)
        asyncio.run(ws_part(d))
        v = {}

        def both():
            v.update(verdicts(fanoctl, f"{d.dir}/audit.log"))
            return 70 in v and 71 in v
        until(both, 5)
        check(v.get(70) == "clean", f"wss canonical report in lanes mode: clean verdict for 0/70 ({v})")
        check(v.get(71) == "divergent", f"wss wrong canonical report in lanes mode: divergent verdict for 0/71 ({v})")
    print("ok")


if __name__ == "__main__":
    main()
