#!/usr/bin/python3
"""summarize.py HZ LINE... - bench/ws: turn run.sh's result lines
("NAME CPU_TICKS JSON", several interleaved rounds) into a markdown table of
medians and ratios fanogate/node-ws. Server CPU per message = (utime +
stime ticks over the client's whole run) / (messages answered over the whole
run): robust to a shared, loaded machine in a way msgs/s is not."""
import json
import statistics
import sys

hz = int(sys.argv[1])
runs = {}
for line in sys.argv[2:]:
    name, ticks, js = line.split(" ", 2)
    j = json.loads(js)
    j["cpu"] = int(ticks) * 1e6 / hz / max(j["total"], 1)
    runs.setdefault((name, (j["frame_bytes"], j.get("conns", 0))), []).append(j)

med = {}
print("| server | frame bytes, conns | rounds | msgs/s | p50 us | p99 us | server CPU us/msg (min..max) |")
print("|---|---|---|---|---|---|---|")
for (name, b), rs in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    m = {k: statistics.median(r[k] for r in rs) for k in ("msgs_per_s", "p50_us", "p99_us", "cpu")}
    med[(name, b)] = m
    cpus = [r["cpu"] for r in rs]
    print(f"| {name} | {b} | {len(rs)} | {m['msgs_per_s']:.0f} | {m['p50_us']:.0f} | {m['p99_us']:.0f} | "
          f"{m['cpu']:.1f} ({min(cpus):.1f}..{max(cpus):.1f}) |")
print()
for b in sorted({k[1] for k in med}):
    f, w = med.get(("fanogate", b)), med.get(("node-ws", b))
    if f and w and w["msgs_per_s"]:
        print(f"- {b} B, medians: fanogate/node-ws msgs/s x{f['msgs_per_s'] / w['msgs_per_s']:.2f}, "
              f"p50 x{f['p50_us'] / max(w['p50_us'], 1):.2f}, p99 x{f['p99_us'] / max(w['p99_us'], 1):.2f}, "
              f"server CPU per message x{f['cpu'] / max(w['cpu'], 1e-9):.2f}")
