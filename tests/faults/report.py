#!/usr/bin/python3
"""report.py RESULTS.jsonl - the fault scenarios' RESULT lines (run_faults.sh,
FG_FAULTS_RESULTS) as a markdown table for tests/faults/RESULTS.md."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| scenario | relay #1 faults (both ways) | relay #2 faults | seeds | resolved bit-exact | wrong "
      "| missing | frames | resends | frames given up | datagrams dropped up/down (#1) | dropped deliveries (#2) "
      "| slots expired (dp) | ACK seqs checked / unproven | via wss | s |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    exp = r.get("dp_slots_expired")
    print("| %s | %s | %s | %d | %d | %d | %d | %d | %d | %d | %s/%s | %s | %s | %d / %d | %s | %.1f |" % (
        r["scenario"], r["relay1"] or "none", r["relay2"] or "none", r["slots"] or 0, r["bit_exact"] or 0,
        r["wrong"] or 0, r["missing"], r["frames"], r["resends"], r["gave_up"], r["r1_up_lost"],
        r["r1_down_lost"], r["r2_up_lost"], "-" if exp is None else exp, r["acks_checked"], r["acks_unproven"],
        r.get("deliveries", {}).get("wss-push", "-"), r["seconds"]))
