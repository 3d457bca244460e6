#!/usr/bin/python3
"""hostile_disk_full.py - a full disk: answers say what is true when the
audit cannot write, and the counters count it.

The daemon (--no-dataplane) runs in a private mount namespace whose audit
directory is a 12 KiB tmpfs, so the log hits ENOSPC after a few dozen
verdicts and fails closed. Slots are resolved and compared (seeds, then a
canonical report) until /metrics says fanogate_audit_failed 1. Then:
- a canonical report is NOT acknowledged: 503, "ack": false,
  "error": "audit_failed" (its only purpose is a verdict that can no longer
  be recorded), and every ack says "audit": "failed";
- a seed is still acknowledged (it is in its slot and is delivered) and its
  ack says "audit": "failed";
- every verdict the audit counted is either a verdict record in the log
  (read through /proc/PID/root, the daemon's view) or counted in
  fanogate_audit_append_failures_total, which is not 0.
Before this change the canonical report was answered "ack": true and
append failures stayed 0 while verdicts were lost."""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import (SKIP, Daemon, canonical, check, fail, fanoctl_or_skip, http, reduce_pair_x,  # noqa: E402
                            seed)

V = {1: [1.5, 2.0, -1.0, 0.5, 3.0, 4.0, 5.0, 6.0], 3: [0.25] * 8, 5: [-2.0, 1e-3, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]}
REF = reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])


def metrics(d):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10) as r:
        return r.read().decode()


def metric(text, name):
    tot = 0
    found = False
    for m in re.finditer(r"^" + re.escape(name) + r"(\{[^}]*\})? (\d+)$", text, re.M):
        tot += int(m.group(2))
        found = True
    if not found:
        fail(f"metric {name} missing")
    return tot


def resolve(d, tok):
    acks = []
    for ln in (1, 3, 5):
        st, _, b = http(d, "POST", "/residual-seed", seed(0, tok, ln, V[ln]))
        acks.append((st, json.loads(b)))
    st, _, b = http(d, "POST", "/canonical", canonical(0, tok, REF))
    return acks, (st, json.loads(b))


def main():
    fanoctl = fanoctl_or_skip()
    if os.geteuid() != 0 or subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0:
        print("SKIP: needs root and unshare --mount for a private tmpfs")
        sys.exit(SKIP)
    real = os.environ["FANOGATE"]
    d = Daemon(extra="[lines]\nshadow_sample = 1\n", deadline_ms=30000)
    fs = f"{d.dir}/auditfs"
    os.mkdir(fs)
    with open(d.cfg) as f:
        cfg = f.read().replace(f"path = {d.dir}/audit.log", f"path = {fs}/audit.log")
    with open(d.cfg, "w") as f:
        f.write(cfg)
    wrap = f"{d.dir}/fanogate-smallfs.sh"
    with open(wrap, "w") as f:
        f.write(f"#!/bin/sh\nexec unshare --mount --propagation private sh -c "
                f"'mount -t tmpfs -o size=12k tmpfs {fs} && exec \"$0\" \"$@\"' {real} \"$@\"\n")
    os.chmod(wrap, stat.S_IRWXU)
    os.environ["FANOGATE"] = wrap
    with d:
        acks_before = []
        failed = False
        for tok in range(1, 400):
            a, c = resolve(d, tok)
            if metric(metrics(d), "fanogate_audit_failed") == 1:
                failed = True
                break
            acks_before.append(c)
        check(failed, f"the audit log failed closed on a full disk after {len(acks_before)} slots")
        check(all(st == 200 and j["ack"] and j["audit"] == "recording" for st, j in acks_before),
              "before: canonical reports acknowledged, \"audit\": \"recording\"")
        a, (cst, cj) = resolve(d, 1000)
        check(all(st == 200 and j["ack"] and j["audit"] == "failed" for st, j in a),
              "after: seeds still acknowledged (placed and delivered) and say \"audit\": \"failed\"")
        check(cst == 503 and cj["ack"] is False and cj.get("error") == "audit_failed" and cj["audit"] == "failed",
              f"after: a canonical report is not acknowledged: {cst} {cj.get('ack')} {cj.get('error')}")
        m = metrics(d)
        verdicts = metric(m, "fanogate_audit_verdicts_total")
        failures = metric(m, "fanogate_audit_append_failures_total")
        check(failures > 0, f"fanogate_audit_append_failures_total counts the lost records ({failures})")
        logpath = f"/proc/{d.proc.pid}/root{fs}/audit.log"
        p = subprocess.run([fanoctl, "audit", "tail", "--json", "-n", "100000", logpath], capture_output=True,
                           text=True, timeout=30)
        if p.returncode != 0:
            fail("audit tail: " + p.stderr)
        recs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]
        in_log = sum(1 for r in recs if r.get("type") == "verdict")
        check(in_log + failures >= verdicts,
              f"every counted verdict is in the log or counted as an append failure "
              f"({in_log} in the log + {failures} failures >= {verdicts} verdicts)")
        check("failed closed" in d.log() and " error: audit" in d.log(), "the failure is logged at error level")


if __name__ == "__main__":
    main()
