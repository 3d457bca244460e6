#!/usr/bin/python3
"""cluster_split.py - [cluster] with the fleet's own emulator split across
two fanogate nodes, each running its DPDK dataplane (the fleet
emulator split across them). Main thread; run by meson (suite cluster).

Topology (everything in the test's private network namespace,
fgtest.wait.private_net, unless said):

  etcd m0 m1 m2 (loopback)           fanofleet (the fleet: stations, the
        |  10.77.I.1                 coordinator's canonical digests, the
        |  veth (kernel)             consumer on 0.0.0.0:17000)
  [ns node I] 10.77.I.2: etcd,             |  10.78.I.2 veth (kernel)
        TLS, metrics, operator             |
  fanogate node I: its dataplane (net_af_packet on the veth's other end,
        10.78.I.1:4242, --no-huge, --file-prefix fgdp<pid>, one lcore)

Node A serves destination layers 1-3 ([cluster] layers = 0-3), node B
layers 4-7 (4-7). One fanofleet run (8 layers x 64 floats, chain mode,
UDP only, canonical digests over UDP from the fleet's address) sends each
layer's contributions to the node that serves it (--udp 10.78.1.1:4242
--udp-node 4-7=10.78.2.1:4242) and checks every resolved seed, from either
node, bit for bit. While it runs, each step waits on what it changes
(fanoctl cluster, /metrics, etcdctl), never on a time:

  1. the fleet resolves on both nodes (each node's resolved counter grows);
  2. an operator change on A (lines 1, 3 and 5, the slots' lines, active)
     is applied on B within 1 s, and the fleet keeps resolving on both;
  3. one etcd member down (the leader) changes nothing for 1.5 s: etcd
     "up", the lines active on both, the fleet resolving on both;
  4. every member down: both nodes hold every line in shadow within 1 s,
     raise cluster_etcd_lost, and the fleet keeps resolving on both;
  5. etcd back: both nodes catch up (the lines active) within 1 s of etcd
     answering, and the fleet resolves on both again;
  6. the fleet is drained (SIGUSR1: no new token, those in flight judged)
     and exits 0: every seed resolved, bit-exact, none wrong or missing;
     node A resolved exactly 3 seeds a token and node B 4 (the split was
     the layers' own, nothing crossed), neither refused a contribution
     (layer_not_served 0), and each node's shadow audit judged every one
     of its seeds against the fleet's digest (3 line verdicts a seed), no
     divergence;
  6b. a conflict on B, through its dataplane: from the fleet's address
     (B's [points] e7, a point of line 5, so the conflict is attributed to
     the line: docs/hardening.md 3b), two contributions for line 5 of layer
     5 (B's), one token, different bodies (spec wire.md 4, "conflict"),
     over UDP to B's dataplane: the model epoch advances on both nodes
     within 1 s, exactly once (B sent one compare-and-swap, A applied one,
     etcd's epoch moved by one), and line 5 is demoted on both (event
     conflict from node b); the operator makes it active again;
  7. a second fanofleet run (40 tokens, on the new epoch) corrupts one
     contribution (a low bit of attn for layer 2, A's): A's shadow audit
     judges that seed divergent and demotes lines 1, 3, 5, B demotes them
     within 1 s (event divergence from node a, in B's audit log); the fleet
     sees the corruption in that one seed and every other seed bit-exact
     (no seed wrong after the conflict either);
  8. kill -9 of A (its dataplane with it): B reports it gone within 1 s of
     the kill (read on B's /metrics), through A's heartbeats (docs/cluster.md
     "Heartbeats"), once.

The timed waits read /metrics (one HTTP request per poll), then check
that fanoctl cluster agrees.

Skips (77) without etcd/etcdctl, root (namespaces, veth, AF_PACKET), the
binaries, or when the dataplane cannot run its af_packet port here (the
daemon's log says why)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)

import cluster_fleet as cf  # noqa: E402  (NetNs, NodeDaemon, Etcd, fanoctl helpers)
from fgtest import flow, wait  # noqa: E402
from fgtest.checks import SKIP, check, fail  # noqa: E402
from fgtest.harness import etcd_or_skip  # noqa: E402
from fgtest.wait import within  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
FANOFLEET = os.environ.get("FANOFLEET", "")
LAYERS, HIDDEN = 8, 64
SERVES = {"a": "0-3", "b": "4-7"}         # [cluster] layers
PER_TOKEN = {"a": 3, "b": 4}              # the fleet's destination layers 1..7: 1-3 on A, 4-7 on B
RATE = float(os.environ.get("FG_SPLIT_RATE", "20"))  # tokens/s: 140 seeds/s over both nodes
GROW = 20                                 # seeds a node must resolve to count as "still resolving"
DEMO = os.environ.get("FG_CLUSTER_DEMO") == "1"
LINES = (1, 3, 5)                         # Pair X: the slots' lines


class DpNode(cf.NodeDaemon):
    """A node with its dataplane: af_packet on the veth end in its
    namespace, 10.78.I.1; its environment is set at start."""

    def __init__(self, ns, i, **kw):
        self.dp_env = dict(FG_IFACE=ns.name + "d", FG_DP_IP4=f"10.78.{i}.1", FG_DP_IP6="",
                           FG_IDLE_SLEEP_US="50", FG_HUGEPAGES="off")
        super().__init__(ns, **kw)

    def __enter__(self):
        os.environ.update(self.dp_env)
        return super().__enter__()


def dp_link(ns, i):
    """The dataplane's veth: NAMEd in the node's namespace (no address: the
    dataplane answers ARP for 10.78.I.1 itself), NAMEf here, 10.78.I.2/24
    (the fleet's address towards that node). No offloads: af_packet must
    see the datagrams as sent."""
    out, inn = ns.name + "f", ns.name + "d"
    for cmd in (["ip", "link", "add", out, "type", "veth", "peer", "name", inn],
                ["ip", "link", "set", inn, "netns", ns.name],
                ["ip", "addr", "add", f"10.78.{i}.2/24", "dev", out],
                ["ip", "link", "set", out, "up"],
                ["ip", "-n", ns.name, "link", "set", inn, "up"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"SKIP: cannot build the dataplane veth ({' '.join(cmd)}: {r.stderr.strip()})")
            sys.exit(SKIP)
    if shutil.which("ethtool"):
        off = ["gro", "off", "gso", "off", "tso", "off", "tx", "off"]
        subprocess.run(["ethtool", "-K", out, *off], capture_output=True)
        subprocess.run(["ip", "netns", "exec", ns.name, "ethtool", "-K", inn, *off], capture_output=True)


# B's [points]: the fleet's address serves e7 (a point of line 5), so a
# conflicting contribution from it is attributed to line 5 and moves the
# epoch (control/cp_epoch_guard.h rule 2); live for the whole run
# (peer_timeout_ms: the fleet pauses between its runs).
CONFLICT_POINT, CONFLICT_LINE, CONFLICT_LAYER, CONFLICT_TOKEN = 7, 5, 5, 900000


def node_cfg(name, i, etcd):
    net = f"10.78.{i}."
    points = f"[points]\ne{CONFLICT_POINT} = {net}2/32\npeer_timeout_ms = 600000\n" if name == "b" else ""
    return f"""{points}[rules]
default = 1,3,5
[lines]
shadow_sample = 1
[udp]
port = 4242
mtu = 1472
ack_interval_ms = 20
reasm_timeout_ms = 250
allow = {net}0/24
[shadow]
canonical_sources = {net}2/32
[consumers]
default = {net}2:17000
[dataplane]
lcores = 1
[audit]
alert_command = echo "$FG_EVENT $FG_REASON" >> {cf.ALERTS}/split-{name}
[cluster]
node = {name}
endpoints = {etcd.endpoints(host=cf.NS[name].host_ip)}
{cf.auth_cfg()}prefix = {cf.PREFIX}
layers = {SERVES[name]}
lease_ttl_s = {cf.TTL}
keepalive_ms = {cf.KEEPALIVE_MS}
timeout_ms = 300
"""


def scrape(d):
    """The node's /metrics as {"name{labels}": value} (read in its namespace)."""
    body = cf.metrics_text(d)
    out = {}
    for ln in body.splitlines():
        m = re.match(r"^(fanogate_[a-z0-9_]+)(\{[^}]*\})? (\S+)$", ln)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def family(m, name):
    """Sum of a metric family's samples."""
    return sum(v for k, v in m.items() if k == name or k.startswith(name + "{"))


def resolved(d):
    return scrape(d).get("fanogate_seeds_resolved_total", 0)


def keeps_resolving(nodes, what, secs=15):
    """Each node resolves GROW more seeds from now on (the fleet is served
    on both); returns the seconds it took."""
    base = {n: resolved(d) for n, d in nodes}
    return within(lambda: all(resolved(d) >= base[n] + GROW for n, d in nodes), secs,
                  f"{what}: the fleet keeps resolving on both nodes (+{GROW} each; from {base})")


def lines_are(d, state):
    ls = cf.cluster(d)["lines"]
    return all(ls[x]["local"] == state for x in LINES)


def in_state(d, etcd_up, state):
    """The timed waits read /metrics (one HTTP GET; cheaper than a fanoctl
    process on a loaded box, so the poll adds less to what is measured):
    fanogate_cluster_etcd_up and lines 1, 3, 5 in this effective state."""
    m = scrape(d)
    return (etcd_up is None or m.get("fanogate_cluster_etcd_up") == etcd_up) and \
        all(m.get(f'fanogate_line_state{{line="{x}",state="{state}"}}') == 1 for x in LINES)


def show(title, nodes, fleet_log=None):
    """scripts/demo.sh --cluster: what a person watches after each step:
    fanoctl cluster on both nodes, each node's counters, the fleet's last
    progress line."""
    if not DEMO:
        return
    print(f"\n==== {title}", flush=True)
    for name, d in nodes:
        env = dict(os.environ, FANOCTL_SOCKET=f"{d.dir}/fanoctl.sock")
        p = subprocess.run([cf.FANOCTL, "cluster"], env=env, capture_output=True, text=True, timeout=20)
        m = scrape(d)
        print(f"---- node {name} (layers {SERVES[name]}): fanoctl cluster\n{p.stdout}{p.stderr}"
              f"---- node {name} counters: seeds resolved {m.get('fanogate_seeds_resolved_total', 0):.0f}, "
              f"audit verdicts {family(m, 'fanogate_line_verdicts_total'):.0f}, divergences "
              f"{family(m, 'fanogate_line_divergences_total'):.0f}, lines held "
              f"{m.get('fanogate_cluster_lines_held', 0):.0f}, etcd up {m.get('fanogate_cluster_etcd_up', 0):.0f}, "
              f"line changes applied from the other node {m.get('fanogate_cluster_lines_applied_total', 0):.0f}",
              flush=True)
    if fleet_log:
        prog = [ln for ln in open(fleet_log, errors="replace").read().splitlines() if ln.startswith("fleet")]
        if prog:
            print(f"---- fanofleet (split across both): {prog[-1]}", flush=True)
    time.sleep(2)  # demo pacing only (never set in the test)


def main():
    etcd_or_skip()
    if os.geteuid() != 0:
        print("SKIP: needs root (namespaces, veth, AF_PACKET)")
        sys.exit(SKIP)
    for var, path in (("FANOCTL", cf.FANOCTL), ("FANOFLEET", FANOFLEET), ("FANOGATE", cf.REAL_FANOGATE)):
        if not path or not os.access(path, os.X_OK):
            print(f"SKIP: {var} not set to the binary")
            sys.exit(SKIP)
    wait.private_net()  # the fixed etcd ports and 17000 are this run's own
    etcd = cf.Etcd()
    tmp = tempfile.mkdtemp(prefix="fg-split-")
    try:
        for i in range(3):
            etcd.start(i)
        check(etcd.wait_healthy(range(3)), "3-member etcd cluster healthy")
        cf.NS["a"], cf.NS["b"] = cf.NetNs("a", 1), cf.NetNs("b", 2)
        dp_link(cf.NS["a"], 1)
        dp_link(cf.NS["b"], 2)
        prof = os.path.join(ROOT, "drivers-config", "af_packet.ini")
        a = DpNode(cf.NS["a"], 1, extra=node_cfg("a", 1, etcd), layers=LAYERS, hidden=HIDDEN, deadline_ms=5000,
                   dp_profile=prof, expect_start=False)
        b = DpNode(cf.NS["b"], 2, extra=node_cfg("b", 2, etcd), layers=LAYERS, hidden=HIDDEN, deadline_ms=5000,
                   dp_profile=prof, expect_start=False)
        with a, b:
            for d in (a, b):
                if not d.lanes_up("SKIP: fanogate cannot run its af_packet dataplane here:\n{log}"):
                    (b if d is a else a).proc.kill()
                    sys.exit(SKIP)
                d.expect_start = True
            scenario(etcd, a, b, tmp)
    finally:
        etcd.stop_all()
        for ns in cf.NS.values():
            ns.close()
        shutil.rmtree(cf.ALERTS, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok: cluster_split")


def scenario(etcd, a, b, tmp):
    nodes = (("a", a), ("b", b))
    for d in (a, b):
        within(lambda d=d: cf.cluster(d)["etcd"] == "up", 10, f"node {d.dir} reaches etcd")
    within(lambda: sum(n["live"] for n in cf.cluster(b)["nodes"]) == 2, 5, "B sees both nodes live")
    check(all(lines_are(d, "shadow") for d in (a, b)), "lines 1, 3, 5 start in shadow on both")
    r0 = {n: resolved(d) for n, d in nodes}

    log, js = f"{tmp}/fleet.log", f"{tmp}/fleet.json"
    fleet = start_fleet(log, js, "--tokens", "1000000", "--token-base", "1000")
    try:
        fleet_scenario(etcd, a, b, nodes, fleet, log)
        fleet.send_signal(signal.SIGUSR1)  # drain: no new token, those in flight judged
        try:
            rc = fleet.wait(timeout=60)
        except subprocess.TimeoutExpired:
            fail("fanofleet did not end within 60 s of its drain:\n" + open(log).read()[-3000:])
    finally:
        if fleet.poll() is None:
            fleet.kill()
            fleet.wait()
    out = open(log, errors="replace").read()
    summary = out[out.find("fanofleet summary"):] if "fanofleet summary" in out else out[-3000:]
    print(summary, flush=True)
    check(rc == 0, f"fanofleet exits 0 (every seed resolved and bit-exact): {rc}")
    j = json.load(open(js))
    check(j["drained"] and j["wrong"] == 0 and j["missing"] == 0 and j["unknown"] == 0 and j["never_sent"] == 0,
          f"no seed wrong, missing or unknown: {j}")
    answers = sum(j["outcomes"].values())
    check(0 < j["facts"]["shadow_mode"] < answers,
          f"the fleet's status answers said shadow mode for some (lines held or not yet active), not all "
          f"(lines active): {j['facts']['shadow_mode']} of {answers}")
    check(j["resolved"] == j["bit_exact"] == j["slots"] == j["tokens_done"] * (LAYERS - 1) > 0,
          f"every slot of every token resolved bit-exact: slots {j['slots']} resolved {j['resolved']} "
          f"bit-exact {j['bit_exact']} tokens {j['tokens_done']}")
    # Each node resolved exactly its layers' seeds: A 3 a token, B 4 (the
    # counters reach the control plane after the consumer's copy: waited for)
    want = {n: r0[n] + PER_TOKEN[n] * j["tokens_done"] for n in PER_TOKEN}
    if not wait.until(lambda: all(resolved(d) == want[n] for n, d in nodes), 5):
        fail(f"each node resolved its layers' seeds: A {resolved(a)}, B {resolved(b)}, expected {want}")
    for n, d in nodes:
        m = scrape(d)
        refused = {k: v for k, v in m.items() if "layer_not_served" in k and v}
        check(not refused, f"node {n} refused no contribution (layer_not_served): {refused}")
        # shadow_sample = 1: every seed on either node is audited against
        # the coordinator's digest, one verdict for each of its 3 lines
        # (the last digests may still be on their way: waited for)
        seeds = want[n] - r0[n]
        wait.until(lambda d=d, seeds=seeds: family(scrape(d), "fanogate_line_verdicts_total") >= 3 * seeds, 5)
        m = scrape(d)
        verdicts, div = family(m, "fanogate_line_verdicts_total"), family(m, "fanogate_line_divergences_total")
        check(verdicts == 3 * seeds and div == 0, f"node {n}'s shadow audit judged each of its {seeds:.0f} seeds "
              f"against the fleet's digest: {verdicts:.0f} line verdicts (3 a seed), no divergence ({div:.0f})")
    print(f"6. fleet drained: {j['tokens_done']} tokens, {j['resolved']} seeds bit-exact (A {want['a'] - r0['a']:.0f}, "
          f"B {want['b'] - r0['b']:.0f}), none wrong or missing", flush=True)
    conflict(a, b, nodes)
    divergence(a, b, nodes, tmp)
    kill_a(a, b)


def start_fleet(log, js, *more):
    """fanofleet split across the nodes: layers 1-3 to A's dataplane, 4-7
    to B's; the coordinator's digests to the same node; resolved seeds from
    both to one consumer, every one checked bit for bit."""
    return subprocess.Popen(
        [FANOFLEET, "--udp", "10.78.1.1:4242", "--udp-node", "4-7=10.78.2.1:4242", "--consumer", "0.0.0.0:17000",
         "--mix", "udp=1", "--canonical", "digest", "--canonical-via", "udp", "--layers", str(LAYERS),
         "--hidden", str(HIDDEN), "--rate", str(RATE), "--window", "8", "--seed", str(os.getpid() % 1000 + 1),
         "--slot-timeout-ms", "8000", "--max-missing", "0", "--duration", "170", "--json", js, *more],
        stdout=open(log, "w"), stderr=subprocess.STDOUT)


def conflict(a, b, nodes):
    """6b. A conflict on B through its dataplane (the fleet idle between
    its runs: the flush that follows an epoch advance drops every open
    slot, which the running fleet would count as missing seeds): line 5's
    contribution for layer 5 (B's), one token outside the fleet's, sent
    twice from the fleet's address with different bodies. B's dataplane
    poisons the slot and hands the conflict to B's control plane (the
    sender is inside B's [points] e7, on line 5: attributed), which
    advances the model epoch and sends the compare-and-swap; A applies it
    from etcd. Both must show the new epoch within 1 s of the second
    datagram, exactly once."""
    m0 = {n: scrape(d) for n, d in nodes}
    e0 = m0["a"]["fanogate_model_epoch"]
    check(m0["b"]["fanogate_model_epoch"] == e0,
          f"one model epoch on both before the conflict ({m0['b']['fanogate_model_epoch']}, {e0})")
    check(all(m0[n]["fanogate_cluster_epoch"] == e0 for n in m0), "etcd's epoch is the nodes' before the conflict")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("10.78.2.2", 0))  # the fleet's address towards B: B's e7
    frames = [flow.seed(CONFLICT_LAYER, CONFLICT_TOKEN, CONFLICT_LINE, [v] * HIDDEN) for v in (1.0, 2.0)]
    sock.sendto(flow.datagram(0xC0F1, frames[0]), ("10.78.2.1", 4242))
    # the first must be in its slot before the second arrives: B's answer
    # (a status frame to this socket) says it is
    sock.settimeout(5)
    try:
        sock.recvfrom(2048)
    except socket.timeout:
        fail("B's dataplane did not answer the first contribution within 5 s")
    t0 = time.monotonic()
    sock.sendto(flow.datagram(0xC0F2, frames[1]), ("10.78.2.1", 4242))
    if not wait.until(lambda: all(scrape(d)["fanogate_model_epoch"] == e0 + 1 for d in (a, b)), 1.0):
        fail(f"not within 1 s: the conflict on B advanced the epoch on both: A "
             f"{scrape(a)['fanogate_model_epoch']}, B {scrape(b)['fanogate_model_epoch']} (was {e0})")
    t = time.monotonic() - t0
    sock.close()
    time.sleep(0.3)  # proving an absence: no second advance (the only fixed wait of this step)
    m1 = {n: scrape(d) for n, d in nodes}
    for n in m1:
        check(m1[n]["fanogate_model_epoch"] == e0 + 1 and m1[n]["fanogate_cluster_epoch"] == e0 + 1,
              f"node {n}: the model epoch and etcd's advanced exactly once: {m1[n]['fanogate_model_epoch']}, "
              f"etcd {m1[n]['fanogate_cluster_epoch']} (was {e0})")

    def moved(n, name):
        return m1[n][f"fanogate_cluster_{name}_total"] - m0[n][f"fanogate_cluster_{name}_total"]
    check(moved("b", "epochs_sent") == 1 and moved("b", "epochs_applied") == 0 and moved("a", "epochs_applied") == 1
          and moved("a", "epochs_sent") == 0,
          f"B sent one advance, A applied it: B sent {moved('b', 'epochs_sent')} applied "
          f"{moved('b', 'epochs_applied')}, A sent {moved('a', 'epochs_sent')} applied {moved('a', 'epochs_applied')}")
    check(family(m1["b"], "fanogate_conflicts_unmapped_total") == family(m0["b"], "fanogate_conflicts_unmapped_total"),
          "the conflict was attributed on B (not counted unmapped)")
    ca, cb = cf.cluster(a), cf.cluster(b)
    check(ca["epoch_by"] == "b" and cb["epoch_by"] == "b", f"etcd says node b advanced it: {ca['epoch_by']}")
    la, lb = ca["lines"][CONFLICT_LINE], cb["lines"][CONFLICT_LINE]
    check(lb["local"] == "shadow" and la["local"] == "shadow" and la["event"] == "conflict" and la["by_node"] == "b",
          f"line {CONFLICT_LINE} demoted on both (a conflict on b): A {la}, B {lb}")
    recs = [ln for ln in cf.audit(a).splitlines() if "cluster: node b: conflicting duplicate contribution" in ln]
    check(recs, "A's audit log records the epoch advance from node b")
    print(f"6b. a conflict on B (through its dataplane) advanced the model epoch on both in {t * 1000:.0f} ms, "
          f"exactly once ({e0:.0f} -> {e0 + 1:.0f})", flush=True)
    show("6b. a conflict on B: the model epoch advanced once on both, line 5 demoted", nodes)
    # line 5 active again (the divergence step demotes lines 1, 3, 5 from active)
    p = cf.op(a, "line", "active", str(CONFLICT_LINE), "--why", "cluster split test: after the conflict")
    check(p.returncode == 0, f"fanoctl line active {CONFLICT_LINE} on A: {p.stdout} {p.stderr}")
    within(lambda: in_state(b, 1, "active"), 1.0, "lines 1, 3, 5 active on B again")


def divergence(a, b, nodes, tmp):
    """7. The fleet's own corrupted contribution (one low bit of attn, line
    3, for layer 2: A's) resolves on A into a seed that differs from the
    coordinator's digest: A's shadow audit judges it divergent and demotes
    the slot's lines (1, 3 and 5: a seed's verdict cannot tell which of its
    contributions was wrong), and B demotes them within 1 s (event
    divergence, from node a; B never received the corrupted contribution).
    The fleet must see the corruption in that seed and every other seed
    bit-exact."""
    log, js = f"{tmp}/fleet2.log", f"{tmp}/fleet2.json"
    div0 = family(scrape(a), "fanogate_line_divergences_total")
    fleet = start_fleet(log, js, "--tokens", "40", "--token-base", "500000", "--corrupt-at", "10",
                        "--corrupt-layer", "2", "--corrupt-line", "3")
    try:
        if not wait.until(lambda: in_state(a, None, "shadow") or fleet.poll() is not None, 30):
            fail("A did not demote lines 1, 3, 5 within 30 s of the fleet's start")
        check(in_state(a, None, "shadow"), "A demoted lines 1, 3, 5 (its audit saw the divergence)")
        t = within(lambda: in_state(b, None, "shadow"), 1.0, "the divergence on A demotes lines 1, 3, 5 on B")
        rc = fleet.wait(timeout=60)
    finally:
        if fleet.poll() is None:
            fleet.kill()
            fleet.wait()
    out = open(log, errors="replace").read()
    j = json.load(open(js)) if os.path.exists(js) else {}
    check(rc == 0 and j.get("divergence_seen") == 1 and j.get("wrong") == 0 and j.get("missing") == 0,
          f"fanofleet exits 0: the corruption seen in its seed, every other seed bit-exact ({rc}):\n"
          + out[out.find("fanofleet summary"):])
    lb = [cf.cluster(b)["lines"][x] for x in LINES]
    check(all(x["event"] == "divergence" and x["by_node"] == "a" for x in lb), f"B applied A's divergence: {lb}")
    div = family(scrape(a), "fanogate_line_divergences_total") - div0
    check(div >= 1, f"A's audit judged the seed divergent ({div:.0f} line verdicts)")
    recs = [ln for ln in cf.audit(b).splitlines() if "cluster:a" in ln and "divergence" in ln]
    check(len(recs) >= len(LINES), f"B's audit log records the divergence demotions from node a ({len(recs)} records)")
    print(f"7. the fleet's corrupted contribution on A demoted lines 1, 3, 5 on B in {t * 1000:.0f} ms; "
          f"{j['resolved']} seeds, {j['divergence_seen']} with the corruption, none wrong", flush=True)
    show("7. a corrupted contribution on A: lines 1, 3, 5 demoted on both", nodes, log)


def kill_a(a, b):
    """8. kill -9 of node A (its dataplane with it): B reports it gone
    within 1 s of the kill (cluster_fleet's KILL_BOUND_S, read on B's
    /metrics) through A's heartbeats, counted once, and B keeps its state. The killed process's DPDK runtime directory
    (--file-prefix fgdp<pid>, removed by a clean stop) is removed here."""
    gone0 = b_counter(b, "nodes_gone")
    m0 = scrape(b)
    check(m0["fanogate_cluster_nodes_live"] == 2, "B's /metrics: 2 nodes live before the kill")
    t = cf.kill_seen(b, a, 2)
    shutil.rmtree(f"/var/run/dpdk/fgdp{a.proc.pid}", ignore_errors=True)
    m1 = scrape(b)
    check(m1["fanogate_cluster_nodes_beat_down_total"] == m0["fanogate_cluster_nodes_beat_down_total"] + 1,
          "B saw A's heartbeats stop (nodes_beat_down_total + 1)")
    check(m1["fanogate_cluster_nodes_beat_resumed_total"] == 0, "no false down on B during the run "
          f"(nodes_beat_resumed_total {m1['fanogate_cluster_nodes_beat_resumed_total']:.0f})")
    check(b_counter(b, "nodes_gone") == gone0 + 1, "B counts A gone once")
    check(cf.cluster(b)["etcd"] == "up" and in_state(b, 1, "shadow"), "B still in step with etcd, its lines as they were")
    print(f"8. kill -9 of A seen by B {t * 1000:.0f} ms after the kill (its heartbeats)", flush=True)
    show("8. kill -9 of A: B saw its heartbeats stop", (("b", b),))


def b_counter(d, name):
    return cf.cluster(d)["counters"][name]


def fleet_scenario(etcd, a, b, nodes, fleet, log):
    def alive():
        if fleet.poll() is not None:
            fail(f"fanofleet exited early ({fleet.returncode}):\n" + open(log).read()[-3000:])
        return True

    # 1. the fleet is served on both nodes (the first datagrams may wait
    # for the dataplanes' ARP: the fleet resends them)
    keeps_resolving(nodes, "1. fleet started", secs=30)
    alive()
    print("1. fanofleet split: A (layers 1-3) and B (4-7) both resolving", flush=True)
    show("1. fanofleet split across the two nodes: both resolving", nodes, log)

    # 2. an operator change on A applied on B, the fleet served on both
    for x in LINES:
        p = cf.op(a, "line", "active", str(x), "--why", "cluster split test")
        check(p.returncode == 0, f"fanoctl line active {x} on A: {p.stdout} {p.stderr}")
    t = within(lambda: in_state(b, None, "active"), 1.0, "lines 1, 3, 5 active on B (changed on A)")
    check(lines_are(b, "active"), "fanoctl cluster on B agrees")
    check(lines_are(a, "active"), "lines active on A")
    keeps_resolving(nodes, "2. lines active")
    alive()
    print(f"2. operator change on A applied on B in {t * 1000:.0f} ms; the fleet jumps on both", flush=True)
    show("2. lines 1, 3, 5 made active on A: applied on B", nodes, log)

    # 3. one etcd member down (the leader): nothing changes
    lead = etcd.leader()
    check(lead is not None, "etcd has a leader")
    gone0 = {n: scrape(d)["fanogate_cluster_nodes_gone_total"] for n, d in nodes}
    etcd.kill(lead)
    rest = [i for i in range(3) if i != lead]
    t0, polls = time.monotonic(), 0
    while time.monotonic() - t0 < 1.5:
        for n, d in nodes:
            c = cf.cluster(d)
            if c["etcd"] != "up" or not all(c["lines"][x]["local"] == "active" for x in LINES):
                fail(f"one member down changed node {n}: etcd {c['etcd']}, lines "
                     f"{[c['lines'][x] for x in LINES]}")
        polls += 1
        time.sleep(0.05)  # not a readiness wait: the state must hold for 1.5 s after the kill
    check(True, f"one member down: etcd up and lines 1, 3, 5 active on both for 1.5 s ({polls} polls)")
    gone = {n: scrape(d)["fanogate_cluster_nodes_gone_total"] for n, d in nodes}
    check(gone == gone0, f"one member down: neither node reported the other gone (no false down): {gone}")
    keeps_resolving(nodes, "3. one member down")
    alive()
    print(f"3. one etcd member down (the leader, m{lead}): nothing changed, the fleet served on both", flush=True)
    show("3. one etcd member (the leader) down: nothing changed", nodes, log)

    # 4. every member down: every line held in shadow, seeds still resolve
    etcd.kill(rest[0])
    etcd.kill(rest[1])
    t = within(lambda: all(in_state(d, 0, "shadow") for d in (a, b)), 1.0,
               "all members down: both nodes hold lines 1, 3, 5 in shadow")
    check(all(cf.cluster(d)["etcd"] == "lost" for d in (a, b)), "fanoctl cluster says etcd lost on both")
    for n, d in nodes:
        ls = cf.cluster(d)["lines"]
        if not all(x["local"] in ("shadow", "disabled") for x in ls) or not all(ls[x]["held"] for x in LINES):
            fail(f"node {n}: a line active on stale state, or lines 1, 3, 5 not held: {ls}")
    check(True, "no line active on stale state on either node, lines 1, 3, 5 held")
    for n in ("a", "b"):
        f = f"{cf.ALERTS}/split-{n}"
        within(lambda f=f: os.path.exists(f) and "cluster_etcd_lost" in open(f).read(), 2.0,
               f"node {n} ran its alert command (cluster_etcd_lost)")
    keeps_resolving(nodes, "4. etcd lost, lines held")
    alive()
    print(f"4. all etcd members down: both nodes held every line in shadow in {t * 1000:.0f} ms; "
          "the fleet still served on both", flush=True)
    show("4. every etcd member down: every line held in shadow, seeds still resolve", nodes, log)

    # 5. etcd back: both catch up, the fleet served on both
    for i in range(3):
        etcd.start(i, state="existing")
    check(etcd.wait_healthy(range(3)), "etcd back")
    t = within(lambda: all(in_state(d, 1, "active") for d in (a, b)), 1.0,
               "both nodes caught up within 1 s of etcd answering: lines active again")
    check(all(cf.cluster(d)["etcd"] == "up" and lines_are(d, "active") for d in (a, b)),
          "fanoctl cluster agrees on both: etcd up, lines active")
    keeps_resolving(nodes, "5. etcd back")
    alive()
    print(f"5. etcd back: both nodes caught up (lines active) in {t * 1000:.0f} ms", flush=True)
    show("5. etcd back: both caught up, the lines active again", nodes, log)


if __name__ == "__main__":
    main()
