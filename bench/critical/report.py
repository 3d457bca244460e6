#!/usr/bin/python3
"""report.py - one bench/critical run (scripts/bench.sh --critical-path) into
a table, a JSON file and a PNG.

Usage: report.py OUTDIR
OUTDIR holds:
  crit-jump-d<D>-l<L>.json   fanofleet --critical-path jump --json at net delay D us, loss L
  crit-canonical-d<D>.json   fanofleet --critical-path canonical (the same tokens, never a jump)
  crit-shadow-d<D>.json      jump with the lines in shadow: the gate never passes
  crit-*.skip                a one-line reason when a run could not happen
  relay.samples, relay.txt   the coordinator's relay hop, measured (fanofleet --relay-bench)
  meta.json                  machine, date, commit, settings
Writes OUTDIR/critical.json, OUTDIR/table.txt, OUTDIR/critical.dat and
OUTDIR/critical.png (bench/critical/critical.gp; its title says the commit,
date, mode and machine, which critical.json's "plot" repeats).
Per run (the model: bench/critical/RESULTS.md, tools/fleet/fleet_crit.h):
per-token wall time (p10/p50/p90), the same tokens through the chain alone,
the saving per token and per layer (negative: a cost, the table says so),
the share of layers whose gate passed (the hop skipped, the next layer on
the jumped seed), and of those whose seed was at the next worker before the
chain's input ("in time", whatever the gate made of it); every seed's bits
(bit_exact, wrong, missing). Standard library only."""
import glob
import json
import os
import re
import subprocess
import sys


def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    k = max(1, min(len(v), int(-(-q / 100.0 * len(v) // 1))))
    return v[k - 1]


def ms(ns):
    return None if ns is None else ns / 1e6


def stamp(meta):
    when = (meta.get("date") or "date unknown").replace("T", " ").replace("Z", " UTC")
    work = "%s tokens per run x %s layers, hidden %s, stages a/g/d %s us, path %s" % (
        meta.get("tokens_per_path", "?"), meta.get("layers", "?"), meta.get("hidden", "?"),
        meta.get("stage_us", "?"), meta.get("path", "?"))
    machine = "%s x%s, kernel %s" % (meta.get("cpu") or "?", meta.get("cpus") or "?", meta.get("kernel") or "?")
    text = "commit %s, %s, %s\n%s; %s" % (meta.get("commit") or "unknown", when, meta.get("mode", "?"), work, machine)
    if meta.get("smoke"):
        text += "\nSMOKE RUN: a functional check, not a measurement"
    return text


def gp_quote(text):
    return text.replace("'", "''")


def share(part, whole):
    return part / whole if whole else None


def mean_us(total_ns, n):
    return total_ns / n / 1e3 if n else None


def one(path):
    j = json.load(open(path))
    cp = j.get("critical_path", {})
    toks = cp.get("tokens", [])
    wall = [t["wall_ns"] for t in toks]
    canon = [t["canonical_ns"] for t in toks]
    save = [t["saving_ns"] for t in toks]
    layers = cp.get("layers", 0)
    jumped = cp.get("layers_jumped", 0)
    return {
        "tokens": len(toks), "layers": layers, "layers_in_time": cp.get("layers_in_time", 0),
        "layers_gate_passed": cp.get("layers_gate_passed", 0), "layers_jumped": jumped,
        "layers_decided_at_timeout": cp.get("layers_decided_at_timeout", 0),
        "layers_late_decision": cp.get("layers_late_decision", 0), "layers_stalled": cp.get("layers_stalled", 0),
        "in_time_share": share(cp.get("layers_in_time", 0), layers),
        "gate_share": share(cp.get("layers_gate_passed", 0), layers),
        "wall_ms": {q: ms(pct(wall, q)) for q in (10, 50, 90)},
        "canonical_ms": {q: ms(pct(canon, q)) for q in (10, 50, 90)},
        "saving_ms": {q: ms(pct(save, q)) for q in (10, 50, 90)},
        # per layer: the mean over every layer of every token, and over the
        # layers started on the jumped seed and on the relay apart
        "saving_per_layer_us": mean_us(sum(save), layers) if save else None,
        "saving_per_jumped_layer_us": mean_us(cp.get("saving_jumped_ns", 0), jumped),
        "saving_per_relayed_layer_us": mean_us(cp.get("saving_relayed_ns", 0), layers - jumped),
        "compute_ms_p50": ms(pct([t["compute_ns"] for t in toks], 50)),
        "seeds": {"slots": j.get("slots"), "bit_exact": j.get("bit_exact"), "wrong": j.get("wrong"),
                  "missing": j.get("missing")},
        "net_delay_us": cp.get("net_delay_us"), "mode": cp.get("mode"), "exit_code": j.get("exit_code"),
    }


def main():
    out = sys.argv[1]
    meta = json.load(open(os.path.join(out, "meta.json")))
    runs, skips = {}, {}
    for f in sorted(glob.glob(os.path.join(out, "crit-*.json"))):
        runs[os.path.basename(f)[5:-5]] = one(f)
    for f in sorted(glob.glob(os.path.join(out, "crit-*.skip"))):
        skips[os.path.basename(f)[5:-5]] = open(f).read().strip()
    delays = sorted({int(m.group(1)) for n in runs for m in [re.match(r"jump-d(\d+)-l", n)] if m})
    def signed(v, unit):
        # a negative saving is a cost: say so, not only with a sign
        return "-" if v is None else ("%+.2f%s" % (v, unit)) + (" cost" if v < 0 else "")

    rows = ["%-20s %6s %9s %9s %15s %16s %7s %7s %s" % ("run", "tokens", "run p50", "chain p50", "saving p50/tok",
                                                         "saving/layer", "gate", "in time", "seeds, bits")]
    for name, r in sorted(runs.items()):
        s = r["seeds"]
        rows.append("%-20s %6d %7.2fms %7.2fms %15s %16s %6.1f%% %6.1f%% %s: exact %s, wrong %s, missing %s" % (
            name, r["tokens"], r["wall_ms"][50] or 0, r["canonical_ms"][50] or 0, signed(r["saving_ms"][50], "ms"),
            signed(r["saving_per_layer_us"], "us"), 100 * (r["gate_share"] or 0), 100 * (r["in_time_share"] or 0),
            s["slots"], s["bit_exact"], s["wrong"], s["missing"]))
    for name, why in skips.items():
        rows.append("%-20s skipped: %s" % (name, why))
    rows.append("")
    for name, r in sorted(runs.items()):
        if r["mode"] == "jump":
            rows.append("%-20s per layer: jumped %d, mean %s; relayed %d, mean %s; decided at the slot timeout %d, "
                        "gate after the seed %d, stalled %d" % (
                            name, r["layers_jumped"], signed(r["saving_per_jumped_layer_us"], "us"),
                            r["layers"] - r["layers_jumped"], signed(r["saving_per_relayed_layer_us"], "us"),
                            r["layers_decided_at_timeout"], r["layers_late_decision"], r["layers_stalled"]))
    rows.append("run p50: this run's wall time per token; chain p50: the same tokens through the chain alone; "
                "saving = chain - run, a cost when negative;")
    rows.append("gate: layers whose status passed the fleet's gate (hop skipped, next layer on the jumped seed); "
                "in time: layers whose seed was at the next worker before the chain's input")
    relay = os.path.join(out, "relay.samples")
    if os.path.exists(relay):
        v = [int(x.split()[-1]) for x in open(relay) if x.strip()]
        rows.append("relay hop (measured, DOWN -> coordinator -> ATTN): %d samples, p50 %.1f us, p99 %.1f us" % (
            len(v), (pct(v, 50) or 0) / 1e3, (pct(v, 99) or 0) / 1e3))
    text = "\n".join(rows)
    print(text)
    open(os.path.join(out, "table.txt"), "w").write(text + "\n")
    # the plot's data: one block per delay, one row per loss
    dat = os.path.join(out, "critical.dat")
    with open(dat, "w") as f:
        for d in delays:
            for name, r in sorted(runs.items(), key=lambda kv: kv[0]):
                m = re.match(r"jump-d%d-l([0-9.]+)$" % d, name)
                if not m:
                    continue
                w, c = r["wall_ms"], r["canonical_ms"]
                f.write("%g %s %s %s %s %s %s %s %s\n" % (float(m.group(1)) * 100, w[50], w[10], w[90], c[50], c[10],
                                                            c[90], 100 * (r["in_time_share"] or 0),
                                                            100 * (r["gate_share"] or 0)))
            f.write("\n\n")
    res = {"meta": meta, "runs": runs, "skipped": skips,
           "plot": {"file": "critical.png", "stamp": stamp(meta)}}
    json.dump(res, open(os.path.join(out, "critical.json"), "w"), indent=2, sort_keys=True)
    here = os.path.dirname(os.path.abspath(__file__))
    png = os.path.join(out, "critical.png")
    if delays:
        losses = [float(m.group(1)) * 100 for n in runs for m in [re.match(r"jump-d\d+-l([0-9.]+)$", n)] if m]
        xmax = (max(losses) if losses else 20.0) * 1.1 + 1
        rc = subprocess.call(["gnuplot", "-e", "out='%s'; data='%s'; delays='%s'; xmax=%g; stamp='%s'" % (
            gp_quote(png), gp_quote(dat), " ".join(str(d) for d in delays), xmax, gp_quote(stamp(meta))),
            os.path.join(here, "critical.gp")])
        if rc != 0:
            print("report: gnuplot failed (%d): no plot" % rc, file=sys.stderr)


if __name__ == "__main__":
    main()
