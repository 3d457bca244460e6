#!/usr/bin/python3
"""hostile_tls_lockout.py - lockout of the TLS port: idle TCP connections
from unauthenticated clients cannot lock legitimate clients out.

The daemon (--no-dataplane, the default model's 28 layers, [tls]
max_connections 1024, handshake 5 s, the default admission keys:
unauth_per_source auto = 2 * (28 + 4) = 64) listens on 127.0.0.1.

1. One source: an attacker on 127.0.0.2 keeps 1,100 idle TCP connections
   open (it reopens any the daemon closes, paced, until the test is done or
   60 s passed). While it does, a client on 127.0.0.1 asks GET /healthz 41
   times, each on a new TLS connection: all 41 must be answered 200 (before
   admission: 0 of 41). The one-source refusals are counted under
   fanogate_tls_admission_total{reason="per_source"} and at most
   unauth_per_source (64) of its connections stay open.
2. Many sources: with an authenticated keep-alive connection open (a POST
   with the bearer token), 100 sources 127.0.0.10..109 open 16 idle
   connections each (1,600 > max_connections). The authenticated connection
   is never evicted (a second POST on it is answered), new /healthz clients
   still get in (an unauthenticated connection of the flood is evicted for
   them: reason evicted_unauth_share), and the unauthenticated connections never
   hold more than max_connections minus the auth_reserve share (768).
3. A socket that never starts TLS is closed at handshake_timeout_ms.
Every load stops by itself; readiness comes from the daemon's ready fd."""
import os
import re
import resource
import selectors
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
from daemon_harness import SKIP, Daemon, check, fail, http, seed  # noqa: E402

MAX_CONNS = 1024
ATTACK_ONE = 1100
SOURCES = 100
LAYERS = 28
PER_SOURCE = 2 * (LAYERS + 4)  # [tls] unauth_per_source = auto (docs/config.md)
FLOOD_PER_SOURCE = 16  # connections each of the many sources holds


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want:
        print("SKIP: RLIMIT_NOFILE hard limit %d < %d" % (hard, want), flush=True)
        sys.exit(SKIP)
    if soft == resource.RLIM_INFINITY or soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def idle_conn(port, src):
    s = socket.socket()
    s.setblocking(True)
    s.settimeout(5)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


class Holder(threading.Thread):
    """Keeps n idle connections from src open: reopens each one the daemon
    closes, at most `pace` reopenings per second, until stop is set or
    `limit` seconds passed."""

    def __init__(self, port, src, n, pace=200, limit=60.0):
        super().__init__(daemon=True)
        self.port, self.src, self.n, self.pace, self.limit = port, src, n, pace, limit
        self.stop = threading.Event()
        self.opened = 0
        self.filled = threading.Event()
        self.error = None

    def run(self):
        sel = selectors.DefaultSelector()
        end = time.monotonic() + self.limit
        live = 0
        try:
            while live < self.n and not self.stop.is_set() and time.monotonic() < end:
                sel.register(idle_conn(self.port, self.src), selectors.EVENT_READ)
                live += 1
                self.opened += 1
            self.filled.set()
            budget, t0 = 0.0, time.monotonic()
            while not self.stop.is_set() and time.monotonic() < end:
                for key, _ in sel.select(timeout=0.05):
                    s = key.fileobj
                    try:
                        data = s.recv(4096)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        data = b""
                    if data:
                        continue  # an alert or a 408: keep reading until the close
                    sel.unregister(s)
                    s.close()
                    live -= 1
                now = time.monotonic()
                budget = min(budget + (now - t0) * self.pace, float(self.pace))
                t0 = now
                while live < self.n and budget >= 1 and not self.stop.is_set():
                    sel.register(idle_conn(self.port, self.src), selectors.EVENT_READ)
                    live += 1
                    self.opened += 1
                    budget -= 1
        except OSError as e:
            self.error = e
            self.filled.set()
        finally:
            for key in list(sel.get_map().values()):
                key.fileobj.close()
            sel.close()


def metrics(d):
    s = socket.create_connection(("127.0.0.1", d.metrics_port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        k = s.recv(65536)
        if not k:
            break
        data += k
    s.close()
    return data.decode(errors="replace")


def metric(text, name, label=None):
    pat = r"^fanogate_" + name + (r'\{reason="' + label + r'"\}' if label else "") + r" (\d+)$"
    m = re.search(pat, text, re.M)
    if not m:
        fail("metric %s%s missing" % (name, "{%s}" % label if label else ""))
    return int(m.group(1))


def healthz(d):
    """GET /healthz on a new TLS connection from 127.0.0.1: the status, or
    the error that stopped it."""
    try:
        raw = socket.socket()
        raw.settimeout(10)
        raw.bind(("127.0.0.1", 0))
        raw.connect(("127.0.0.1", d.port))
        s = d.ssl_ctx().wrap_socket(raw, server_hostname="localhost")
        st, _, _ = http(d, "GET", "/healthz", token=None, sock=s)
        s.close()
        return st
    except (OSError, ConnectionError) as e:
        return repr(e)


def one_source(d):
    h = Holder(d.port, "127.0.0.2", ATTACK_ONE)
    h.start()
    if not h.filled.wait(60) or h.error:
        fail("attacker could not open its connections: %s" % h.error)
    answers = [healthz(d) for _ in range(41)]
    ok = sum(1 for a in answers if a == 200)
    m = metrics(d)
    h.stop.set()
    h.join(10)
    check(ok == 41, "41 of 41 /healthz answered while one source holds %d idle connections (%d; %s)"
          % (ATTACK_ONE, ok, sorted(set(str(a) for a in answers if a != 200))[:3]))
    refused = metric(m, "tls_admission_total", "per_source")
    check(refused >= ATTACK_ONE - PER_SOURCE,
          "the source's connections past unauth_per_source refused (per_source %d)" % refused)
    check(metric(m, "tls_unauthenticated_connections") <= PER_SOURCE + 1,
          "at most unauth_per_source of its connections stay open (%d)" % metric(m, "tls_unauthenticated_connections"))


def many_sources(d):
    # an authenticated keep-alive peer before the flood
    auth = d.tls_socket()
    frame = seed(0, 77, 1, [1.0] * d.hidden)
    st, _, _ = http(d, "POST", "/residual-seed", body=frame, sock=auth)
    check(st == 200, "authenticated POST before the flood (%s)" % st)
    held = []
    try:
        for i in range(SOURCES):
            src = "127.0.0.%d" % (10 + i)
            held += [idle_conn(d.port, src) for _ in range(FLOOD_PER_SOURCE)]
        # the daemon accepts in arrival order: these come after the flood
        answers = [healthz(d) for _ in range(5)]
        check(answers.count(200) == 5, "new /healthz clients get in under a %d-connection flood from %d sources (%s)"
              % (len(held), SOURCES, answers))
        st, _, _ = http(d, "POST", "/residual-seed", body=seed(0, 78, 1, [1.0] * d.hidden), sock=auth)
        check(st == 200, "the authenticated connection was not evicted (second POST %s)" % st)
        m = metrics(d)
        check(metric(m, "tls_admission_total", "evicted_unauth_share") > 0,
              "older unauthenticated connections evicted for newer ones")
        unauth = metric(m, "tls_unauthenticated_connections")
        check(unauth <= MAX_CONNS - MAX_CONNS // 4, "unauthenticated connections stay out of the reserve (%d)" % unauth)
    finally:
        for s in held:
            s.close()
        auth.close()


def never_handshakes(d):
    """An idle socket that never starts TLS is closed at handshake_timeout_ms
    (5 s here), counted as a head timeout."""
    before = metric(metrics(d), "tls_head_timeouts_total")
    s = idle_conn(d.port, "127.0.0.3")
    s.setblocking(True)
    s.settimeout(30)
    t0 = time.monotonic()
    try:
        data = s.recv(100)
    except OSError:
        data = b""
    took = time.monotonic() - t0
    s.close()
    check(data == b"" and 4.5 <= took < 25, "a never-handshaking socket is closed at the handshake deadline (%.1f s)"
          % took)
    check(metric(metrics(d), "tls_head_timeouts_total") > before, "counted in tls_head_timeouts_total")


def main():
    raise_fd_limit(4096)
    with Daemon(max_conns=MAX_CONNS, handshake_ms=5000, layers=LAYERS) as d:
        check(healthz(d) == 200, "/healthz answered before the attack")
        one_source(d)
        many_sources(d)
        never_handshakes(d)


if __name__ == "__main__":
    main()
