#!/usr/bin/python3
"""summarize.py HZ LINE... - bench/ws: turn run.sh's result lines
("NAME CPU_TICKS JSON") into a markdown table and ratios fanogate/node-ws.
Server CPU per message = (utime + stime ticks over the client's whole run) /
(messages answered over the whole run): robust to a shared, loaded machine
in a way msgs/s is not."""
import json
import sys

hz = int(sys.argv[1])
rows = {}
print("| server | frame bytes | msgs/s | p50 us | p99 us | server CPU us/msg | samples |")
print("|---|---|---|---|---|---|---|")
for line in sys.argv[2:]:
    name, ticks, js = line.split(" ", 2)
    j = json.loads(js)
    cpu = int(ticks) * 1e6 / hz / max(j["total"], 1)
    rows[(name, j["frame_bytes"])] = (j, cpu)
    print(f"| {name} | {j['frame_bytes']} | {j['msgs_per_s']} | {j['p50_us']} | {j['p99_us']} | {cpu:.1f} | {j['samples']} |")
print()
for b in sorted({k[1] for k in rows}):
    f, w = rows.get(("fanogate", b)), rows.get(("node-ws", b))
    if f and w and w[0]["msgs_per_s"]:
        print(f"- {b} B: fanogate/node-ws msgs/s x{f[0]['msgs_per_s'] / w[0]['msgs_per_s']:.2f}, "
              f"p50 x{f[0]['p50_us'] / max(w[0]['p50_us'], 1):.2f}, p99 x{f[0]['p99_us'] / max(w[0]['p99_us'], 1):.2f}, "
              f"server CPU per message x{f[1] / max(w[1], 1e-9):.2f}")
