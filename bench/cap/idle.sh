#!/bin/sh
# bench/cap/idle.sh - what adaptive idle costs and saves: for each [poll]
# setting, the poll lcore's CPU while the appliance is idle (its thread's
# utime + stime from /proc over IDLE_S seconds with no traffic, as % of one
# core) and the jump latency of isolated seeds (cap_gen --gap-us: one seed
# at a time after GAP_US of quiet, so the lcore has backed off; p50/p99 of
# send -> resolved seed back). The latency cost of a setting is its p50
# minus the pure-polling p50 measured in the same run.
#
# Usage: bench/cap/idle.sh [--smoke] BUILD_DIR [OUT_DIR]
# Settings (SLEEP_US:BACKOFF:POLLS): 0:off:64 (pure polling), 100:off:64
# (a fixed 100 us sleep, the old test-box setting), 20:on:64, 50:on:64,
# 200:on:64; override with FG_IDLE_SETTINGS="...". Each stops by itself
# (SEEDS seeds, bounded by 60 s). A timing benchmark: run it on a quiet
# machine. --smoke: one setting, 50 seeds, no figure kept.
set -u
SMOKE=0
[ "${1:-}" = --smoke ] && { SMOKE=1; shift; }
B=$(cd "${1:?usage: idle.sh [--smoke] BUILD_DIR [OUT_DIR]}" && pwd) || exit 2
OUT=${2:-$(mktemp -d /tmp/fgidle-XXXXXX)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
DP=$B/dataplane/fanogate-dp
GEN=$B/bench/cap/cap_gen
[ -x "$DP" ] && [ -x "$GEN" ] || { echo "idle.sh: SKIP: fanogate-dp/cap_gen not built"; exit 77; }
SETTINGS=${FG_IDLE_SETTINGS:-"0:off:64 100:off:64 20:on:64 50:on:64 200:on:64"}
SEEDS=2000 GAP_US=2000 IDLE_S=3
[ $SMOKE = 1 ] && { SETTINGS="50:on:64"; SEEDS=50; IDLE_S=1; }
HZ=$(getconf CLK_TCK)
DPPID=""
cleanup() { if [ -n "$DPPID" ]; then kill "$DPPID" 2>/dev/null; wait "$DPPID" 2>/dev/null; fi; rm -f "$OUT/memif.sock"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# utime + stime (clock ticks) of the process's poll lcore thread(s)
lcore_ticks() {
	t=0
	for d in /proc/$1/task/*; do
		case $(cat "$d/comm" 2>/dev/null) in
		lcore-worker-*|rte-worker-*) t=$((t + $(awk '{print $14 + $15}' "$d/stat"))) ;;
		esac
	done
	echo $t
}

cat > "$OUT/fg.ini" <<EOC
[model]
hidden = 1536
layers = 28
[rules]
default = 1,3,5
[slots]
capacity = 8192
deadline_ms = 2500
[udp]
port = 4242
mtu = 1472
[consumers]
default = 198.18.0.2:7000
[dataplane]
lcores = 1
EOC
: > "$OUT/idle.jsonl"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
fail=0
for s in $SETTINGS; do
	sleep_us=${s%%:*} rest=${s#*:}; backoff=${rest%%:*} polls=${rest#*:}
	cat > "$OUT/memif.ini" <<EOP
[profile]
name = memif-idle
[eal]
hugepages = ${FG_HUGEPAGES:-off}
log_level = *:notice
[port]
vdev = net_memif0,role=server,id=0,socket=$OUT/memif.sock,bsize=2048,rsize=11
rx_desc = 1024
tx_desc = 1024
rss = off
[net]
ip4 = 198.18.0.1
arp_reply = on
[poll]
idle_sleep_us = $sleep_us
idle_backoff = $backoff
idle_polls = $polls
EOP
	rm -f "$OUT/ready" "$OUT/memif.sock"
	"$DP" --config "$OUT/fg.ini" --profile "$OUT/memif.ini" --duration 120 --report "$OUT/dp-$s.json" \
		--ready-file "$OUT/ready" 2> "$OUT/dp-$s.log" &
	DPPID=$!
	i=0
	while [ ! -f "$OUT/ready" ] && kill -0 $DPPID 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	[ -f "$OUT/ready" ] || { echo "fanogate-dp did not start ($s):"; tail -3 "$OUT/dp-$s.log"; exit 1; }
	taskset -c 0 "$GEN" -l 0 --no-huge -m 256 --no-shconf --file-prefix "fgidle$$" --no-pci --log-level '*:warning' \
		--vdev="net_memif0,role=client,id=0,socket=$OUT/memif.sock,bsize=2048,rsize=11" -- \
		--hidden 1536 --seeds $SEEDS --warmup 16 --gap-us $GAP_US --max-seconds 60 --label "idle-$s" \
		--json "$OUT/gen-$s.json" 2> "$OUT/gen-$s.log" || { echo "cap_gen failed ($s)"; fail=1; }
	# idle window: no traffic at all
	t0=$(lcore_ticks $DPPID)
	sleep $IDLE_S
	t1=$(lcore_ticks $DPPID)
	kill -TERM $DPPID; wait $DPPID; DPPID=""
	python3 - "$OUT/gen-$s.json" "$OUT/dp-$s.json" "$s" $((t1 - t0)) "$HZ" "$IDLE_S" >> "$OUT/idle.jsonl" <<'EOPY' || fail=1
import json, sys
g, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ticks, hz, secs = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
print(json.dumps(dict(setting=sys.argv[3], idle_cpu_pct=100.0 * ticks / hz / secs, lat_p50_us=g["lat_p50_us"],
    lat_p99_us=g["lat_p99_us"], lat_max_us=g["lat_max_us"], resolved=g["resolved"], wrong=g["wrong"],
    lost=g["lost"], idle_sleeps=d["x"]["idle_sleeps"], thread_cpu_s=d["x"]["thread_cpu_ns"] / 1e9)))
EOPY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT/idle.jsonl" <<'EOPY' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
base = next((r["lat_p50_us"] for r in rows if r["setting"].startswith("0:")), None)
print("%-12s %10s %10s %10s %12s %8s %6s" % ("sleep:bo:n", "idle CPU%", "p50 us", "p99 us", "p50 cost us", "wrong", "lost"))
for r in rows:
    cost = "%.1f" % (r["lat_p50_us"] - base) if base is not None else "-"
    print("%-12s %10.1f %10.1f %10.1f %12s %8d %6d" % (r["setting"], r["idle_cpu_pct"], r["lat_p50_us"],
          r["lat_p99_us"], cost, r["wrong"], r["lost"]))
sys.exit(1 if any(r["wrong"] or r["lost"] for r in rows) else 0)
EOPY
echo "wrote $OUT/idle.jsonl"
exit $fail
