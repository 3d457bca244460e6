#!/usr/bin/python3
"""hostile_metrics_lockout.py - lockout of the metrics port: idle TCP
connections cannot lock a scraper out of /metrics.

The daemon (--no-dataplane) listens for metrics on 127.0.0.1. An attacker
opens 20 idle connections from 127.0.0.2 (one source) and then one each from
127.0.0.10 .. 127.0.0.39 (many sources), holding them all open; a scraper on
127.0.0.1 then scrapes 5 times: every scrape must succeed. Counters: the
one-source connections past 4 were refused (per source), and older
connections were closed for newer ones (evicted). Before this change the
first 16 idle connections made every later scrape fail (closed at accept).

Then, on a fresh daemon, a scraper opens its connection first and sends
its request only after 4 sources (127.0.0.50 .. 53) opened 4 idle
connections each (17 in all, one over the 16): the one evicted is one of
theirs, and the scraper's request is answered. With the oldest-first
choice the scraper's connection was the one closed."""
import os
import re
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import Daemon, check, closed_by_peer, fail  # noqa: E402
from fgtest.wait import until  # noqa: E402


def connect_scraper(port):
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.1", 0))


def scrape(port, s=None):
    """GET /metrics on s (else a new connection from 127.0.0.1): the
    response as text, whatever of it came before a reset or a timeout."""
    s = s or connect_scraper(port)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        try:
            k = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not k:
            break
        data += k
    s.close()
    return data.decode(errors="replace")


def idle(port, src):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


def val(text, name):
    """The value of fanogate_NAME in a scrape's text."""
    m = re.search(r"^fanogate_" + name + r" (\d+)$", text, re.M)
    if not m:
        fail(f"{name} missing")
    return int(m.group(1))


def main():
    with Daemon() as d:
        first = scrape(d.metrics_port)
        check(first.startswith("HTTP/1.1 200"), "a scrape works before the attack")
        held = [idle(d.metrics_port, "127.0.0.2") for _ in range(20)]
        held += [idle(d.metrics_port, f"127.0.0.{10 + i}") for i in range(30)]
        # no wait needed: the daemon accepts in arrival order, so the
        # scraper's connection below comes after all of these
        ok = 0
        last = ""
        for _ in range(5):
            last = scrape(d.metrics_port)
            ok += last.startswith("HTTP/1.1 200")
        check(ok == 5, f"5 of 5 scrapes answered while 50 idle connections are held ({ok})")
        check(val(last, "metrics_refused_per_source_total") >= 16, "connections past 4 from one source refused")
        check(val(last, "metrics_evicted_total") > 0, "older connections closed for newer ones")
        for s in held:
            s.close()

    with Daemon() as d:
        scraper = connect_scraper(d.metrics_port)
        held = [idle(d.metrics_port, f"127.0.0.{50 + i}") for i in range(4) for _ in range(4)]
        # accepted in arrival order, the scraper's first: the 17th evicts
        # one; the scraper asks once that has happened (an attacker's
        # connection closed, or 5 s passed without: then it was not theirs)
        until(lambda: sum(1 for s in held if closed_by_peer(s)) >= 1, 5)
        last = scrape(d.metrics_port, scraper)
        check(last.startswith("HTTP/1.1 200"),
              f"a scraper's connection opened before 16 from 4 sources is answered ({last[:40]!r})")
        check(val(last, "metrics_evicted_total") == 1, "one connection evicted for the 17th")
        check(sum(1 for s in held if closed_by_peer(s)) == 1, "the one evicted was an attacker's")
        for s in held:
            s.close()


if __name__ == "__main__":
    main()
