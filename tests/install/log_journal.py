#!/usr/bin/python3
"""log_journal.py - the daemon's log as journald and syslog read it
(control/cp_log.h). With JOURNAL_STREAM naming its stderr (what systemd sets
for StandardError=journal) every line starts with a syslog priority "<P>";
a divergence is logged at warning or above, the demotion it causes too, a
failing alert command at warning, and the daemon's own action names the
daemon, never "uid 4294967295". Without it (stderr redirected elsewhere) the
same divergence is a timestamped "warn:" line and no line has a prefix."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.wait import until  # noqa: E402
from fgtest.harness import Daemon, canonical, check, fanoctl_or_skip, http, reduce_pair_x, seed  # noqa: E402

V = {1: [1.5, 2.0, -1.0, 0.5, 3.0, 4.0, 5.0, 6.0], 3: [0.25] * 8, 5: [-2.0, 1e-3, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]}
REF = reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])
BAD = [x + 1.0 for x in REF]
PRIO = re.compile(r"^<([0-7])>")


def resolve(d, tok, canon_values):
    for ln in (1, 3, 5):
        http(d, "POST", "/residual-seed", seed(0, tok, ln, V[ln]))
    st, _, _ = http(d, "POST", "/canonical", canonical(0, tok, canon_values))
    return st


def line_state(d, fanoctl, n):
    return {ln["line"]: ln for ln in d.ctl_json("lines", fanoctl=fanoctl)["lines"]}[n]["state"]


def run(journal, fanoctl):
    # /bin/false as the alert command: the page fails, which is logged
    extra = ("[lines]\nauto_promote = true\npromote_count = 2\npromote_ms = 0\nshadow_sample = 1\n"
             "[audit]\nalert_command = /bin/false\nalert_min_interval_ms = 0\n")
    d = Daemon(extra=extra, deadline_ms=30000)
    logpath = f"{d.dir}/daemon.log"
    # the harness opens this file "wb" (truncated, same inode) as the
    # daemon's stdout and stderr: name it in JOURNAL_STREAM beforehand
    open(logpath, "wb").close()
    st = os.stat(logpath)
    if journal:
        os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    else:
        os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino + 1}"  # some other stream
    try:
        with d:
            for tok in (1, 2):
                resolve(d, tok, REF)
            check(until(lambda: line_state(d, fanoctl, 1) == "active", 5), "two clean verdicts promoted line 1")
            check(resolve(d, 3, BAD) == 200, "divergent canonical report accepted")
            check(until(lambda: line_state(d, fanoctl, 1) == "shadow", 5), "the divergence demoted line 1")
            check(until(lambda: "alert command exited with status 1" in d.log(), 5), "the failed page was logged")
            log = d.log()
    finally:
        os.environ.pop("JOURNAL_STREAM", None)
    return log.splitlines()


def find(lines, needle):
    hits = [l for l in lines if needle in l]
    check(hits, "a line with '%s'" % needle)
    return hits[0] if hits else ""


def main():
    fanoctl = fanoctl_or_skip()
    lines = run(True, fanoctl)
    check(lines and all(PRIO.match(l) for l in lines),
          "journal: every line carries a priority prefix: %s" % [l for l in lines if not PRIO.match(l)][:3])
    div = find(lines, "divergence: token 3 layer 0")
    check(PRIO.match(div) and int(PRIO.match(div).group(1)) <= 4, "the divergence at warning or above: " + div)
    check("jumped fingerprint" in div and "audit record seq" in div, "the divergence names fingerprints and record")
    dem = find(lines, "line 1 (1,4,5): active -> shadow")
    check(dem.startswith("<4>") and "by the daemon (audit)" in dem, "the demotion at warning, by the daemon: " + dem)
    alert = find(lines, "alert command exited with status 1")
    check(PRIO.match(alert) and int(PRIO.match(alert).group(1)) <= 4, "the failed page at warning: " + alert)
    prom = find(lines, "shadow -> active")
    check(prom.startswith("<5>"), "a promotion at notice: " + prom)
    check(find(lines, "starting (config").startswith("<6>"), "start-up at info")
    check(not any("4294967295" in l for l in lines), "no line prints the audit's uid as a number")

    lines = run(False, fanoctl)
    check(not any(PRIO.match(l) for l in lines), "stderr not the journal: no prefix")
    div = find(lines, "divergence: token 3 layer 0")
    check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z fanogate\[\d+\] warn: ", div),
          "stderr not the journal: a timestamped warn line: " + div)


if __name__ == "__main__":
    main()
