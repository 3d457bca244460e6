"""daemon_metrics.py - the Prometheus endpoint and the configuration reload,
against a real daemon (--no-dataplane, generated PKI and tokens: daemon_harness).

Metrics: scrape, drive contributions over HTTPS POST /residual-seed (one
slot resolved by Pair X lines 1,3,5, one left open, a duplicate, a
malformed frame), scrape again and check that every counter moved by what
the acks say (outcomes), by the known amounts (frames, requests, resolved,
open slots, per-line labels), that no series carries the audit head's hash
(it is in `fanoctl status`, and moves with the records), that the resolved
seed shows in the jump delivery and resolution histograms, and that
`promtool check metrics` accepts both scrapes (exit 77 without
promtool: Debian package prometheus).

Reload: `fanoctl config reload` with a changed [lines] policy and [tls]
timeout is applied (visible in `fanoctl lines --json` and in the metrics,
recorded in the audit log); a bad value is refused with file:line: reason
(fanoctl exits 1, the daemon keeps the old values); a changed key that needs
a restart is refused naming it; SIGHUP reloads too.

Environment: FANOGATE, FANOCTL (meson passes both). Run with /usr/bin/python3."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.wait import until  # noqa: E402
from fgtest.harness import SKIP, Daemon, check, fanoctl_or_skip, fail, http, seed  # noqa: E402

V = [1.0, 2.0, 0.5, -1.0, 0.0, 3.0, 1.5, -2.0]
POLICY = "[lines]\nauto_promote = false\npromote_count = 64\npromote_ms = 10000\n[tls]\nws_max_message = 1K\n"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def scrape(d):
    body = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
    return body


def parse(body):
    """{'name{labels}': float} plus the set of families with # TYPE and # HELP."""
    vals, types, helps = {}, {}, set()
    for ln in body.splitlines():
        if ln.startswith("# TYPE "):
            _, _, name, typ = ln.split(" ", 3)
            types[name] = typ
        elif ln.startswith("# HELP "):
            helps.add(ln.split(" ", 3)[2])
        elif ln:
            m = SAMPLE.match(ln)
            if not m:
                fail("unparsable sample line: %r" % ln)
            vals[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return vals, types, helps


def promtool(body, what):
    p = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, "promtool check metrics accepts the %s scrape%s" % (
        what, "" if p.returncode == 0 else ": " + (p.stdout + p.stderr).strip()[:2000]))


def families_documented(vals, types, helps):
    for key in vals:
        name = key.split("{")[0]
        # a histogram's series carry its family's name plus a suffix
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if base != name and types.get(base) == "histogram":
            name = base
        if name not in types or name not in helps:
            fail("sample %s has no # TYPE or # HELP for its family" % key)
        if types[name] == "counter" and not name.endswith("_total"):
            fail("counter %s does not end in _total" % name)
    check(True, "every sample has # HELP and # TYPE; every counter ends in _total (%d series)" % len(vals))


DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "metrics.md")


def documented(types, what):
    """Every family of the scrape has a row in docs/metrics.md."""
    with open(DOCS) as f:
        doc = set(re.findall(r"^\| `([a-z_]+)`", f.read(), re.M))
    missing = sorted(set(types) - doc)
    check(not missing, "docs/metrics.md lists every %s family (missing: %s)" % (what, missing))


def main():
    fanoctl = fanoctl_or_skip()
    if not shutil.which("promtool"):
        print("SKIP: promtool missing (apt-get install prometheus)")
        sys.exit(SKIP)
    with Daemon(deadline_ms=20000, extra=POLICY) as d:
        env = dict(os.environ, FANOCTL_SOCKET=f"{d.dir}/fanoctl.sock")

        def ctl(*args):
            p = subprocess.run([fanoctl, *args], env=env, capture_output=True, text=True, timeout=20)
            return p.returncode, p.stdout, p.stderr

        # ---- metrics ---------------------------------------------------------
        b0 = scrape(d)
        v0, types, helps = parse(b0)
        promtool(b0, "first")
        families_documented(v0, types, helps)
        check(v0.get('fanogate_build_info{version="0.1.0",mode="local"}') == 1, "build_info: version and mode")
        check(v0.get("process_open_fds", 0) > 3 and v0.get("process_resident_memory_bytes", 0) > 0 and
              time.time() - 3600 < v0.get("process_start_time_seconds", 0) <= time.time() + 5,
              "process_* families from /proc/self")
        check(v0.get("fanogate_tls_max_connections") == 64 and v0.get("fanogate_slot_capacity") == 4096,
              "configured limits exposed")
        check(v0.get("fanogate_seccomp_refused_total") == 0 and
              v0.get("fanogate_operator_fd_requests_refused_total") == 0,
              "hardening counters exposed, nothing refused (%s, %s)" % (
                  v0.get("fanogate_seccomp_refused_total"), v0.get("fanogate_operator_fd_requests_refused_total")))
        rc, out, _ = ctl("stats", "--json")
        check(rc == 0 and json.loads(out).get("seccomp", {}).get("refused") == 0,
              "fanoctl stats: seccomp.refused 0")

        outcomes, errors = {}, 0
        for line in (1, 3, 5):  # Pair X on layer 1, token 7: resolves
            st, _, body = http(d, "POST", "/residual-seed", seed(1, 7, line, V))
            j = json.loads(body)
            outcomes[j["outcome"]] = outcomes.get(j["outcome"], 0) + 1
            errors += st >= 400
        check(sum(outcomes.values()) == 3 and outcomes.get("resolved") == 1,
              "three contributions, the last resolves (%s)" % outcomes)
        for _ in range(2):  # token 8: one accepted, then a duplicate
            st, _, body = http(d, "POST", "/residual-seed", seed(1, 8, 1, V))
            j = json.loads(body)
            outcomes[j["outcome"]] = outcomes.get(j["outcome"], 0) + 1
            errors += st >= 400
        bad = seed(1, 9, 1, V)[:-3]  # header says more bytes than the body holds
        st, _, body = http(d, "POST", "/residual-seed", bad)
        jb = json.loads(body)
        errors += st >= 400
        check(st >= 400 and jb.get("error"), "truncated frame refused (%d %s)" % (st, jb.get("error")))

        b1 = scrape(d)
        v1, types, helps = parse(b1)
        promtool(b1, "second")
        families_documented(v1, types, helps)
        documented(types, "local-mode")

        def delta(key):
            return v1.get(key, 0) - v0.get(key, 0)

        for name, n in outcomes.items():
            key = 'fanogate_tls_outcomes_total{outcome="%s"}' % name
            check(delta(key) == n, "%s moved by %d" % (key, n))
        others = [k for k in v1 if k.startswith("fanogate_tls_outcomes_total") and
                  re.search(r'"(.*)"', k).group(1) not in outcomes]
        check(all(delta(k) == 0 for k in others), "no other outcome moved")
        check(delta("fanogate_http_requests_total") == 6, "http_requests_total +6")
        check(delta("fanogate_seeds_resolved_total") == 1, "seeds_resolved_total +1")
        check(delta('fanogate_shard_slots_opened_total{shard="0"}') == 2, "two slots opened")
        check(delta('fanogate_shard_slots_resolved_total{shard="0"}') == 1, "one slot resolved in the shard")
        check(v1.get('fanogate_slots_open{shard="0"}') == 1, "one slot still open (token 8)")
        check(delta("fanogate_http_errors_total") == errors, "http_errors_total +%d (statuses >= 400 seen)" % errors)
        moved = [k for k in v1 if k.startswith("fanogate_tls_malformed_total") and delta(k) != 0]
        check(moved in ([], ['fanogate_tls_malformed_total{reason="%s"}' % jb["error"]]),
              "malformed series: only the truncated frame's reason may move (%s)" % moved)
        check(delta("fanogate_metrics_scrapes_total") == 1, "metrics_scrapes_total +1")
        check(delta("fanogate_uptime_seconds") > 0, "uptime_seconds grows")
        rc, out, _ = ctl("lines", "--json")
        names = {ln["line"]: ln["name"].strip("()") for ln in json.loads(out)["lines"]}
        check(all(v1.get('fanogate_line_info{line="%d",triple="%s",state="shadow",base="shadow"}' % (i, t)) == 1
                  for i, t in names.items()) and len(names) == 7,
              "line_info carries line and triple labels (as fanoctl lines names them)")
        check(not [k for k in v1 if "hash=" in k or k.startswith("fanogate_audit_head_info")],
              "no series carries the audit head's hash (a series per record)")
        check(v1.get("fanogate_audit_durable_records", 0) >= 1, "audit_durable_records exposed")
        check(delta('fanogate_slot_resolution_seconds_count{ingress="tls"}') == 1
              and delta('fanogate_jump_delivery_seconds_count{consumer="tls"}') == 1
              and delta('fanogate_jump_delivery_seconds_count{consumer="udp"}') == 0
              and v1.get('fanogate_jump_delivery_seconds_bucket{consumer="tls",le="+Inf"}') == 1,
              "the resolved seed is in the resolution (tls) and jump delivery (tls) histograms")
        check(0 < time.time() - v1.get("fanogate_last_resolved_timestamp_seconds", 0) < 600,
              "last_resolved_timestamp_seconds is the wall clock of the resolution")
        check(v1.get("fanogate_audit_last_divergence_timestamp_seconds") == 0, "no divergence yet: timestamp 0")
        rc, out, _ = ctl("status", "--json")
        h1 = json.loads(out)["audit"]["head_hash"] if rc == 0 else None
        check(h1 and re.fullmatch(r"[0-9a-f]{64}", h1), "fanoctl status shows the audit head hash")
        check(v1.get("fanogate_audit_enabled") == 1 and delta("fanogate_audit_resolved_in_total") == 1,
              "the resolved seed was handed to the audit")

        # ---- reload: applied ---------------------------------------------------
        # 40 KB: over 1K, and over the input buffer a connection accepted under 1K has
        # (head limits 24K + 1K): the reload must widen it; too long for hidden 8
        big = seed(1, 11, 1, [0.0] * 10000)
        st, _, _ = http(d, "POST", "/residual-seed", big)
        check(st == 413, "ws_max_message 1K: a 40 KB POST body is refused with 413")
        keep = d.tls_socket()  # opened before the reload (keep-alive): must get the new limit too
        st, _, _ = http(d, "GET", "/healthz", token=None, sock=keep)
        check(st == 200, "keep-alive connection open before the reload")
        rc, out, _ = ctl("lines", "--json")
        j = json.loads(out)
        check(rc == 0 and j["policy"]["promote_count"] == 64 and not j["lines"][0]["auto_promote"],
              "fanoctl lines --json shows the policy in force")
        text = open(d.cfg).read()
        with open(d.cfg, "w") as f:
            f.write(text.replace("auto_promote = false", "auto_promote = true")
                    .replace("promote_count = 64", "promote_count = 5")
                    .replace("idle_timeout_ms = 20000", "idle_timeout_ms = 25000")
                    .replace("ws_max_message = 1K", "ws_max_message = 64K"))
        rc, out, err = ctl("config", "reload", "--json")
        j = json.loads(out) if out else {}
        check(rc == 0 and j.get("changed") and any("promote_count: 64 -> 5" in c for c in j["changes"])
              and any("idle_timeout_ms: 20000 -> 25000" in c for c in j["changes"]),
              "fanoctl config reload: applied (%s)" % (j.get("changes") or err.strip()))
        rc, out, _ = ctl("lines", "--json")
        j = json.loads(out)
        check(rc == 0 and j["policy"]["promote_count"] == 5 and j["policy"]["auto_promote"]
              and all(ln["auto_promote"] for ln in j["lines"]),
              "fanoctl lines --json: promote_count 5, auto_promote on every line")
        v2, _, _ = parse(scrape(d))
        check(v2.get("fanogate_tls_idle_timeout_seconds") == 25 and v2.get("fanogate_tls_ws_max_message_bytes") == 65536
              and v0.get("fanogate_tls_idle_timeout_seconds") == 20, "metrics show the [tls] limits in force")
        check(v2.get("fanogate_lines_promote_verdicts") == 5 and
              v2.get('fanogate_config_reloads_total{result="applied"}') == 1, "metrics see the reload")
        st_new, _, body_new = http(d, "POST", "/residual-seed", big)  # a fresh connection
        st, _, body = http(d, "POST", "/residual-seed", big, sock=keep)
        check(st_new not in (413, 431) and (st, json.loads(body)) == (st_new, json.loads(body_new)),
              "ws_max_message 64K after the reload: the old connection answers like a new one (%d %s)"
              % (st, json.loads(body).get("error")))
        keep.close()
        rc, out, _ = ctl("config", "reload")
        check(rc == 0 and "changed: false" in out, "reload of an unchanged file: nothing to do")

        # ---- reload: refused, bad value ------------------------------------------
        good = open(d.cfg).read()
        lines = good.splitlines()
        bad_no = next(i for i, ln in enumerate(lines) if ln.startswith("promote_count")) + 1
        with open(d.cfg, "w") as f:
            f.write(good.replace("promote_count = 5", "promote_count = 0").replace(
                "auto_promote = true", "auto_promote = false"))
        rc, out, err = ctl("config", "reload")
        check(rc == 1 and ("%s:%d:" % (d.cfg, bad_no)) in err and "promote_count" in err,
              "bad value refused with file:line: reason, exit 1 (%s)" % err.strip())
        rc, out, _ = ctl("lines", "--json")
        j = json.loads(out)
        check(j["policy"]["promote_count"] == 5 and j["policy"]["auto_promote"], "refused reload: old values kept")

        # ---- reload: refused, key needs a restart ------------------------------------
        with open(d.cfg, "w") as f:
            f.write(good.replace("hidden = 8", "hidden = 16").replace("promote_count = 5", "promote_count = 9"))
        rc, out, err = ctl("config", "reload")
        check(rc == 1 and "needs_restart" in err and "[model] hidden" in err and "promote_count" not in err,
              "changed [model] hidden refused as a whole, naming the key (%s)" % err.strip())
        rc, out, _ = ctl("lines", "--json")
        check(json.loads(out)["policy"]["promote_count"] == 5, "nothing of it applied (promote_count still 5)")
        v3, _, _ = parse(scrape(d))
        check(v3.get('fanogate_config_reloads_total{result="refused"}') == 2 and
              v3.get("fanogate_config_last_reload_success") == 0, "metrics count the refusals")

        # ---- SIGHUP ----------------------------------------------------------------
        with open(d.cfg, "w") as f:
            f.write(good.replace("promote_count = 5", "promote_count = 7"))
        d.proc.send_signal(signal.SIGHUP)
        pc = None

        def reloaded():
            nonlocal pc
            rc, out, _ = ctl("lines", "--json")
            pc = json.loads(out)["policy"]["promote_count"] if rc == 0 else None
            return pc == 7
        until(reloaded, 10)
        check(pc == 7 and d.proc.poll() is None, "SIGHUP reloads (promote_count 7), the daemon keeps running")

        # ---- audit -------------------------------------------------------------------
        rc, out, _ = ctl("status", "--json")
        h4 = json.loads(out)["audit"]["head_hash"] if rc == 0 else None
        check(h4 and h1 != h4, "the audit head hash moved with the reload records")
        rc, out, _ = ctl("audit", "tail", "--json", "-n", "200", f"{d.dir}/audit.log")
        recs = [json.loads(x) for x in out.splitlines() if x.strip()]
        # one RELOAD record per reload, whatever came of it
        rel = [r for r in recs if r["type"] == "reload"]
        check(rc == 0 and [(r["result"], r["error"], r["origin"]) for r in rel] ==
              [("applied", "", "fanoctl"), ("unchanged", "", "fanoctl"), ("refused", "config_invalid", "fanoctl"),
               ("refused", "needs_restart", "fanoctl"), ("applied", "", "SIGHUP")]
              and "promote_count: 64 -> 5" in rel[0]["what"] and "[model] hidden" in rel[3]["what"]
              and "promote_count: 5 -> 7" in rel[4]["what"],
              "one reload record per reload: applied, unchanged, refused twice, SIGHUP (%s)"
              % [(r["result"], r["error"], r["origin"]) for r in rel])
        # what the reloads changed on the lines: auto_promote false -> true on each line, once
        auto = [r for r in recs if r["type"] == "line"]
        check(len(auto) == 7 and all(r["event"] == "op_auto_promote" and r["auto_promote"] and
                                     r["origin"] == "config reload (fanoctl)" for r in auto)
              and sorted(r["line"] for r in auto) == list(range(7)),
              "the applied reload recorded auto-promote on for each of the 7 lines, nothing else on the lines "
              "(%d line records)" % len(auto))
        rc, out, _ = ctl("audit", "verify", f"{d.dir}/audit.log")
        m = re.search(r"hash ([0-9a-f]{64})", out)
        want = m.group(1) if m else "?"
        got = None

        def head_is_want():  # the last records may still be on their way to disk
            nonlocal got
            r, o, _ = ctl("status", "--json")
            got = json.loads(o)["audit"]["head_hash"] if r == 0 else None
            return got == want
        until(head_is_want, 10)
        check(rc == 0 and got == want, "fanoctl status audit.head_hash == the head `fanoctl audit verify` reports")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/nope", timeout=5)
            check(False, "other path 404")
        except urllib.error.HTTPError as e:
            check(e.code == 404, "other path 404")


def lanes_part():
    """The dataplane's per-lcore series (ring profile: no NIC). Not a skip of
    the whole test when the EAL cannot start here: that part is reported
    and passed over."""
    with Daemon(dp_profile="ring", expect_start=False, deadline_ms=2000) as d:
        if not d.lanes_up("# dataplane mode not available here (no DPDK or the EAL refused): lanes metrics not checked"):
            return
        v0, _, _ = parse(scrape(d))
        acc = 0
        for line in (1, 3, 5):
            st, _, body = http(d, "POST", "/residual-seed", seed(2, 70, line, V))
            acc += json.loads(body)["outcome"] in ("accepted", "resolved")
        b1 = scrape(d)
        v1, types, helps = parse(b1)
        promtool(b1, "dataplane-mode")
        families_documented(v1, types, helps)
        documented(types, "dataplane-mode")
        check(v1.get('fanogate_build_info{version="0.1.0",mode="dataplane"}') == 1, "build_info says dataplane")
        lcores = sorted({re.search(r'lcore="(\d+)"', k).group(1) for k in v1 if k.startswith("fanogate_dp_rx_pkts_total")})
        check(len(lcores) >= 1 and all('fanogate_dp_drops_total{lcore="%s",reason="malformed"}' % c in v1 for c in lcores),
              "per-lcore dataplane series with drop reasons (lcores %s)" % lcores)

        def total(prefix):
            return sum(v for k, v in v1.items() if k.startswith(prefix)) - \
                sum(v for k, v in v0.items() if k.startswith(prefix))
        check(total("fanogate_dp_seeds_resolved_total") == 1, "dp_seeds_resolved_total moved by 1 over the lcores")
        check(total("fanogate_dp_line_contributions_total") == acc,
              "dp_line_contributions_total moved by the %d accepted contributions" % acc)
        registry_part(d, v1, lcores)


def telemetry(pid, cmd):
    """One DPDK telemetry command on the daemon's EAL socket (private file
    prefix fgdp<pid>, dataplane/dp.c); None when there is no socket."""

    path = "/var/run/dpdk/fgdp%d/dpdk_telemetry.v2" % pid
    if not os.path.exists(path):
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    s.recv(16384)  # greeting
    s.send(cmd.encode())
    d = json.loads(s.recv(1 << 20))
    s.close()
    return d.get(cmd)


def registry_part(d, scraped, lcores):
    """Every counter the registry declares (`fanoctl counters --json`) is
    rendered by the running dataplane in /metrics (on every lcore), in
    `fanoctl stats --json` (dataplane object) and in DPDK telemetry
    /fanogate/counters; and nothing those outputs show is undeclared."""
    fanoctl = os.environ["FANOCTL"]
    p = subprocess.run([fanoctl, "counters", "--json"], capture_output=True, text=True, timeout=20)
    check(p.returncode == 0, "fanoctl counters --json exits 0")
    reg = json.loads(p.stdout)
    check(len(reg) > 60, "the registry declares %d counters" % len(reg))
    names = [e["name"] for e in reg]
    missing = []
    for e in reg:
        for c in lcores:
            key = e["metric"].replace("{lcore", '{lcore="%s"' % c)
            if key not in scraped:
                missing.append(key)
    check(not missing, "/metrics has every declared counter on every lcore (missing: %s)" % missing[:5])
    env = dict(os.environ, FANOCTL_SOCKET=f"{d.dir}/fanoctl.sock")
    p = subprocess.run([fanoctl, "stats", "--json"], env=env, capture_output=True, text=True, timeout=20)
    dp = json.loads(p.stdout).get("dataplane", {}) if p.returncode == 0 else {}
    check(sorted(dp) == sorted(names),
          "fanoctl stats dataplane has exactly the declared counters (missing %s, undeclared %s)"
          % (sorted(set(names) - set(dp))[:5], sorted(set(dp) - set(names))[:5]))
    tel = telemetry(d.proc.pid, "/fanogate/counters")
    check(tel is not None, "DPDK telemetry socket of the daemon answers /fanogate/counters")
    if tel is not None:
        tk = set(tel) - {"lcores"}
        check(tk == set(names), "telemetry /fanogate/counters has exactly the declared counters "
              "(missing %s, undeclared %s)" % (sorted(set(names) - tk)[:5], sorted(tk - set(names))[:5]))


if __name__ == "__main__":
    main()
    lanes_part()
