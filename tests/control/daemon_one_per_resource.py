#!/usr/bin/python3
"""daemon_one_per_resource.py - one daemon per resource (control/cp_claim.h).

A first daemon runs (--no-dataplane). A second one is started four times,
each time sharing exactly one resource with the first: the operator socket,
the audit log, the TLS listen address, the metrics listen address. Each
time it must exit 1 before it is ready, with one log line that names the
resource and the first daemon's pid; afterwards the first daemon still
answers `fanoctl status` (with its own pid) on the same socket inode and
GET /healthz over TLS, and its audit log is untouched by the second. A
second daemon that shares nothing starts, and its stop leaves the first
one's socket in place. Before the operator socket had a lock, the second
daemon unlinked and re-bound the socket and `fanoctl status` lost the first
daemon once the second exited."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import daemon as fgdaemon  # noqa: E402
from fgtest.harness import Daemon, binary, check, fail, fanoctl_or_skip, http  # noqa: E402


def section_set(text, section, key, value):
    """text (an INI file) with `key = value` in [section] (replaced)."""
    out, cur, done = [], None, False
    for ln in text.splitlines():
        m = re.match(r"^\[(\w+)\]$", ln)
        if m:
            cur = m.group(1)
        elif cur == section and re.match(r"^%s\s*=" % re.escape(key), ln):
            ln, done = f"{key} = {value}", True
        out.append(ln)
    if not done:
        fail(f"no [{section}] {key} in the harness config")
    return "\n".join(out) + "\n"


def second(d, name, edits):
    """Start a second daemon on d's config with edits [(section, key,
    value)]: (the process, its ready dict or None, its log text)."""
    with open(d.cfg) as f:
        text = f.read()
    for sec, key, val in edits:
        text = section_set(text, sec, key, val)
    cfg = f"{d.dir}/second-{name}.ini"
    with open(cfg, "w") as f:
        f.write(text)
    logp = f"{d.dir}/second-{name}.log"
    with open(logp, "wb") as log:
        proc, ready = fgdaemon.start([binary(), "--config", cfg, "--no-dataplane"], stdout=log,
                                     stderr=subprocess.STDOUT, timeout=60)
    with open(logp, errors="replace") as f:
        return proc, ready, f.read()


def first_still_serves(d, pid, sock_ino, what):
    st = d.ctl_json("status")
    check(st.get("pid") == pid, f"{what}: the first daemon answers fanoctl status (pid {st.get('pid')})")
    check(os.stat(f"{d.dir}/fanoctl.sock").st_ino == sock_ino, f"{what}: its operator socket is the same inode")
    code, _, _ = http(d, "GET", "/healthz", token=None)
    check(code == 200, f"{what}: the first daemon answers GET /healthz over TLS ({code})")


def main():
    fanoctl_or_skip()
    with Daemon() as d:
        pid = d.proc.pid
        sock_ino = os.stat(f"{d.dir}/fanoctl.sock").st_ino
        audit_size = os.path.getsize(f"{d.dir}/audit.log")
        own = [("operator", "socket", f"{d.dir}/second.sock"), ("audit", "path", f"{d.dir}/second-audit.log")]
        cases = [
            ("socket", [own[1]], f"operator socket {d.dir}/fanoctl.sock is in use by pid {pid} (fanogate)"),
            ("log", [own[0]], f"audit log {d.dir}/audit.log is in use by pid {pid} (fanogate)"),
            ("tls", own + [("tls", "listen", f"127.0.0.1:{d.port}")],
             f"[tls] listen 127.0.0.1:{d.port} is in use by pid {pid} (fanogate)"),
            ("metrics", own + [("metrics", "listen", f"127.0.0.1:{d.metrics_port}")],
             f"[metrics] listen 127.0.0.1:{d.metrics_port} is in use by pid {pid} (fanogate)"),
        ]
        for name, edits, want in cases:
            proc, ready, log = second(d, name, edits)
            if ready is not None:
                proc.kill()
                proc.wait()
                fail(f"same {name}: a second daemon started:\n{log}")
            refusals = [ln for ln in log.splitlines() if "refusing to start" in ln]
            check(proc.returncode == 1 and len(refusals) == 1 and want in refusals[0],
                  f"same {name}: the second daemon exits 1 with one line naming the resource and pid {pid} "
                  f"(exit {proc.returncode}: {refusals})")
            check("ready:" not in log and "shadow audit running" not in log,
                  f"same {name}: refused before the audit log and the listeners started")
            first_still_serves(d, pid, sock_ino, f"after a second daemon on the same {name}")
        check(os.path.getsize(f"{d.dir}/audit.log") == audit_size, "the refused daemons wrote nothing to the log")
        # sharing nothing: it runs, and its stop leaves the first one's socket alone
        proc, ready, log = second(d, "none", own)
        check(ready is not None, "a second daemon that shares nothing starts")
        if ready is not None:
            check(ready["tls"] != d.port and ready["metrics"] != d.metrics_port, "on ports of its own")
            proc.terminate()
            proc.wait(timeout=10)
        first_still_serves(d, pid, sock_ino, "after another daemon stopped")


if __name__ == "__main__":
    main()
