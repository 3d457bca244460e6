#!/usr/bin/python3
"""daemon_operator.py - the daemon's operator socket with the real fanoctl client, and
its Prometheus endpoint:
status (the summary's parts and warnings; without tokens: the "every request
refused" warning, in status and in /metrics), lines, several lines in one
command (indexes apart, a triple in parentheses, a bare a,b,c refused as
ambiguous, a refusal among them does not stop the others), audit tail
without a FILE (the daemon's log), stats --watch (timestamped samples,
redrawn in place on a terminal), lines, line changes (disable -> a POST on that line is refused
line_disabled 403; enable; enable again refused "already"; auto-promote),
slots (table and one slot), peers, stats; the socket is mode 0600 (another
uid cannot even connect), and with the file opened up the daemon's
SO_PEERCRED check still refuses another uid. GET /metrics: counters match what was sent, 404 elsewhere.
FANOCTL = the fanoctl binary."""
import json
import os
import re
import stat
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import Daemon, check, fanoctl_or_skip, http, seed

V = [1.0] * 8


def main():
    fanoctl = fanoctl_or_skip()
    with Daemon(deadline_ms=20000) as d:  # the open slot must outlive a loaded CI box
        sock = f"{d.dir}/fanoctl.sock"
        env = dict(os.environ, FANOCTL_SOCKET=sock)

        def ctl(*args, user=None):
            cmd = [fanoctl, *args]
            if user:
                cmd = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups", *cmd]
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20)
            return p.returncode, p.stdout, p.stderr

        st = os.stat(sock)
        check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, "operator socket is mode 0600")
        rc, out, _ = ctl("status", "--json")
        j = json.loads(out)
        check(rc == 0 and j["ok"] and j["mode"] == "local" and j["tls_port"] == d.port, "fanoctl status")
        # one summary: every part an operator asks about, each with its value
        check(j["config"] == d.cfg and j["metrics"] == f"http://127.0.0.1:{d.metrics_port}/metrics"
              and j["operator_socket"] == sock and j["host"] == os.uname().nodename,
              "status: config file, metrics address, operator socket, host")
        check(j["dataplane"] == {"running": False} and j["cluster"] == {"enabled": False},
              "status: no dataplane, no cluster (%s, %s)" % (j["dataplane"], j["cluster"]))
        check(j["tls"]["port"] == d.port and j["tls"]["tokens"] == 2 and not j["tls"]["client_ca"]
              and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", j["tls"]["cert_not_after"]),
              "status: TLS port, tokens, certificate end (%s)" % j["tls"])
        check(j["audit"]["enabled"] and j["audit"]["path"] == f"{d.dir}/audit.log" and j["audit"]["head_seq"] == 1
              and re.fullmatch(r"[0-9a-f]{64}", j["audit"]["head_hash"]) and j["audit"]["alert_command"] == "none",
              "status: audit log, its head (genesis, then the start-up record), no alert command (%s)" % j["audit"])
        warn = {w["warning"]: w["text"] for w in j["warnings"]}
        check("no_alert_command" in warn and "no_auth" not in warn,
              "status: warns of the missing alert command, not of auth (%s)" % warn)
        rc, out, _ = ctl("status")
        check(rc == 0 and f"config:    {d.cfg}" in out and "pages nobody (no_alert_command)" in out
              and "head seq 1 hash " + j["audit"]["head_hash"] in out and "1 (1,4,5) shadow" in out,
              "fanoctl status (human): one fact per line, the warnings marked")
        http(d, "POST", "/residual-seed", seed(1, 5, 1, V))
        rc, out, _ = ctl("lines", "--json")
        j = json.loads(out)
        check(rc == 0 and len(j["lines"]) == 7 and j["lines"][1]["state"] == "shadow", "fanoctl lines: 7 lines, shadow")
        rc, out, _ = ctl("lines", "disable", "1", "--why", "d1 test", "--json")
        j = json.loads(out)
        check(rc == 0 and j["changed"] and j["line"]["state"] == "disabled", "fanoctl lines disable 1")
        st_, h, b = http(d, "POST", "/residual-seed", seed(1, 6, 1, V))
        jb = json.loads(b)
        check(st_ == 403 and jb["outcome"] == "line_disabled", "POST on a disabled line: 403 line_disabled")
        rc, out, _ = ctl("lines", "enable", "1", "--json")
        check(rc == 0 and json.loads(out)["line"]["state"] == "shadow", "fanoctl lines enable 1 -> shadow")
        rc, out, err = ctl("lines", "enable", "1")
        check(rc == 1 and "already" in err, "enable an enabled line: refused (exit 1)")
        rc, out, _ = ctl("lines", "auto-promote", "2", "on", "--json")
        check(rc == 0 and json.loads(out)["line"]["auto_promote"], "auto-promote on")

        # ---- several lines in one command; indexes apart, a triple in parentheses
        rc, out, err = ctl("lines", "shadow", "1,2,3")
        check(rc == 2 and "ambiguous" in err and "'(1,2,3)' for line 0" in err and "(1 2 3)" in err,
              "a bare 1,2,3 is refused as ambiguous, naming both readings (%s)" % err.strip())
        rc, out, err = ctl("lines", "disable", "0", "(1,4,5)", "2", "--why", "maintenance", "--json")
        j = json.loads(out) if out else {}
        check(rc == 0 and j.get("ok") and [r["line_index"] for r in j["results"]] == [0, 1, 2]
              and all(r["line"]["state"] == "disabled" for r in j["results"]),
              "fanoctl lines disable 0 '(1,4,5)' 2: three lines in one command (%s)" % (err.strip() or j))
        rc, out, _ = ctl("lines", "--json")
        states = [ln["state"] for ln in json.loads(out)["lines"]]
        check(states[:4] == ["disabled", "disabled", "disabled", "shadow"], "lines 0, 1, 2 disabled, 3 not (%s)" % states)
        rc, out, err = ctl("lines", "enable", "0", "3", "1")
        check(rc == 1 and "line 3 (2,4,6): refused: already" in err and "line 0 (1,2,3): shadow" in out
              and "line 1 (1,4,5): shadow" in out,
              "a refusal among several: the others still change, exit 1 (%s | %s)" % (out.strip(), err.strip()))
        rc, out, _ = ctl("lines", "enable", "2")
        rc2, _, err = ctl("lines", "enable", "4", "(2,5,7)")
        check(rc == 0 and rc2 == 2 and "named twice" in err, "the same line twice is refused (%s)" % err.strip())
        rc, out, _ = ctl("lines", "auto-promote", "on", "4", "5", "--json")
        j = json.loads(out) if out else {}
        check(rc == 0 and all(r["line"]["auto_promote"] for r in j.get("results", [])) and len(j["results"]) == 2,
              "auto-promote on 4 5")
        # ---- audit tail without FILE: the daemon's own log
        rc, out, err = ctl("audit", "tail", "--json", "-n", "20")
        recs = [json.loads(x) for x in out.splitlines() if x.strip()]
        dis = [r for r in recs if r.get("to") == "disabled" and "maintenance" in r.get("why", "")]
        check(rc == 0 and sorted(r["line"] for r in dis) == [0, 1, 2],
              "fanoctl audit tail (no FILE) reads the daemon's log: one record per line changed (%s)"
              % (err.strip() or len(recs)))
        rc, out, _ = ctl("slots", "--json")
        j = json.loads(out)
        check(rc == 0 and j["shards"][0]["in_use"] == 1, "fanoctl slots: one open slot")
        rc, out, _ = ctl("slots", "--json", "1", "5")
        j = json.loads(out)
        check(rc == 0 and j["state"] == "open" and j["landed"] == 2, "fanoctl slots 1 5: open, line 1 landed")
        s = d.tls_socket()  # one live TLS peer
        http(d, "GET", "/healthz", token=None, sock=s)
        rc, out, _ = ctl("peers", "--json")
        j = json.loads(out)
        check(rc == 0 and len(j["tls_peers"]) == 1, "fanoctl peers lists the TLS peer")
        s.close()
        rc, out, _ = ctl("stats", "--json")
        j = json.loads(out)
        check(rc == 0 and j["engine_tls"]["frames"] == 2 and j["engine_tls"]["outcomes"]["accepted"] == 1,
              "fanoctl stats counts frames and outcomes")
        # ---- stats --watch: a timestamped sample each time; redrawn in place on a terminal
        rc, out, err = ctl("stats", "--watch", "1", "--count", "2")
        heads = re.findall(r"^fanogate stats at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}, every 1 s(.*)$", out, re.M)
        check(rc == 0 and len(heads) == 2 and "rates over the last" in heads[1] and "\x1b[" not in out
              and re.search(r"^  engine_tls\.frames +2 +\+0\.0/s$", out, re.M),
              "stats --watch 1 --count 2 (piped): two timestamped samples, rates in the second (%s)" % (err.strip() or out[-300:]))
        rc, out, _ = ctl("stats", "--watch", "--count", "1")
        check(rc == 0 and "every 2 s" in out, "stats --watch: 2 s by default")
        import pty
        mfd, sfd = pty.openpty()
        p = subprocess.Popen([fanoctl, "stats", "--watch", "1", "--count", "2"], env=env, stdout=sfd,
                             stderr=subprocess.DEVNULL)
        os.close(sfd)
        tty = b""
        while True:
            try:
                chunk = os.read(mfd, 65536)
            except OSError:
                break
            if not chunk:
                break
            tty += chunk
        os.close(mfd)
        p.wait(timeout=20)
        check(p.returncode == 0 and tty.count(b"\x1b[H\x1b[2J") == 2 and b"Ctrl-C to stop" in tty,
              "stats --watch on a terminal redraws in place (home + clear before each sample)")
        body = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
        vals = {ln.split()[0]: ln.split()[1] for ln in body.splitlines() if ln and not ln.startswith("#")}
        check(vals.get("fanogate_tls_frames_total") == "2"
              and vals.get('fanogate_tls_outcomes_total{outcome="accepted"}') == "1"
              and vals.get('fanogate_tls_outcomes_total{outcome="line_disabled"}') == "1"
              and vals.get('fanogate_line_state{line="2",state="shadow"}') == "1",
              "GET /metrics: frames, outcomes and line states exposed")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/other", timeout=5)
            check(False, "metrics: other path 404")
        except urllib.error.HTTPError as e:
            check(e.code == 404, "metrics: other path 404")
        if os.geteuid() != 0:
            print("# not root: the other-uid checks need setpriv as root")
            return
        rc, out, err = ctl("status", user=65534)
        check(rc == 3, "uid 65534 cannot connect to the 0600 socket (exit 3)")
        os.chmod(sock, 0o666)
        os.chmod(d.dir, 0o755)
        rc, out, err = ctl("status", user=65534)
        # The daemon answers permission_denied and closes at once; fanoctl sees
        # the answer (exit 1) or, if it was still sending, a reset (exit 3).
        check(rc in (1, 3) and "operator: uid 65534" in d.log() and "refused" in d.log(),
              "socket opened up: SO_PEERCRED still refuses uid 65534 (exit %d: %s)" % (rc, err.strip()))
        rc, out, err = ctl("status")
        check(rc == 0, "root still served after the refusal")

    # an empty tokens file and no client CA: the daemon runs, refuses everyone,
    # and says so where an operator looks (not only in its log)
    d = Daemon()
    with open(f"{d.dir}/tokens", "w") as f:
        f.write("# no tokens\n")
    with d:
        r = d.ctl("status", "--json", fanoctl=fanoctl)
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        warn = {w["warning"]: w["text"] for w in j.get("warnings", [])}
        check("every request is refused" in warn.get("no_auth", ""), "status warns: no tokens, every request refused")
        body = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
        check('fanogate_warning{warning="no_auth"} 1' in body and 'fanogate_warning{warning="audit_failed"} 0' in body,
              "/metrics: fanogate_warning{warning=\"no_auth\"} 1, the others 0")


if __name__ == "__main__":
    main()
