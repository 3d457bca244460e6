#!/bin/bash
# bench/dp/run.sh BUILD_DIR [SLOTS] - the DPDK dataplane (af_packet, af_xdp)
# against a kernel UDP receiver doing the same slot work (kudp_rx), in ONE
# run, on the same receiver CPU, with the same load generator (dp_load).
#
# Topology (all names fgdp*, removed on exit):
#   ns fgdp-bl (load, CPU 0) --veth fgdpb0a/fgdpb0b-- root: fanogate-dp (lcore on CPU 1)
#   ns fgdp-bl (load, CPU 0) --veth fgdpb1a/fgdpb1b-- ns fgdp-bk: kudp_rx (CPU 1)
# For each receiver and hidden size: latency (closed loop, one slot at a
# time) and throughput (32 slots in flight). Writes raw JSON lines to
# $OUT/results.jsonl and a summary to stdout. Needs root.
# One CPU meter for both receivers, per measured phase ("meter" lines):
# the receiver process's utime + stime (all its threads: for DPDK the poll
# lcore's spinning, idle polls included, and its main thread) plus the
# softirq time of every CPU (/proc/stat: the kernel's receive path for
# kudp_rx, af_packet/af_xdp's for DPDK on veth), divided by the seeds the
# phase resolved; dp_load reports its own CPU (gen_cpu_s) beside it.
set -u
B=${1:?usage: run.sh BUILD_DIR [SLOTS]}
SLOTS=${2:-3000}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/tests/lib/netns.sh" # fg_wait_until, fg_ready_files
. "$ROOT/tests/lib/huge.sh"  # fg_huge_reserve, fg_huge_release
B=$(cd "$B" && pwd)
DP=$B/dataplane/fanogate-dp
LOAD=$B/bench/dp/dp_load
KRX=$B/bench/dp/kudp_rx
MEMCPY=$B/bench/dp/dp_memcpy
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
# FG_BENCH_TAG: prefix of the namespaces and veths (<= 8 characters), default fgdp
# FG_BENCH_RECEIVERS: the receivers to run (default "kernel af_packet af_xdp"; also af_xdp_bb64,
#   and af_xdp_wake: af_xdp with [poll] idle_wake = on, the lcore waiting in ppoll() when idle)
# FG_BENCH_GAP_US: quiet after each seed of the latency phase (dp_load --gap-us, default 0):
#   isolated seeds, at which a receiver that idles has gone idle
T=${FG_BENCH_TAG:-fgdp}
OUT=${FG_BENCH_OUT:-$(mktemp -d /tmp/fgdp-bench-XXXXXX)}
mkdir -p "$OUT"
RES=$OUT/results.jsonl
: > "$RES"
DPPID=""
KPID=""
cleanup() {
	[ -n "$DPPID" ] && kill "$DPPID" 2>/dev/null && wait "$DPPID" 2>/dev/null
	[ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
	ip netns del $T-bl 2>/dev/null
	ip netns del $T-bk 2>/dev/null
	ip link del ${T}b0a 2>/dev/null
	fg_huge_release
}
trap cleanup EXIT INT TERM

# "process_ticks softirq_ticks" (clock ticks) of PID, for the CPU meter
cpu_snap() {
	echo "$(awk '{print $14 + $15}' /proc/$1/stat 2>/dev/null || echo 0) $(awk '/^cpu /{print $8}' /proc/stat)"
}
# meter LABEL HIDDEN PHASE BEFORE AFTER RESULT_JSON_LINE
meter() {
	/usr/bin/python3 - "$@" "$(getconf CLK_TCK)" <<'EOM' | tee -a "$RES"
import json, sys
label, hidden, phase, b, a, res, hz = sys.argv[1:8]
b, a, hz = [int(x) for x in b.split()], [int(x) for x in a.split()], int(hz)
r = json.loads(res)
proc_s, soft_s = (a[0] - b[0]) / hz, (a[1] - b[1]) / hz
n = max(r["resolved"], 1)
print(json.dumps(dict(label=label, hidden=int(hidden), meter=phase, rx_proc_s=proc_s, softirq_s=soft_s,
    cpu_per_seed_us=(proc_s + soft_s) / n * 1e6, resolved=r["resolved"], seconds=r["seconds"],
    gen_cpu_s=r.get("gen_cpu_s"))))
EOM
}

# the receivers, in order: kernel (kudp_rx), af_packet, af_xdp, and
# af_xdp_bb64 (af_xdp with the PMD's default busy_budget=64 instead of the
# 0 fanogate picks on a veth: a recvfrom() after every empty RX burst)
RECEIVERS=${FG_BENCH_RECEIVERS:-kernel af_packet af_xdp}
ip netns add $T-bl && ip netns add $T-bk || exit 1
ip link add ${T}b0a type veth peer name ${T}b0b
ip link add ${T}b1a type veth peer name ${T}b1b
ip link set ${T}b0b netns $T-bl
ip link set ${T}b1b netns $T-bl
ip link set ${T}b1a netns $T-bk
ip link set ${T}b0a up
sysctl -qw net.ipv6.conf.${T}b0a.disable_ipv6=1
ip -n $T-bl link set lo up
ip -n $T-bl addr add 10.97.0.2/24 dev ${T}b0b
ip -n $T-bl addr add 10.97.1.2/24 dev ${T}b1b
ip -n $T-bl link set ${T}b0b up
ip -n $T-bl link set ${T}b1b up
ip -n $T-bk link set lo up
ip -n $T-bk addr add 10.97.1.1/24 dev ${T}b1a
ip -n $T-bk link set ${T}b1a up

fg_huge_reserve 400
mkdir -p "$OUT/huge"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r)"
echo "memcpy baseline (1 core):"
taskset -c 1 "$MEMCPY" 1.0 | tee -a "$RES"

for HIDDEN in 1536 4096; do
	for who in $RECEIVERS; do
		consumer=10.97.0.2; [ $who = kernel ] && consumer=10.97.1.2
		cat > "$OUT/fg-$HIDDEN.ini" <<EOC
[model]
hidden = $HIDDEN
layers = 28
[rules]
default = 1,3,5
[slots]
capacity = 4096
deadline_ms = 1000
[udp]
port = 4242
mtu = 1472
[consumers]
default = $consumer:7000
[dataplane]
lcores = 1
EOC
		dst=10.97.0.1
		if [ $who = kernel ]; then
			dst=10.97.1.1
			ip netns exec $T-bk taskset -c 1 "$KRX" --config "$OUT/fg-$HIDDEN.ini" --bind 10.97.1.1 \
				> "$OUT/krx-$HIDDEN.json" 2> "$OUT/krx.log" &
			KPID=$!
			fg_wait_until 10 grep -q "listening on" "$OUT/krx.log" || { cat "$OUT/krx.log"; kill "$KPID"; KPID=""; continue; }
		else
			rm -f "$OUT/ready"
			export FG_IFACE=${T}b0a FG_DP_IP4=10.97.0.1 FG_IDLE_SLEEP_US=0 FG_HUGEPAGES=$HUGE FG_HUGE_DIR=$OUT/huge
			FG_IDLE_WAKE=off; [ $who = af_xdp_wake ] && FG_IDLE_WAKE=on; export FG_IDLE_WAKE
			# poll lcore 1 on CPU 1 (the default map); the main thread floats
			prof=$ROOT/drivers-config/$who.ini
			if [ $who = af_xdp_bb64 ]; then # the PMD's own busy_budget, for comparison
				prof=$OUT/af_xdp_bb64.ini
				sed 's/^vdev = .*/&,busy_budget=64/' "$ROOT/drivers-config/af_xdp.ini" > "$prof"
			fi
			[ $who = af_xdp_wake ] && prof=$ROOT/drivers-config/af_xdp.ini
			unshare -m sh -c "{ [ $HUGE = off ] || mount -t hugetlbfs -o pagesize=2M fgdphuge '$OUT/huge'; } && exec '$DP' --config '$OUT/fg-$HIDDEN.ini' --profile '$prof' --duration 600 --report '$OUT/dp-$who-$HIDDEN.json' --ready-file '$OUT/ready'" 2> "$OUT/dp-$who.log" &
			DPPID=$!
			fg_wait_until 20 fg_ready_files "$DPPID" "$OUT/ready"
			if [ ! -f "$OUT/ready" ]; then echo "$who did not start:"; tail -5 "$OUT/dp-$who.log"; DPPID=""; continue; fi
		fi
		base=$(( (HIDDEN == 1536 ? 1 : 5) * 1000000 ))
		# warm-up (ARP, caches), then the measured phases
		ip netns exec $T-bl taskset -c 0 "$LOAD" --dst $dst --hidden $HIDDEN --slots 200 --mode latency \
			--label warm --token-base $((base + 900000)) > /dev/null
		rxpid=$DPPID; [ $who = kernel ] && rxpid=$KPID
		s0=$(cpu_snap $rxpid)
		line=$(ip netns exec $T-bl taskset -c 0 "$LOAD" --dst $dst --hidden $HIDDEN --slots $SLOTS --mode latency \
			--gap-us "${FG_BENCH_GAP_US:-0}" --label $who --token-base $base); echo "$line" | tee -a "$RES"
		s1=$(cpu_snap $rxpid)
		meter $who $HIDDEN latency "$s0" "$s1" "$line"
		line=$(ip netns exec $T-bl taskset -c 0 "$LOAD" --dst $dst --hidden $HIDDEN --slots $((SLOTS * 3)) \
			--mode throughput --window 32 --label $who --token-base $((base + 100000))); echo "$line" | tee -a "$RES"
		s2=$(cpu_snap $rxpid)
		meter $who $HIDDEN throughput "$s1" "$s2" "$line"
		if [ $who = kernel ]; then
			kill -TERM $KPID; wait $KPID; KPID=""
			echo "{\"label\":\"kernel\",\"hidden\":$HIDDEN,\"rx\":$(cat "$OUT/krx-$HIDDEN.json")}" | tee -a "$RES"
		else
			kill -TERM $DPPID; wait $DPPID; DPPID=""
			/usr/bin/python3 - "$OUT/dp-$who-$HIDDEN.json" "$who" "$HIDDEN" <<'EOP' | tee -a "$RES"
import json, sys
r = json.load(open(sys.argv[1]))
c, x = r['counters'], r['x']
print(json.dumps(dict(label=sys.argv[2], hidden=int(sys.argv[3]), rx=dict(
    resolved=c['seeds_resolved'], busy_s=x['busy_cycles'] / r['tsc_hz'], rx_pkts=c['rx_pkts'],
    tx_pkts=c['tx_pkts'], hugepages=r['hugepages'], drop_tx_full=c['drop_tx_full'],
    reasm_timeout=c['reasm_timeout'], expired=r['slots_expired']))))
EOP
		fi
	done
done
echo "raw results: $RES"
