#!/usr/bin/python3
"""hostile_canonical_share.py - one believed sender's flood of canonical
reports cannot push the coordinator's waiting reports out of the shadow
audit's pending table: the daemon names each report's source class by
its sender's address (fg_shadow_sender_class: each of the first 63
senders a class of its own) and the table shares itself fairly by class (fg/shadow.h
invariant 4: a class within its quota, capacity / 8, is never evicted by
another class).

The daemon ([slots] capacity 256: a pending table of 256 entries, a
quota of 32) audits every seed (shadow_sample = 1). Both
senders hold the coordinator token, so both are believed.
  1. The coordinator (wss from 127.0.0.1) reports the true reduction of
     24 slots (tokens 100..107, layers 1..3) before any seed arrives: 24
     reports wait in the table.
  2. A second believed sender (wss from 127.0.0.2) sends 6,000 canonical
     digests for other keys (tokens 10,000..11,999, layers 1..3), which
     land on every index the 24 wait at, about 31 times each.
  3. The 24 slots resolve (Pair X seeds, wss from 127.0.0.1).
Checks: all 24 are judged clean (none of the coordinator's reports was
pushed out); the flood's reports that met them were refused
(canonical_table_refused{reason="share"} > 0); no frame was refused for
want of room.
Control (the test can fail): the same flood sent from the coordinator's
own address (one class) pushes the 24 reports out: fewer than 24 clean
verdicts (every one is lost here).
Both without a dataplane and with the ring dataplane on 2 lcores (where
DPDK can start; the seeds then resolve on the lcores).
Before the daemon named classes every report was class 0: step 3 judged
none of the 24."""
import asyncio
import os
import re
import sys

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import (LANES_SKIP, OUTCOMES, STATUS_STREAM, TOKEN, canonical, check, fail, metric,  # noqa: E402
                            metrics_text, mode_daemon, parse_frames, parse_status, reduce_pair_x, seed)
from fgtest.flow import CANON_BASE, frame  # noqa: E402
from fgtest.wait import until_async, within  # noqa: E402

SLOTS = [(t, layer) for t in range(100, 108) for layer in (1, 2, 3)]  # 24 < quota 32
FLOOD = [(t, layer) for t in range(10000, 12000) for layer in (1, 2, 3)]
PER_MESSAGE = 100  # frames back to back in one WebSocket message
EXTRA = "[lines]\nshadow_sample = 1\nline.1 = active\nline.3 = active\nline.5 = active\n"


def vals(t, layer, line):
    return [float((t * 7 + layer * 3 + line + k) % 11) - 5.0 for k in range(8)]


def digest(t, layer):
    """A canonical digest frame (flags 1: the payload's body is 8 bytes of
    XXH3-64, here not the true one: these keys never get a seed)."""
    return frame(CANON_BASE + layer, t, 1, (0).to_bytes(4, "little") + (1).to_bytes(4, "little") +
                 (t * 4 + layer).to_bytes(8, "little"))


def canon_in(d):
    """Canonical reports the daemon has handed to the audit."""
    return metric(metrics_text(d), "fanogate_audit_canonical_in_total")


async def send_all(d, source, frames):
    """One coordinator-token wss session from source: frames sent
    PER_MESSAGE to a message, each message only once the daemon has
    answered every frame before it (one status each). With the dataplane
    a frame is answered once its lcore has taken it: a sender that did not
    wait for the answers would fill the lcores' lanes, as the fleet's own
    window never does. An answer that refuses a frame for want of room
    (no_slot) fails the test; the daemon's counters of why are printed."""
    no_slot = []
    answered = [0]
    async with websockets.connect(f"wss://localhost:{d.port}/flow", ssl=d.ssl_ctx(), local_addr=(source, 0),
                                  extra_headers={"Authorization": "Bearer " + TOKEN}, max_size=None) as ws:
        async def drain():
            try:
                while True:
                    for stream, seq, _, payload in parse_frames(await ws.recv()):
                        if stream != STATUS_STREAM:
                            continue
                        answered[0] += 1
                        if OUTCOMES[parse_status(payload)["outcome"]] == "no_slot":
                            no_slot.append(seq)
            except websockets.ConnectionClosed:
                pass
        reader = asyncio.ensure_future(drain())
        for i in range(0, len(frames), PER_MESSAGE):
            await ws.send(b"".join(frames[i:i + PER_MESSAGE]))
            sent = min(i + PER_MESSAGE, len(frames))
            if not await until_async(lambda: no_slot or answered[0] >= sent, 10):
                fail(f"the daemon answered {answered[0]} of the first {sent} frames from {source}")
            if no_slot:
                print("refusals by cause:", re.findall(r'^fanogate_lane_\S+_total \d+$', metrics_text(d), re.M),
                      flush=True)
            check(not no_slot, f"no frame from {source} refused for want of room ({len(no_slot)} were)")
        await ws.close()
        await reader


def steps(d, flood_source):
    """The three steps on daemon d with the flood from flood_source; returns
    (clean verdicts of the 24, reports refused by share, halves evicted:
    the flood replacing its own, and in the control the coordinator's)."""
    reports = [canonical(layer, t, reduce_pair_x([(vals(t, layer, ln), 0) for ln in (1, 3, 5)]))
               for t, layer in SLOTS]
    asyncio.run(send_all(d, "127.0.0.1", reports))
    asyncio.run(send_all(d, flood_source, [digest(t, layer) for t, layer in FLOOD]))
    check(canon_in(d) == len(SLOTS) + len(FLOOD), "the 24 reports and the flood's 6,000 reached the audit")
    asyncio.run(send_all(d, "127.0.0.1", [seed(layer, t, ln, vals(t, layer, ln)) for t, layer in SLOTS
                                          for ln in (1, 3, 5)]))
    within(lambda: metric(metrics_text(d), "fanogate_audit_resolved_in_total") == len(SLOTS), 10,
           "the 24 slots resolved")
    m = metrics_text(d)
    check(metric(m, 'fanogate_audit_verdicts_total{kind="divergent"}') == 0, "no divergent verdict")
    return (metric(m, 'fanogate_audit_verdicts_total{kind="clean"}'),
            metric(m, 'fanogate_audit_canonical_table_refused_total{reason="share"}'),
            metric(m, "fanogate_audit_evicted_total"))


def run(mode, flood_source):
    """steps() on a fresh daemon: without a dataplane ("local"), or with the
    ring dataplane on 2 lcores ("lanes": the seeds resolve on the lcores,
    the reports over TLS are audited as the engine hands them on); None
    where the dataplane cannot start here."""
    with mode_daemon(mode, EXTRA, deadline_ms=30000, capacity=256) as d:
        if mode == "lanes" and not d.lanes_up(LANES_SKIP):
            return None
        return steps(d, flood_source)


def main():
    for mode in ("local", "lanes"):
        r = run(mode, "127.0.0.2")
        if r is None:
            print("ok")
            return
        clean, share, evicted = r
        print(f"{mode}: flood from another sender: {clean} of {len(SLOTS)} clean, "
              f"{share} flood reports refused by share, evicted {evicted}", flush=True)
        check(share > 0, "the flood met the coordinator's waiting reports and was refused by share")
        check(clean == len(SLOTS), f"every waiting report met its seed: {clean} of {len(SLOTS)} clean")
        clean, share, evicted = run(mode, "127.0.0.1")
        print(f"{mode}: control, the flood from the coordinator's own address: {clean} of {len(SLOTS)} clean, "
              f"{share} refused by share, evicted {evicted}", flush=True)
        check(clean < len(SLOTS), f"control: one class's flood pushes its own reports out ({clean} clean)")
    print("ok")


if __name__ == "__main__":
    main()
