#!/usr/bin/env python3
"""bench/cap/cg_ir.py - fanogate's instructions per resolved seed from a
callgrind profile of fanogate-dp (bench/cap/callgrind.sh runs it).

What is counted (the lcore's work for the packets it received and the seeds
it resolved, delivered and acknowledged, inclusive of everything it calls
but the PMD): the cost of these calls, each made by the poll loop only when
there is work for it:

  dp_rx_burst -> dp_rx_work        a non-empty RX burst: parse, reassembly,
                                   placement, resolution, delivery, statuses,
                                   ACK bookkeeping, hand-off, the mbufs freed
  dp_lcore_main -> dp_tx_send      packets waiting in the TX buffer
  dp_shard_tick -> dp_shard_ack_flush   ACKs noted and not yet sent
  dp_inbox_poll -> dp_shard_handed  a frame another lcore handed over
  dp_lcore_main -> dp_lane_wake    a message pushed to the control plane

minus the PMD's own instructions under them (calls into an object in DPDK's
pmds directory or named librte_net_*: the memif driver's copies and ring
work), divided by the seeds resolved.

Left out: empty polls (an iteration that finds nothing calls none of the
above; its count depends on the machine's load), the loop's own cost per
iteration (clock, line facts, the checks: the same with or without work),
and the housekeeping timer (dp_shard_tick -> timers, once a millisecond:
delivery resends, reassembly and slot expiry), printed on its own.

Usage: cg_ir.py CALLGRIND_OUT DP_REPORT_JSON [--json OUT] [--top N] [--paths N]
  --top N: also the N functions with the most self cost under the counted
           calls, per seed
  --paths N: the N functions with the most self cost under the counted
           calls, each with its calls, its self cost a call and the
           number of its instructions that ran at all: a call that costs
           no more than the instructions its function ran has no loop
           that turned twice on average (straight-line work; the count
           follows the events, not the code's shape). The PMD's functions
           are left out, as from the count. Needs a profile
           with instruction positions (callgrind.sh with FG_CAP_INSTR=1)
"""
import json
import re
import sys
from collections import defaultdict

ROOTS = [
    ("dp_rx_burst", "dp_rx_work"),
    ("dp_lcore_main", "dp_tx_send"),
    ("dp_shard_tick", "dp_shard_ack_flush"),
    ("dp_inbox_poll", "dp_shard_handed"),
    ("dp_lcore_main", "dp_lane_wake"),
]
HOUSEKEEPING = [("dp_shard_tick", "timers")]

# per-stage rows: (label, functions whose inclusive work cost is the row);
# a function's clones (.isra, .constprop, .part, .avx2 ...) count as it
STAGES = [
    ("rx: known flows, fragment headers, lookups, mbufs freed (dp_rx_work self)", ["dp_rx_work"], "self"),
    ("  dp_pkt_parse + dp_pkt_addr_check", ["dp_pkt_parse", "dp_pkt_addr_check"], "incl"),
    ("  reassembly lookups (dp_reasm_find; the prefetches are inline)", ["dp_reasm_find", "dp_reasm_prefetch"], "incl"),
    ("placement in arrival order (dp_shard_run)", ["dp_shard_run"], "incl"),
    ("  its own loop (self)", ["dp_shard_run"], "self"),
    ("  fragment 0 and the run after it (dp_reasm_push_run)", ["dp_reasm_push_run"], "incl"),
    ("  a run that does not start at fragment 0 (dp_reasm_land_run)", ["dp_reasm_land_run"], "incl"),
    ("  a line that resolves its slot (fg_slot_whole_sink, fg_slot_whole: the resolution; the rest inline)", ["fg_slot_whole_sink", "fg_slot_whole"], "incl"),
    ("  fg_slot_begin, fg_slot_begin_decoded (what the inline begin passes on)", ["fg_slot_begin", "fg_slot_begin_decoded"], "incl"),
    ("  whole frames (consumer ACKs: whole)", ["whole"], "incl"),
    ("  delivery (dp_deliver_seed)", ["dp_deliver_seed"], "incl"),
    ("  statuses (dp_reply_status, dp_reply_status_of)", ["dp_reply_status", "dp_reply_status_of"], "incl"),
    ("ACK notes (dp_reply_ack_note, dp_reply_ack_note_peer)", ["dp_reply_ack_note", "dp_reply_ack_note_peer"], "incl"),
    ("ACK flush (dp_shard_ack_flush)", ["dp_shard_ack_flush"], "incl"),
    ("TX datagrams built (dp_tx_dgram, dp_tx_frags, dp_tx_status_of, dp_tx_ack_one, dp_tx_consumer_frags)",
     ["dp_tx_dgram", "dp_tx_frags", "dp_tx_status_of", "dp_tx_ack_one", "dp_tx_consumer_frags"], "incl"),
    ("TX flush, PMD left out (dp_tx_flush)", ["dp_tx_flush"], "incl-pmd"),
    ("RX mbufs freed, any not plain (rte_pktmbuf_free_bulk)", ["rte_pktmbuf_free_bulk"], "incl"),
]
FLOOR = [
    # the reassembly's own chunk copy (dp_ra_copy_pick) is a copy like memcpy
    ("copies (memcpy/memmove, the chunk copy and gather)", re.compile(r"^((__)?mem(cpy|move)|copy_(avx512|avx2|libc)(_gather)?$)")),
    ("reduction (fg_reduce)", re.compile(r"^fg_reduce")),
    ("fingerprint (XXH3)", re.compile(r"^XXH3_64bits")),
]


def base_name(fn):
    return re.sub(r"\.(isra|constprop|part|cold|lto_priv|avx2|avx512f|sse2|default)(\.\d+)?", "", fn)


def is_pmd(ob):
    return "/pmds-" in ob or "librte_net_" in ob


def parse(path):
    names = {"ob": {}, "fl": {}, "fn": {}}
    self_cost = defaultdict(int)  # (ob, fn) -> Ir
    ran = defaultdict(set)  # (ob, fn) -> addresses of its instructions with a cost (instr positions only)
    instr = False  # the profile's positions start with instr (--dump-instr=yes)
    addr = 0
    calls = defaultdict(lambda: [0, 0])  # ((ob, fn), (cob, cfn)) -> [count, inclusive Ir]
    ob = fn = None
    cob = cfn = None
    pending_call = None

    def name(kind, val):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", val)
        if not m:
            return val
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind].get(m.group(1), "?" + m.group(1))

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line[0] == "#":
                continue
            c0 = line[0]
            if c0.isdigit() or c0 in "+-*":
                parts = line.split()
                if len(parts) < 2:
                    continue
                # one event (Ir) after the positions; an instr position is
                # absolute, relative (+N, -N) or the same as before (*)
                ir = int(parts[-1])
                if instr:
                    t = parts[0]
                    addr = addr if t == "*" else addr + int(t, 0) if t[0] in "+-" else int(t, 0)
                if pending_call is not None:
                    k = (((ob, fn), (cob or ob, cfn)))
                    calls[k][0] += pending_call
                    calls[k][1] += ir
                    pending_call = None
                    cob = None
                else:
                    self_cost[(ob, fn)] += ir
                    if instr and ir:
                        ran[(ob, fn)].add(addr)
                continue
            if line.startswith("positions:"):
                instr = line.split()[1:2] == ["instr"]
                continue
            key, _, val = line.partition("=")
            if key == "ob":
                ob = name("ob", val)
            elif key == "fn":
                fn = name("fn", val)
                cob = None
            elif key == "cob":
                cob = name("ob", val)
            elif key == "cfn":
                cfn = name("fn", val)
            elif key == "calls":
                pending_call = int(val.split()[0])
            elif key in ("fl", "fi", "fe", "cfi", "cfl"):
                name("fl", val)
    return self_cost, calls, ran


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    self_cost, calls, ran = parse(sys.argv[1])
    rep = json.load(open(sys.argv[2]))
    c = rep["counters"]
    seeds, rx, tx = c["seeds_resolved"], c["rx_pkts"], c["tx_pkts"]
    if not seeds:
        print("cg_ir: no seed resolved")
        return 1

    funcs = set(self_cost) | {k[0] for k in calls} | {k[1] for k in calls}
    by_base = defaultdict(list)
    for f in funcs:
        by_base[base_name(f[1])].append(f)
    out_calls = defaultdict(list)
    in_calls = defaultdict(list)
    for (a, b), (n, ir) in calls.items():
        out_calls[a].append((b, n, ir))
        in_calls[b].append((a, n, ir))

    def edge(caller, callee):
        n = ir = 0
        for (a, b), (k, i) in calls.items():
            if base_name(a[1]) == caller and base_name(b[1]) == callee and a != b:
                n += k
                ir += i
        return n, ir

    # Work weight of every function: the share of its calls made from inside
    # the counted roots (call counts propagated down the graph: the usual
    # gprof attribution; exact for functions only the hot path calls).
    root_edges = [(a, b) for a, b in ROOTS]
    weight = {}
    order = []
    seen = set()

    def visit(f, depth=0):
        if f in seen or depth > 200:
            return
        seen.add(f)
        for g, _, _ in out_calls.get(f, []):
            visit(g, depth + 1)
        order.append(f)

    for f in funcs:
        visit(f)
    order.reverse()  # callers before callees (cycles broken arbitrarily)
    root_callees = {b for _, b in root_edges}
    for f in order:
        fb = base_name(f[1])
        tot = sum(n for _, n, _ in in_calls.get(f, []) if _ != f)
        if not tot:
            weight[f] = 0.0
            continue
        w = 0.0
        for g, n, _ in in_calls.get(f, []):
            if g == f:
                continue
            gb = base_name(g[1])
            if fb in root_callees and (gb, fb) in root_edges:
                w += n
            else:
                w += n * weight.get(g, 0.0)
        weight[f] = min(1.0, w / tot)

    def work_calls_into(pred):
        """Inclusive Ir of calls from work context into functions matching pred."""
        s = 0.0
        for (a, b), (n, ir) in calls.items():
            if pred(b) and not pred(a):
                ab = base_name(a[1])
                bb = base_name(b[1])
                w = 1.0 if (ab, bb) in root_edges else weight.get(a, 0.0)
                s += ir * w
        return s

    roots = {r: edge(*r) for r in ROOTS}
    total = sum(ir for _, ir in roots.values())
    pmd = work_calls_into(lambda f: is_pmd(f[0]))
    work = total - pmd
    hk = {h: edge(*h) for h in HOUSEKEEPING}

    def incl_work(fn_bases, mode):
        s = 0.0
        for b in fn_bases:
            for f in by_base.get(b, []):
                w = weight.get(f, 0.0)
                if (mode == "self"):
                    # self cost plus inlined code; calls left to other rows
                    s += self_cost.get(f, 0) * w
                    continue
                inc = self_cost.get(f, 0) + sum(ir for g, _, ir in out_calls.get(f, []) if g != f)
                if mode == "incl-pmd":
                    inc -= sum(ir for g, _, ir in out_calls.get(f, []) if is_pmd(g[0]))
                s += inc * w
        return s

    res = {
        "seeds": seeds, "rx_pkts": rx, "tx_pkts": tx,
        "status_sent": c.get("status_sent", 0), "acks_sent": c.get("acks_sent", 0),
        "roots": {"%s->%s" % r: {"calls": n, "ir": ir} for r, (n, ir) in roots.items()},
        "pmd_ir_under_work": round(pmd),
        "housekeeping": {"%s->%s" % h: {"calls": n, "ir": ir} for h, (n, ir) in hk.items()},
        "stages": {}, "floor": {},
    }
    print("%-46s %12s %10s %10s" % ("stage (inclusive, work only)", "Ir", "Ir/seed", "Ir/rx pkt"))
    for label, fns, mode in STAGES:
        v = incl_work(fns, mode)
        if v <= 0:
            continue
        res["stages"][label] = round(v)
        print("%-46s %12d %10.0f %10.1f" % (label, v, v / seeds, v / rx))
    floor = 0.0
    for label, rx_ in FLOOR:
        v = work_calls_into(lambda f, r=rx_: bool(r.match(base_name(f[1]))))
        floor += v
        res["floor"][label] = round(v)
        print("%-46s %12d %10.0f %10.1f" % ("floor: " + label, v, v / seeds, v / rx))
    for h, (n, ir) in hk.items():
        print("%-46s %12d  (%d calls, %.0f Ir each; not counted)" % ("housekeeping %s->%s" % h, ir, n, ir / n if n else 0))
    print("%-46s %12d %10.0f" % ("PMD under the counted calls (left out)", pmd, pmd / seeds))
    for r, (n, ir) in roots.items():
        print("  counted: %-34s %8d calls %12d Ir" % ("%s->%s" % r, n, ir))
    per_seed = work / seeds
    beside = (work - floor) / rx
    res["ir_per_seed"] = round(per_seed)
    res["ir_per_rx_pkt_beside_floor"] = round(beside, 1)
    res["floor_per_seed"] = round(floor / seeds)
    print("fanogate instructions per received packet beside copies, reduction and fingerprint: %.0f" % beside)
    print("fanogate instructions per resolved seed: %d" % round(per_seed))
    if "--json" in sys.argv:
        json.dump(res, open(sys.argv[sys.argv.index("--json") + 1], "w"), indent=1)
    if "--top" in sys.argv:
        # every function under the counted calls, by its work share of
        # self cost (inlined code included) and of inclusive cost
        top = int(sys.argv[sys.argv.index("--top") + 1])
        rows = []
        for f in funcs:
            w = weight.get(f, 0.0)
            if w <= 0:
                continue
            inc = self_cost.get(f, 0) + sum(ir for g, _, ir in out_calls.get(f, []) if g != f)
            rows.append((self_cost.get(f, 0) * w, inc * w, f))
        rows.sort(reverse=True)
        print("%-40s %10s %10s" % ("function (work share)", "self/seed", "incl/seed"))
        for sc, ic, f in rows[:top]:
            print("%-40s %10.0f %10.0f" % (f[1][:40], sc / seeds, ic / seeds))
    if "--paths" in sys.argv:
        if not ran:
            print("cg_ir: --paths needs instruction positions (callgrind.sh with FG_CAP_INSTR=1)")
            return 2
        top = int(sys.argv[sys.argv.index("--paths") + 1])
        rows = []
        for f in funcs:
            if not ran.get(f) or is_pmd(f[0]):
                continue
            # its work share from callers outside the PMD (what the PMD
            # calls is left out of the count, as the PMD is)
            n = sum(k for _, k, _ in in_calls.get(f, []))
            w = sum(k * (1.0 if (base_name(g[1]), base_name(f[1])) in root_edges else weight.get(g, 0.0))
                    for g, k, _ in in_calls.get(f, []) if g != f and not is_pmd(g[0])) / n if n else 0.0
            if w <= 0:
                continue
            rows.append((self_cost.get(f, 0) * w, n, f))
        rows.sort(reverse=True)
        print("%-40s %10s %8s %10s %8s" % ("function (work share)", "self/seed", "calls", "self/call", "ran"))
        for sc, n, f in rows[:top]:
            per_call = self_cost.get(f, 0) / n if n else 0.0
            print("%-40s %10.0f %8d %10.1f %8d" % (f[1][:40], sc / seeds, n, per_call, len(ran[f])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
