#!/usr/bin/python3
"""hostile_flood_fleet.py - the phases and verdicts of run_flood_fleet.sh
(the floods at the fleet's datagram rates), run by it with the daemon up. Main thread.

Environment (set by run_flood_fleet.sh): FG_NS (the fleet's namespace),
FG_NET (10.93.X.), FG_TMP, FG_METRICS_PORT, FG_FLEET (fanofleet),
FG_GATE_PID.

Part 1, the floods. fanofleet (chain mode, window 8, 8 layers x hidden 512,
UDP only, canonical digests over UDP from its coordinator address, every
seed checked bit for bit) runs TOKENS tokens per phase, each phase its own
token range. Phases: baseline, frag0, ack, baseline, garbage, canonical,
conflict, baseline. During a flood phase spoof_flood.py sends from a
forged address in the namespace, bounded in count and time, started (its
"ready" line read) before the fleet and still running when it ends:
  frag0      1,000 fragment-0-only groups/s (fresh keys)
  ack        1,000 ACK datagrams/s of 104 entries (6,656 seqs) from the
             consumer's own address and port
  garbage    2,000 random datagrams/s
  canonical  5,000 spoofed canonical digests (2,500/s) for the keys the
             fleet is resolving in that phase, from ${NET}3
  conflict   5 conflicting pairs/s from ${NET}3
Checks per phase: 0 wrong; no seed lost (every seed of the phase resolved
bit-exact: every baseline phase resolves every seed, so a lost seed is one
the fleet would otherwise have got); every seed delivered to the consumer
and ACKed (delivery_given_up +0). Per flood: it ran at its rate for the
whole fleet run (or sent its whole count in it) and reached the dataplane (its own counter moved:
slots_abandoned, ack_budget, malformed drops, canonical_refused{source},
conflicts_unmapped); seeds resolved per second >= 50% of the mean of the
baselines measured nearest in time in this run (judged only with
FG_FLOOD_RATE_BAR=1, as bench/hostile/flood.sh runs it; printed otherwise), the last before it and the
first after it (same machine, same load), and no seed later than the
fleet's slot timeout (3 s: fanofleet's "missing"). A flood that misses
either is measured once more right after a fresh baseline (a load spike of
the shared machine can halve one phase or stall a seed) and judged on that
pair; both figures are printed, and a flood that really costs more than
half, or really delays seeds, fails the second time too. Wrong and lost
seeds are never measured again. Over the whole part: the model epoch,
every line's state, divergent verdicts, alerts, demotions and flushes
unchanged.

Part 2, one spoofed datagram of each kind (a conflict: one pair, its
second frame the conflicting one), the fleet idle; for the canonical digest the fleet first resolves
one token without canonical reports, so its 7 seeds wait in the audit's
pending table and a believed wrong digest would be a divergent verdict.
Checks, after the datagram was counted: no change of line states, model
epoch, verdicts, alerts or delivery counters (seeds_sent, delivery_acked,
delivery_resent, delivery_given_up).

Part 3, the controls (the test can fail): the same wrong digest forged
from the coordinator's address is judged divergent; the same conflict
forged from the fleet's mapped address advances the epoch.

Prints a RESULT line with the rates."""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.checks import Checks, fail  # noqa: E402
from fgtest.wait import until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NS, NET, TMP = os.environ["FG_NS"], os.environ["FG_NET"], os.environ["FG_TMP"]
PORT, FLEET = os.environ["FG_METRICS_PORT"], os.environ["FG_FLEET"]
GATE_PID = int(os.environ["FG_GATE_PID"])
DP, FLEET_IP, SPOOF_IP, CONSUMER_PORT = NET + "1", NET + "2", NET + "3", 17000
TOKENS = int(os.environ.get("FG_FLOOD_TOKENS", "1200"))
FLOOD_S = 30  # a flood's time bound: longer than a phase's fleet run, checked
BAR = 0.5     # the bar: at least 50% of the no-flood seed rate
# The seed rate under a flood is a speed goal: judged only when the
# benchmark asks (bench/hostile/flood.sh sets FG_FLOOD_RATE_BAR=1 on a
# quiet machine). As a test (meson, CI, the machine shared with other
# tests) the rates are printed, never asserted; every correctness check
# (wrong, lost, late, counted, state unchanged) is asserted either way.
RATE_BAR = os.environ.get("FG_FLOOD_RATE_BAR", "0") == "1"

# kind: (units, units/s, the counter that proves it reached the dataplane)
FLOODS = {
    "frag0": (30000, 1000, "fanogate_dp_slots_abandoned_total"),
    "ack": (30000, 1000, "fanogate_dp_ack_budget_total"),
    "garbage": (60000, 2000, 'fanogate_dp_drops_total{reason="malformed"}'),
    "canonical": (5000, 2500, 'fanogate_canonical_refused_total{reason="source"}'),
    "conflict": (150, 5, "fanogate_conflicts_unmapped_total"),
}
PHASES = os.environ.get("FG_FLOOD_PHASES", "baseline frag0 ack baseline garbage canonical conflict baseline").split()
DELIVERY = ["fanogate_dp_seeds_sent_total", "fanogate_dp_delivery_acked_total",
            "fanogate_dp_delivery_resent_total", "fanogate_dp_delivery_given_up_total"]


def scrape():
    """/metrics as {name{labels-without-lcore}: value summed over lcores}."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=10).read().decode()
    out = {}
    for ln in body.splitlines():
        m = re.match(r"^([a-z_]+)(\{[^}]*\})? (\S+)$", ln)
        if not m:
            continue
        labels = re.sub(r'lcore="\d+",?', "", m.group(2) or "").replace(",}", "}")
        key = m.group(1) + ("" if labels in ("", "{}") else labels)
        out[key] = out.get(key, 0.0) + float(m.group(3))
    return out


def get(m, key):
    """A metric's value; a key with {...} matches a series that has those labels."""
    if key in m:
        return m[key]
    name, _, want = key.partition("{")
    want = [w for w in want.rstrip("}").split(",") if w]
    tot = 0.0
    for k, v in m.items():
        n, _, labels = k.partition("{")
        if n == name and all(w in labels for w in want):
            tot += v
    return tot


def lines(m):
    return {k: v for k, v in m.items() if k.startswith("fanogate_line_state{") and v == 1}


def state(m):
    """What no spoofed datagram may change."""
    return {"epoch": get(m, "fanogate_model_epoch"), "lines": sorted(lines(m)),
            "divergent": get(m, 'fanogate_audit_verdicts_total{kind="divergent"}'),
            "alerts": get(m, "fanogate_alerts_raised_total"),
            "demotions": get(m, "fanogate_audit_demotions_total"),
            "flushed": get(m, "fanogate_slots_flushed_total")}


def gate_alive():
    return os.path.exists(f"/proc/{GATE_PID}") and "zombie" not in open(f"/proc/{GATE_PID}/status").read()


def spoofer(kind, count, rate, secs, base, src=SPOOF_IP, sport=40000):
    if kind == "ack":
        src, sport = FLEET_IP, CONSUMER_PORT  # the consumer's own address and port
    return subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, f"{HERE}/spoof_flood.py", kind, DP, src,
                             str(sport), str(count), str(secs), str(rate), str(base)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def spoof_once(kind, base, src=SPOOF_IP):
    p = spoofer(kind, 1, 1000, 10, base, src=src)
    out = p.communicate(timeout=30)[0]
    if p.returncode != 0 or not out.startswith("ready"):
        fail(f"spoof_flood.py {kind}: exit {p.returncode}: {out[-300:]}")


def fleet(name, base, tokens, canonical="digest"):
    js = f"{TMP}/fleet-{name}.json"
    cmd = ["ip", "netns", "exec", NS, FLEET, "--udp", f"{DP}:4242", "--udp-bind", FLEET_IP,
           "--consumer", f"{FLEET_IP}:{CONSUMER_PORT}", "--mix", "udp=1", "--layers", "8", "--hidden", "512",
           "--tokens", str(tokens), "--window", "8", "--seed", str(base % 1000 + 1), "--token-base", str(base),
           "--canonical", canonical, "--canonical-via", "udp", "--slot-timeout-ms", "3000",
           "--max-missing", "1000000", "--duration", "40", "--linger-ms", "600", "--quiet", "--json", js]
    with open(f"{TMP}/fleet-{name}.log", "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=60).returncode
    try:
        with open(js) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{name}: fanofleet exit {rc}, no JSON ({e}): {open(TMP + '/fleet-' + name + '.log').read()[-500:]}")
    j["rc"] = rc
    return j


def phase(c, i, kind):
    """One phase: fanofleet over token range i, with KIND's flood unless
    kind is baseline; its checks on c; returns its figures."""
    base = 1000 + 100000 * (i + 1)
    sp, before = None, scrape()
    if kind != "baseline":
        count, rate_want, counter = FLOODS[kind]
        sp = spoofer(kind, count, rate_want, FLOOD_S, base if kind == "canonical" else 5000000 + 100000 * i)
        line = sp.stdout.readline()
        if not line.startswith("ready"):
            fail(f"spoofer {kind} did not start: {line}{sp.stdout.read()[-300:]}")
    f = fleet(f"{i}-{kind}", base, TOKENS)
    sp_out, sp_running = "", False
    if sp:
        sp_running = sp.poll() is None
        sp.terminate()
        sp_out = sp.communicate(timeout=10)[0].strip()
    after = scrape()
    seeds_rate = f["resolved"] / f["seconds"] if f.get("seconds") else 0.0
    r = {"phase": kind, "resolved": f["resolved"], "slots": f["slots"], "wrong": f["wrong"],
         "missing": f["missing"], "seconds": round(f["seconds"], 2), "seeds_per_s": round(seeds_rate, 1)}
    for d in DELIVERY:
        r[d[len("fanogate_dp_"):-len("_total")]] = get(after, d) - get(before, d)
    # what the dataplane refused meanwhile (the diagnosis of a slow phase)
    r["dp_drops"] = {k[k.index('"') + 1:-2]: get(after, k) - before.get(k, 0) for k in after
                     if k.startswith("fanogate_dp_drops_total{") and get(after, k) > before.get(k, 0)}
    for k in ("fanogate_dp_reasm_timeout_total", "fanogate_dp_slots_abandoned_total", "fanogate_dp_slots_expired_total"):
        r[k[len("fanogate_dp_"):-len("_total")]] = get(after, k) - get(before, k)
    if sp:
        r["flood_counter"] = get(after, counter) - get(before, counter)
        r["rx_pkts"] = get(after, "fanogate_dp_rx_pkts_total") - get(before, "fanogate_dp_rx_pkts_total")
        sent = re.search(r"^sent \S+ (\d+) (\d+) (\S+)$", sp_out, re.M)
        units, dgrams, secs = (int(sent.group(1)), int(sent.group(2)), float(sent.group(3))) if sent else (0, 0, 1)
        r.update(flood_units=units, flood_datagrams=dgrams, flood_units_per_s=round(units / max(secs, 1e-3)))
        c.check(sp_running or units == count,
                f"{kind}: the flood lasted the whole fleet run or sent its {count} units in it ({sp_out[-200:]})")
        c.check(r["flood_units_per_s"] >= 0.8 * rate_want,
                f"{kind}: the flood ran at its rate ({r['flood_units_per_s']}/s of {rate_want}/s, {dgrams} datagrams)")
        c.check(r["flood_counter"] > 0, f"{kind}: the flood reached the dataplane ({counter} +{r['flood_counter']:.0f})")
    c.check(f["wrong"] == 0 and f["rc"] != 1, f"{kind}: no wrong seed ({f['wrong']}, exit {f['rc']})")
    # lost: never resolved at all. missing: resolved later than the fleet's
    # slot timeout (3 s), judged with the rate in main()
    c.check(f["resolved"] == 7 * TOKENS and f["slots"] == 7 * TOKENS,
            f"{kind}: no seed lost ({f['resolved']} of {7 * TOKENS} resolved; {f['missing']} after 3 s)")
    c.check(r["delivery_given_up"] == 0 and r["seeds_sent"] >= 7 * TOKENS,
            f"{kind}: every seed delivered to the consumer and ACKed by it (seeds_sent +{r['seeds_sent']:.0f}, "
            f"given_up +{r['delivery_given_up']:.0f})")
    print(f"phase {kind}: {json.dumps(r)}", flush=True)
    return r


def main():
    c = Checks()
    m0 = scrape()
    s0 = state(m0)
    # a probe token first: the first datagrams into a fresh veth may be
    # lost while the neighbour is learned (tests/lib/delivery.sh)
    fleet("probe", 900000, 1)
    results = [phase(c, i, kind) for i, kind in enumerate(PHASES)]
    base_rates = [r["seeds_per_s"] for r in results if r["phase"] == "baseline"]
    if not base_rates:
        fail("FG_FLOOD_PHASES has no baseline phase")
    nxt = len(PHASES)
    for j, r in enumerate(results):
        if r["phase"] == "baseline":
            continue
        # the reference: the baselines measured nearest in time, the last
        # one before and the first one after this flood (the shared
        # machine's load drifts over a minute)
        near = [b["seeds_per_s"] for b in reversed(results[:j]) if b["phase"] == "baseline"][:1] + \
               [b["seeds_per_s"] for b in results[j + 1:] if b["phase"] == "baseline"][:1]
        ref = sum(near) / len(near)
        r["baseline"] = round(ref, 1)
        r["of_baseline"] = round(r["seeds_per_s"] / ref, 2) if ref else 0
        below = RATE_BAR and r["seeds_per_s"] < BAR * ref
        if below or r["missing"]:
            # Below the bar, or a seed later than the slot timeout, once:
            # the machine is shared (2 cores), and a load spike inside one
            # phase can halve it or stall a seed. Measure that flood again
            # right after a fresh baseline; a flood that really costs more
            # than half, or really delays seeds, fails again. Both figures
            # are printed.
            print(f"{r['phase']}: {r['seeds_per_s']} seeds/s is {r['of_baseline']:.0%} of the baseline {ref:.1f} "
                  f"(before and after it: {near}), {r['missing']} seeds after 3 s: measured again after a fresh "
                  f"baseline", flush=True)
            b2, f2 = phase(c, nxt, "baseline"), phase(c, nxt + 1, r["phase"])
            nxt += 2
            r["first_of_baseline"], r["first_missing"], r["baseline_again"] = r["of_baseline"], r["missing"], b2["seeds_per_s"]
            r["missing"] = f2["missing"]
            r["seeds_per_s"], r["of_baseline"] = f2["seeds_per_s"], round(f2["seeds_per_s"] / b2["seeds_per_s"], 2)
            rate = (f"{r['phase']} (again): {f2['seeds_per_s']} seeds/s, {r['of_baseline']:.0%} of the baseline "
                    f"just before it {b2['seeds_per_s']} (first {r['first_of_baseline']:.0%})")
            if RATE_BAR:
                c.check(f2["seeds_per_s"] >= BAR * b2["seeds_per_s"], f"{rate} >= {BAR:.0%}")
            else:
                print(f"rate (not judged here): {rate}", flush=True)
            c.check(f2["missing"] == 0, f"{r['phase']} (again): no seed later than 3 s ({f2['missing']}; first "
                    f"{r['first_missing']})")
        else:
            rate = (f"{r['phase']}: {r['seeds_per_s']} seeds/s, {r['of_baseline']:.0%} of the baseline {ref:.1f} "
                    f"(before and after it: {near})")
            # (judged by the branch above: not below the bar, none late)
            print(f"ok - {rate}" + (f" >= {BAR:.0%}" if RATE_BAR else " (rate not judged here)")
                  + ", no seed later than 3 s", flush=True)
    s1 = state(scrape())
    c.check(s1 == s0, f"the floods changed no line state, epoch, verdict, alert, demotion or flush: {s0} -> {s1}")
    c.check(gate_alive(), "fanogate still running after the floods")

    # ---- part 2: one spoofed datagram of each kind
    tok = 3000000
    f = fleet("single-canon", tok, 1, canonical="none")
    c.check(f["resolved"] == 7 and f["wrong"] == 0, f"one token resolved without canonical reports ({f['resolved']})")
    singles = {"frag0": "fanogate_dp_slots_abandoned_total", "ack": "fanogate_dp_ack_budget_total",
               "garbage": "fanogate_dp_rx_pkts_total",
               "canonical": 'fanogate_canonical_refused_total{reason="source"}',
               "conflict": "fanogate_conflicts_unmapped_total"}
    for kind, counter in singles.items():
        m1 = scrape()
        keep = {**state(m1), **{d: get(m1, d) for d in DELIVERY}}
        spoof_once(kind, tok if kind == "canonical" else 6000000 + len(kind))
        got = until(lambda: get(scrape(), counter) > get(m1, counter), 5)
        c.check(got, f"one spoofed {kind}: counted ({counter})")
        m2 = scrape()
        now = {**state(m2), **{d: get(m2, d) for d in DELIVERY}}
        c.check(now == keep, f"one spoofed {kind}: no line state, epoch, verdict, alert or delivery changed"
                + ("" if now == keep else f": {keep} -> {now}"))

    # ---- part 3: the controls
    m1 = scrape()
    spoof_once("canonical", tok, src=FLEET_IP)
    c.check(until(lambda: get(scrape(), 'fanogate_audit_verdicts_total{kind="divergent"}') >
                  get(m1, 'fanogate_audit_verdicts_total{kind="divergent"}'), 5),
            "control: the same wrong digest from the coordinator's address is judged divergent")
    m1 = scrape()
    spoof_once("conflict", 6100000, src=FLEET_IP)
    c.check(until(lambda: get(scrape(), "fanogate_model_epoch") > get(m1, "fanogate_model_epoch"), 5),
            "control: the same conflict from the fleet's mapped address advances the epoch")
    print("RESULT " + json.dumps({"tokens_per_phase": TOKENS, "baselines_seeds_per_s": base_rates,
                                  "phases": results}, sort_keys=True), flush=True)
    c.done()


if __name__ == "__main__":
    main()
