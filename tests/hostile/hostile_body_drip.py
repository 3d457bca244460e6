#!/usr/bin/python3
"""hostile_body_drip.py - the minimum body rate: an
authenticated client dripping a request body byte by byte cannot hold a
connection for the whole idle timeout.

The daemon: handshake_timeout_ms 1000, idle_timeout_ms 30000, [tls]
body_min_rate at its default (64 KiB/s). An authenticated client sends a
POST /residual-seed head announcing a 50-byte body, then one body byte every
0.3 s (about 3 bytes/s). The body deadline is 1 s + 50 B at 64 KiB/s: the
daemon must answer 408 {"error": "body_timeout"} and close well before the
idle timeout (the check allows 10 s on a loaded machine; before the fix
nothing came for the whole 30 s idle timeout), and count it in
fanogate_tls_body_timeouts_total. A body sent at an ordinary pace on the
same daemon (two halves 0.2 s apart) is still taken.
The same rule bounds a WebSocket message (wss /flow, the same token): a
message must keep up body_min_rate after handshake_timeout_ms from its
first bytes. Dripped (a) byte by byte inside one frame, or (b) as one-byte
fragments that never end the message (each frame is traffic, so the idle
timeout never came), the session is closed 1008 well before the idle
timeout and counted in fanogate_tls_ws_message_timeouts_total (2); a
message in two fragments 0.2 s apart on another session is answered.
Each drip stops by itself (at the answer, or after 15 s)."""
import json
import os
import re
import select
import ssl
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
from daemon_harness import TOKEN, Daemon, check, fail, http_read_response, seed  # noqa: E402
from fgtest.ws import close_code, ws_frame  # noqa: E402

IDLE_MS = 30000


def head(n):
    return (f"POST /residual-seed HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {n}\r\n\r\n").encode()


def metric(d, name):
    m = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10).read().decode()
    v = re.search(r"^fanogate_" + name + r" (\d+)$", m, re.M)
    if not v:
        fail(name + " missing")
    return int(v.group(1))


def drip(s, pieces, answered):
    """Send pieces on TLS socket s one per 0.3 s until answered(what the
    daemon sent so far) is true, the daemon closes, all are sent, or 15 s
    passed. Returns (what the daemon sent, pieces sent, seconds); s is left
    blocking."""
    t0 = time.monotonic()
    sent, answer = 0, b""
    s.setblocking(False)
    while time.monotonic() - t0 < 15 and sent < len(pieces):
        r, _, _ = select.select([s], [], [], 0.3)
        if r:
            try:
                c = s.recv(65536)
            except ssl.SSLWantReadError:
                continue  # TLS records without data (session tickets)
            except OSError:
                break
            answer += c
            if not c or answered(answer):
                break
            continue
        try:
            s.sendall(pieces[sent])
        except (OSError, ssl.SSLWantWriteError):
            break
        sent += 1
    s.setblocking(True)
    return answer, sent, time.monotonic() - t0


def main():
    with Daemon(handshake_ms=1000, idle_ms=IDLE_MS) as d:
        body = seed(0, 5, 1, [1.0] * d.hidden)
        check(len(body) == 50, "a 50-byte seed body")
        # an ordinary client: the body in two halves, 0.2 s apart
        s = d.tls_socket()
        s.sendall(head(len(body)) + body[:25])
        time.sleep(0.2)  # the pace of an ordinary client, not a readiness wait
        s.sendall(body[25:])
        st, _, b, _ = http_read_response(s)
        check(st == 200 and json.loads(b)["ack"], "a body at an ordinary pace is taken (%s)" % st)
        s.close()

        s = d.tls_socket()
        s.sendall(head(len(body)))
        answer, sent, took = drip(s, [body[i:i + 1] for i in range(len(body))], lambda a: len(a) > 0)
        if not answer:
            s.settimeout(1)
            try:
                answer = s.recv(65536)
            except OSError:
                pass
        text = answer.decode(errors="replace")
        check(text.startswith("HTTP/1.1 408") and "body_timeout" in text,
              "dripped body answered 408 body_timeout after %.1f s (%d of %d bytes sent; %r)"
              % (took, sent, len(body), text[:60]))
        check(took < 10 and took < IDLE_MS / 1000, "well before the idle timeout (%.1f s)" % took)
        s.settimeout(10)
        try:
            rest = s.recv(65536)
            while rest:
                rest = s.recv(65536)
        except OSError:
            pass
        check(True, "the connection is closed after the 408")
        s.close()
        check(metric(d, "tls_body_timeouts_total") == 1, "counted in fanogate_tls_body_timeouts_total")

        # WebSocket: a message in two fragments at an ordinary pace is answered
        s, head_, rest = d.ws_raw("/flow?status=1")
        check(b" 101 " in head_, "wss /flow upgraded (%r)" % head_[:40])
        s.sendall(ws_frame(0x02, body[:25]))
        time.sleep(0.2)  # the pace of an ordinary client, not a readiness wait
        s.sendall(ws_frame(0x80, body[25:]))
        s.settimeout(10)
        got = rest
        while len(got) < 2:
            got += s.recv(65536)
        check(got[0] == 0x82 and close_code(got) is None, "a message in two fragments 0.2 s apart is answered")
        s.close()
        framed = ws_frame(0x82, body)
        drips = {"bytes of one frame": [framed[:6]] + [framed[i:i + 1] for i in range(6, len(framed))],
                 "one-byte fragments": ([ws_frame(0x02, body[:1])] +
                                        [ws_frame(0x00, body[i:i + 1]) for i in range(1, len(body))])}
        for what, pieces in drips.items():
            s, head_, _ = d.ws_raw("/flow?status=1")
            check(b" 101 " in head_, "wss /flow upgraded")
            answer, sent, took = drip(s, pieces, lambda a: close_code(a) is not None)
            s.close()
            check(close_code(answer) == 1008,
                  "WebSocket message dripped as %s: closed 1008 after %.1f s (%d of %d pieces; close code %s)"
                  % (what, took, sent, len(pieces), close_code(answer)))
            check(took < 10 and took < IDLE_MS / 1000, "well before the idle timeout (%.1f s)" % took)
        check(metric(d, "tls_ws_message_timeouts_total") == 2, "counted in fanogate_tls_ws_message_timeouts_total")


if __name__ == "__main__":
    main()
