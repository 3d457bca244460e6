#!/usr/bin/python3
"""hostile_conflict_role.py - a TLS peer whose role names a Fano point
speaks for the three lines through that point, not for every line: its
conflicting duplicate on another line must not demote that line or
advance the model epoch (cp_epoch_guard.h rule 2).

The daemon ([lines] every line active, [shadow] epoch_min_interval_ms = 1,
so that each attributed conflict may advance the epoch) has the harness's
coordinator token, a token of role "attn" (point e2: lines 0 (1,2,3),
3 (2,4,6), 4 (2,5,7)) and one of the default role "fleet". Conflicting
pairs over HTTPS (POST /residual-seed, the second answered 409 conflict):
  1. attn on line 5 (3,4,7; not through e2): unmapped. The slot is
     poisoned, nothing else moves: the epoch, line 5's state, no epoch
     record; fanogate_conflicts_unmapped_total counts it.
  2. attn on line 3 (through e2): attributed: the epoch moves by one, line
     3 is demoted to shadow (the control: the same sender is believed
     where its role speaks).
  3. fleet on line 5: attributed (the default role relays every line):
     the epoch moves again, line 5 is demoted.
Both without a dataplane and with the ring dataplane on 2 lcores (where
DPDK can start; there the lcore names the sender's lines on the conflict
it reports). Before this change step 1 advanced the epoch and demoted
line 5."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import LANES_SKIP, check, http, metric, metrics_text, mode_daemon, seed  # noqa: E402

ATTN_TOKEN = "hostile-attn-token-0123456789abcdef"
FLEET_TOKEN = "hostile-fleet-token-0123456789abcdef"
A = [1.0] * 8
B = [2.0] * 8
EXTRA = "[lines]\n" + "".join(f"line.{i} = active\n" for i in range(7)) + "[shadow]\nepoch_min_interval_ms = 1\n"


def epoch(d):
    return json.loads(http(d, "GET", "/healthz", token=None)[2])["model_epoch"]


def state(d):
    """(line states by index, conflicts not attributed so far)"""
    m = metrics_text(d)
    states = {int(k): v for k, v in re.findall(r'^fanogate_line_info\{line="(\d)",[^}]*,state="([a-z]+)"', m, re.M)}
    return states, metric(m, "fanogate_conflicts_unmapped_total")


def conflict_pair(d, token, tok, line, who, sock=None):
    st1, _, b1 = http(d, "POST", "/residual-seed", seed(1, tok, line, A), token=token, sock=sock)
    st2, _, b2 = http(d, "POST", "/residual-seed", seed(1, tok, line, B), token=token, sock=sock)
    check(st1 == 200 and st2 == 409 and json.loads(b2)["outcome"] == "conflict",
          f"{who}: line {line} token {tok}: first accepted, duplicate answered 409 conflict "
          f"({st1} {b1[:80]}, {st2} {b2[:80]})")
    st, _, _ = http(d, "GET", f"/residual-seed/1/{tok}")
    check(st != 200, f"{who}: the conflicting slot 1/{tok} gives no seed ({st})")


def scenario(d, mode):
    # The attn peer keeps one keep-alive connection: while it is open
    # point e2 is live (a point whose only peer left would degrade its
    # lines: docs/lines.md), so every line state seen below is the
    # conflicts' doing.
    attn = d.tls_socket()
    e0 = epoch(d)
    s0, u0 = state(d)
    check(all(s0.get(i) == "active" for i in range(7)), f"{mode}: every line active at start: {s0}")

    conflict_pair(d, ATTN_TOKEN, 1000, 5, f"{mode}: attn", attn)
    s1, u1 = state(d)
    check(u1 == u0 + 1, f"{mode}: attn's conflict on line 5 is not attributed (unmapped {u0} -> {u1})")
    check(epoch(d) == e0, f"{mode}: attn's conflict on line 5 did not move the epoch ({e0} -> {epoch(d)})")
    check(s1 == s0, f"{mode}: no line changed: {s1}")

    conflict_pair(d, ATTN_TOKEN, 1001, 3, f"{mode}: attn", attn)
    s2, u2 = state(d)
    check(u2 == u1, f"{mode}: attn's conflict on line 3 is attributed (unmapped {u1} -> {u2})")
    check(epoch(d) == e0 + 1, f"{mode}: attn's conflict on line 3 moved the epoch by one ({e0} -> {epoch(d)})")
    check(s2[3] == "shadow" and s2[5] == "active", f"{mode}: line 3 demoted, line 5 still active: {s2}")

    conflict_pair(d, FLEET_TOKEN, 1002, 5, f"{mode}: fleet")
    s3, u3 = state(d)
    check(u3 == u2, f"{mode}: the fleet role's conflict on line 5 is attributed (unmapped {u2} -> {u3})")
    check(epoch(d) == e0 + 2, f"{mode}: it moved the epoch ({e0 + 1} -> {epoch(d)})")
    check(s3[5] == "shadow", f"{mode}: line 5 demoted: {s3}")
    attn.close()


def main():
    for mode in ("local", "lanes"):
        d = mode_daemon(mode, EXTRA, deadline_ms=30000)
        with open(f"{d.dir}/tokens", "a") as f:
            f.write(f"{ATTN_TOKEN} attn\n{FLEET_TOKEN} fleet\n")
        with d:
            if mode == "lanes" and not d.lanes_up(LANES_SKIP):
                break
            scenario(d, mode)
    print("ok")


if __name__ == "__main__":
    main()
