#!/usr/bin/python3
"""daemon_cardinality.py - /metrics keeps the same set of series however many
verdicts pass, and a digest-only divergence pages with what an on-call needs.

A real daemon (--no-dataplane) and the real fleet emulator (fanofleet over
WebSocket/TLS, digest canonical reports, one flipped bit): scrape before any
traffic, decode 40 tokens x 27 layers (>= 1,000 verdicts, one divergent),
scrape again. The two scrapes must name exactly the same series (family and
labels): no label takes a value per record, slot or token. The divergence's
page (the alert command's environment) must carry host, line and triple,
token, layer, both fingerprints, "digest only: element difference unknown"
and no FG_DIFF_COUNT, the audit path and seq, and the one-line FG_SUMMARY.

Environment: FANOGATE, FANOFLEET (meson passes both). Run with /usr/bin/python3."""
import os
import re
import socket
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import SKIP, TOKEN, Daemon, check, fail  # noqa: E402
from fgtest.wait import until  # noqa: E402

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
TOKENS, LAYERS = 40, 28  # 27 slots a token: 1,080 verdicts


def scrape(d):
    """{'name{labels}': value} of one scrape."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
    out = {}
    for ln in body.splitlines():
        if ln and not ln.startswith("#"):
            m = SAMPLE.match(ln)
            if not m:
                fail("unparsable sample line: %r" % ln)
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def verdicts(v):
    return sum(x for k, x in v.items() if k.startswith("fanogate_audit_verdicts_total{"))


def main():
    fleet = os.environ.get("FANOFLEET")
    if not fleet or not os.access(fleet, os.X_OK):
        print("SKIP: FANOFLEET not set to the fleet emulator")
        sys.exit(SKIP)
    extra = ("[audit]\nalert_min_interval_ms = 0\n"
             "alert_command = env | grep ^FG_ | sort > {d}/a.$$ && mv {d}/a.$$ {d}/alert.$FG_EVENT\n")
    d = Daemon(deadline_ms=20000, layers=LAYERS)  # the page goes to a file in its directory
    with open(d.cfg, "a") as f:
        f.write(extra.format(d=d.dir))
    with d:
        v0 = scrape(d)
        check(verdicts(v0) == 0, "no verdict before the traffic")
        corrupt_at = TOKENS // 2
        p = subprocess.run([fleet, "--tokens", str(TOKENS), "--layers", str(LAYERS), "--hidden", "8",
                            "--mix", "wss=1", "--tls", f"127.0.0.1:{d.port}", "--insecure", "--token", TOKEN,
                            "--canonical", "digest", "--corrupt-at", str(corrupt_at), "--corrupt-line", "3",
                            "--corrupt-layer", "14"], capture_output=True, text=True, timeout=600)
        if p.returncode not in (0, 1):
            fail("fanofleet exit %d:\n%s%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
        want = TOKENS * (LAYERS - 1)
        v1 = None

        def all_judged():  # the last canonical reports may still be on their way
            nonlocal v1
            v1 = scrape(d)
            return verdicts(v1) >= want
        until(all_judged, 60)
        n = verdicts(v1)
        check(n >= 1000, "%d verdicts (>= 1,000) after %d slots" % (n, want))
        check(v1.get('fanogate_audit_verdicts_total{kind="divergent"}') == 1, "exactly one divergent verdict")
        s0, s1 = set(v0), set(v1)
        check(s0 == s1, "the same %d series before and after %d verdicts (new: %s; gone: %s)"
              % (len(s0), n, sorted(s1 - s0)[:8], sorted(s0 - s1)[:8]))

        path = f"{d.dir}/alert.divergence"
        until(lambda: os.path.exists(path), 30)
        env = dict(ln.split("=", 1) for ln in open(path).read().splitlines() if "=" in ln)
        host = socket.gethostname()
        for k, v in (("FG_EVENT", "divergence"), ("FG_HOST", host), ("FG_LINE", "1"), ("FG_LINE_TRIPLE", "(1,4,5)"),
                     ("FG_LAYER", "14"), ("FG_AUDIT_PATH", f"{d.dir}/audit.log"),
                     ("FG_DIFF_SUMMARY", "digest only: element difference unknown")):
            check(env.get(k) == v, "page: %s=%s (got %r)" % (k, v, env.get(k)))
        check(re.fullmatch(r"[0-9a-f]{16}", env.get("FG_FP_JUMP", "")) and
              re.fullmatch(r"[0-9a-f]{16}", env.get("FG_FP_CANON", "")) and env["FG_FP_JUMP"] != env["FG_FP_CANON"],
              "page: both fingerprints, different")
        check(not [k for k in env if k.startswith("FG_DIFF_") and k != "FG_DIFF_SUMMARY"],
              "page: no elementwise figure for a digest-only divergence (%s)"
              % [k for k in env if k.startswith("FG_DIFF_")])
        check(env.get("FG_AUDIT_SEQ", "").isdigit() and "FG_NODE" not in env, "page: audit seq, no node without [cluster]")
        summary = env.get("FG_SUMMARY", "")
        check(summary.startswith(f"fanogate {host}: divergence line 1 (1,4,5) token ")
              and " layer 14 " in summary and "digest only: element difference unknown" in summary
              and summary.endswith(f"audit record {env.get('FG_AUDIT_SEQ')} in {d.dir}/audit.log"),
              "page: FG_SUMMARY says it in one line (%r)" % summary)
        # the record the page names is the divergent verdict
        fanoctl = os.environ.get("FANOCTL")
        if fanoctl:
            r = d.ctl("audit", "tail", "--json", "-n", "100000", f"{d.dir}/audit.log", fanoctl=fanoctl)
            rec = [ln for ln in r.stdout.splitlines() if '"seq":%s,' % env.get("FG_AUDIT_SEQ") in ln]
            check(rec and '"verdict":"divergent"' in rec[0], "FG_AUDIT_SEQ names the divergent verdict's record")


if __name__ == "__main__":
    main()
