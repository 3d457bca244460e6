#!/usr/bin/python3
"""daemon_accounting.py - input that is not one whole aeon frame is accounted
like the frames the ingest refuses, in local mode and (when the dataplane
can start on the ring profile) in lanes mode:

- a POST /residual-seed body that is truncated, shorter than a header, has
  stray bytes after a frame, or is garbage whose length runs past the end is
  answered 400 "outcome":"malformed" with the codec's stable reason in
  "error", and counted as one frame (fanogate_tls_frames_total) and one
  malformed frame under that reason (fanogate_tls_malformed_total{reason}),
  not only in fanogate_http_errors_total;
- a WebSocket binary message that is not whole frames gets one status
  (outcome malformed, the same reason code) and the same counters, and no
  HTTP error;
- a whole frame on an unknown stream (it reaches the ingest) is counted by
  reason in both modes;
- HTTP-level refusals of a body made of whole frames (empty_body,
  multiple_frames) stay HTTP errors only: no frame, no malformed count;
- a canonical report is one frame and one canonical, no slot outcome, in
  lanes mode too; frames = outcomes + canonical + malformed.

Every figure is a difference of two scrapes of /metrics."""
import asyncio
import json

import websockets

import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.wait import until  # noqa: E402
from fgtest.harness import (metrics, OUTCOMES, STATUS_STREAM, TOKEN, canonical, check, hdr, http, local_then_lanes,
                        parse_frames, parse_status, seed)

V = [1.0, -2.5, 3.25, 1e-7, 6.0, 7.5, -8.0, 9.125]
# enum fg_reason (include/fg/wire.h): the status frame carries the number
REASON = {"short_header": 2, "truncated_frame": 3, "unknown_stream": 11}


def delta(m1, m0, key):
    return m1.get(key, 0) - m0.get(key, 0)


def malformed(m1, m0, reason):
    return delta(m1, m0, 'fanogate_tls_malformed_total{reason="%s"}' % reason)


def post(d, body):
    st, h, b = http(d, "POST", "/residual-seed", body)
    return st, json.loads(b)


# (what, body, error in the ack, counted as a malformed frame)
POSTS = [
    ("truncated frame", seed(0, 1, 1, V)[:-3], "truncated_frame", True),
    ("7-byte body", seed(0, 1, 1, V)[:7], "short_header", True),
    ("frame plus 3 stray bytes", seed(0, 1, 1, V) + b"\x01\x02\x03", "truncated_frame", True),
    ("garbage whose length runs past the end", hdr(0xAF60, 1, 0x10, 500) + b"garbage!!!", "truncated_frame", True),
    ("whole frame on an unknown stream", hdr(0x1234, 5, 0, 0), "unknown_stream", True),
    ("empty body", b"", "empty_body", False),
    ("two whole frames", seed(0, 2, 1, V) + seed(0, 2, 3, V), "multiple_frames", False),
]

# (what, message, reason)
WS_MSGS = [
    ("frame plus 3 stray bytes", seed(1, 3, 1, V) + b"\x01\x02\x03", "truncated_frame"),
    ("5-byte message", b"\xaf\x61\x00\x00\x00", "short_header"),
    ("whole frame on an unknown stream", hdr(0x1234, 6, 0, 0), "unknown_stream"),
]


async def ws_part(d, mode):
    async with websockets.connect(f"wss://localhost:{d.port}/flow", ssl=d.ssl_ctx(),
                                  extra_headers={"Authorization": "Bearer " + TOKEN}, max_size=None) as ws:
        for what, msg, reason in WS_MSGS:
            await ws.send(msg)
            fr = parse_frames(await asyncio.wait_for(ws.recv(), 10))
            check(len(fr) == 1 and fr[0][0] == STATUS_STREAM, f"{mode}: wss {what}: one status frame")
            st = parse_status(fr[0][3])
            check(OUTCOMES[st["outcome"]] == "malformed" and st["reason"] == REASON[reason] and st["facts"] == 0x02,
                  f"{mode}: wss {what}: status malformed, reason {reason} ({REASON[reason]}), only shadow_mode set: {st}")
        # the session goes on: a good frame is still accepted
        await ws.send(seed(1, 4, 1, V))
        st = parse_status(parse_frames(await asyncio.wait_for(ws.recv(), 10))[0][3])
        check(OUTCOMES[st["outcome"]] == "accepted", f"{mode}: wss session still accepts frames")


def scenario(d, mode):
    m0 = metrics(d)
    for what, body, error, counted in POSTS:
        st, j = post(d, body)
        check(st == 400 and j.get("outcome") == "malformed" and j.get("error") == error and j.get("ack") is False
              and j.get("shadow_mode") is True and not j.get("fully_resolved"),
              f"{mode}: POST {what}: 400 malformed, error {error}, shadow_mode: {st} {j}")
    m1 = metrics(d)
    n_post = sum(1 for p in POSTS if p[3])
    check(malformed(m1, m0, "truncated_frame") == 3 and malformed(m1, m0, "short_header") == 1
          and malformed(m1, m0, "unknown_stream") == 1,
          f"{mode}: POST bodies counted by reason: truncated_frame 3, short_header 1, unknown_stream 1 "
          f"(got {malformed(m1, m0, 'truncated_frame')}, {malformed(m1, m0, 'short_header')}, "
          f"{malformed(m1, m0, 'unknown_stream')})")
    mal = sum(malformed(m1, m0, r) for r in REASON)
    all_mal = sum(v for k, v in m1.items() if k.startswith("fanogate_tls_malformed_total{")) - \
        sum(v for k, v in m0.items() if k.startswith("fanogate_tls_malformed_total{"))
    check(all_mal == mal == n_post, f"{mode}: no other reason moved ({all_mal} = {mal} = {n_post})")
    check(delta(m1, m0, "fanogate_tls_frames_total") == n_post,
          f"{mode}: each malformed body is one frame received, the HTTP-level refusals none: "
          f"{delta(m1, m0, 'fanogate_tls_frames_total')} = {n_post}")
    check(delta(m1, m0, "fanogate_http_errors_total") == len(POSTS),
          f"{mode}: every 400 is still an HTTP error ({delta(m1, m0, 'fanogate_http_errors_total')})")
    outs = sum(v for k, v in m1.items() if k.startswith("fanogate_tls_outcomes_total{")) - \
        sum(v for k, v in m0.items() if k.startswith("fanogate_tls_outcomes_total{"))
    check(outs == 0, f"{mode}: no slot outcome for malformed input ({outs})")

    asyncio.run(ws_part(d, mode))
    m2 = {}

    def counted():  # lanes mode: the last outcome may still be on its way
        m2.clear()
        m2.update(metrics(d))
        return delta(m2, m1, "fanogate_tls_frames_total") == len(WS_MSGS) + 1
    until(counted, 5)
    for what, msg, reason in WS_MSGS:
        check(malformed(m2, m1, reason) == 1, f"{mode}: wss {what} counted under {reason}")
    check(delta(m2, m1, "fanogate_tls_frames_total") == len(WS_MSGS) + 1,
          f"{mode}: wss frames = 3 malformed messages + 1 good frame ({delta(m2, m1, 'fanogate_tls_frames_total')})")
    check(delta(m2, m1, "fanogate_http_errors_total") == 0, f"{mode}: WebSocket refusals are no HTTP errors")
    # a canonical report is counted as canonical, not as a slot outcome (both modes)
    st, h, b = http(d, "POST", "/canonical", canonical(1, 4, V))
    check(st == 200, f"{mode}: POST /canonical answered 200 ({st})")
    m3 = metrics(d)
    outs = sum(v for k, v in m3.items() if k.startswith("fanogate_tls_outcomes_total{")) - \
        sum(v for k, v in m2.items() if k.startswith("fanogate_tls_outcomes_total{"))
    check(delta(m3, m2, "fanogate_canonical_total") == 1 and delta(m3, m2, "fanogate_tls_frames_total") == 1
          and outs == 0, f"{mode}: a canonical report is one frame and one canonical, no slot outcome ({outs})")
    # the ledger the soak closes: frames = outcomes + canonical + malformed
    tot = lambda m, p: sum(v for k, v in m.items() if k.startswith(p))
    check(tot(m3, "fanogate_tls_frames_total") == tot(m3, "fanogate_tls_outcomes_total{")
          + tot(m3, "fanogate_canonical_total") + tot(m3, "fanogate_tls_malformed_total{"),
          f"{mode}: frames = outcomes + canonical + malformed")


def main():
    local_then_lanes(scenario, deadline_ms=30000)
    print("ok")


if __name__ == "__main__":
    main()
