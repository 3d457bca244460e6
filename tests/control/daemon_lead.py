#!/usr/bin/python3
"""daemon_lead.py - the lead of jumped seeds over the canonical chain, end to
end: a real daemon (--no-dataplane, every line in shadow) and the real fleet
emulator over WebSocket/TLS with the coordinator's canonical reports held
back by a known time (fanofleet --canon-delay-us).

1. Reports 2 ms after the seeds: /metrics' lead histograms (line x ingress)
   and `fanoctl lines` (--json and the table) show about that lead, in a band
   (1-20 ms: the run's spread, not a timing goal), every compared seed ahead;
   the verdict records carry it (fanoctl audit tail --json: lead_ns).
2. Reports 2 ms before the seeds, with promote_min_ahead = 0.5: the share
   ahead is about 0, the lead about -2 ms; the clean window does NOT promote:
   `fanoctl lines` says why ("clean, not ahead: 0% of N seeds ahead, needs
   50%"), one LINE record per line says so (not one per verdict), the hold
   counters move once. A config reload setting promote_min_ahead = 0 lets
   the same traffic promote the lines at the next verdicts (the promotion's
   reason says how far ahead its window was).
3. `fanoctl audit verify` accepts the log (VERDICT records of version 2).

Environment: FANOGATE, FANOCTL, FANOFLEET (meson passes them)."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import SKIP, TOKEN, Daemon, audit_records, check, fail, fanoctl_or_skip, metrics  # noqa: E402
from fgtest.wait import until  # noqa: E402

LAYERS = 4   # 3 slots a token
TOKENS = 10  # 30 verdicts on each of lines 1, 3, 5
PAIR_X = (1, 3, 5)


def fleet_run(fleet, d, delay_us, base, tokens=TOKENS):
    p = subprocess.run([fleet, "--tokens", str(tokens), "--layers", str(LAYERS), "--hidden", "8", "--mix", "wss=1",
                        "--tls", f"127.0.0.1:{d.port}", "--insecure", "--token", TOKEN, "--window", "1",
                        "--canonical", "digest", "--canon-delay-us", str(delay_us), "--token-base", str(base),
                        "--quiet"], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("fanofleet exit %d:\n%s%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))


def lines(d, fanoctl):
    return {ln["line"]: ln for ln in d.ctl_json("lines", fanoctl=fanoctl)["lines"]}


def hist(m, fam, line, ingress="tls"):
    """(count, {le: cumulative}) of one lead histogram series."""
    tail = 'line="%d",triple=' % line
    count, buckets = None, {}
    for k, v in m.items():
        if not k.startswith("fanogate_" + fam) or tail not in k or 'ingress="%s"' % ingress not in k:
            continue
        if k.startswith("fanogate_%s_count{" % fam):
            count = v
        mb = re.search(r'[{,]le="([^"]+)"', k)
        if k.startswith("fanogate_%s_bucket{" % fam) and mb:
            buckets[float(mb.group(1))] = v
    check(count is not None and buckets, "%s{line=%d,ingress=%s} present" % (fam, line, ingress))
    return count, buckets


def series(m, name, line, ingress=None):
    """The value of the one series of name for line (and ingress)."""
    ks = [k for k in m if k.startswith("fanogate_%s{" % name) and 'line="%d",' % line in k
          and (ingress is None or 'ingress="%s"' % ingress in k)]
    check(len(ks) == 1, "one series %s{line=%d,ingress=%s} (%d)" % (name, line, ingress, len(ks)))
    return m[ks[0]]


def median_bucket(count, buckets):
    """The upper bound of the bucket holding the median."""
    for le in sorted(buckets):
        if buckets[le] >= count / 2:
            return le
    return float("inf")


def compared(d, n):
    def done():
        m = metrics(d)
        return m.get('fanogate_audit_verdicts_total{kind="clean"}', 0) >= n
    return until(done, 30)


def main():
    fanoctl = fanoctl_or_skip()
    fleet = os.environ.get("FANOFLEET")
    if not fleet or not os.access(fleet, os.X_OK):
        print("SKIP: FANOFLEET not set to the fleet emulator")
        sys.exit(SKIP)
    want = TOKENS * (LAYERS - 1)
    base = "[lines]\nauto_promote = true\npromote_count = 20\npromote_ms = 0\nshadow_sample = 0\n"

    # ---- 1. the chain 2 ms behind ----------------------------------------------
    # a window too long to promote here: every seed stays compared
    with Daemon(extra=base.replace("promote_count = 20", "promote_count = 1000"), deadline_ms=20000,
                layers=LAYERS) as d:
        m0 = metrics(d)
        check(hist(m0, "line_lead_seconds", 1)[0] == 0 and hist(m0, "line_lag_seconds", 1)[0] == 0,
              "no lead before the traffic; every series already there")
        fleet_run(fleet, d, 2000, 1)
        check(compared(d, want), "%d clean verdicts" % want)
        m = metrics(d)
        for ln in PAIR_X:
            n, b = hist(m, "line_lead_seconds", ln)
            lag, _ = hist(m, "line_lag_seconds", ln)
            check(n == want and lag == 0, "line %d: %d of %d compared seeds ahead, %d behind" % (ln, n, want, lag))
            med = median_bucket(n, b)
            check(0.001 <= med <= 0.02, "line %d: median lead in the bucket up to %g s (1-20 ms)" % (ln, med))
            s = series(m, "line_lead_seconds_sum", ln, "tls")
            check(0.001 <= s / n <= 0.02, "line %d: mean lead %.2f ms (1-20 ms)" % (ln, s / n * 1e3))
            dn, _ = hist(m, "line_delivery_lead_seconds", ln)
            check(dn == want, "line %d: the delivery lead counted too (%d)" % (ln, dn))
            check(hist(m, "line_lead_seconds", ln, "udp")[0] == 0, "line %d: nothing counted as udp" % ln)
        check(hist(m, "line_lead_seconds", 0)[0] == 0, "line 0 (not in the rule): no lead")
        ls = lines(d, fanoctl)
        for ln in PAIR_X:
            x = ls[ln]
            check(x["state"] == "shadow" and x["promotion"] == "window: %d of 1000 clean verdicts" % want,
                  "line %d in shadow, its window counting: %r" % (ln, x.get("promotion")))
            check(x["leads"] == want and x["ahead"] == 1.0, "line %d: %s leads, share ahead %s" % (
                ln, x["leads"], x["ahead"]))
            check(1000 <= x["lead_p50_us"] <= 20000 and x["lead_p50_us"] <= x["lead_p99_us"] <= 20000,
                  "line %d: fanoctl lines lead p50 %s us, p99 %s us (1-20 ms)" % (ln, x["lead_p50_us"],
                                                                                   x["lead_p99_us"]))
        t = d.ctl("lines", fanoctl=fanoctl).stdout
        check(re.search(r"line=1 .*lead_p50_us=\d+ lead_p99_us=\d+", t) is not None,
              "the table prints the lead: " + t[:300])
        def verdict_recs():
            return [r for r in audit_records(fanoctl, f"{d.dir}/audit.log") if r["type"] == "verdict"]
        until(lambda: len(verdict_recs()) >= want, 10)  # the log writes in batches
        recs = verdict_recs()
        check(len(recs) == want and all(r["version"] == 2 and r["ingress"] == "tls" and r["lead_ns"] > 0 and
                                         r["lead_deliver_ns"] <= r["lead_ns"] for r in recs),
              "every verdict record (%d) carries its lead (version 2, ahead)" % len(recs))
        leads = sorted(r["lead_ns"] for r in recs)
        check(1000000 <= leads[len(leads) // 2] <= 20000000,
              "the records' median lead %.2f ms (1-20 ms)" % (leads[len(leads) // 2] / 1e6))

    # ---- 2. the chain 2 ms ahead, promotion on value ------------------------------
    with Daemon(extra=base + "promote_min_ahead = 0.5\n", deadline_ms=20000, layers=LAYERS) as d:
        fleet_run(fleet, d, -2000, 1)
        check(compared(d, want), "%d clean verdicts" % want)
        m = metrics(d)
        ls = lines(d, fanoctl)
        for ln in PAIR_X:
            x = ls[ln]
            check(x["state"] == "shadow", "line %d: a clean window behind the chain stays in shadow" % ln)
            check(x["clean"] >= 20 and x["ahead"] <= 0.1, "line %d: %s clean, share ahead %s (about 0)" % (
                ln, x["clean"], x["ahead"]))
            check(-20000 <= x["lead_p50_us"] <= -1000, "line %d: lead p50 %s us (-20..-1 ms)" % (ln, x["lead_p50_us"]))
            check(re.fullmatch(r"clean, not ahead: \d+%% of %d seeds ahead, needs 50%%" % want, x.get("promotion", "")),
                  "line %d: fanoctl lines says why: %r" % (ln, x.get("promotion")))
            check(series(m, "line_promotions_held_total", ln) == 1, "line %d: held once" % ln)
            n, _ = hist(m, "line_lag_seconds", ln)
            check(n >= want * 0.9, "line %d: %d of %d behind" % (ln, n, want))
        check(m["fanogate_audit_promotions_held_total"] == 3, "three windows held, once each")
        check(m["fanogate_lines_promote_min_ahead_ratio"] == 0.5, "the policy on /metrics")
        t = d.ctl("lines", fanoctl=fanoctl).stdout
        check("promotion=clean, not ahead: " in t, "the table says why")
        recs = audit_records(fanoctl, f"{d.dir}/audit.log")
        holds = [r for r in recs if r["type"] == "line" and r.get("event") == "clean"]
        check(len(holds) == 3 and all(r["from"] == "shadow" and r["to"] == "shadow" and
                                      r["why"].startswith("clean, not ahead: ") for r in holds),
              "one record per line when its window was held, not one per verdict (%d)" % len(holds))
        # a reload without the policy: the same traffic promotes at once
        with open(d.cfg) as f:
            cfg = f.read()
        with open(d.cfg, "w") as f:
            f.write(cfg.replace("promote_min_ahead = 0.5\n", "promote_min_ahead = 0\n"))
        r = d.ctl("config", "reload", "--json", fanoctl=fanoctl)
        check(r.returncode == 0 and "[lines] promote_min_ahead: 0.5 -> 0" in r.stdout,
              "reload applies promote_min_ahead live: " + r.stdout.strip()[-200:])
        fleet_run(fleet, d, -2000, 1000, tokens=1)
        check(until(lambda: all(lines(d, fanoctl)[ln]["state"] == "active" for ln in PAIR_X), 10),
              "without promote_min_ahead the clean window promotes lines 1, 3, 5")
        promo = [r for r in audit_records(fanoctl, f"{d.dir}/audit.log")
                 if r["type"] == "line" and r.get("event") == "clean" and r.get("to") == "active"]
        check(len(promo) == 3 and all("seeds ahead, median lead -" in r["why"] for r in promo),
              "the promotions say how far ahead (behind): " + (promo[0]["why"] if promo else "none"))
        log = f"{d.dir}/audit.log"
        until(lambda: subprocess.run([fanoctl, "audit", "verify", log], capture_output=True).returncode == 0, 5)
        p = subprocess.run([fanoctl, "audit", "verify", log], capture_output=True, text=True, timeout=20)
        check(p.returncode == 0, "fanoctl audit verify accepts the log: " + (p.stdout + p.stderr).strip()[-160:])
        t = subprocess.run([fanoctl, "audit", "tail", "-n", "400", log], capture_output=True, text=True).stdout
        check(re.search(r"verdict .* lead -\d+\.\d{3} ms \(delivered -\d+\.\d{3} ms\) via tls", t) is not None,
              "fanoctl audit tail prints the lead")
    print(json.dumps({"ok": True}))


if __name__ == "__main__":
    main()
