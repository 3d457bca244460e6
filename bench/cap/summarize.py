#!/usr/bin/env python3
"""bench/cap/summarize.py - bench/cap/run.sh's arithmetic.

  summarize.py run GEN.json DP.json MODE
                                      one JSON line for one run (stdout);
                                      MODE: the memif mode (copy, zero-copy)
  summarize.py report OUT [--smoke] [--tx-held | --tx-hold-expired | --tx-no-hold]
                                      OUT/results.json and a table; with
                                      --smoke, exit 1 unless every run is
                                      whole (bit-exact, none lost, all ACKed);
                                      with --tx-held also unless fanogate's
                                      TX queue filled (tx_held > 0) and it
                                      dropped nothing (drop_tx_full 0); with
                                      --tx-hold-expired unless a hold ran
                                      out (the consumer stalled longer
                                      than the 50 ms hold) and the resends
                                      still delivered every seed; with
                                      --tx-no-hold ([port] tx_hold_ms = 0)
                                      unless nothing was held, packets
                                      were dropped, and the resends still
                                      delivered every seed
"""
import json
import sys


def run(gen_path, dp_path, mode):
    g = json.load(open(gen_path))
    d = json.load(open(dp_path))
    c, x = d["counters"], d["x"]
    resolved_dp = max(c["seeds_resolved"], 1)
    frags_dp = max(c["frags"], 1)
    out = dict(
        label=g["label"], memif_mode=mode, hidden=g["hidden"], seeds=g["seeds"], resolved=g["resolved"],
        wrong=g["wrong"], lost=g["lost"], dup=g["dup"], seconds=g["seconds"],
        frags_per_s=g["frags_per_s"], seeds_per_s=g["seeds_per_s"],
        contrib_gbit_per_s=g["contrib_bytes_per_s"] * 8 / 1e9,
        frags_per_seed=g["frags_per_seed"] * g["lines"],
        # the poll lcore spins alone on its core for the whole window, so
        # every TSC cycle of the window is the lcore's
        cycles_per_frag_wall=g["tsc_hz"] / g["frags_per_s"] if g["frags_per_s"] else None,
        # the dataplane's own count of cycles in iterations that found work,
        # over its whole life (warm-up included) / fragments over its life
        cycles_per_frag_busy=x["busy_cycles"] / frags_dp,
        dp_rx_per_seed=c["rx_pkts"] / resolved_dp,
        dp_tx_per_seed=c["tx_pkts"] / resolved_dp,
        dp_acks_per_seed=c["acks_sent"] / resolved_dp,
        dp_status_per_seed=c["status_sent"] / resolved_dp,
        dp_seed_frags_per_seed=(c["tx_pkts"] - c["acks_sent"] - c["status_sent"]) / resolved_dp,
        delivery=dict(acked=c["delivery_acked"], resent=c["delivery_resent"],
                      given_up=c["delivery_given_up"], pending=d.get("delivery_pending")),
        drops={k: v for k, v in c.items() if k.startswith("drop_") and v},
        tx_held=x.get("tx_held", 0), tx_hold_expired=x.get("tx_hold_expired", 0),
        gen_rx_stalls=g.get("gen_rx_stalls", 0),
        hugepages=d["hugepages"], gen_cpu_s=g["gen_cpu_s"], gen_tx_full=g["gen_tx_full"],
        gen_rx=g["rx"],
    )
    print(json.dumps(out))


def report(out_dir, smoke, tx_held, tx_hold_expired, tx_no_hold=False):
    runs = [json.loads(line) for line in open(out_dir + "/runs.jsonl") if line.strip()]
    memcpy = json.load(open(out_dir + "/memcpy.json"))
    load = open(out_dir + "/load.txt").read().strip().splitlines()
    json.dump(dict(runs=runs, memcpy=memcpy, load=load), open(out_dir + "/results.json", "w"), indent=1)
    hdr = "%-20s %-9s %4s %8s %6s %5s %12s %10s %8s %10s %10s %6s %6s %6s" % (
        "path", "memif", "huge", "resolved", "wrong", "lost", "frags/s", "seeds/s", "Gbit/s", "cyc/frag", "busy/frag",
        "rx/sd", "tx/sd", "st/sd")
    print(hdr)
    for r in runs:
        print("%-20s %-9s %4s %8d %6d %5d %12.0f %10.0f %8.2f %10.0f %10.0f %6.2f %6.2f %6.2f" % (
            r["label"], r["memif_mode"], "yes" if r["hugepages"] else "no", r["resolved"], r["wrong"], r["lost"], r["frags_per_s"], r["seeds_per_s"],
            r["contrib_gbit_per_s"], r["cycles_per_frag_wall"] or 0, r["cycles_per_frag_busy"],
            r["dp_rx_per_seed"], r["dp_tx_per_seed"], r["dp_status_per_seed"]))
    if memcpy:
        print("copy of one %d-byte chunk on the same core: hot %.0f cycles, cold %.0f cycles" % (
            memcpy["chunk"], memcpy["memcpy_chunk_hot_cycles"], memcpy["memcpy_chunk_cold_cycles"]))
        if "memcpy_chunk_scatter_cycles" in memcpy:
            print("the same copy from random packet buffers to random slot places (%s): %.0f cycles" % (
                "2 MiB hugepages" if memcpy["scatter_hugepages"] else "no hugepages", memcpy["memcpy_chunk_scatter_cycles"]))
        if "chase_4k_spread_cycles" in memcpy:
            print("a load on a 4 KiB page the TLB does not hold (cap_memcpy chase, %d lines in L2, %s): "
                  "%.0f cycles, against %.0f packed" % (
                      memcpy["chase_lines"], "2 MiB hugepages" if memcpy["chase_hugepages"] else "no hugepages",
                      memcpy["chase_4k_spread_cycles"], memcpy["chase_packed_cycles"]))
    # --ab: each "-old" run is followed by its new run (same run, mode, hidden)
    pairs = [(o, n) for o, n in zip(runs, runs[1:]) if o["label"] == n["label"] + "-old"]
    if pairs:
        print("A/B in this invocation (new / old, each pair back to back):")
        for o, n in pairs:
            print("  %-26s frags/s %.3f  busy cycles per fragment %.0f / %.0f" % (
                n["label"], n["frags_per_s"] / o["frags_per_s"], n["cycles_per_frag_busy"], o["cycles_per_frag_busy"]))
    if smoke:
        bad = [r for r in runs if r["wrong"] or r["lost"] or r["resolved"] != r["seeds"]
               or r["delivery"]["given_up"] or r["delivery"]["pending"]
               or r["delivery"]["acked"] < r["resolved"]]
        if tx_held:
            bad += [r for r in runs if not r["tx_held"] or r["drops"].get("drop_tx_full") or not r["gen_rx_stalls"]]
        if tx_hold_expired:
            bad += [r for r in runs if not r["tx_hold_expired"] or not r["gen_rx_stalls"]]
        if tx_no_hold:
            bad += [r for r in runs if r["tx_held"] or not r["drops"].get("drop_tx_full") or not r["gen_rx_stalls"]]
        if not runs or bad:
            print("smoke: FAILED: %s" % (json.dumps(bad) if bad else "no run"))
            sys.exit(1)
        print("smoke: %d seeds bit-exact, every delivery ACKed (%d resent before their ACK); memif modes: %s" % (
            sum(r["resolved"] for r in runs), sum(r["delivery"]["resent"] for r in runs),
            ", ".join(sorted(set(r["memif_mode"] for r in runs)))))
        if tx_hold_expired:
            print("smoke: TX holds that ran out: %d (of %d), %d packets dropped, every seed delivered (%d resends)" % (
                sum(r["tx_hold_expired"] for r in runs), sum(r["tx_held"] for r in runs),
                sum(r["drops"].get("drop_tx_full", 0) for r in runs), sum(r["delivery"]["resent"] for r in runs)))
        if tx_no_hold:
            print("smoke: no TX hold (tx_hold_ms = 0): %d consumer stalls, %d packets dropped, every seed delivered (%d resends)" % (
                sum(r["gen_rx_stalls"] for r in runs), sum(r["drops"].get("drop_tx_full", 0) for r in runs),
                sum(r["delivery"]["resent"] for r in runs)))
        if tx_held:
            print("smoke: TX back-pressure: %d consumer stalls, fanogate held its TX %d times, dropped nothing" % (
                sum(r["gen_rx_stalls"] for r in runs), sum(r["tx_held"] for r in runs)))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "run" and sys.argv[4] in ("copy", "zero-copy"):
        run(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(sys.argv[2], "--smoke" in sys.argv[3:], "--tx-held" in sys.argv[3:],
               "--tx-hold-expired" in sys.argv[3:], "--tx-no-hold" in sys.argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
