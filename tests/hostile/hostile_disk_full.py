#!/usr/bin/python3
"""hostile_disk_full.py - a full disk: answers say what is true when the
audit cannot write, and the counters count it.

The daemon runs, without a dataplane and then with the ring dataplane on
2 lcores (the lcores build its statuses), in a private mount namespace
whose audit directory is a 12 KiB tmpfs, so the log hits ENOSPC after a few dozen
verdicts and fails closed. Slots are resolved and compared (seeds, then a
canonical report) until /metrics says fanogate_audit_failed 1. Then:
- a canonical report is NOT acknowledged: 503, "ack": false,
  "error": "audit_failed" (its only purpose is a verdict that can no longer
  be recorded), and every ack says "audit": "failed";
- a seed is still acknowledged (it is in its slot and is delivered) and its
  ack says "audit": "failed";
- a seed sent over WebSocket (wss /flow?status=1) gets a binary status
  frame whose facts say the same: bit 5 (audit_failed) set after the
  failure, clear before it (include/fg/wire.h; docs/wire-decisions.md 6);
- every verdict the audit counted is either a verdict record in the log
  (read through /proc/PID/root, the daemon's view) or counted in
  fanogate_audit_append_failures_total, which is not 0.
Before this change the canonical report was answered "ack": true and
append failures stayed 0 while verdicts were lost; the status frames said
nothing of the audit."""
import json
import os
import re
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.flow import parse_frames, parse_status  # noqa: E402
from fgtest.harness import (LANES_SKIP, SKIP, canonical, check, fail, fanoctl_or_skip, http,  # noqa: E402
                            mode_daemon, reduce_pair_x, seed)
from fgtest.ws import read_message, ws_frame  # noqa: E402

STATUS_STREAM = 0xFFFE
FACT_ACK, FACT_AUDIT_FAILED, FACT_AUDIT_OFF = 0x01, 0x20, 0x40

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


def ws_status_facts(d, tok, ln):
    """The facts byte of the status frame a seed for (tok, ln) sent over
    wss /flow?status=1 is answered with."""
    s, head, rest = d.ws_raw("/flow?status=1")
    try:
        check(b" 101 " in head, "wss /flow upgraded")
        s.sendall(ws_frame(0x82, seed(0, tok, ln, V[ln])))
        b0, payload, _ = read_message(s, rest)
        check(b0 == 0x82, f"a binary message answers the seed (first byte 0x{b0:02x})")
        fr = parse_frames(payload)
        check(len(fr) == 1 and fr[0][0] == STATUS_STREAM and fr[0][1] == tok, "one status frame for the seed")
        return parse_status(fr[0][3])["facts"]
    finally:
        s.close()


def small_fs_daemon(mode, real):
    """A daemon (mode_daemon) whose audit log lies on a 12 KiB tmpfs of its
    own mount namespace: (the daemon, the tmpfs's path)."""
    d = mode_daemon(mode, extra="[lines]\nshadow_sample = 1\n", deadline_ms=30000)
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
    return d, fs


def scenario(d, mode, fs, fanoctl):
    print(f"# {mode} mode", flush=True)
    facts = ws_status_facts(d, 900, 1)
    check(facts & FACT_ACK and not facts & (FACT_AUDIT_FAILED | FACT_AUDIT_OFF),
          f"before: a status frame's facts say the audit records (0x{facts:02x})")
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
    facts = ws_status_facts(d, 901, 1)
    check(facts & FACT_ACK and facts & FACT_AUDIT_FAILED and not facts & FACT_AUDIT_OFF,
          f"after: a status frame's facts say the audit failed, the seed acknowledged (0x{facts:02x})")
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


def main():
    fanoctl = fanoctl_or_skip()
    if os.geteuid() != 0 or subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0:
        print("SKIP: needs root and unshare --mount for a private tmpfs")
        sys.exit(SKIP)
    real = os.environ["FANOGATE"]
    for mode in ("local", "lanes"):
        d, fs = small_fs_daemon(mode, real)
        with d:
            if mode == "lanes" and not d.lanes_up(LANES_SKIP):
                break
            scenario(d, mode, fs, fanoctl)


if __name__ == "__main__":
    main()
