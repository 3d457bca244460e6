#!/usr/bin/python3
"""hostile_epoch_storm.py - an epoch storm: conflicting duplicate pairs at
5 pairs/s must not advance the model epoch (and flush every shard) 5 times
a second.

The daemon (--no-dataplane, default [shadow] epoch_min_interval_ms = 1000)
starts with every line active and an alert command that appends $FG_EVENT
to a file (alert_min_interval_ms = 0: the command's own rate limit is off,
so "alerted once" is the daemon's doing). Then:
  1. one conflicting pair (layer 1, line 5): answered 409, the epoch moves
     by one (one advance is allowed);
  2. a real slot (layer 0, token 77) gets lines 1 and 3 and stays open;
  3. 14 more conflicting pairs at 5 pairs/s, each answered 409;
  4. line 5 of the real slot resolves it, bit-exact: it was not flushed.
Checks: the epoch moved once in all (not 15 times); fanogate_epoch_held_total
14 and fanogate_epoch_storms_total 1; nothing flushed after the first
advance; every line is in shadow (the storm holds them; a conflict only
demotes its own line); exactly one epoch_storm alert; the audit log names
the storm in the demotions' why and the sender ("from tls") in the
conflict's. Before this change the epoch moved 15 times, the open slot was
flushed (line 5 answered "accepted", not "resolved") and the lines other
than 5 stayed active."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import (Daemon, check, fanoctl_or_skip, http, metric, metrics_text, reduce_pair_x,  # noqa: E402
                            resolved_frame, seed)
from fgtest.wait import until, within  # noqa: E402

V = {1: [1.5, 2.0, -1.0, 0.5, 3.0, 4.0, 5.0, 6.0], 3: [0.25] * 8, 5: [-2.0, 1e-3, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]}
A = [1.0] * 8
B = [2.0] * 8
PAIRS_PER_S = 5
FLOOD_PAIRS = 14


def epoch(d):
    return json.loads(http(d, "GET", "/healthz", token=None)[2])["model_epoch"]


def conflict_pair(d, tok):
    st1, _, b1 = http(d, "POST", "/residual-seed", seed(1, tok, 5, A))
    st2, _, b2 = http(d, "POST", "/residual-seed", seed(1, tok, 5, B))
    check(st1 == 200 and st2 == 409 and json.loads(b2)["outcome"] == "conflict",
          f"pair {tok}: first accepted, duplicate answered 409 conflict ({st1} {b1[:80]}, {st2} {b2[:80]})")


def main():
    fanoctl = fanoctl_or_skip()
    extra = "[lines]\n" + "".join(f"line.{i} = active\n" for i in range(7))
    d = Daemon(deadline_ms=30000, extra=extra)
    alerts = f"{d.dir}/alerts"
    with open(d.cfg, "a") as f:
        f.write(f"[audit]\nalert_command = echo \"$FG_EVENT\" >> {alerts}\nalert_min_interval_ms = 0\n")
    with d:
        e0 = epoch(d)
        conflict_pair(d, 1000)
        e1 = epoch(d)
        check(e1 == e0 + 1, f"the first conflict advanced the epoch once ({e0} -> {e1})")
        flushed0 = metric(metrics_text(d), "fanogate_slots_flushed_total")

        for ln in (1, 3):
            st, _, b = http(d, "POST", "/residual-seed", seed(0, 77, ln, V[ln]))
            check(st == 200 and json.loads(b)["outcome"] == "accepted", f"real slot 0/77 line {ln} accepted: {b[:120]}")

        t0 = time.monotonic()
        for k in range(FLOOD_PAIRS):
            # pace the flood at PAIRS_PER_S (a send schedule, not a wait for readiness)
            due = t0 + k / PAIRS_PER_S
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            conflict_pair(d, 1001 + k)

        st, _, b = http(d, "POST", "/residual-seed", seed(0, 77, 5, V[5]))
        j = json.loads(b)
        check(st == 200 and j["outcome"] == "resolved",
              f"the real slot opened before the flood resolves after it (not flushed): {st} {j}")
        st, _, body = http(d, "GET", "/residual-seed/0/77")
        check(st == 200 and body == resolved_frame(0, 77, reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])),
              "its seed is bit-exact")

        e2 = epoch(d)
        check(e2 == e1, f"{FLOOD_PAIRS} more conflicting pairs at {PAIRS_PER_S}/s did not move the epoch "
              f"({e1} -> {e2}; {FLOOD_PAIRS + 1} advances in all before this change)")
        m = metrics_text(d)
        check(metric(m, "fanogate_epoch_held_total") == FLOOD_PAIRS, "fanogate_epoch_held_total counts the held ones")
        check(metric(m, "fanogate_epoch_storms_total") == 1, "one storm")
        check(metric(m, "fanogate_slots_flushed_total") == flushed0, "nothing flushed during the storm")
        states = dict(re.findall(r'^fanogate_line_info\{line="(\d)",[^}]*,state="([a-z]+)"', m, re.M))
        check(len(states) == 7 and all(s == "shadow" for s in states.values()),
              f"the storm holds every line in shadow (each conflict demotes only line 5): {states}")

        # Alerts: wait until every alert raised has run or been dropped.
        def settled():
            t = metrics_text(d)
            raised = metric(t, "fanogate_alerts_raised_total")
            done = metric(t, "fanogate_alerts_spawned_total") + metric(t, "fanogate_alerts_suppressed_total")
            return raised > 0 and raised == done and metric(t, "fanogate_alerts_running") == 0
        within(settled, 10, "every alert command finished")
        with open(alerts) as f:
            events = f.read().split()
        check(events.count("epoch_storm") == 1, f"exactly one epoch_storm alert: {events.count('epoch_storm')} "
              f"({len(events)} alerts: {sorted(set(events))})")

        def records():
            p = subprocess.run([fanoctl, "audit", "tail", "--json", "-n", "2000", f"{d.dir}/audit.log"],
                               capture_output=True, text=True, timeout=20)
            check(p.returncode == 0, "fanoctl audit tail: " + (p.stdout + p.stderr)[-200:])
            recs = [json.loads(x) for x in p.stdout.splitlines() if x.strip().startswith("{")]
            lines = [r for r in recs if r.get("type") == "line"]
            storm = [r for r in lines if "epoch storm" in r.get("why", "")]
            return recs if len(storm) >= 6 else None
        recs = until(records, 10)
        check(recs, "the storm's demotions durable in the audit log")
        lines = [r for r in recs if r.get("type") == "line"]
        check(any("from tls" in r.get("why", "") for r in lines), "a conflict's demotion names its sender")
        epochs = [r for r in recs if r.get("type") == "epoch"]
        check(len(epochs) == 1 and "from tls" in epochs[0].get("why", ""),
              f"one epoch record, attributed to its sender: {epochs}")
    print("ok")


if __name__ == "__main__":
    main()
