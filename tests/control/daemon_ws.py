#!/usr/bin/python3
"""daemon_ws.py - WebSocket /flow sessions against a real client (Debian's
python3-websockets 10.4): Bearer handshake, coalesced binary frames answered
with one status message each, subscriptions (layers=..., layers=all)
receiving resolved seeds bit-exact, status=0, ping/pong, close handshake
codes (1000 echo, 1003 text, 1009 too big, 1008 consumer role), malformed
messages answered with a status, refusals (401, 400 bad layer), and the slow
consumer dropped with 1008 while the loop keeps serving others."""
import asyncio
import socket
import struct

import websockets

import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import ws as fgws  # noqa: E402
from fgtest.wait import until_async  # noqa: E402
from fgtest.harness import (STATUS_STREAM, TOKEN, TOKEN_CONSUMER, Daemon, OUTCOMES, check, hdr, parse_frames,
                        parse_status, reduce_pair_x, resolved_frame, seed)

V1 = [1.0, -2.5, 3.25, 1e-7, 6.0, 7.5, -8.0, 9.125]
V3 = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
V5 = [-1e6, 3.0e-3, 2.0, 2.0, 2.0, -0.1, 1e30, 1.0]


def connect(d, query="", token=TOKEN, **kw):
    ctx = d.ssl_ctx(kw.pop("cert", None))
    headers = {"Authorization": "Bearer " + token} if token else {}
    return websockets.connect(f"wss://localhost:{d.port}/flow{query}", ssl=ctx, extra_headers=headers,
                              max_size=None, **kw)


async def statuses(ws, n):
    out = []
    for _ in range(n):
        m = await asyncio.wait_for(ws.recv(), 5)
        fr = parse_frames(m)
        if len(fr) != 1 or fr[0][0] != STATUS_STREAM:
            raise AssertionError("expected one status frame per message, got %r" % (fr,))
        st = parse_status(fr[0][3])
        st["token_seq"] = fr[0][1]
        out.append(st)
    return out


async def nothing_within(ws, secs):
    try:
        m = await asyncio.wait_for(ws.recv(), secs)
        return m
    except asyncio.TimeoutError:
        return None


def receive_mode(d):
    """The daemon says which receive mode it runs (cp_conn.c, cp_loop.h):
    the fallback when FANOGATE_RECV=single, else the shared buffer ring
    (or the fallback with the kernel's reason)."""
    log = d.log()
    single = "receive mode: per-connection recv (" in log
    ring = "receive mode: multishot recv from a shared buffer ring" in log
    check(single != ring, "exactly one receive mode logged")
    if os.environ.get("FANOGATE_RECV") == "single":
        check("receive mode: per-connection recv (FANOGATE_RECV=single)" in log, "fallback mode in use")


async def main(d):
    receive_mode(d)
    async with connect(d, "?layers=2") as sub2, connect(d, "?layers=all") as suball, connect(d) as tx:
        check(tx.response_headers.get("Sec-WebSocket-Protocol") is None, "no subprotocol when none offered")
        # one message, three coalesced frames, scrambled order
        await tx.send(seed(2, 10, 5, V5) + seed(2, 10, 1, V1) + seed(2, 10, 3, V3, neg=1))
        sts = await statuses(tx, 3)
        names = [OUTCOMES[s["outcome"]] for s in sts]
        check(names == ["accepted", "accepted", "resolved"], "3 coalesced frames -> 3 status messages " + str(names))
        check(all(s["token_seq"] == 10 and s["dst_layer"] == 2 for s in sts), "statuses carry token_seq and layer")
        check(sts[2]["facts"] & 0x04 and not sts[2]["facts"] & 0x08 and sts[2]["fingerprint"] != 0,
              "resolving status: fully_resolved, not awaiting, fingerprint set")
        check(sts[0]["facts"] & 0x02, "shadow_mode fact set (lines start in shadow)")
        expect = resolved_frame(2, 10, reduce_pair_x([(V1, 0), (V3, 1), (V5, 0)]))
        m = await asyncio.wait_for(sub2.recv(), 5)
        check(m == expect, "layers=2 subscriber gets the resolved seed, bit-exact")
        m = await asyncio.wait_for(suball.recv(), 5)
        check(m == expect, "layers=all subscriber gets it too")
        check(await nothing_within(tx, 0.2) is None, "the unsubscribed sender gets no seed")

        # a layer-1 seed reaches layers=all only
        await tx.send(seed(1, 11, 1, V1) + seed(1, 11, 3, V3) + seed(1, 11, 5, V5))
        await statuses(tx, 3)
        m = await asyncio.wait_for(suball.recv(), 5)
        check(parse_frames(m)[0][0] == 0xAFA1 and parse_frames(m)[0][1] == 11, "layer-1 seed reaches layers=all")
        check(await nothing_within(sub2, 0.2) is None, "layer-1 seed does not reach layers=2")

        # many slots in one message (coalescing like the fleet: 16 frames)
        msg = b"".join(seed(0, 100 + i // 3, (1, 3, 5)[i % 3], V1) for i in range(15))
        await tx.send(msg)
        sts = await statuses(tx, 15)
        check(sum(1 for s in sts if OUTCOMES[s["outcome"]] == "resolved") == 5, "15 frames, 5 slots resolved")
        got = [await asyncio.wait_for(suball.recv(), 5) for _ in range(5)]
        check(sorted(parse_frames(g)[0][1] for g in got) == [100, 101, 102, 103, 104], "5 seeds pushed in order")

        # malformed message: one status, session continues
        await tx.send(seed(2, 12, 1, V1) + b"\x01\x02\x03")
        st = (await statuses(tx, 1))[0]
        check(OUTCOMES[st["outcome"]] == "malformed" and st["reason"] == 3, "stray bytes: malformed status (truncated_frame)")
        await tx.send(hdr(0x1234, 5, 0, 0))
        st = (await statuses(tx, 1))[0]
        check(OUTCOMES[st["outcome"]] == "malformed", "unknown stream: malformed status, session alive")

        # a message sent in WebSocket fragments (continuation frames), split
        # inside aeon frames: reassembled before decoding
        whole = seed(3, 13, 1, V1) + seed(3, 13, 3, V3) + seed(3, 13, 5, V5)
        await tx.send([whole[:7], whole[7:50], whole[50:]])
        sts = await statuses(tx, 3)
        check([OUTCOMES[s["outcome"]] for s in sts] == ["accepted", "accepted", "resolved"],
              "fragmented WebSocket message reassembled: 3 statuses")
        m = await asyncio.wait_for(suball.recv(), 5)
        check(m == resolved_frame(3, 13, reduce_pair_x([(V1, 0), (V3, 0), (V5, 0)])),
              "seed from the fragmented message pushed bit-exact")

        # ping/pong
        pong = await tx.ping(b"hello")
        await asyncio.wait_for(pong, 5)
        check(True, "ping answered with pong")

    # status=0: frames accepted silently
    async with connect(d, "?status=0&layers=3") as q:
        await q.send(seed(3, 20, 1, V1) + seed(3, 20, 3, V3) + seed(3, 20, 5, V5))
        m = await asyncio.wait_for(q.recv(), 5)
        fr = parse_frames(m)
        check(fr[0][0] == 0xAFA3 and fr[0][1] == 20, "status=0: no status messages, only the subscribed seed")

    # subprotocol: aeon-flow accepted when offered
    async with connect(d, subprotocols=["aeon-flow"]) as ws:
        check(ws.subprotocol == "aeon-flow", "subprotocol aeon-flow negotiated when offered")

    # close handshake: our code echoed
    ws = await connect(d)
    await ws.close(code=1000, reason="bye")
    check(ws.close_code == 1000, "client close 1000 echoed by the server")

    # text message -> 1003
    ws = await connect(d)
    await ws.send("text is refused")
    try:
        await asyncio.wait_for(ws.recv(), 5)
    except websockets.ConnectionClosed as e:
        pass
    check(ws.close_code == 1003, "text message: close 1003")

    # message over ws_max_message (1 MiB) -> 1009
    ws = await connect(d)
    try:
        await ws.send(b"\x00" * (1024 * 1024 + 16))
        await asyncio.wait_for(ws.recv(), 5)
    except websockets.ConnectionClosed:
        pass
    check(ws.close_code == 1009, "message over ws_max_message: close 1009")

    # consumer role may subscribe but not send
    ws = await connect(d, "?layers=all", token=TOKEN_CONSUMER)
    await ws.send(seed(2, 30, 1, V1))
    try:
        await asyncio.wait_for(ws.recv(), 5)
    except websockets.ConnectionClosed:
        pass
    check(ws.close_code == 1008, "consumer role sending frames: close 1008")

    # refusals at the upgrade
    for q, tok, code, what in (("", None, 401, "missing token"), ("", "not-the-token-xxxxxxxx", 401, "bad token"),
                               ("?layers=99", TOKEN, 400, "layer out of range"),
                               ("?bogus=1", TOKEN, 400, "unknown query parameter")):
        try:
            await connect(d, q, token=tok)
            check(False, "upgrade refused: " + what)
        except websockets.InvalidStatusCode as e:
            check(e.status_code == code, f"upgrade refused: {what} -> {e.status_code}")


async def slow_consumer(d):
    """A subscriber that never reads: its send queue (send_queue_max 64K here)
    fills, the daemon drops it with 1008, and other sessions keep working."""
    s, head, _ = d.ws_raw("/flow?layers=all", rcvbuf=4096)
    check(head.startswith(b"HTTP/1.1 101"), "raw subscriber upgraded")
    big = [float(i) for i in range(d.hidden)]
    async with connect(d, "?status=0") as tx:
        for k in range(40):  # 40 x 16 slots x 4 KiB seeds = 2.5 MiB offered
            await tx.send(b"".join(seed(0, 1000 + k * 16 + j, ln, big) for j in range(16) for ln in (1, 3, 5)))
        # the daemon drops the session (and logs it) once its queue is full
        await until_async(lambda: "slow consumer" in d.log(), 5)
        # The session is dropped; read what was queued until the close frame,
        # with a normal receive window (behind the 4 KiB one the daemon's
        # kernel can stall on a window smaller than its segment).
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.settimeout(5)
        data, _ = fgws.read_to_end(s)
        check(fgws.close_code(data) == 1008, "slow consumer dropped with close 1008")
        pong = await tx.ping()
        await asyncio.wait_for(pong, 5)
        check(True, "other sessions still served after the drop")
    check("slow consumer" in d.log(), "drop logged")
    s.close()


def backpressure(d):
    """A sender that never reads its statuses: once its answers fill the
    send queue (send_queue_max 64K) the daemon stops reading from it (the
    client's writes block) instead of dropping or growing; when the client
    reads again every status arrives, none lost, the session alive."""
    import os as _os
    s, head, rest = d.ws_raw("/flow", rcvbuf=4096, sndbuf=4096)
    v = [0.5] * d.hidden
    # 64 frames per message, lines 0..6 cycling over fresh slots: every frame
    # gets a 38-byte status (most are unexpected_line: cheap for the engine)
    msg_frames = 64
    sent_frames = 0
    s.settimeout(2.0)
    blocked = False
    for k in range(20000):
        payload = b"".join(seed(1, 100000 + k * msg_frames + i, i % 7, v) for i in range(msg_frames))
        key = _os.urandom(4)
        n = len(payload)
        hdr = bytes([0x82, 0x80 | 126]) + struct.pack(">H", n) + key  # minimal form: 126..65535
        try:
            s.sendall(hdr + bytes(c ^ key[i % 4] for i, c in enumerate(payload)))
        except socket.timeout:
            blocked = True
            break
        sent_frames += msg_frames
    check(blocked, f"the daemon stopped reading a peer that does not read (blocked after {sent_frames} frames)")
    check(d.proc.poll() is None, "daemon alive while the peer is paused")
    # read everything back: one status per frame sent in whole messages (a
    # normal receive window now, so TCP is not the bottleneck)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.settimeout(10.0)
    buf = bytearray(rest)
    pos = 0
    got = 0
    closed_early = False
    while got < sent_frames:
        while len(buf) - pos >= 2:
            ln, off = buf[pos + 1] & 0x7F, 2
            if ln == 126:
                if len(buf) - pos < 4:
                    break
                ln, off = struct.unpack(">H", buf[pos + 2:pos + 4])[0], 4
            if len(buf) - pos < off + ln:
                break
            if buf[pos] == 0x88:
                closed_early = True
            pos += off + ln
            got += 1
        if got >= sent_frames or closed_early:
            break
        del buf[:pos]
        pos = 0
        chunk = s.recv(262144)
        if not chunk:
            break
        buf += chunk
    check(not closed_early, "no close frame while the peer was paused")
    check(got >= sent_frames, f"every status arrived once the peer read again ({got} for {sent_frames} frames)")
    s.close()


async def idle(d):
    ws = await connect(d, "?layers=all", ping_interval=None)
    try:
        await asyncio.wait_for(ws.recv(), 5)
    except websockets.ConnectionClosed:
        pass
    check(ws.close_code == 1001, "idle session closed with 1001 after idle_timeout_ms")


if __name__ == "__main__":
    with Daemon() as d:
        asyncio.run(main(d))
    with Daemon(idle_ms=500) as d:
        asyncio.run(idle(d))
    with Daemon(send_queue_max="64K", idle_ms=30000) as d:
        backpressure(d)
    with Daemon(hidden=1024, send_queue_max="64K") as d:
        asyncio.run(slow_consumer(d))
