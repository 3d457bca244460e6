#!/usr/bin/python3
"""daemon_epoch.py - the one model epoch, over HTTPS POST /residual-seed and wss
/flow, in local mode and (when the dataplane can start on the ring profile)
in lanes mode: a conflicting duplicate is answered 409 conflict carrying
model_epoch + 1, every later ack carries the new epoch; a slot left open
before the conflict is flushed (fg_slots_flush frees it): its line of the old
epoch is forgotten, the key's next contribution opens a fresh slot in the new
epoch (200 accepted, not 410 expired), and the same (token, layer) resolves
there, bit-exact, over HTTPS and over wss (status frames, push, GET);
fanogate_slots_flushed_total counts the flushed slots and
fanogate_slots_expired_total does not; the audit log holds the conflict and
the epoch change (fanoctl audit tail --json)."""
import asyncio
import json
import os
import sys

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.wait import until  # noqa: E402
from fgtest.harness import (audit_records, fanoctl_or_skip, local_then_lanes, metrics, OUTCOMES, STATUS_STREAM, TOKEN, check,
                        http, parse_frames, parse_status,
                        reduce_pair_x, resolved_frame, seed)

V = {1: [1.5, -2.0, 0.1, 3e-7, 5.0, 6.0, 7.0, 8.0], 3: [0.3, 0.2, 0.1, 1e5, 5.0, 6.0, -7.0, 8.0],
     5: [2.0, 2.0, 2.0, 2.0, -1.0, 1e-30, 7.0, 0.0]}
# The new epoch's line 1 of slot 0/10: not the body of before the conflict,
# and no conflict with it (that body was flushed).
V1B = [-4.0, 0.5, 0.25, 1e-3, 9.0, -6.0, 2.5, 1.0]


def post(d, body):
    st, h, b = http(d, "POST", "/residual-seed", body)
    return st, json.loads(b)


def wss(d, query=""):
    return websockets.connect(f"wss://localhost:{d.port}/flow{query}", ssl=d.ssl_ctx(),
                              extra_headers={"Authorization": "Bearer " + TOKEN}, max_size=None)


async def statuses(ws, n):
    out = []
    for _ in range(n):
        fr = parse_frames(await asyncio.wait_for(ws.recv(), 10))
        if len(fr) != 1 or fr[0][0] != STATUS_STREAM:
            raise AssertionError("expected one status frame per message, got %r" % (fr,))
        st = parse_status(fr[0][3])
        st["name"] = OUTCOMES[st["outcome"]]
        out.append(st)
    return out


async def over_wss(d, mode, e1):
    """Slot 2/20 is opened over wss in epoch e1 (line 1), a conflict over
    HTTPS moves the epoch to e1 + 1 and flushes it; the same key then
    resolves over wss in the new epoch from all three lines."""
    async with wss(d) as tx, wss(d, "?layers=2") as sub:
        await tx.send(seed(2, 20, 1, V[1]))
        st = (await statuses(tx, 1))[0]
        check(st["name"] == "accepted" and st["model_epoch"] == e1, f"{mode}: wss slot 2/20 opened in epoch {e1}: {st}")
        st_, j = post(d, seed(3, 21, 1, V[1]))
        check(st_ == 200, f"{mode}: slot 3/21 opened")
        st_, j = post(d, seed(3, 21, 1, V[5]))
        check(st_ == 409 and j["model_epoch"] == e1 + 1, f"{mode}: second conflict moves the epoch to {e1 + 1}: {j}")
        # line 3 alone first: it must not meet line 1 of the old epoch
        await tx.send(seed(2, 20, 3, V[3], neg=1))
        st = (await statuses(tx, 1))[0]
        check(st["name"] == "accepted" and st["landed"] == 1 << 3 and st["model_epoch"] == e1 + 1,
              f"{mode}: wss 2/20 reopened in epoch {e1 + 1} with line 3 only (line 1 of epoch {e1} flushed): {st}")
        await tx.send(seed(2, 20, 5, V[5]) + seed(2, 20, 1, V1B))
        sts = await statuses(tx, 2)
        check([s["name"] for s in sts] == ["accepted", "resolved"] and all(s["model_epoch"] == e1 + 1 for s in sts),
              f"{mode}: wss 2/20 resolves in epoch {e1 + 1}: {[(s['name'], s['model_epoch']) for s in sts]}")
        check(sts[1]["facts"] & 0x04 and sts[1]["fingerprint"] != 0, f"{mode}: wss status fully_resolved + fingerprint")
        expect = resolved_frame(2, 20, reduce_pair_x([(V1B, 0), (V[3], 1), (V[5], 0)]))
        m = await asyncio.wait_for(sub.recv(), 10)
        check(m == expect, f"{mode}: the new epoch's seed of 2/20 is pushed bit-exact over wss")


def scenario(d, fanoctl, mode):
    st, j = post(d, seed(0, 10, 1, V[1]))
    check(st == 200 and j["outcome"] == "accepted" and j["landed"] == 1 << 1, f"{mode}: slot 0/10 opened by line 1")
    e0 = j["model_epoch"]
    st, j = post(d, seed(1, 11, 5, V[5]))
    check(st == 200 and j["model_epoch"] == e0, f"{mode}: same epoch before the conflict")
    st, j = post(d, seed(1, 11, 5, V[3]))
    check(st == 409 and j["outcome"] == "conflict", f"{mode}: conflicting duplicate answered 409 conflict: {j}")
    check(j["model_epoch"] == e0 + 1, f"{mode}: the conflict ack carries the new epoch {e0 + 1}: {j['model_epoch']}")
    # The open slot 0/10 from before the conflict was flushed (freed by the
    # core's fg_slots_flush): line 3 opens a fresh slot, line 1 is gone.
    st, j = post(d, seed(0, 10, 3, V[3]))
    check(st == 200 and j["outcome"] == "accepted" and j["landed"] == 1 << 3 and j["awaiting_resolution"],
          f"{mode}: slot 0/10 reopened by line 3 in the new epoch, line 1 of the old one forgotten: {j}")
    check(j["model_epoch"] == e0 + 1, f"{mode}: later acks carry model_epoch {e0 + 1}")
    st, j = post(d, seed(0, 10, 5, V[5]))
    check(st == 200 and j["outcome"] == "accepted" and j["landed"] == (1 << 3) | (1 << 5),
          f"{mode}: line 5 joins the reopened slot (still awaiting line 1): {j}")
    st, j = post(d, seed(0, 10, 1, V1B))
    check(st == 200 and j["outcome"] == "resolved" and j["fully_resolved"] and j["model_epoch"] == e0 + 1,
          f"{mode}: a new line 1 (another body, no conflict) resolves 0/10 in epoch {e0 + 1}: {j}")
    st, h, b = http(d, "GET", "/residual-seed/0/10")
    check(st == 200 and b == resolved_frame(0, 10, reduce_pair_x([(V1B, 0), (V[3], 0), (V[5], 0)])),
          f"{mode}: GET /residual-seed/0/10 serves the new epoch's seed bit-exact")
    st, j = post(d, seed(0, 10, 3, V[3]))
    check(st == 410 and j["outcome"] == "late", f"{mode}: a resend after the resolution is late, as before: {j}")
    st, j = post(d, seed(2, 12, 1, V[1]))
    check(j["model_epoch"] == e0 + 1, f"{mode}: a fresh slot's ack carries model_epoch {e0 + 1}")
    asyncio.run(over_wss(d, mode, e0 + 1))
    # 0/10 (first conflict) and 2/20 (second) were open: two flushed;
    # 2/12 was open at the second conflict too: three. None expired.
    m = {}

    def flushed():
        m.clear()
        m.update(metrics(d))
        return m.get("fanogate_slots_flushed_total") == 3
    until(flushed, 5)
    check(m.get("fanogate_slots_flushed_total") == 3,
          f"{mode}: fanogate_slots_flushed_total = 3 (0/10, 2/12, 2/20): {m.get('fanogate_slots_flushed_total')}")
    check(m.get("fanogate_slots_expired_total") == 0, f"{mode}: flushed slots are not counted as expired")
    if mode == "local":
        check(m.get('fanogate_shard_slots_flushed_total{shard="0"}') == 3
              and m.get('fanogate_shard_slots_expired_total{shard="0"}') == 0,
              f"{mode}: the shard counts them as flushed, not expired")
    else:
        dp = sum(v for k, v in m.items() if k.startswith("fanogate_dp_slots_flushed_total{"))
        dpe = sum(v for k, v in m.items() if k.startswith("fanogate_dp_slots_expired_total{"))
        check(dp == 3 and dpe == 0, f"{mode}: the lcores count them as flushed ({dp}), not expired ({dpe})")
    st, h, b = http(d, "GET", "/healthz", token=None)
    ep, cf = [], []

    def recorded():
        recs = audit_records(fanoctl, f"{d.dir}/audit.log")
        ep[:] = [r for r in recs if r["type"] == "epoch"]
        cf[:] = [r for r in recs if r["type"] == "conflict"]
        return len(ep) >= 2 and len(cf) >= 2
    until(recorded, 5)
    check(any(r["from"] == e0 and r["to"] == e0 + 1 for r in ep),
          f"{mode}: audit log has the epoch change {e0} -> {e0 + 1}: {ep}")
    check(any(r["from"] == e0 + 1 and r["to"] == e0 + 2 for r in ep),
          f"{mode}: audit log has the epoch change {e0 + 1} -> {e0 + 2}: {ep}")
    check(any(r["token_seq"] == 11 and r["dst_layer"] == 1 and r["line"] == 5 for r in cf),
          f"{mode}: audit log has the conflict record: {cf}")
    check(f"model epoch {e0} -> {e0 + 1}" in d.log(), f"{mode}: epoch change logged")


def main():
    fanoctl = fanoctl_or_skip()
    # Two conflicts well within a second: the epoch guard's rate limit
    # (hostile_epoch_storm) is set out of the way; this test is about what
    # one advance does.
    fast = "[shadow]\nepoch_min_interval_ms = 1\n"
    local_then_lanes(lambda d, mode: scenario(d, fanoctl, mode), extra=fast, deadline_ms=30000)
    print("ok")


if __name__ == "__main__":
    main()
