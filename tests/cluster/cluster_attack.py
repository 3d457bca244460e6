#!/usr/bin/python3
"""cluster_attack.py - [cluster] against someone who can write to etcd
(docs/cluster.md "Authenticated values", docs/hardening.md "etcd"): a real
3-member etcd, nodes a and b (--no-dataplane, each in its own network
namespace, [cluster] nodes_max = 6), and the test writing under their
prefix through etcd's JSON gateway as an attacker would. Each attack is
refused (nothing changes on either node) and counted on both:

  1. values without the fleet key's MAC (the old plain JSON, a wrong key,
     an epoch of " 5", a beat, a node): no line, epoch or liveness moves;
  2. a value with a valid MAC naming node a on b's lease (the fleet split
     when a skipped it as its own echo): refused as unbound, on a too;
  3. a replay of a's own earlier "line 3 active" after a demoted it:
     refused (not at the version it was written for);
  4. epoch jumps (five up; 2147483653): refused, no flush;
  5. a lease-less nodes/ghost and points/ghost (alive 127) with valid
     MACs: refused, never a node;
  6. 12 MiB under the prefix (10 x 1 MiB foreign keys, 2 x 1 MiB under
     points/, read in pages halved down to one key), then every etcd member
     restarted: both nodes resync and are up with line 1 active again, the
     keys counted;
  7. 72 node names come and go (4 at a time: a full table each time), a
     fifth at once is refused and counted (nodes_max); a squatted lease-less
     nodes/c is taken over by a new node c, which b tracks; killing c
     degrades the lines through the point only c served (e2) on b, the
     lease-less ghost point notwithstanding.
Skips (77) when etcd/etcdctl are not installed."""
import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)

import cluster_fleet as cf  # noqa: E402  (NetNs, NodeDaemon, Etcd, envelope)
from fgtest import wait  # noqa: E402
from fgtest.checks import check  # noqa: E402
from fgtest.harness import etcd_or_skip, fanoctl_or_skip  # noqa: E402
from fgtest.wait import within  # noqa: E402

NODES_MAX = 6
ATTN = cf.ATTN


# ---- the attacker: etcd's JSON gateway, straight --------------------------
def gw(etcd, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{etcd.client[0]}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read())


def b64(x):
    return base64.b64encode(x if isinstance(x, bytes) else x.encode()).decode()


def put(etcd, key, value, lease=0):
    body = {"key": b64(cf.PREFIX + key), "value": b64(value)}
    if lease:
        body["lease"] = str(lease)
    return gw(etcd, "/v3/kv/put", body)


def get(etcd, key):
    kvs = gw(etcd, "/v3/kv/range", {"key": b64(cf.PREFIX + key)}).get("kvs", [])
    if not kvs:
        return None
    kv = kvs[0]
    return {"value": base64.b64decode(kv.get("value", "")).decode(), "crev": int(kv["create_revision"]),
            "ver": int(kv["version"]), "lease": int(kv.get("lease", 0))}


def grant(etcd, ttl=10):
    return int(gw(etcd, "/v3/lease/grant", {"TTL": ttl})["ID"])


def revoke(etcd, lease):
    gw(etcd, "/v3/lease/revoke", {"ID": str(lease)})


SEQ = [10**9]


def signed(etcd, key, node, lease, payload, key_bytes=None):
    """A value for key as node on lease would write it now (the key's next
    version, a seq higher than any the node wrote): valid, if the fleet key
    is the nodes' one."""
    SEQ[0] += 1
    seq = SEQ[0]
    cur = get(etcd, key)
    crev, ver = (cur["crev"], cur["ver"] + 1) if cur else (0, 1)
    return cf.envelope(cf.PREFIX + key, node, lease, crev, ver, seq, json.dumps(payload), key=key_bytes)


# ---- the nodes ------------------------------------------------------------
def node_cfg(name, etcd):
    return f"""[lines]
shadow_sample = 1
[audit]
alert_command = echo "$FG_EVENT $FG_REASON" >> {cf.ALERTS}/{name}
[cluster]
node = {name}
endpoints = {etcd.endpoints(host=cf.NS[name].host_ip)}
{cf.auth_cfg()}prefix = {cf.PREFIX}
lease_ttl_s = {cf.TTL}
keepalive_ms = {cf.KEEPALIVE_MS}
timeout_ms = 300
nodes_max = {NODES_MAX}
"""


def node(name, etcd):
    d = cf.NodeDaemon(cf.NS[name], extra=node_cfg(name, etcd), deadline_ms=30000)
    with open(f"{d.dir}/tokens", "a") as f:
        f.write(f"{ATTN} attn\n")
    d.layer = 0
    return d


def cl(d):
    return cf.cluster(d)


def ctr(d, name):
    return cl(d)["counters"][name]


def line(d, i):
    return cl(d)["lines"][i]["local"]


def live(d):
    return sorted(n["node"] for n in cl(d)["nodes"] if n["live"])


def known(d):
    return {n["node"] for n in cl(d)["nodes"]}


def grew(nodes, name, base, by=1):
    return all(ctr(d, name) >= base[id(d)] + by for d in nodes)


def snap(nodes, name):
    return {id(d): ctr(d, name) for d in nodes}


async def hold_attn(d):
    import websockets
    with d.ns.inside():
        sock = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    return await websockets.connect(f"wss://localhost:{d.port}/flow", ssl=d.ssl_ctx(), sock=sock,
                                    server_hostname="localhost", extra_headers={"Authorization": "Bearer " + ATTN})


def main():
    etcd_or_skip()
    fanoctl_or_skip()
    wait.private_net()
    etcd = cf.Etcd()
    try:
        for i in range(3):
            etcd.start(i)
        check(etcd.wait_healthy(range(3)), "3-member etcd cluster healthy")
        for i, n in enumerate(("a", "b", "c")):
            cf.NS[n] = cf.NetNs(n, i + 1)
        a, b = node("a", etcd), node("b", etcd)
        with a, b:
            scenario(etcd, a, b)
    finally:
        etcd.stop_all()
        for ns in cf.NS.values():
            ns.close()
        shutil.rmtree(cf.ALERTS, ignore_errors=True)
    print("ok: cluster_attack")


def quiet(nodes, what, pred, secs=0.3):
    """pred holds on every node for secs (an absence: the only fixed wait)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < secs:
        for d in nodes:
            if not pred(d):
                check(False, what)
        time.sleep(0.05)
    check(True, what)


def scenario(etcd, a, b):
    both = (a, b)
    for d in both:
        within(lambda d=d: cl(d)["etcd"] == "up", 10, "node reaches etcd")
    within(lambda: live(a) == ["a", "b"] and live(b) == ["a", "b"], 5, "both see a and b live")
    check(cl(a)["nodes_max"] == NODES_MAX, "nodes_max from the configuration")
    e0 = cl(a)["model_epoch"]
    la, lb = cl(a)["lease"], cl(b)["lease"]
    applied0 = {id(d): (ctr(d, "epochs_applied"), ctr(d, "lines_applied")) for d in both}

    # 1. no MAC, or another key's: nothing moves
    base = snap(both, "refused_unauthenticated")
    put(etcd, "lines/2", json.dumps({"state": "active", "event": "op_active", "uid": 0, "node": "a", "why": "rogue"}))
    put(etcd, "lines/2", signed(etcd, "lines/2", "a", la, {"state": "active", "event": "op_active", "uid": 0,
                                                           "why": "rogue"}, key_bytes=b"not-the-fleet-key" * 3))
    put(etcd, "epoch", " 5")
    put(etcd, "epoch", signed(etcd, "epoch", "a", la, {"to": e0 + 1, "from": e0, "why": "rogue"},
                              key_bytes=b"not-the-fleet-key" * 3))
    put(etcd, "beats/a", json.dumps({"seq": 1, "ms": 1}))
    put(etcd, "nodes/r3rogue", json.dumps({"node": "r3rogue", "layers": "all", "pid": 1}), lease=grant(etcd))
    t = within(lambda: grew(both, "refused_unauthenticated", base, 6), 2, "six unauthenticated values counted on both")
    quiet(both, "no line, epoch or node moved", lambda d: line(d, 2) == "shadow" and cl(d)["model_epoch"] == e0 and
          live(d) == ["a", "b"])
    print(f"1. six values without a valid MAC refused and counted on both in {t * 1000:.0f} ms")

    # 2. a valid MAC naming node a on b's lease
    base = snap(both, "refused_unbound")
    put(etcd, "lines/2", signed(etcd, "lines/2", "a", lb, {"state": "active", "event": "op_active", "uid": 0,
                                                           "why": "in a's name"}))
    within(lambda: grew(both, "refused_unbound", base), 2, "a write naming a on b's lease refused on both (a too)")
    quiet(both, "line 2 stays shadow on both", lambda d: line(d, 2) == "shadow")
    print("2. a value naming node a on b's lease refused on both")

    # 3. a replay of a's own earlier value
    check(cf.op(a, "line", "active", "3").returncode == 0, "line 3 active on a")
    within(lambda: line(b, 3) == "active", 1, "applied on b")
    recorded = get(etcd, "lines/3")["value"]
    check(cf.unwrap(recorded)[0] == "a" and cf.unwrap(recorded)[5]["state"] == "active", f"a wrote it: {recorded!r}")
    check(cf.op(a, "line", "shadow", "3").returncode == 0, "line 3 shadow on a")
    within(lambda: line(b, 3) == "shadow", 1, "applied on b")
    base = snap(both, "refused_replayed")
    put(etcd, "lines/3", recorded)
    within(lambda: grew(both, "refused_replayed", base), 2, "the replayed value refused on both")
    quiet(both, "line 3 stays shadow", lambda d: line(d, 3) == "shadow")
    print("3. a replay of a's 'line 3 active' refused on both")

    # 4. epoch jumps
    base = snap(both, "refused_epoch")
    put(etcd, "epoch", signed(etcd, "epoch", "a", la, {"to": e0 + 5, "from": e0 + 4, "why": "jump"}))
    put(etcd, "epoch", signed(etcd, "epoch", "a", la, {"to": 2147483653, "from": e0, "why": "jump"}))
    within(lambda: grew(both, "refused_epoch", base, 2), 2, "two epoch jumps refused on both")
    quiet(both, "the epoch did not move, nothing flushed",
          lambda d: cl(d)["model_epoch"] == e0 and ctr(d, "epochs_applied") == applied0[id(d)][0])
    print(f"4. epoch jumps to {e0 + 5} and 2147483653 refused; the epoch stays {e0}")

    # 5. lease-less ghosts with valid MACs
    base = snap(both, "refused_unbound")
    put(etcd, "nodes/ghost", cf.envelope(cf.PREFIX + "nodes/ghost", "ghost", 12345, 0, 1, 1,
                                         json.dumps({"layers": "all", "pid": 1, "beat_ms": 0})))
    put(etcd, "points/ghost", cf.envelope(cf.PREFIX + "points/ghost", "ghost", 12345, 0, 1, 2,
                                          json.dumps({"alive": 127, "judged": 127})))
    within(lambda: grew(both, "refused_unbound", base, 2), 2, "lease-less nodes/ghost and points/ghost refused")
    quiet(both, "no ghost node", lambda d: "ghost" not in [n["node"] for n in cl(d)["nodes"]])
    print("5. lease-less nodes/ghost and points/ghost (valid MACs) refused on both")

    # 6. 12 MiB under the prefix, then etcd restarted
    check(cf.op(a, "line", "active", "1").returncode == 0, "line 1 active")
    within(lambda: line(b, 1) == "active", 1, "line 1 active on b")
    base_f, base_r = snap(both, "foreign_keys"), snap(both, "refused_unauthenticated")
    blob = os.urandom(512 * 1024).hex()  # 1 MiB of text
    for i in range(10):
        put(etcd, ("zz/blob-%d" if i % 2 else "archive/lines-%d") % i, blob)
    for i in range(2):
        put(etcd, f"points/big-{i}", blob)
    for i in range(3):
        etcd.kill(i)
    within(lambda: all(cl(d)["etcd"] == "lost" for d in both), 3, "etcd lost on both")
    for i in range(3):
        etcd.start(i, state="existing")
    check(etcd.wait_healthy(range(3)), "etcd back")
    t = within(lambda: all(cl(d)["etcd"] == "up" and line(d, 1) == "active" for d in both), 10,
               "both resync through 12 MiB of foreign data: up, line 1 active")
    check(all(ctr(d, "foreign_keys") >= base_f[id(d)] + 10 for d in both), "the foreign keys counted")
    check(all(ctr(d, "refused_unauthenticated") >= base_r[id(d)] + 2 for d in both), "the 1 MiB points/ refused")
    print(f"6. 12 MiB under the prefix, etcd restarted: both in step again {t * 1000:.0f} ms after etcd was healthy")
    gw(etcd, "/v3/kv/deleterange", {"key": b64(cf.PREFIX + "zz/"), "range_end": b64(cf.PREFIX + "zz0")})
    gw(etcd, "/v3/kv/deleterange", {"key": b64(cf.PREFIX + "archive/"), "range_end": b64(cf.PREFIX + "archive0")})
    gw(etcd, "/v3/kv/deleterange", {"key": b64(cf.PREFIX + "points/big-"), "range_end": b64(cf.PREFIX + "points/big.")})

    # 7. 72 names come and go; a full table; a squatted name; the new node's death
    def sim(name):
        lease = grant(etcd)
        put(etcd, f"nodes/{name}", signed(etcd, f"nodes/{name}", name, lease,
                                          {"layers": "all", "pid": 1, "beat_ms": 0}), lease=lease)
        return lease

    for k in range(18):
        names = [f"g{k}-{j}" for j in range(4)]
        leases = [sim(n) for n in names]
        within(lambda: all(set(names) <= known(d) for d in both), 3, f"round {k}: 4 new names tracked")
        for x in leases:
            revoke(etcd, x)
        within(lambda: all(not set(names) & known(d) for d in both), 3, f"round {k}: their entries freed")
    base = snap(both, "nodes_refused")
    leases = [sim(f"full-{j}") for j in range(5)]
    within(lambda: grew(both, "nodes_refused", base), 3, "a fifth other node refused on a full table, counted")
    check(all(len(cl(d)["nodes"]) == NODES_MAX for d in both), "the tables hold nodes_max entries")
    for x in leases:
        revoke(etcd, x)
    within(lambda: all(len(cl(d)["nodes"]) == 2 for d in both), 3, "entries freed again")
    print("7. 72 names came and went, a sixth node on a full table refused and counted")

    put(etcd, "nodes/c", json.dumps({"squatted": True}))
    c = node("c", etcd)
    with c:
        within(lambda: cl(c)["etcd"] == "up", 10, "c joins despite a squatted nodes/c")
        check(ctr(c, "names_reclaimed") >= 1, "c took its name over")
        within(lambda: "c" in live(b), 3, "b tracks the new node c")
        loop = asyncio.new_event_loop()
        ws = loop.run_until_complete(hold_attn(c))
        within(lambda: any(n["node"] == "c" and n["points_alive"] & 2 for n in cl(b)["nodes"]), 3,
               "b knows c sees e2 alive")
        check(line(b, 0) == "shadow", "line 0 (through e2) not degraded while c serves e2")
        c.proc.send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        t = within(lambda: all(line(b, i) == "degraded" for i in (0, 3, 4)), 1.5,
                   "c's death degrades lines 0, 3, 4 on b (the lease-less ghost point notwithstanding)")
        print(f"7b. squatted name taken over; b tracked c; c killed: lines through e2 degraded on b in "
              f"{(time.monotonic() - t0) * 1000:.0f} ms")
        c.proc.wait()
        c.expect_start = False
        try:
            loop.run_until_complete(asyncio.wait_for(ws.close(), 2))
        except Exception:
            pass
        loop.close()


if __name__ == "__main__":
    main()
