#!/usr/bin/python3
"""hostile_tls_v6_prefix.py - an IPv6 host owns its /64: counted per
address, one host could open unauth_per_source idle connections from each
of 2^64 addresses and the per-source limit would hold nothing back.

In a private network namespace, fd00:64::/64 (the attacker's subnet) and
fd00:65::/64 (a client's) are local on lo (AnyIP routes, non-local bind
on). The daemon ([tls] listen [::]:0, unauth_per_source 4,
max_connections 256, the default ipv6_source_prefix 64) runs there.
  1. The attacker opens one idle TCP connection (no TLS) from each of 40
     addresses of its /64.
     Checks: at most 4 stay open (tls_unauthenticated_connections), the
     other 36 are refused per_source (fanogate_tls_admission_total); a
     client from fd00:65::1 is answered GET /healthz 200 while they are
     open.
  2. Control (the test can fail): the same on a daemon with
     ipv6_source_prefix = 128 (each address its own source, as before this
     key): all 40 stay open, none refused per_source. Then the key is
     reloaded live to 64 (fanoctl config reload): 10 more addresses of the
     /64 are counted by it (4 kept, 6 refused) while the 40 stay open.
  3. The metrics endpoint on a dual-stack listener ([::]:0, 4 per
     source): 5 idle connections from 5 IPv4 addresses all stay (IPv4-
     mapped peers count by their IPv4 address), then 6 from one /64: 2
     refused.
Readiness: the daemon's ready fd; every connect is counted (kept or
refused) before the checks read the counters."""
import json
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import Daemon, check, fail, fanoctl_or_skip, metric, metrics_text, skip  # noqa: E402
from fgtest.wait import private_net, within  # noqa: E402

ATTACKER = "fd00:64::"
CLIENT = "fd00:65::1"
ADDRS = 40
PER_SOURCE = 4


def setup_net():
    private_net()
    for cmd in (["ip", "-6", "route", "add", "local", "fd00:64::/64", "dev", "lo"],
                ["ip", "-6", "route", "add", "local", "fd00:65::/64", "dev", "lo"],
                ["sysctl", "-qw", "net.ipv6.ip_nonlocal_bind=1"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            skip("cannot set up the IPv6 subnets: %s: %s" % (" ".join(cmd), r.stderr.strip()))


def connect_from(src, port):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((src, 0))
    s.connect(("::1", port))
    return s


def healthz_from(d, src):
    s = connect_from(src, d.port)
    t = d.ssl_ctx().wrap_socket(s, server_hostname="localhost")
    t.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    head = t.recv(64)
    t.close()
    m = re.match(rb"HTTP/1\.1 (\d+)", head)
    return int(m.group(1)) if m else 0


def counts(d):
    m = metrics_text(d)
    return (metric(m, "fanogate_tls_unauthenticated_connections"),
            metric(m, 'fanogate_tls_admission_total{reason="per_source"}'))


def reload_prefix(d, prefix):
    """[tls] ipv6_source_prefix changed in the file, applied with fanoctl
    config reload (a live key): returns the reload's change lines."""
    with open(d.cfg) as f:
        text = f.read()
    text = re.sub(r"^ipv6_source_prefix = \d+$", f"ipv6_source_prefix = {prefix}", text, flags=re.M)
    with open(d.cfg, "w") as f:
        f.write(text)
    p = subprocess.run([fanoctl_or_skip(), "--socket", f"{d.dir}/fanoctl.sock", "config", "reload", "--json"],
                       capture_output=True, text=True, timeout=20)
    j = json.loads(p.stdout) if p.stdout.strip() else {}
    check(p.returncode == 0, f"fanoctl config reload: {p.stdout.strip()} {p.stderr.strip()}")
    return j.get("changes", [])


def run(prefix, reload_to=None):
    d = Daemon(listen="[::]:0", max_conns=256, idle_ms=60000, handshake_ms=60000)
    with open(d.cfg) as f:
        text = f.read()
    keys = "max_connections = 256\nunauth_per_source = %d\nipv6_source_prefix = %d\n" % (PER_SOURCE, prefix)
    check("max_connections = 256\n" in text, "the harness's [tls] section takes the admission keys")
    text = text.replace("max_connections = 256\n", keys)
    with open(d.cfg, "w") as f:
        f.write(text)
    held = []
    with d:
        base_open, base_refused = counts(d)
        for i in range(ADDRS):
            held.append(connect_from("%s%x" % (ATTACKER, 0x100 + i), d.port))
        within(lambda: sum(counts(d)) - base_open - base_refused >= ADDRS, 10,
               "the daemon counted every connection (kept or refused)")
        unauth, refused = counts(d)
        status = healthz_from(d, CLIENT)
        if reload_to is not None:
            changes = reload_prefix(d, reload_to)
            check(any(f"ipv6_source_prefix: {prefix} -> {reload_to}" in c for c in changes),
                  f"the reload names the change: {changes}")
            # connections accepted from now on count by the new prefix
            open1, refused1 = counts(d)
            more = [connect_from("%s%x" % (ATTACKER, 0x200 + i), d.port) for i in range(10)]
            within(lambda: sum(counts(d)) - open1 - refused1 >= 10, 10, "the daemon counted the 10 new connections")
            k, r = counts(d)
            print(f"after the reload to /{reload_to}: 10 more addresses of the /64: {k - open1} kept, "
                  f"{r - refused1} refused per_source", flush=True)
            check(k - open1 == PER_SOURCE and r - refused1 == 10 - PER_SOURCE,
                  f"after the reload, new connections count by the /{reload_to}")
            held += more
        for s in held:
            s.close()
    return unauth - base_open, refused - base_refused, status


def run_metrics():
    """The metrics endpoint on a dual-stack listener ([::]:0): IPv4 peers
    (IPv4-mapped addresses) count by their IPv4 address, IPv6 peers by
    their /64. Its per-source limit is 4. Returns the refusals after 5
    idle connections from 5 IPv4 addresses and then 6 from one /64."""
    d = Daemon()
    with open(d.cfg) as f:
        text = f.read()
    check("[metrics]\nlisten = 127.0.0.1:0\n" in text, "the harness's [metrics] listen can be changed")
    with open(d.cfg, "w") as f:
        f.write(text.replace("[metrics]\nlisten = 127.0.0.1:0\n", "[metrics]\nlisten = [::]:0\n"))
    with d:
        held = []
        for i in range(5):
            s = socket.create_connection(("127.0.0.1", d.metrics_port), timeout=5,
                                         source_address=("127.0.0.%d" % (2 + i), 0))
            held.append(s)
        for i in range(6):
            s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            s.settimeout(5)
            s.bind(("%s%x" % (ATTACKER, 0x300 + i), 0))
            s.connect(("::1", d.metrics_port))
            held.append(s)
        # this scrape's connection is accepted after every one above (one
        # listener, in order): its answer counts them all
        try:
            text = metrics_text(d)
        except OSError as e:
            fail(f"metrics: a scrape from 127.0.0.1 after 5 IPv4 peers was refused ({e}): "
                 "IPv4-mapped peers counted as one source")
        refused = metric(text, "fanogate_metrics_refused_per_source_total")
        for s in held:
            s.close()
    return refused


def main():
    if os.geteuid() != 0:
        skip("needs root for the namespace's routes and sysctl")
    setup_net()
    kept, refused, status = run(64)
    print(f"/64: {ADDRS} addresses of one /64: {kept} kept, {refused} refused per_source; "
          f"a client of another /64: /healthz {status}", flush=True)
    check(kept <= PER_SOURCE, f"one /64 holds at most unauth_per_source ({PER_SOURCE}) connections: {kept}")
    check(refused >= ADDRS - PER_SOURCE, f"the rest were refused per_source: {refused}")
    check(status == 200, f"a client of another /64 is answered while they are open: {status}")
    kept, refused, status = run(128, reload_to=64)
    print(f"/128 (control): {kept} kept, {refused} refused per_source", flush=True)
    check(kept == ADDRS and refused == 0, f"control: counted per address, all {ADDRS} stay open: {kept}, {refused}")
    refused = run_metrics()
    print(f"metrics on [::]: 5 IPv4 peers and 6 of one /64: {refused} refused per source", flush=True)
    check(refused == 2, f"metrics: IPv4 peers of a dual-stack listener count apart, one /64 as one: {refused} "
          "refused (want 2: the /64's 5th and 6th)")
    print("ok")


if __name__ == "__main__":
    main()
