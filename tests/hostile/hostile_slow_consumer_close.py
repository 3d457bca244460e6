#!/usr/bin/python3
"""hostile_slow_consumer_close.py - the slow-consumer 1008
close is not lost when the consumer reads again after the 2 s linger.

A /flow subscriber (raw TLS, small receive buffer) stops reading; a sender
pushes 4 KiB seeds until the daemon drops the subscriber (send_queue_max
64K; fanogate_ws_slow_consumer_drops_total moves). The subscriber then stays
paused 3 s, longer than the daemon's 2 s linger: that pause is the attack,
not a wait for readiness. It then reads everything: the stream must end
with a WebSocket close frame carrying 1008. Before the fix the daemon cut
the connection at the linger deadline with the close frame still in its own
send queue, so the consumer read seeds and then EOF.
Every load stops by itself (the sender stops at the drop or after 400
batches)."""
import asyncio
import os
import re
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
from daemon_harness import TOKEN, Daemon, check, fail, seed  # noqa: E402
from fgtest import ws as fgws  # noqa: E402

import websockets  # noqa: E402

LINGER_S = 2.0


def drops(d):
    m = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10).read().decode()
    v = re.search(r"^fanogate_ws_slow_consumer_drops_total (\d+)$", m, re.M)
    if not v:
        fail("fanogate_ws_slow_consumer_drops_total missing")
    return int(v.group(1))


async def run(d):
    s, head, _ = d.ws_raw("/flow?layers=all", rcvbuf=4096)
    check(head.startswith(b"HTTP/1.1 101"), "paused subscriber upgraded")
    before = drops(d)
    big = [float(i) for i in range(d.hidden)]
    ctx = d.ssl_ctx()
    async with websockets.connect(f"wss://localhost:{d.port}/flow?status=0", ssl=ctx, max_size=None,
                                  extra_headers={"Authorization": "Bearer " + TOKEN}) as tx:
        for k in range(400):
            await tx.send(b"".join(seed(0, 1000 + k * 16 + j, ln, big) for j in range(16) for ln in (1, 3, 5)))
            await tx.ping()  # the daemon has handled the batch once the pong is back
            if drops(d) > before:
                break
        else:
            fail("the paused subscriber was never dropped as a slow consumer")
    dropped_at = time.monotonic()
    # The attack: stay paused past the daemon's linger before reading again.
    time.sleep(LINGER_S + 1.0)  # the test's subject: paused past the linger, not a readiness wait
    check(time.monotonic() - dropped_at > LINGER_S, "subscriber paused past the 2 s linger after the drop")
    # Read with a normal receive window: behind the 4 KiB one the daemon's
    # kernel can see a window smaller than its segment and send only on its
    # backed-off zero-window probes (TCP, not the daemon, would be tested).
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    data, e = fgws.read_to_end(s)
    if e:
        print("# read ended: %r" % (e,), flush=True)
    code = fgws.close_code(data)
    check(code == 1008, "the close frame with 1008 arrives after the pause (%d bytes read, close code %s)"
          % (len(data), code))
    s.close()


def main():
    with Daemon(hidden=1024, send_queue_max="1M", idle_ms=20000) as d:
        asyncio.run(run(d))


if __name__ == "__main__":
    main()
