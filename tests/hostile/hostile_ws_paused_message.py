#!/usr/bin/python3
"""hostile_ws_paused_message.py - the WebSocket message deadline
(docs/config.md [tls] body_min_rate) counts only the time the daemon reads:
while it has stopped reading a session (its answers queued over half of
send_queue_max: the peer does not read them), an unfinished message is not
the peer's fault, and the idle timeout rules instead, so such a session
is neither closed 1008 for the daemon's own wait nor kept open for ever.

The daemon: handshake_timeout_ms 1000 (the message grace), idle_timeout_ms
4000, send_queue_max 64K. A wss /flow?status=1 client opens a fragmented
message (its first fragment: one seed), then sends pings inside it
(allowed between fragments, RFC 6455 5.4; 41,283 here: 1 MB of pongs more
than tcp_wmem lets the kernel buffer) and reads nothing: the pongs fill the
daemon's queue and it stops reading. The client keeps the kernel's default
receive buffer: behind a tiny one (4 KiB) the daemon's kernel saw a window
(2,036 bytes) smaller than its segment (2,048) and sent only on its
backed-off zero-window probes, so the reading in step 1 could stall, the
daemon's 2.9 MB unsent in the kernel, past the idle timeout (2 runs in 7
under ASan, ss -tin).
  1. The client holds still 2.5 s (past the 1 s grace: that pause is the
     attack's shape, not a wait for readiness), then reads every pong and
     sends the last fragment: its seed is answered (a status frame), no
     close came, fanogate_tls_ws_message_timeouts_total stays 0.
  2. A second client does the same and never reads: the session ends by
     the idle timeout (fanogate_tls_idle_timeouts_total moves within 15 s),
     not by the message rule (still 0).
Without the pause rule step 1 was closed 1008 "message too slow" after
about 1 s. Every load stops by itself."""
import os
import select
import ssl
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import Daemon, check, metric, metrics_text, seed, skip  # noqa: E402
from fgtest.wait import within  # noqa: E402
from fgtest.ws import close_code, server_frames, ws_frame  # noqa: E402



def sysctl_max(name):
    """The largest buffer (bytes) net.ipv4.NAME allows a socket."""
    with open(f"/proc/sys/net/ipv4/{name}") as f:
        return int(f.read().split()[2])


# More pongs than the kernel will buffer for the daemon's socket (tcp_wmem's
# largest, 4 MB here: 41,283 pings), so that the rest queue in the daemon
PINGS = (sysctl_max("tcp_wmem") + (1 << 20)) // 127 + 1
PING = ws_frame(0x89, b"p" * 125)
HOLD_S = 2.5


def open_paused(d, body):
    s, head, rest = d.ws_raw("/flow?status=1")
    check(b" 101 " in head, "wss /flow upgraded")
    s.sendall(ws_frame(0x02, body))  # first fragment: a whole seed frame, FIN clear
    s.settimeout(30)
    s.sendall(PING * PINGS)
    return s, rest


def main():
    if PINGS * len(PING) > sysctl_max("tcp_rmem") * 3 // 4:
        skip(f"net.ipv4.tcp_rmem's largest buffer cannot hold the {PINGS} pings the daemon leaves unread")
    d = Daemon(handshake_ms=1000, idle_ms=4000, send_queue_max="64K")
    with d:
        body = seed(0, 5, 1, [1.0] * d.hidden)
        last = seed(0, 6, 1, [2.0] * d.hidden)
        s, buf = open_paused(d, body)
        time.sleep(HOLD_S)  # the attack's shape: not reading (not a wait for readiness)
        s.setblocking(False)
        t_read = time.monotonic()
        pongs, sent_last, status, closed = 0, False, None, None
        end = time.monotonic() + 20
        while time.monotonic() < end and status is None and closed is None:
            if pongs >= PINGS and not sent_last:
                s.setblocking(True)
                s.sendall(ws_frame(0x80, last))
                s.setblocking(False)
                sent_last = True
            r, _, _ = select.select([s], [], [], 0.5)
            if not r:
                continue
            try:
                c = s.recv(65536)
            except ssl.SSLWantReadError:
                continue
            if not c:
                closed = "eof"
                break
            got, buf = server_frames(buf + c)
            for b0, payload in got:
                if b0 == 0x8A:
                    pongs += 1
                elif b0 == 0x88:
                    closed = close_code(bytes([b0, len(payload)]) + payload)
                elif b0 == 0x82 and sent_last:
                    status = payload
        s.close()
        check(closed is None, f"the paused session was not closed (close: {closed}, {pongs} of {PINGS} pongs read)")
        check(pongs == PINGS and status is not None,
              f"every pong came and the message, finished after the pause, was answered "
              f"({pongs} pongs read in {time.monotonic() - t_read:.2f} s)")
        check(metric(metrics_text(d), "fanogate_tls_ws_message_timeouts_total") == 0,
              "no session closed by the message rule")

        idle0 = metric(metrics_text(d), "fanogate_tls_idle_timeouts_total")
        s2, _ = open_paused(d, body)
        within(lambda: metric(metrics_text(d), "fanogate_tls_idle_timeouts_total") > idle0, 15,
               "a paused session that never reads ends by the idle timeout")
        check(metric(metrics_text(d), "fanogate_tls_ws_message_timeouts_total") == 0,
              "not by the message rule")
        s2.close()
    print("ok")


if __name__ == "__main__":
    main()
