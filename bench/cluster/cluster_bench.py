#!/usr/bin/python3
"""cluster_bench.py - what [cluster] costs etcd as the fleet grows
(docs/cluster.md "How it scales"): for each N given, N fanogate daemons
(--no-dataplane, default [cluster] timing: beat 200 ms, lease 3 s) against a
3-member etcd on loopback, in a network namespace of this run's own. Once
every node sees N live, for WINDOW seconds: etcd's CPU (the three members'
utime + stime from /proc, in cores), its txns and puts a second and the
watch events it sent a second (its own metrics, summed over the members).
Then KILLS nodes are killed (-9) one after the other and the detection
latency is each other node's log line "cluster: node X gone" minus the
moment of the kill: p50 and p99 over every (kill, observer).

Stops by itself: every daemon and etcd member is killed at the end (and
on any failure). Prints one table row per N; no plot, no file.
Usage: cluster_bench.py [--window S] [--kills K] N [N...]
Environment: FANOGATE (the daemon), as the tests."""
import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "cluster"))
from fgtest import wait  # noqa: E402
from fgtest.harness import Daemon, etcd_or_skip  # noqa: E402

import cluster_fleet as cf  # noqa: E402  (Etcd: 3 members, fixed ports, private net)

CLK = os.sysconf("SC_CLK_TCK")


def etcd_cpu_s(etcd):
    total = 0
    for p in etcd.procs:
        with open(f"/proc/{p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK


def etcd_counters(etcd):
    want = {"etcd_mvcc_txn_total": 0.0, "etcd_mvcc_put_total": 0.0, "etcd_debugging_mvcc_events_total": 0.0}
    for port in etcd.client:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        for ln in text.splitlines():
            name = ln.split(" ")[0].split("{")[0]
            if name in want and not ln.startswith("#"):
                want[name] += float(ln.split()[-1])
    return want


def metric(d, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10).read().decode()
    for ln in text.splitlines():
        if ln.startswith(name + " "):
            return float(ln.split()[-1])
    return None


def gone_at(d, victim):
    """Wall-clock time of d's log line saying victim is gone (None: not yet)."""
    m = re.search(r"^(\S+) fanogate\[\d+\] warn: cluster: node %s gone" % re.escape(victim), d.log(), re.M)
    if not m:
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def one(n, window, kills, keyf, prefix):
    etcd = cf.Etcd()
    nodes = []
    try:
        for i in range(3):
            etcd.start(i)
        if not etcd.wait_healthy(range(3)):
            raise SystemExit("etcd not healthy")
        for i in range(n):
            d = Daemon(deadline_ms=30000)
            with open(d.cfg, "a") as f:
                f.write(f"[cluster]\nnode = n{i:03d}\nendpoints = {etcd.endpoints()}\nprefix = {prefix}\n"
                        f"key_file = {keyf}\nnodes_max = {n + 8}\n")
            d.__enter__()
            nodes.append(d)
        if not wait.until(lambda: all(metric(d, "fanogate_cluster_nodes_live") == n for d in nodes), 60, 0.2):
            raise SystemExit(f"not every node sees {n} live")
        c0, k0, t0 = etcd_cpu_s(etcd), etcd_counters(etcd), time.monotonic()
        time.sleep(window)  # the measurement window (a bench, not a test)
        c1, k1, t1 = etcd_cpu_s(etcd), etcd_counters(etcd), time.monotonic()
        dt = t1 - t0
        lat = []
        for k in range(min(kills, n - 1)):
            victim, name = nodes[-1], f"n{len(nodes) - 1:03d}"
            t_kill = time.time()
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            victim.expect_start = False
            nodes.pop()
            victim.__exit__(None, None, None)
            if not wait.until(lambda: all(gone_at(d, name) for d in nodes), 10, 0.1):
                raise SystemExit(f"{name} not reported gone by every node within 10 s")
            lat += [gone_at(d, name) - t_kill for d in nodes]
            wait.until(lambda: all(metric(d, "fanogate_cluster_nodes_live") == len(nodes) for d in nodes), 10, 0.2)
        load = os.getloadavg()
        print(f"| {n} | {(c1 - c0) / dt:.3f} | "
              f"{(k1['etcd_mvcc_txn_total'] - k0['etcd_mvcc_txn_total']) / dt / 3:.0f} | "
              f"{(k1['etcd_mvcc_put_total'] - k0['etcd_mvcc_put_total']) / dt / 3:.0f} | "
              f"{(k1['etcd_debugging_mvcc_events_total'] - k0['etcd_debugging_mvcc_events_total']) / dt:.0f} | "
              f"{pct(lat, 50) * 1000:.0f} / {pct(lat, 99) * 1000:.0f} ms ({len(lat)}) | "
              f"{load[0]:.1f} |", flush=True)
    finally:
        for d in nodes:
            d.expect_start = False
            d.__exit__(None, None, None)
        etcd.stop_all()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=20)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("n", type=int, nargs="+")
    a = ap.parse_args()
    etcd_or_skip()
    wait.private_net()
    keydir = tempfile.mkdtemp(prefix="fg-cl-bench-")
    keyf = f"{keydir}/fleet.key"
    fd = os.open(keyf, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, os.urandom(32).hex().encode())
    os.close(fd)
    print("| nodes | etcd CPU (cores, 3 members) | txns/s (per member) | puts/s (per member) | watch events/s "
          "(sent, all members) | detection p50 / p99 (samples) | load average |")
    print("|---|---|---|---|---|---|---|")
    try:
        for n in a.n:
            one(n, a.window, a.kills, keyf, f"/fg-bench-{os.getpid()}-{n}/")
    finally:
        shutil.rmtree(keydir, ignore_errors=True)


if __name__ == "__main__":
    main()
