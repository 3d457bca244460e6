#!/usr/bin/python3
"""report.py - combine one bench/jump run into a table, a JSON file and a PNG.

Usage: report.py OUTDIR
OUTDIR holds what scripts/bench.sh produced:
  path-<name>.json      fanofleet --json of one path (latency_by_ingress ...)
  path-<name>.samples   fanofleet --samples of that path ("class path ns ns_from_write_start":
                        from the write that handed the last contribution over returned,
                        and from when it began; older files have the first only)
  path-<name>.skip      a one-line reason when the path could not run
  relay.samples, relay.txt   fanofleet --relay-bench (coordinator hop)
  core.json             bench/core's bench_core --json (resolution vs memcpy)
  meta.json             machine, date, commit, settings
Writes OUTDIR/jump.json, OUTDIR/table.txt, OUTDIR/cdf-*.dat, OUTDIR/jump.png (the
CDF per path, bench/jump/latency.gp; its title says the commit, date, mode and
machine from meta.json, which jump.json's "plot" repeats).
Standard library only (runs on /usr/bin/python3)."""
import json
import statistics
import os
import subprocess
import sys

ORDER = [
    ("dpdk-udp", "UDP fragmented -> fanogate DPDK dataplane"),
    ("kernel-udp", "UDP fragmented -> kernel-socket receiver"),
    ("wss", "wss:// /flow -> fanogate (push over wss)"),
    ("https", "HTTPS POST -> fanogate (push over wss)"),
    ("https-pull", "HTTPS POST -> fanogate, GET long poll back"),
    ("wss-local", "wss:// -> fanogate --no-dataplane"),
    ("https-local", "HTTPS POST -> fanogate --no-dataplane"),
    ("relay", "canonical chain: DOWN -> coordinator -> ATTN (HTTPS keep-alive)"),
]


def pct(v, q):
    if not v:
        return None
    k = max(1, min(len(v), int(-(-q / 100.0 * len(v) // 1))))
    return v[k - 1]


# The two clocks of a sample (fanofleet's fl_udp_sent_fn): from the write
# that handed the slot's last contribution over returning ("handed", the
# figure every table has used), and from that write beginning ("write
# start"). On a CPU the gate shares with the generator the gate may run
# inside that write, and then "handed" starts after the gate's work.
HANDED, WRITE_START = 2, 3


def load_raw(path, col=HANDED):
    """One samples file's latencies in us, in the order they completed."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) in (3, 4) and len(p) > col:
                    out.append(int(p[col]) / 1000.0)
    except OSError:
        pass
    return out


def load_samples(path, col=HANDED):
    return sorted(load_raw(path, col))


def rounds_of(d, name):
    """bench.sh --rounds: the round numbers of a path's files, in order."""
    pre = "path-%s.r" % name
    return sorted(int(f[len(pre):-len(".samples")]) for f in os.listdir(d)
                  if f.startswith(pre) and f.endswith(".samples") and f[len(pre):-len(".samples")].isdigit())


def round_samples(d, name, r, warm_tokens, tokens, col=HANDED):
    """One round's samples without its first warm_tokens tokens (window 1,
    chain mode: a token's seeds complete before the next token's)."""
    raw = load_raw(os.path.join(d, "path-%s.r%d.samples" % (name, r)), col)
    per_token = len(raw) / tokens if tokens else 0
    return raw[int(round(warm_tokens * per_token)):]


def load_metrics(path):
    """name{labels} -> value of one scrape (bench.sh scrape), {} when absent."""
    m = {}
    if os.path.exists(path):
        for ln in open(path):
            parts = ln.split()
            if len(parts) == 2:
                m[parts[0]] = float(parts[1])
    return m


HOPS = ("answer", "to_lcore", "back_to_cp", "seed_to_cp")


def control_cpu(d, names, seeds):
    """The gate's control thread over one path's runs (bench.sh scrape's
    /proc/PID/schedstat before and after each): CPU time and run-queue wait
    per seed, in us. None without the files."""
    cpu = wait = 0
    for name in names:
        try:
            a = [int(x) for x in open(os.path.join(d, "path-%s.m0.cpu" % name)).read().split()]
            b = [int(x) for x in open(os.path.join(d, "path-%s.m1.cpu" % name)).read().split()]
        except (OSError, ValueError):
            return None
        cpu += b[0] - a[0]
        wait += b[1] - a[1]
    if not seeds:
        return None
    return {"cpu_us_per_seed": cpu / 1000.0 / seeds, "runq_wait_us_per_seed": wait / 1000.0 / seeds}


def per_seed(entry, key):
    """An engine count per resolved seed of the path, or None."""
    n, e = entry.get("resolved"), entry.get("engine") or {}
    return e[key] / n if n and key in e else None


def engine_hops(d, names):
    """The gate's engine figures over one path's runs (several with
    --rounds): per hop the records, mean and the bucket bound the median
    falls under; lane wake-ups and answer spins. None without scrapes."""
    delta = {}
    for name in names:
        a, b = load_metrics(os.path.join(d, "path-%s.m0" % name)), load_metrics(os.path.join(d, "path-%s.m1" % name))
        for k, v in b.items():
            delta[k] = delta.get(k, 0.0) + v - a.get(k, 0.0)
    if not delta:
        return None
    out = {}
    for h in HOPS:
        n = delta.get('fanogate_engine_hop_seconds_count{hop="%s"}' % h, 0)
        if n <= 0:
            continue
        bounds = sorted((float(k.split('le="')[1].rstrip('"}')), v) for k, v in delta.items()
                        if k.startswith('fanogate_engine_hop_seconds_bucket{hop="%s",' % h) and "+Inf" not in k)
        p50 = next((le for le, c in bounds if c >= n / 2), None)
        out[h] = {"n": int(n), "mean_us": delta['fanogate_engine_hop_seconds_sum{hop="%s"}' % h] / n * 1e6,
                  "p50_le_us": p50 * 1e6 if p50 is not None else None}
    out["loop_submits"] = int(delta.get("fanogate_loop_submits_total", 0))
    out["loop_completions"] = int(delta.get("fanogate_loop_completions_total", 0))
    out["wakeups"] = int(delta.get("fanogate_lane_wakeups_total", 0))
    out["spins"] = int(delta.get("fanogate_lane_answer_spins_total", 0))
    out["spin_hits"] = int(delta.get("fanogate_lane_answer_spin_hits_total", 0))
    out["spin_s"] = delta.get("fanogate_lane_answer_spin_seconds_total", 0.0)
    out["spin_ends"] = {r: int(delta.get('fanogate_lane_answer_spin_ends_total{reason="%s"}' % r, 0))
                        for r in ("answered", "input", "budget")}
    return out


def with_key(rows, key):
    """(name, entry[key]) for the rows whose entry has key."""
    return [(n, e[key]) for n, e in rows if e.get(key)]


def heading(lines, text):
    lines += ["", text]


# One look per path, in ORDER: colour, dash type and point type all differ,
# so two curves can be told apart in grey scale and where they cross.
# Colours are gnuplot's default set with its yellow, which vanishes in grey
# scale, replaced by brown; point types: plus, cross, star, open and filled
# square, open and filled circle, open triangle.
STYLES = [("#9400d3", 1, 1), ("#009e73", 2, 2), ("#56b4e9", 3, 3), ("#e69f00", 4, 4),
          ("#8c564b", 5, 5), ("#0072b2", 6, 6), ("#e51e10", 7, 7), ("#000000", 8, 8)]


def curve(path, title, i):
    """The plot clause of one CDF file: a line with a few markers on it
    (pointinterval: about 8 per curve whatever its sample count)."""
    n = sum(1 for _ in open(path))
    colour, dt, pt = STYLES[i % len(STYLES)]
    return ("'%s' using 1:2 with linespoints lw 2 lc rgb '%s' dt %d pt %d ps 1.3 pi %d title '%s'"
            % (gp_quote(path), colour, dt, pt, max(1, n // 8), gp_quote(title)))


def gp_quote(text):
    """text inside a gnuplot single-quoted string ('' stands for ')."""
    return text.replace("'", "''")


def stamp(meta):
    """What a plot was measured on, for its title (lines joined by a
    newline): commit, date, mode; workload, machine; a smoke run says it is
    not a figure."""
    mode = "%s mode, window %s" % (meta.get("mode", "?"), meta.get("window", "?"))
    work = "%s tokens per path x %s layers, hidden %s" % (meta.get("tokens_per_path", "?"), meta.get("layers", "?"),
                                                          meta.get("hidden", "?"))
    if (meta.get("rounds") or 1) > 1:
        work += ", %d rounds" % meta["rounds"]
    machine = "%s x%s, kernel %s" % (meta.get("cpu") or "?", meta.get("cpus") or "?", meta.get("kernel") or "?")
    when = (meta.get("date") or "date unknown").replace("T", " ").replace("Z", " UTC")
    text = "commit %s, %s, %s\n%s; %s" % (meta.get("commit") or "unknown", when, mode, work, machine)
    if meta.get("smoke"):
        text += "\nSMOKE RUN: a functional check, not a measurement"
    return text


def main():
    d = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    meta = {}
    if os.path.exists(os.path.join(d, "meta.json")):
        meta = json.load(open(os.path.join(d, "meta.json")))
    res = {"meta": meta, "paths": {}, "resolution": None}
    rows = []
    warm, tokens = meta.get("warmup_tokens", 0), meta.get("tokens_per_path", 0)
    per_round = {}  # path -> [p50 of each round]
    per_round_ws = {}  # the same on the write-start clock
    for name, desc in ORDER:
        entry = {"description": desc}
        skip = os.path.join(d, "path-%s.skip" % name)
        runs = [name]
        if name == "relay":
            s = load_samples(os.path.join(d, "relay.samples"))
        elif rounds_of(d, name):
            # bench.sh --rounds: the rounds pooled, each without its warm-up
            rs = rounds_of(d, name)
            runs = ["%s.r%d" % (name, r) for r in rs]
            s, ws, per_round[name], per_round_ws[name] = [], [], [], []
            for r in rs:
                x = sorted(round_samples(d, name, r, warm, tokens))
                per_round[name].append(pct(x, 50))
                s += x
                y = sorted(round_samples(d, name, r, warm, tokens, WRITE_START))
                per_round_ws[name].append(pct(y, 50))
                ws += y
            s.sort()
            ws.sort()
            entry.update({"rounds": len(rs), "warmup_tokens_dropped": warm, "round_p50_us": per_round[name]})
        else:
            s = load_samples(os.path.join(d, "path-%s.samples" % name))
            ws = load_samples(os.path.join(d, "path-%s.samples" % name), WRITE_START)
        for run in runs if name != "relay" else []:
            fj = os.path.join(d, "path-%s.json" % run)
            if os.path.exists(fj):
                j = json.load(open(fj))
                for k in ("slots", "resolved", "bit_exact", "wrong", "missing", "seconds"):
                    entry[k] = (entry.get(k) or 0) + (j.get(k) or 0)
        if entry.get("seconds"):
            entry["seeds_per_s"] = entry["resolved"] / entry["seconds"]
        if os.path.exists(skip):
            entry["skipped"] = open(skip).read().strip()
        hops = engine_hops(d, runs)
        if hops:
            entry["engine"] = hops
        cc = control_cpu(d, runs, entry.get("resolved")) if name != "relay" else None
        if cc:
            entry["control_thread"] = cc
        if s:
            entry.update({"samples": len(s), "p50_us": pct(s, 50), "p90_us": pct(s, 90), "p99_us": pct(s, 99),
                          "p999_us": pct(s, 99.9), "max_us": s[-1]})
            if name != "relay" and ws:
                entry["from_write_start"] = {"p50_us": pct(ws, 50), "p99_us": pct(ws, 99), "p999_us": pct(ws, 99.9),
                                             "max_us": ws[-1]}
            with open(os.path.join(d, "cdf-%s.dat" % name), "w") as f:
                n = len(s)
                step = max(1, n // 2000)
                for i in range(0, n, step):
                    f.write("%.3f %.6f\n" % (s[i], (i + 1) / n))
                f.write("%.3f 1.0\n" % s[-1])
        res["paths"][name] = entry
        rows.append((name, entry))
    load = {}
    for name in ("load-dpdk-udp", "load-kernel-udp"):
        fj = os.path.join(d, "path-%s.json" % name)
        if os.path.exists(fj):
            j = json.load(open(fj))
            lat = j.get("latency_by_ingress", {}).get("udp", {})
            load[name] = {"seeds": j.get("resolved"), "bit_exact": j.get("bit_exact"), "slots": j.get("slots"),
                          "seconds": j.get("seconds"), "gen_cpu_s": j.get("cpu_seconds"),
                          "seeds_per_s": (j["resolved"] / j["seconds"]) if j.get("seconds") else None,
                          "bytes_per_s": (j["resolved"] * 3 * 1536 * 4 / j["seconds"]) if j.get("seconds") else None,
                          "p50_us": lat.get("p50_us"), "p99_us": lat.get("p99_us")}
    res["throughput"] = load
    core = os.path.join(d, "core.json")
    if os.path.exists(core):
        c = json.load(open(core))
        r = [x for x in c.get("resolution", []) if x.get("hidden") == 1536 and x.get("lines") == 3]
        res["resolution"] = {"isa": c.get("reduce_isa"), "hidden_1536_lines_3": r[0] if r else None,
                             "all": c.get("resolution")}
    base = res["paths"].get("relay", {}).get("p50_us")
    lines = []
    lines.append("%-11s %8s %9s %9s %9s %9s %9s  %s" % ("path", "seeds", "p50 us", "p99 us", "p99.9 us", "max us",
                                                        "p50/relay", "notes"))
    for name, e in rows:
        if "samples" not in e:
            lines.append("%-11s %8s %9s %9s %9s %9s %9s  %s" % (name, "-", "-", "-", "-", "-", "-",
                                                                e.get("skipped", "no samples")))
            continue
        ratio = "%.2f" % (e["p50_us"] / base) if base else "-"
        note = ""
        if e.get("wrong"):
            note = "%d WRONG seeds" % e["wrong"]
        elif e.get("missing"):
            note = "%d missing" % e["missing"]
        elif "bit_exact" in e and e["bit_exact"] is not None:
            note = "%d/%d bit-exact" % (e["bit_exact"], e["slots"])
        lines.append("%-11s %8d %9.1f %9.1f %9.1f %9.1f %9s  %s" % (name, e["samples"], e["p50_us"], e["p99_us"],
                                                                    e["p999_us"], e["max_us"], ratio, note))
    fws = with_key(rows, "from_write_start")
    if fws:
        heading(lines, "the same seeds from the START of the write that handed the last contribution over (the"
                " table above: from its return):")
        for n, x in fws:
            lines.append("  %-11s p50 %9.1f  p99 %9.1f  p99.9 %9.1f  max %9.1f" % (n, x["p50_us"], x["p99_us"],
                                                                             x["p999_us"], x["max_us"]))
    for clock, pr, label in ((HANDED, per_round, "from the write's return"),
                             (WRITE_START, per_round_ws, "from the write's start")):
        if not pr:
            continue
        heading(lines, "rounds (%d interleaved, the first %d tokens of each dropped), %s: p50 us per round, "
                "dataplane / --no-dataplane" % (max(len(v) for v in pr.values()), warm, label))
        ratios = {}
        for p in ("wss", "https"):
            a, b = pr.get(p, []), pr.get(p + "-local", [])
            ratios[p] = [x / y for x, y in zip(a, b) if x and y]
            lines.append("  %-6s %s" % (p, "  ".join("%.1f/%.1f=%.2f" % (x, y, x / y) for x, y in zip(a, b) if x and y)))
            e, el = res["paths"].get(p, {}), res["paths"].get(p + "-local", {})
            if clock == WRITE_START:
                e, el = e.get("from_write_start", {}), el.get("from_write_start", {})
            if ratios[p] and e.get("p50_us") and el.get("p50_us"):
                lines.append("  %-6s pooled p50 %.1f / %.1f = %.2fx; median of the round ratios %.2fx (%.2f-%.2f)"
                             % (p, e["p50_us"], el["p50_us"], e["p50_us"] / el["p50_us"],
                                statistics.median(ratios[p]), min(ratios[p]), max(ratios[p])))
        res["round_ratios" if clock == HANDED else "round_ratios_write_start"] = ratios
    cts = with_key(rows, "control_thread")
    if cts:
        heading(lines, "the gate's control thread per seed over each path (/proc/PID/schedstat; every round and"
                " warm-up token included): CPU time, and time runnable but waiting for its CPU")
        for n, x in cts:
            e = res["paths"][n]
            sub_, cqe = per_seed(e, "loop_submits"), per_seed(e, "loop_completions")
            loop = ("  io_uring submits %.2f, completions %.2f" % (sub_, cqe)) if sub_ is not None else ""
            lines.append("  %-11s cpu %6.1f us  run-queue wait %6.1f us%s" % (n, x["cpu_us_per_seed"],
                                                                            x["runq_wait_us_per_seed"], loop))
    eng = with_key(rows, "engine")
    if eng:
        heading(lines, "engine hops per path (fanogate_engine_hop_seconds over the run: records, mean us,"
                " median <= bucket bound; answer = submit -> outcome, both modes):")
        for n, x in eng:
            hs = "  ".join("%s %d %.1f (<=%g)" % (h, x[h]["n"], x[h]["mean_us"], x[h]["p50_le_us"] or 0)
                           for h in HOPS if h in x)
            ends = "/".join(str(x["spin_ends"][r]) for r in ("answered", "input", "budget"))
            lines.append("  %-11s %s  wakeups %d spins %d hits %d, waiting %.1f us each, ended answered/input/budget %s" %
                         (n, hs, x["wakeups"], x["spins"], x["spin_hits"],
                          x["spin_s"] * 1e6 / x["spins"] if x["spins"] else 0, ends))
    if load:
        lines.append("")
        lines.append("throughput (burst, 16 tokens in flight, one fanofleet process as the whole fleet;"
                     " gen cpu = its own CPU, near 100% means the generator is the limit):")
        for name, v in load.items():
            if v["seeds_per_s"]:
                gen = ("  gen cpu %.0f%%" % (100 * v["gen_cpu_s"] / v["seconds"])) if v.get("gen_cpu_s") else ""
                lines.append("  %-16s %8.0f seeds/s  %6.1f MB/s contributions  p50 %.0f us  p99 %.0f us  %d/%d bit-exact%s"
                             % (name, v["seeds_per_s"], v["bytes_per_s"] / 1e6, v["p50_us"] or 0, v["p99_us"] or 0,
                                v["bit_exact"] or 0, v["slots"] or 0, gen))
    if res["resolution"] and res["resolution"]["hidden_1536_lines_3"]:
        r = res["resolution"]["hidden_1536_lines_3"]
        lines.append("")
        lines.append("resolution, hidden 1536, 3 lines, one core (%s): reduce+fingerprint %.2f GB/s = %.2f x memcpy "
                     "(%.2f GB/s); full slot engine %.2f GB/s = %.2f x memcpy, %d slots/s"
                     % (res["resolution"]["isa"], r["reduce_fp_gbs"], r["reduce_fp_ratio"], r["memcpy_gbs"],
                        r["engine_gbs"], r["engine_ratio"], r["slots_per_s"]))
    table = "\n".join(lines)
    print(table)
    open(os.path.join(d, "table.txt"), "w").write(table + "\n")
    res["plot"] = {"file": "jump.png", "stamp": stamp(meta)}
    json.dump(res, open(os.path.join(d, "jump.json"), "w"), indent=2, sort_keys=True)
    plots = []
    for i, (name, desc) in enumerate(ORDER):
        f = os.path.join(d, "cdf-%s.dat" % name)
        if os.path.exists(f):
            plots.append(curve(f, desc, i))
    png = os.path.join(d, "jump.png")
    if plots:
        gp = os.path.join(d, "paths.gp")
        open(gp, "w").write("plot " + ", \\\n     ".join(plots) + "\n")
        rc = subprocess.call(["gnuplot", "-e", "out='%s'; paths='%s'; stamp='%s'" % (gp_quote(png), gp_quote(gp),
                              gp_quote(stamp(meta))), os.path.join(here, "latency.gp")])
        if rc != 0:
            print("report: gnuplot failed (%d)" % rc, file=sys.stderr)
            return 1
    print("\nwrote %s, %s, %s" % (os.path.join(d, "table.txt"), os.path.join(d, "jump.json"), png))
    return 0


if __name__ == "__main__":
    sys.exit(main())
