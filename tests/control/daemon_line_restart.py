#!/usr/bin/python3
"""daemon_line_restart.py - line state survives a restart, and every
operator action on the lines is audited once, through the real daemon
(--no-dataplane), fanoctl and the audit log on disk:

  1. a fresh log starts from the config's [lines] (line 0 disabled, lines
     1, 3, 5 active) and the log holds a START record saying so;
  2. a divergent canonical report demotes lines 1, 3, 5 (audited); kill -9;
     restart with the same config (which still says active): they start in
     shadow, from the log, and the new START record says so with the
     demotion's reason;
  3. the same for an operator `disable` of line 2 (config: shadow);
  4. `fanoctl lines auto-promote 4 on` writes exactly one record, again
     none, `off` one more; a restart keeps the flag from the log;
  5. a config reload writes exactly one RELOAD record and no line record
     when it changes nothing on the lines (unchanged, and a [tls] key);
  6. `fanogate --reset-lines` applies the config and the START record says
     "reset by operator";
  7. a damaged log (a byte flipped inside history) starts failed closed
     with every line that would be active in shadow."""
import json
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import daemon as fgdaemon  # noqa: E402
from fgtest import harness  # noqa: E402
from fgtest.harness import Daemon, binary, canonical, check, fail, fanoctl_or_skip, http, reduce_pair_x, seed  # noqa: E402
from fgtest.wait import until  # noqa: E402

V = {1: [1.5, 2.0, -1.0, 0.5, 3.0, 4.0, 5.0, 6.0], 3: [0.25] * 8, 5: [-2.0, 1e-3, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]}
REF = reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])
LINES = "[lines]\nline.0 = disabled\nline.1 = active\nline.3 = active\nline.5 = active\nshadow_sample = 1\n"


class Gate:
    """One configuration (a Daemon fixture's directory, never entered)
    started and stopped several times on the same audit log."""

    def __init__(self, fanoctl):
        self.fanoctl = fanoctl
        self.d = Daemon(extra=LINES, deadline_ms=30000)
        self.log = f"{self.d.dir}/audit.log"
        self.proc = None
        self.starts = 0

    def start(self, *args):
        self.starts += 1
        self.logpath = f"{self.d.dir}/daemon.{self.starts}.log"
        with open(self.logpath, "wb") as logf:
            try:
                self.proc, ready = fgdaemon.start([binary(), "--config", self.d.cfg, "--no-dataplane", *args],
                                                  stdout=logf, stderr=subprocess.STDOUT)
            except fgdaemon.NotReady as e:
                fail(f"daemon not ready ({e}):\n{self.text()}")
        harness._live.append(self.proc)
        if ready is None:
            fail("daemon exited at start:\n" + self.text())
        self.d.port = ready["tls"]

    def text(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        check(self.proc.wait(timeout=10) == 0, "clean stop on SIGTERM:\n" + self.text()[-2000:])

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def lines(self):
        return {ln["line"]: ln for ln in self.d.ctl_json("lines", fanoctl=self.fanoctl)["lines"]}

    def records(self):
        return harness.audit_records(self.fanoctl, self.log)

    def starts_in_log(self):
        return [r for r in self.records() if r["type"] == "start"]


def resolve(g, tok, canon_values):
    for ln in (1, 3, 5):
        http(g.d, "POST", "/residual-seed", seed(0, tok, ln, V[ln]))
    st, _, _ = http(g.d, "POST", "/canonical", canonical(0, tok, canon_values))
    return st


def entry(start, line):
    return start["lines"][line]


def main():
    fanoctl = fanoctl_or_skip()
    g = Gate(fanoctl)
    try:
        scenario(g)
    finally:
        if g.proc and g.proc.poll() is None:
            g.kill9()
    shutil.rmtree(g.d.dir, ignore_errors=True)


def scenario(g):
    # ---- 1. a fresh log: the config -------------------------------------------------
    g.start()
    ls = g.lines()
    check([ls[i]["base"] for i in range(7)] == ["disabled", "active", "shadow", "active", "shadow", "active", "shadow"],
          "a fresh log starts from the config's [lines]")
    s = g.starts_in_log()
    check(len(s) == 1 and all(e["source"] == "config (no line history)" for e in s[0]["lines"])
          and s[0]["config"] == g.d.cfg and not s[0]["reset_lines"],
          "the START record says every line came from the config, with the config path")

    # ---- 2. divergence, kill -9, restart: shadow from the log ------------------------------
    check(resolve(g, 1, REF) == 200, "a clean slot on the active lines")
    check(resolve(g, 2, [x + 1.0 for x in REF]) == 200, "a divergent canonical report")
    check(until(lambda: all(g.lines()[i]["base"] == "shadow" for i in (1, 3, 5)), 5),
          "the divergence demoted lines 1, 3, 5")

    def demoted_on_disk():
        return [r for r in g.records() if r["type"] == "line" and r["event"] == "divergence"]
    check(until(lambda: len(demoted_on_disk()) == 3, 5), "the three demotions are in the log")
    g.kill9()
    g.start()
    ls = g.lines()
    check(all(ls[i]["base"] == "shadow" for i in (1, 3, 5)),
          "after kill -9 and a restart lines 1, 3, 5 are shadow although the config says active")
    s = g.starts_in_log()
    e1 = entry(s[-1], 1)
    check(len(s) == 2 and e1["base"] == "shadow" and e1["source"] == "log" and e1["event"] == "divergence"
          and "divergence" in e1["why"], "the new START record: line 1 shadow from the log, with the demotion (%s)" % e1)
    check("line.1 = active applies only to a log without line history" in g.text(),
          "the daemon says the config's state was not applied, and how to apply it")

    # ---- 3. operator disable, kill -9, restart ------------------------------------------
    p = g.d.ctl("lines", "disable", "2", "--why", "restart test", fanoctl=g.fanoctl)
    check(p.returncode == 0, "fanoctl lines disable 2: " + p.stdout + p.stderr)
    g.kill9()  # the reply came once the record was durable
    g.start()
    check(g.lines()[2]["base"] == "disabled", "line 2 disabled by an operator stays disabled after kill -9 + restart")
    e2 = entry(g.starts_in_log()[-1], 2)
    check(e2["source"] == "log" and e2["event"] == "op_disable" and "restart test" in e2["why"],
          "START: line 2 disabled from the log, the operator's reason kept (%s)" % e2)

    # ---- 4. auto-promote: one record per change ----------------------------------------
    def auto_recs():
        return [r for r in g.records() if r["type"] == "line" and r["event"] == "op_auto_promote"]
    n0 = len(g.records())
    p = g.d.ctl("lines", "auto-promote", "4", "on", fanoctl=g.fanoctl)
    check(p.returncode == 0, "fanoctl lines auto-promote 4 on: " + p.stdout + p.stderr)
    p = g.d.ctl("lines", "auto-promote", "4", "on", fanoctl=g.fanoctl)
    check(p.returncode == 0, "again: accepted, nothing to change")
    recs = g.records()
    a = auto_recs()
    check(len(recs) == n0 + 1 and len(a) == 1 and a[0]["line"] == 4 and a[0]["auto_promote"]
          and a[0]["uid"] == os.getuid() and a[0]["from"] == a[0]["to"] == "shadow",
          "auto-promote on: exactly one record (line 4, the operator's uid), the repeat none (%d new)" % (len(recs) - n0))
    p = g.d.ctl("lines", "auto-promote", "3", "on", fanoctl=g.fanoctl)
    p = g.d.ctl("lines", "auto-promote", "3", "off", fanoctl=g.fanoctl)
    check(p.returncode == 0 and len(auto_recs()) == 3, "on then off on line 3: one record each")
    check(g.lines()[4]["auto_promote"] and not g.lines()[3]["auto_promote"], "the flags are in force")

    # ---- 5. reloads: one record each, none on the lines when they change nothing there --------
    n0 = len(g.records())
    p = g.d.ctl("config", "reload", fanoctl=g.fanoctl)
    check(p.returncode == 0, "an unchanged reload: " + p.stdout + p.stderr)
    text = open(g.d.cfg).read()
    with open(g.d.cfg, "w") as f:
        f.write(text.replace("idle_timeout_ms = 20000", "idle_timeout_ms = 21000"))
    p = g.d.ctl("config", "reload", fanoctl=g.fanoctl)
    check(p.returncode == 0, "a reload of a [tls] key: " + p.stdout + p.stderr)
    new = g.records()[n0:]
    check([(r["type"], r.get("result")) for r in new] == [("reload", "unchanged"), ("reload", "applied")]
          and "idle_timeout_ms: 20000 -> 21000" in new[1]["what"],
          "two reloads: two RELOAD records, no line record (%s)" % [(r["type"], r.get("result")) for r in new])
    g.stop()
    g.start()
    ls = g.lines()
    check(ls[4]["auto_promote"] and not ls[3]["auto_promote"] and ls[2]["base"] == "disabled",
          "a clean restart keeps the auto-promote flags and states from the log (config: auto_promote false)")

    # ---- 6. --reset-lines -------------------------------------------------------------
    g.stop()
    g.start("--reset-lines")
    ls = g.lines()
    check([ls[i]["base"] for i in range(7)] == ["disabled", "active", "shadow", "active", "shadow", "active", "shadow"]
          and not ls[4]["auto_promote"], "--reset-lines: every line from the config again")
    s = g.starts_in_log()[-1]
    check(s["reset_lines"] and all(e["source"] == "reset by operator" for e in s["lines"]) and s["uid"] == os.getuid(),
          "the START record audits the reset: who, and every line reset by operator")
    g.stop()
    g.start()
    check(g.lines()[1]["base"] == "active", "the reset's states are the log's from then on")
    g.stop()

    # ---- 7. a damaged log -------------------------------------------------------------
    with open(g.log, "r+b") as f:
        data = f.read()
        off, k = 0, 0
        while k < 2:  # into the payload of the third record (a START), far from the tail
            off += int.from_bytes(data[off:off + 4], "little")
            k += 1
        f.seek(off + 60)
        f.write(bytes([data[off + 60] ^ 0x40]))
    g.start()
    ls = g.lines()
    check(not any(ls[i]["base"] == "active" for i in range(7)) and ls[0]["base"] == "disabled",
          "a damaged log: no line starts active (was %s)" % [ls[i]["base"] for i in range(7)])
    check("log damaged" in g.text() and "failed closed" in g.text(), "the daemon says the log is damaged")
    p = g.d.ctl("lines", "active", "1", fanoctl=g.fanoctl)
    check(p.returncode != 0 and "audit_failed" in p.stdout + p.stderr, "and refuses to promote while it cannot record")
    g.stop()


if __name__ == "__main__":
    main()
