#!/usr/bin/python3
"""k_epoch.py - the one model epoch, over HTTPS POST /residual-seed, in local
mode and (when the dataplane can start on the ring profile) in lanes mode:
a conflicting duplicate is answered 409 conflict carrying model_epoch + 1,
every later ack carries the new epoch, a slot left open before the conflict
is gone (fg_slots_flush closes it as EXPIRED: its next contribution is
answered 410 expired instead of joining it, and the slot never resolves), and the audit log holds the conflict and the epoch change
(fanoctl audit tail --json)."""
import json
import os
import subprocess
import sys
import time

from d1_harness import SKIP, Daemon, check, http, seed

V = {1: [1.5, -2.0, 0.1, 3e-7, 5.0, 6.0, 7.0, 8.0], 3: [0.3, 0.2, 0.1, 1e5, 5.0, 6.0, -7.0, 8.0],
     5: [2.0, 2.0, 2.0, 2.0, -1.0, 1e-30, 7.0, 0.0]}


def post(d, body):
    st, h, b = http(d, "POST", "/residual-seed", body)
    return st, json.loads(b)


def audit_records(fanoctl, log):
    p = subprocess.run([fanoctl, "audit", "tail", "--json", "-n", "1000", log], capture_output=True, text=True,
                       timeout=20)
    check(p.returncode == 0, "fanoctl audit tail: " + (p.stdout + p.stderr)[-200:])
    return [json.loads(x) for x in p.stdout.splitlines() if x.strip().startswith("{")]


def scenario(d, fanoctl, mode):
    st, j = post(d, seed(0, 10, 1, V[1]))
    check(st == 200 and j["outcome"] == "accepted" and j["bitset"] == 1 << 1, f"{mode}: slot 0/10 opened by line 1")
    e0 = j["model_epoch"]
    st, j = post(d, seed(1, 11, 5, V[5]))
    check(st == 200 and j["model_epoch"] == e0, f"{mode}: same epoch before the conflict")
    st, j = post(d, seed(1, 11, 5, V[3]))
    check(st == 409 and j["outcome"] == "conflict", f"{mode}: conflicting duplicate answered 409 conflict: {j}")
    check(j["model_epoch"] == e0 + 1, f"{mode}: the conflict ack carries the new epoch {e0 + 1}: {j['model_epoch']}")
    # The open slot 0/10 from before the conflict was flushed (closed as
    # EXPIRED by the core's fg_slots_flush): line 3 does not join line 1.
    st, j = post(d, seed(0, 10, 3, V[3]))
    check(st == 410 and j["outcome"] == "expired", f"{mode}: slot 0/10 flushed by the epoch change: {j}")
    check(j["model_epoch"] == e0 + 1, f"{mode}: later acks carry model_epoch {e0 + 1}")
    st, j = post(d, seed(0, 10, 5, V[5]))
    check(st == 410 and not j["fully_resolved"], f"{mode}: the flushed slot never resolves: {j}")
    st, j = post(d, seed(2, 12, 1, V[1]))
    check(j["model_epoch"] == e0 + 1, f"{mode}: a fresh slot's ack carries model_epoch {e0 + 1}")
    st, h, b = http(d, "GET", "/healthz", token=None)
    deadline = time.time() + 5
    while True:
        recs = audit_records(fanoctl, f"{d.dir}/audit.log")
        ep = [r for r in recs if r["type"] == "epoch"]
        cf = [r for r in recs if r["type"] == "conflict"]
        if (ep and cf) or time.time() > deadline:
            break
        time.sleep(0.1)
    check(any(r["from"] == e0 and r["to"] == e0 + 1 for r in ep),
          f"{mode}: audit log has the epoch change {e0} -> {e0 + 1}: {ep}")
    check(any(r["token_seq"] == 11 and r["dst_layer"] == 1 and r["line"] == 5 for r in cf),
          f"{mode}: audit log has the conflict record: {cf}")
    check(f"model epoch {e0} -> {e0 + 1}" in d.log(), f"{mode}: epoch change logged")


def main():
    fanoctl = os.environ.get("FANOCTL")
    if not fanoctl or not os.access(fanoctl, os.X_OK):
        print("SKIP: FANOCTL not set to the fanoctl binary")
        sys.exit(SKIP)
    with Daemon(deadline_ms=30000) as d:
        scenario(d, fanoctl, "local")
    with Daemon(dp_profile="ring", expect_start=False, deadline_ms=30000, extra="[dataplane]\nlcores = 2\n") as d:
        if d.proc.poll() is not None or "mode dataplane" not in d.log():
            print("lanes mode not available here (no DPDK or the EAL refused): local mode only")
            d.proc.kill()
            d.proc.wait()
            return
        scenario(d, fanoctl, "lanes")
    print("ok")


if __name__ == "__main__":
    main()
