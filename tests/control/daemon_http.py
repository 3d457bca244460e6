#!/usr/bin/python3
"""daemon_http.py - HTTPS surface of the fanogate daemon with a real TLS client:
/healthz, POST /residual-seed JSON acks for every outcome, POST /canonical,
GET /residual-seed/<layer>/<token_seq> (immediate, woken, 404, 504, 409),
bearer-token refusals (401), malformed request lines, oversize headers,
keep-alive, the head deadline (slowloris) and the tokens file mode check."""
import json
import os
import socket
import ssl
import threading
import time
import urllib.request

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.wait import until, within  # noqa: E402
from fgtest.harness import (TOKEN, TOKEN_CONSUMER, Daemon, canonical, check, hdr, http, http_read_response,
                        metrics, reduce_pair_x, resolved_frame, seed)

V = {1: [1.5, 2.25, -3.0, 4.0, 0.1, 0.2, 0.3, 1e-8],
     3: [0.7, -1.25, 3.0, 1e7, 0.1, -0.2, 0.3, 3e-8],
     5: [-0.5, 8.5, 1e-3, -1e7, 0.1, 0.2, -0.3, 1.0]}


def post(d, body, path="/residual-seed", token=TOKEN):
    st, h, b = http(d, "POST", path, body, token=token)
    return st, (json.loads(b) if h.get("content-type") == "application/json" else b)


def expiry():
    """Short slot deadline, its own daemon: nothing else depends on timing."""
    with Daemon(deadline_ms=300) as d:
        # expiry: one contribution, wait past the deadline
        st, j = post(d, seed(3, 400, 1, V[1]))
        time.sleep(d.deadline_ms / 1000 + 0.3)  # not readiness: waits out the slot deadline under test
        st, j = post(d, seed(3, 400, 3, V[3]))
        check(st == 410 and j["outcome"] == "expired" and not j["ack"], "contribution after the deadline: 410 expired")
        st, h, b = http(d, "GET", "/residual-seed/3/400")
        check(st == 504 and json.loads(b)["error"] == "expired", "GET of an expired slot: 504")
        t0 = time.time()
        st, h, b = http(d, "GET", "/residual-seed/3/999")
        check(st == 404 and json.loads(b)["error"] == "unknown_slot" and time.time() - t0 >= d.deadline_ms / 1000 * 0.9,
              "GET of a slot nobody fills: 404 after waiting the deadline")


def main():
    # A long slot deadline: the multi-request sequences below must never race
    # the expiry on a loaded machine; expiry has its own daemon.
    with Daemon(deadline_ms=30000) as d:
        st, h, b = http(d, "GET", "/healthz", token=None)
        j = json.loads(b)
        check(st == 200 and j["status"] == "ok" and j["mode"] == "local", "GET /healthz 200 without auth")

        # accepted -> resolved (Pair X: lines 1, 3, 5), in a scrambled order
        st, j = post(d, seed(2, 100, 5, V[5]))
        check(st == 200 and j["ack"] and j["outcome"] == "accepted" and j["awaiting_resolution"]
              and not j["fully_resolved"] and j["shadow_mode"] and j["line"] == 5 and j["dst_layer"] == 2
              and j["token_seq"] == 100 and j["bytes"] == 8 * 4 + 0 and j["sign"] == 1,
              "first contribution: ack accepted, awaiting, shadow, fields of wire.md 5")
        for k in ("ack", "line", "dst_layer", "token_seq", "bitset", "sign", "bytes", "shadow_mode",
                  "fully_resolved", "awaiting_resolution", "outcome", "model_epoch", "fingerprint"):
            if k not in j:
                check(False, "JSON ack has field " + k)
        check(len(j["fingerprint"]) == 16, "fingerprint is 16 hex digits")

        # a GET that waits, woken by the resolving contribution
        got = {}

        def waiter():
            got["r"] = http(d, "GET", "/residual-seed/2/100")
        t = threading.Thread(target=waiter)
        t.start()
        # The GET must be parked before the resolving POST: were the POST
        # first, the GET would be answered at once (the same bytes) and the
        # wake-up path would go untested. fanogate_http_seed_waiting counts it.
        within(lambda: metrics(d).get("fanogate_http_seed_waiting") == 1, 10,
              "the GET parked in the daemon (fanogate_http_seed_waiting 1)")
        st, j = post(d, seed(2, 100, 1, V[1]))
        check(st == 200 and j["outcome"] == "accepted" and j["landed"] == (1 << 5) | (1 << 1)
              and j["bitset"] == (1 << 5) | (1 << 1) | 0x55,
              "second contribution accepted, landed lines 1 and 5, bitset = landed + the lines not expected")
        st, j = post(d, seed(2, 100, 3, V[3], neg=1))
        check(st == 200 and j["outcome"] == "resolved" and j["fully_resolved"] and not j["awaiting_resolution"]
              and j["sign"] == -1 and j["fingerprint"] != "0" * 16, "third contribution resolves the slot")
        check(j["bitset"] == 0x7F and j["landed"] == 0x2A,
              "the completing contribution answers bitset 0x7f (the fleet's gate), landed 0x2a: %r" % j)
        t.join(5)
        expect = resolved_frame(2, 100, reduce_pair_x([(V[1], 0), (V[3], 1), (V[5], 0)]))
        st, h, b = got["r"]
        check(st == 200 and h["content-type"] == "application/octet-stream" and b == expect,
              "waiting GET woken with the resolved-seed frame, bit-exact")
        st, h, b = http(d, "GET", "/residual-seed/2/100")
        check(st == 200 and b == expect, "GET of a resolved slot answers at once, bit-exact")

        st, j = post(d, seed(2, 100, 1, V[1]))
        check(st == 410 and j["outcome"] == "late" and j["error"] == "late" and j["fully_resolved"]
              and j["fingerprint"] != "0" * 16, "same body after resolution: 410 late, fully_resolved")
        st, j = post(d, seed(2, 100, 1, V[3]))
        check(st == 409 and not j["ack"] and j["outcome"] == "conflict",
              "different body on a resolved slot: 409 conflict")

        # duplicate and conflict on an open slot
        st, j = post(d, seed(1, 200, 1, V[1]))
        st, j = post(d, seed(1, 200, 1, V[1]))
        check(st == 200 and j["ack"] and j["outcome"] == "duplicate", "identical contribution: duplicate, ack")
        st, j = post(d, seed(1, 200, 1, V[5]))
        check(st == 409 and not j["ack"] and j["outcome"] == "conflict" and j["error"] == "conflict",
              "conflicting contribution: 409 conflict")
        st, h, b = http(d, "GET", "/residual-seed/1/200")
        check(st == 409 and json.loads(b)["error"] == "poisoned", "GET of a poisoned slot: 409 poisoned")
        check(j["model_epoch"] >= 1, "conflict advanced the model epoch")

        # malformed, unknown layer, unknown stream, unexpected line, wrong band
        bad = seed(1, 300, 1, V[1])[:-2]
        bad = hdr(0xAF61, 300, 0x10, len(bad) - 10) + bad[10:]
        st, j = post(d, bad)
        check(st == 400 and j["outcome"] == "malformed" and j["error"] == "seed_body_rows",
              "body not a whole number of rows: 400 seed_body_rows")
        st, j = post(d, seed(9, 300, 1, V[1]))
        check(st == 400 and j["error"] == "unknown_layer", "layer 9 of 4: 400 unknown_layer")
        st, j = post(d, hdr(0x1234, 1, 0, 0))
        check(st == 400 and j["error"] == "unknown_stream", "stream 0x1234: 400 unknown_stream")
        st, j = post(d, seed(1, 301, 0, V[1]))
        check(st == 409 and j["error"] == "unexpected_line", "line 0 not in the rule: 409 unexpected_line")
        st, j = post(d, seed(1, 302, 7, V[1]))
        check(st == 400 and j["error"] == "seed_line", "line 7: 400 seed_line")
        st, j = post(d, seed(1, 303, 1, V[1]) + b"\x00\x01")
        check(st == 400 and j["error"] == "truncated_frame", "frame plus stray bytes: 400 truncated_frame")
        st, j = post(d, seed(1, 304, 1, V[1]) + seed(1, 304, 3, V[3]))
        check(st == 400 and j["error"] == "multiple_frames", "two frames in one POST: 400 multiple_frames")
        st, j = post(d, canonical(1, 305, V[1]))
        check(st == 400 and j["error"] == "wrong_band", "canonical frame on /residual-seed: 400 wrong_band")
        st, j = post(d, b"")
        check(st == 400 and j["error"] == "empty_body", "empty body: 400")

        # canonical report
        st, j = post(d, canonical(2, 100, V[1]), path="/canonical")
        check(st == 200 and j["ack"], "POST /canonical acked")

        st, h, b = http(d, "GET", "/residual-seed/77/1")
        check(st == 400, "GET with a layer out of range: 400")

        # auth
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 500, 1, V[1]), token=None)
        check(st == 401 and json.loads(b)["error"] == "auth_missing" and "bearer" in h.get("www-authenticate", "").lower(),
              "POST without a token: 401 auth_missing + WWW-Authenticate")
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 500, 1, V[1]), token="x" * 30)
        check(st == 401 and json.loads(b)["error"] == "bad_token", "POST with a wrong token: 401 bad_token")
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 500, 1, V[1]), token=TOKEN[:-1])
        check(st == 401, "POST with a token prefix: 401")
        st, h, b = http(d, "GET", "/residual-seed/1/1", token=None)
        check(st == 401, "GET seed without a token: 401")
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 500, 1, V[1]), token=TOKEN_CONSUMER)
        check(st == 403, "role consumer may not POST frames: 403")

        # routing and methods
        st, h, b = http(d, "GET", "/nope", token=None)
        check(st == 404, "unknown path: 404")
        st, h, b = http(d, "GET", "/residual-seed")
        check(st == 405, "GET /residual-seed: 405")
        st, h, b = http(d, "HEAD", "/healthz", token=None)
        check(st == 200 and b == b"" and int(h["content-length"]) > 0, "HEAD /healthz: 200, length but no body")

        # keep-alive: three requests on one connection, the last pipelined pair in one write
        s = d.tls_socket()
        st1, _, _ = http(d, "GET", "/healthz", token=None, sock=s)
        req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        s.sendall(req + req)
        a = http_read_response(s)
        rest = a[3]
        while rest.count(b"\r\n\r\n") < 1 or len(rest) < 10:
            rest += s.recv(65536)
        check(st1 == 200 and a[0] == 200 and rest.startswith(b"HTTP/1.1 200"),
              "keep-alive and pipelining: 3 responses on one connection")
        s.close()

        # Expect: 100-continue gets an interim 100 before the body is sent
        s = d.tls_socket()
        body = seed(0, 700, 1, V[1])
        s.sendall(b"POST /residual-seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
                  b"\r\nExpect: 100-continue\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += s.recv(1)
        s.sendall(body)
        st, h, b, _ = http_read_response(s)
        check(interim.startswith(b"HTTP/1.1 100") and st == 200 and json.loads(b)["ack"],
              "Expect: 100-continue -> 100, then the ack")
        s.close()

        # HTTP/1.0 without keep-alive: answered with Connection: close, then closed
        s = d.tls_socket()
        s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        st, h, b, _ = http_read_response(s)
        try:
            rest = s.recv(10)
        except (ssl.SSLError, ConnectionError):
            rest = b""
        check(st == 200 and h.get("connection") == "close" and rest == b"", "HTTP/1.0: Connection: close and closed")
        s.close()

        # malformed request lines and oversize headers
        def raw(data, read=True):
            s = d.tls_socket()
            s.sendall(data)
            r = http_read_response(s) if read else None
            s.close()
            return r
        r = raw(b"GET /healthz HTTP/1.1\nHost: x\n\n")
        check(r[0] == 400, "bare LF request: 400")
        r = raw(b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n")
        check(r[0] == 405, "unknown method: 405")
        r = raw(b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n")
        check(r[0] == 505, "HTTP/2.0 request line: 505")
        r = raw(b"GET healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        check(r[0] == 400, "target not origin-form: 400")
        r = raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
        check(r[0] == 431, "20 kB header: 431")
        r = raw(b"POST /residual-seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
                b"\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        check(r[0] == 501, "Transfer-Encoding: 501")
        r = raw(b"POST /residual-seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
                b"\r\nContent-Length: 99999999\r\n\r\n")
        check(r[0] == 413, "Content-Length above ws_max_message: 413")
        # ... and a client that keeps sending the refused body still reads the
        # 413 (lingering close: no RST over unread input)
        s = d.tls_socket()
        big = b"\x00" * (1536 * 1024)
        s.sendall(b"POST /residual-seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
                  b"\r\nContent-Length: " + str(len(big)).encode() + b"\r\n\r\n" + big)
        st, h, b, _ = http_read_response(s)
        check(st == 413 and h.get("connection") == "close", "oversize body sent in full: the 413 still arrives")
        s.close()

    # slowloris: a head that never completes is cut at handshake_timeout_ms
    with Daemon(handshake_ms=400) as d:
        s = d.tls_socket()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        t0 = time.time()
        try:
            st, _, _, _ = http_read_response(s)
        except (ConnectionError, ssl.SSLError, socket.timeout):
            st = None
        check(st == 408 and time.time() - t0 < 5, "incomplete head answered 408 after the head deadline")
        raw_sock = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        t0 = time.time()
        data = raw_sock.recv(100)  # no TLS hello at all
        check(data == b"" and time.time() - t0 < 5, "silent TCP peer closed after the handshake deadline")
        raw_sock.close()

    # the tokens file must be 0600
    d = Daemon(tokens_mode=0o644, expect_start=False)
    with d:
        d.proc.wait(10)
        check(d.proc.returncode != 0 and "mode 0644" in d.log() and "0600" in d.log(),
              "tokens file of mode 0644 refused at start with a clear error")


def table_outcomes():
    """no_slot (table index held by another open slot) and shape_mismatch."""
    with Daemon(capacity=4, deadline_ms=30000) as d:
        st, j = post(d, seed(0, 1, 1, V[1]))
        check(st == 200 and j["outcome"] == "accepted", "slot (1, 0) open in a 4-slot table")
        st, j = post(d, seed(0, 2, 1, V[1]))  # index (2*4 + 0) % 4 == (1*4 + 0) % 4
        check(st == 503 and j["outcome"] == "no_slot" and j["error"] == "no_slot",
              "same table index held by an open slot: 503 no_slot")
        st, j = post(d, seed(0, 1, 3, V[3] + V[3], seq_len=2))
        check(st == 409 and j["outcome"] == "shape_mismatch", "seq_len differs from the slot's: 409 shape_mismatch")


def limits():
    """max_connections and the idle timeout. Both connections authenticate
    (an authenticated connection is never evicted for a newcomer; an
    unauthenticated one would be: tests/hostile/hostile_tls_lockout.py)."""
    with Daemon(max_conns=2, idle_ms=600) as d:
        a, b = d.tls_socket(), d.tls_socket()
        http(d, "POST", "/residual-seed", seed(0, 9, 1, V[1]), sock=a)
        http(d, "POST", "/residual-seed", seed(0, 10, 1, V[1]), sock=b)
        try:
            c = d.tls_socket(timeout=5)
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            third = c.recv(100)
        except (ssl.SSLError, ConnectionError, OSError):
            third = b""
        check(third == b"", "third connection over max_connections=2 is closed unanswered")
        check("admission: refusing 127.0.0.1 (full;" in d.log(), "refusal over max_connections logged")
        # the server closes the idle connection (EOF, no timing window:
        # a loaded machine only makes it later) and counts it as idle
        a.settimeout(30)
        try:
            data = a.recv(100)
        except (ssl.SSLError, ConnectionError, OSError):
            data = b""
        idle = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10).read().decode()
        idle = [ln for ln in idle.splitlines() if ln.startswith("fanogate_tls_idle_timeouts_total ")]
        check(data == b"" and idle and float(idle[0].split()[1]) >= 1,
              "idle keep-alive connection closed by the server after idle_timeout_ms, counted (%s)" % idle)
        a.close()
        b.close()
        st = None

        def room():
            nonlocal st
            try:
                st, _, _ = http(d, "GET", "/healthz", token=None)
            except (ssl.SSLError, ConnectionError, OSError):
                st = None
            return st == 200
        until(room, 5)
        check(st == 200, "room again once the idle connections are gone")


if __name__ == "__main__":
    main()
    expiry()
    table_outcomes()
    limits()
