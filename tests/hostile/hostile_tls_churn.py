#!/usr/bin/python3
"""hostile_tls_churn.py - an attacker that fills the unauthenticated share
of the TLS port from a few addresses evicts its own connections, not a
client whose one handshake is still in flight.

The daemon (--no-dataplane): [tls] max_connections 64, auth_reserve 0.25
(unauthenticated connections hold at most 48), unauth_per_source 16,
handshake_timeout_ms 20000.
1. A client on 127.0.0.1 opens one TCP connection and does not start TLS
   yet (a slow client mid-handshake); the test waits until the daemon
   counts it (fanogate_tls_unauthenticated_connections 1).
2. An attacker opens 16 idle connections from each of 127.0.0.20..23
   (64: the share is full at 48, so 17 are evicted,
   fanogate_tls_admission_total{reason="evicted_unauth_share"}).
3. The client then does its TLS handshake and GET /healthz on that
   connection: answered 200, and the 17 connections closed were the
   attacker's.
With the oldest-first eviction this replaced, the client's connection was
the first one closed (its handshake failed). Every load stops by itself;
readiness comes from the daemon's ready fd and its metrics."""
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import Daemon, check, closed_by_peer, http, metrics  # noqa: E402
from fgtest.wait import until  # noqa: E402

MAX_CONNS, RESERVE, PER_SOURCE = 64, 16, 16
ATTACK_SOURCES = ["127.0.0.%d" % (20 + i) for i in range(4)]


def tcp_from(d, src):
    s = socket.socket()
    s.settimeout(10)
    s.bind((src, 0))
    s.connect(("127.0.0.1", d.port))
    return s


def unauth(d):
    return metrics(d).get("fanogate_tls_unauthenticated_connections", -1)


def evicted(d):
    return metrics(d).get('fanogate_tls_admission_total{reason="evicted_unauth_share"}', 0)


def main():
    extra = f"[tls]\nauth_reserve = {RESERVE / MAX_CONNS}\nunauth_per_source = {PER_SOURCE}\n"
    with Daemon(max_conns=MAX_CONNS, handshake_ms=20000, extra=extra) as d:
        client = tcp_from(d, "127.0.0.1")
        check(until(lambda: unauth(d) == 1, 10), "the client's connection is counted, unauthenticated")
        attack = [tcp_from(d, src) for src in ATTACK_SOURCES for _ in range(PER_SOURCE)]
        want = 1 + len(attack) - (MAX_CONNS - RESERVE)
        check(until(lambda: evicted(d) >= want and unauth(d) == MAX_CONNS - RESERVE, 10),
              f"the unauthenticated share is full and {want} connections were evicted ({evicted(d):.0f})")
        try:
            tls = d.ssl_ctx().wrap_socket(client, server_hostname="localhost")
            st, _, _ = http(d, "GET", "/healthz", token=None, sock=tls)
        except (OSError, ConnectionError) as e:
            tls, st = client, repr(e)
        check(st == 200, f"the client's handshake, begun after the flood, completes and /healthz is answered ({st})")
        until(lambda: sum(1 for s in attack if closed_by_peer(s)) >= want, 5)
        gone = sum(1 for s in attack if closed_by_peer(s))
        check(gone == want, f"the {want} connections evicted were the attacker's ({gone} of its {len(attack)} closed)")
        tls.close()
        for s in attack:
            s.close()
    print("ok")


if __name__ == "__main__":
    main()
