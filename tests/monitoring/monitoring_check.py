#!/usr/bin/python3
"""monitoring_check.py - the monitoring files (monitoring/) against the daemon.

  monitoring_check.py rules    `promtool check rules` and `promtool test rules`
                               on monitoring/fanogate.rules.yml (its unit tests:
                               monitoring/fanogate.rules.test.yml)
  monitoring_check.py names    every PromQL expression of the Grafana dashboard
                               (monitoring/fanogate.dashboard.json: panels,
                               variables, annotations) and of the rules parses
                               (promtool), and every metric it names is one a
                               running fanogate exports: scraped from real
                               daemons, one in local mode with [cluster] (an
                               etcd nobody answers: the cluster families are
                               there all the same) and one in dataplane mode
                               (ring profile, no NIC). When the EAL cannot start
                               here, the dataplane's names come from its
                               registry (`fanoctl counters --json`) and the
                               families render_dataplane adds, and the test says
                               so.

Exit 77 without promtool (Debian package prometheus). Environment: FANOGATE,
FANOCTL. Run with /usr/bin/python3."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import SKIP, Daemon, check, fail  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MON = os.path.join(ROOT, "monitoring")
RULES = os.path.join(MON, "fanogate.rules.yml")
RULES_TEST = os.path.join(MON, "fanogate.rules.test.yml")
DASH = os.path.join(MON, "fanogate.dashboard.json")

# PromQL words that are not metric names
FUNCS = {
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group",
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
    "rate", "irate", "increase", "delta", "idelta", "deriv", "changes", "resets", "histogram_quantile", "time",
    "abs", "absent", "absent_over_time", "ceil", "floor", "round", "clamp_min", "clamp_max", "label_replace",
    "label_join", "vector", "scalar", "sort", "sort_desc", "timestamp", "max_over_time", "min_over_time",
    "avg_over_time", "sum_over_time", "count_over_time", "last_over_time", "predict_linear", "label_values",
    "inf", "nan", "le", "e",
}


def promtool():
    p = shutil.which("promtool")
    if not p:
        print("SKIP: promtool missing (apt-get install prometheus)")
        sys.exit(SKIP)
    return p


def rules_main():
    pt = promtool()
    r = subprocess.run([pt, "check", "rules", RULES], capture_output=True, text=True)
    check(r.returncode == 0, "promtool check rules: %s" % (r.stdout + r.stderr).strip().splitlines()[-1])
    r = subprocess.run([pt, "test", "rules", os.path.basename(RULES_TEST)], capture_output=True, text=True, cwd=MON)
    if r.returncode:
        sys.stdout.write(r.stdout + r.stderr)
    check(r.returncode == 0, "promtool test rules %s" % os.path.basename(RULES_TEST))
    # every alert of the rules file has a test that fires it
    alerts = {x["alert"] for g in yaml.safe_load(open(RULES))["groups"] for x in g["rules"] if "alert" in x}
    tested = set()
    for t in yaml.safe_load(open(RULES_TEST))["tests"]:
        for a in t.get("alert_rule_test", []):
            if a.get("exp_alerts"):
                tested.add(a["alertname"])
    check(alerts and alerts == tested, "every alert has a test that fires it (untested: %s)" % sorted(alerts - tested))


def expressions():
    """(where, expr) of every PromQL expression in the dashboard and the rules."""
    out = []
    dash = json.load(open(DASH))

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))
    for p in panels(dash["panels"]):
        for t in p.get("targets", []):
            out.append(("panel %r" % p["title"], t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if v.get("type") == "query":
            q = q["query"] if isinstance(q, dict) else q
            m = re.fullmatch(r"label_values\((.*),\s*\w+\)", q)
            out.append(("variable %s" % v["name"], m.group(1) if m else q))
    for a in dash.get("annotations", {}).get("list", []):
        if a.get("expr"):
            out.append(("annotation %r" % a["name"], a["expr"]))
    for g in yaml.safe_load(open(RULES))["groups"]:
        for r in g["rules"]:
            out.append(("rule %s" % (r.get("alert") or r.get("record")), r["expr"]))
    return out


def grafana_to_promql(expr):
    """Grafana's variables by values PromQL accepts."""
    return (expr.replace("$__rate_interval", "1m").replace("$__interval", "1m").replace("$instance", ".*")
            .replace("$job", "fanogate"))


def names_of(expr):
    """Metric names an expression reads: identifiers outside label matchers,
    strings and grouping clauses that are not PromQL words."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)          # strings
    e = re.sub(r"\{[^}]*\}", "", e)                      # label matchers
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)                     # ranges
    e = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b", "", e)    # numbers
    return {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e) if w not in FUNCS}


def scrape(d):
    body = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
    return {ln.split(" ")[2] for ln in body.splitlines() if ln.startswith("# TYPE ")}, body


def families(types_and_kinds):
    """Sample names a family gives: a histogram's _bucket, _sum and _count too."""
    out = set()
    for name, kind in types_and_kinds:
        out.add(name)
        if kind in ("histogram", "summary"):
            out |= {name + "_bucket", name + "_sum", name + "_count"}
    return out


def exported(d):
    _, body = scrape(d)
    tk = [(ln.split(" ")[2], ln.split(" ")[3]) for ln in body.splitlines() if ln.startswith("# TYPE ")]
    return families(tk)


def names_main():
    pt = promtool()
    exprs = expressions()
    check(len(exprs) >= 20, "%d expressions in the dashboard and the rules" % len(exprs))
    # every expression parses: as recording rules, checked by promtool
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump({"groups": [{"name": "exprs", "rules": [
            {"record": "check:expr_%d" % i, "expr": grafana_to_promql(e)} for i, (_, e) in enumerate(exprs)]}]}, f)
        tmp = f.name
    r = subprocess.run([pt, "check", "rules", tmp], capture_output=True, text=True)
    os.unlink(tmp)
    if r.returncode:
        sys.stdout.write(r.stdout + r.stderr)
    check(r.returncode == 0, "every dashboard and rule expression is valid PromQL")
    used = {}
    for where, e in exprs:
        for n in names_of(e):
            used.setdefault(n, []).append(where)
    have = {"up"}  # Prometheus' own, per scrape target
    # local mode, with [cluster] (its families render whether etcd answers or not)
    keydir = tempfile.mkdtemp(prefix="fg-mon-key-")  # [cluster] key_file: the fleet's key, 0600
    fd = os.open(f"{keydir}/fleet.key", os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"monitoring-test-fleet-key-0123456789abcdef\n")
    os.close(fd)
    cl = Daemon(extra="[cluster]\nnode = mon-test\nendpoints = http://127.0.0.1:9\nlost_after_ms = 500\n"
                f"key_file = {keydir}/fleet.key\n")
    with cl as d:
        have |= exported(d)
    shutil.rmtree(keydir, ignore_errors=True)
    dp_names = set()
    with Daemon(dp_profile="ring", expect_start=False, deadline_ms=2000) as d:
        if d.lanes_up("# dataplane mode not available here: its names come from the registry (fanoctl counters)"):
            dp_names = exported(d)
    if not dp_names:
        fanoctl = os.environ.get("FANOCTL")
        if not fanoctl:
            fail("no dataplane here and no FANOCTL to read its registry")
        r = subprocess.run([fanoctl, "counters", "--json"], capture_output=True, text=True, timeout=20)
        reg = json.loads(r.stdout)
        rows = reg if isinstance(reg, list) else reg.get("counters", [])
        dp_names = {re.sub(r"\{.*", "", row["metric"]) for row in rows if "metric" in row}
        # the labelled families render_dataplane adds beside the registry (cp_metrics.c)
        dp_names |= {"fanogate_dp_line_contributions_total", "fanogate_dp_malformed_total"}
    have |= dp_names
    missing = {n: w for n, w in used.items() if n not in have}
    check(not missing, "every metric the dashboard and the rules name is exported (%d names; missing: %s)"
          % (len(used), "; ".join("%s in %s" % (n, ", ".join(sorted(set(w)))) for n, w in sorted(missing.items()))))
    # and the dashboard covers what an on-call looks at
    dash_text = open(DASH).read()
    for n in ("fanogate_line_info", "fanogate_slot_resolution_seconds_count", "fanogate_jump_delivery_seconds_bucket",
              "fanogate_dp_drops_total", "fanogate_audit_verdicts_total", "fanogate_cluster_etcd_up",
              "fanogate_warning"):
        check(n in dash_text, "the dashboard shows %s" % n)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("rules", "names"):
        sys.exit("usage: monitoring_check.py rules|names")
    rules_main() if sys.argv[1] == "rules" else names_main()
