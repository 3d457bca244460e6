#!/usr/bin/python3
"""summarize.py RESULTS_JSONL - the tables of bench/dp/RESULTS.md from one run of run.sh."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mem = next(r for r in rows if 'memcpy_hot_1536' in r)
print('| hidden | receiver | p50 us | p99 us | p99.9 us | lost (lat) | seeds/s (32 in flight) | lost (tput) | CPU us/seed | contrib MB/s per core-second | of memcpy (hot / cold) |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for hidden in (1536, 4096):
    for who in ('kernel', 'af_packet', 'af_xdp'):
        lat = next((r for r in rows if r.get('label') == who and r.get('hidden') == hidden and r.get('mode') == 'latency'), None)
        tp = next((r for r in rows if r.get('label') == who and r.get('hidden') == hidden and r.get('mode') == 'throughput'), None)
        rx = next((r['rx'] for r in rows if r.get('label') == who and r.get('hidden') == hidden and 'rx' in r), None)
        if not lat or not tp or not rx:
            print('| %d | %s | (did not run) |||||||||' % (hidden, who))
            continue
        cpu = rx['cpu_s'] if 'cpu_s' in rx else rx['busy_s']
        seeds = rx['resolved']
        per_seed_us = cpu / seeds * 1e6
        body = hidden * 4
        # contribution bytes placed per second of receiver CPU (3 lines per seed)
        bps = seeds * 3 * body / cpu
        hot, cold = mem['memcpy_hot_%d' % hidden], mem['memcpy_cold_%d' % hidden]
        print('| %d | %s | %.0f | %.0f | %.0f | %d | %.0f | %d | %.0f | %.1f | %.2f%% / %.1f%% |' % (
            hidden, who, lat['p50_us'], lat['p99_us'], lat['p999_us'], lat['lost'], tp['seeds_per_s'], tp['lost'],
            per_seed_us, bps / 1e6, 100 * bps / hot, 100 * bps / cold))
print()
print('memcpy, one core: hidden 1536 (6 KiB bodies) %.1f GB/s hot, %.1f GB/s cold; hidden 4096 (16 KiB) %.1f GB/s hot, %.1f GB/s cold' % (
    mem['memcpy_hot_1536'] / 1e9, mem['memcpy_cold_1536'] / 1e9, mem['memcpy_hot_4096'] / 1e9, mem['memcpy_cold_4096'] / 1e9))
meters = [r for r in rows if 'meter' in r]
if meters:
    print()
    print('One meter for both receivers (receiver process utime+stime, idle polling included, + every CPU\'s softirq time, per resolved seed):')
    print('| hidden | receiver | phase | seeds | rx process s | softirq s | CPU us/seed | generator CPU s |')
    print('|---|---|---|---|---|---|---|---|')
    for r in meters:
        print('| %d | %s | %s | %d | %.2f | %.2f | %.0f | %s |' % (
            r['hidden'], r['label'], r['meter'], r['resolved'], r['rx_proc_s'], r['softirq_s'], r['cpu_per_seed_us'],
            '%.2f' % r['gen_cpu_s'] if r.get('gen_cpu_s') is not None else '-'))
