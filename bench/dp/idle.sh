#!/bin/bash
# bench/dp/idle.sh BUILD_DIR [OUT_DIR] - what an idle poll lcore costs on
# the production driver (af_xdp on a veth, the kernel in the path) per
# [poll] setting, and what each setting costs in latency. The goal:
# an idle appliance must not hold a whole core, at a stated latency cost.
#
# Topology (names fgid*, removed on exit): ns fgid-l (dp_load, CPU 0)
# --veth-- root: fanogate-dp, af_xdp, poll lcore on CPU 1.
# Settings (FG_IDLE_SETTINGS, default "poll wake sleep20"):
#   poll     idle_sleep_us 0, idle_wake off: pure polling
#   wake     idle_wake on (the af_xdp profile's default): ppoll() on the RX
#            socket and the lane eventfd after idle_wake_after_us (1000)
#            without work (dataplane/dp_idle.h)
#   wakeN    the same after N us without work
#   sleep20  idle_sleep_us 20: a 20 us sleep per empty poll after 64
# Per setting and round, one fanogate-dp, then:
#   idle     IDLE_S (3) s with no traffic: the lcore thread's utime+stime
#            (/proc/PID/task/TID/stat) as % of one core
#   gap      SLOTS (1000) slots one at a time, GAP_US (2000) us of quiet
#            after each seed: isolated seeds, the lcore has gone idle;
#            p50/p99 us (dp_load's clock), and CPU per seed by bench/dp's
#            meter (the process's utime+stime + all CPUs' softirq)
#   b2b      SLOTS slots one at a time without a gap (the lcore rarely
#            idles): the same figures
# The latency cost of a setting is its p50 minus poll's p50 of the same
# round. Rounds alternate the settings (ROUNDS, default 3). A timing
# benchmark: a quiet machine, nothing else running. Needs root.
set -u
B=$(cd "${1:?usage: idle.sh BUILD_DIR [OUT_DIR]}" && pwd) || exit 2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/tests/lib/netns.sh" # fg_wait_until, fg_ready_files, fg_ini_model
OUT=${2:-$(mktemp -d /tmp/fgidle-XXXXXX)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
DP=$B/dataplane/fanogate-dp
LOAD=$B/bench/dp/dp_load
[ "$(id -u)" = 0 ] || { echo "idle.sh: needs root"; exit 77; }
[ -x "$DP" ] && [ -x "$LOAD" ] || { echo "idle.sh: SKIP: fanogate-dp/dp_load not built"; exit 77; }
SETTINGS=${FG_IDLE_SETTINGS:-"poll wake sleep20"}
ROUNDS=${ROUNDS:-3} SLOTS=${SLOTS:-1000} GAP_US=${GAP_US:-2000} IDLE_S=${IDLE_S:-3}
T=fgid
RES=$OUT/idle.jsonl
: > "$RES"
DPPID=""
cleanup() {
	[ -n "$DPPID" ] && kill "$DPPID" 2>/dev/null && wait "$DPPID" 2>/dev/null
	ip netns del $T-l 2>/dev/null
	ip link del ${T}a 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM
HZ=$(getconf CLK_TCK)

ip netns add $T-l || exit 1
ip link add ${T}a type veth peer name ${T}b || exit 1
ip link set ${T}b netns $T-l
ip link set ${T}a up
sysctl -qw net.ipv6.conf.${T}a.disable_ipv6=1
ip -n $T-l link set lo up
ip -n $T-l addr add 10.96.0.2/24 dev ${T}b
ip -n $T-l link set ${T}b up

cat > "$OUT/fg.ini" <<EOC
$(fg_ini_model 1536 28 4096)
deadline_ms = 1000
[udp]
port = 4242
mtu = 1472
[consumers]
default = 10.96.0.2:7000
[dataplane]
lcores = 1
EOC

# utime + stime (ticks) of the poll lcore thread(s) of $1
lcore_ticks() {
	local t=0 d
	for d in /proc/$1/task/*; do
		case $(cat "$d/comm" 2>/dev/null) in
		lcore-worker-*|rte-worker-*) t=$((t + $(awk '{print $14 + $15}' "$d/stat"))) ;;
		esac
	done
	echo $t
}
# "process_ticks softirq_ticks" for the per-seed CPU meter (bench/dp/run.sh)
cpu_snap() { echo "$(awk '{print $14 + $15}' /proc/$1/stat) $(awk '/^cpu /{print $8}' /proc/stat)"; }

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# the floor: a thread asleep in ppoll() on CPU 1 woken by an eventfd write
# from CPU 0, every GAP_US, against one spinning (bench/dp/wake_lat.c)
if [ -x "$B/bench/dp/wake_lat" ]; then
	"$B/bench/dp/wake_lat" --count "$SLOTS" --gap-us "$GAP_US" --cpus 0,1 | tee -a "$RES"
fi
fail=0 tok=1000000
for round in $(seq 1 "$ROUNDS"); do
	for s in $SETTINGS; do
		case $s in
		poll) wake=off sl=0 after=1000 ;;
		wake) wake=on sl=0 after=1000 ;;
		wake[0-9]*) wake=on sl=0 after=${s#wake} ;;
		sleep*) wake=off sl=${s#sleep} after=1000 ;;
		*) echo "idle.sh: unknown setting $s (poll, wake, wakeN, sleepN)"; exit 2 ;;
		esac
		rm -f "$OUT/ready"
		FG_IFACE=${T}a FG_DP_IP4=10.96.0.1 FG_IDLE_SLEEP_US=$sl FG_IDLE_WAKE=$wake FG_IDLE_WAKE_AFTER_US=$after FG_HUGEPAGES=off \
			"$DP" --config "$OUT/fg.ini" --profile "$ROOT/drivers-config/af_xdp.ini" --duration 300 \
			--report "$OUT/dp-$s-$round.json" --ready-file "$OUT/ready" 2> "$OUT/dp-$s.log" &
		DPPID=$!
		fg_wait_until 20 fg_ready_files "$DPPID" "$OUT/ready"
		if [ ! -f "$OUT/ready" ]; then
			echo "$s: fanogate-dp did not start:"; tail -5 "$OUT/dp-$s.log"
			kill "$DPPID" 2>/dev/null; wait "$DPPID" 2>/dev/null; DPPID=""; fail=1; continue
		fi
		# warm-up (ARP, caches), then quiet
		tok=$((tok + 10000))
		ip netns exec $T-l taskset -c 0 "$LOAD" --dst 10.96.0.1 --slots 200 --mode latency \
			--label warm --token-base $tok > /dev/null
		i0=$(lcore_ticks $DPPID); t0=$(date +%s%N)
		sleep "$IDLE_S" # the idle phase itself: no traffic for IDLE_S seconds
		i1=$(lcore_ticks $DPPID); t1=$(date +%s%N)
		for ph in gap b2b; do
			g=0; [ $ph = gap ] && g=$GAP_US
			c0=$(cpu_snap $DPPID)
			tok=$((tok + 10000)) # fresh slots (not inside $(...): a subshell would not keep it)
			line=$(ip netns exec $T-l taskset -c 0 "$LOAD" --dst 10.96.0.1 --slots "$SLOTS" --mode latency \
				--gap-us $g --label "$s" --token-base $tok)
			c1=$(cpu_snap $DPPID)
			python3 - "$s" "$round" "$ph" "$line" "$c0" "$c1" "$HZ" "$i0" "$i1" "$t0" "$t1" <<'EOP' | tee -a "$RES"
import json, sys
s, rnd, ph, line, c0, c1, hz, i0, i1, t0, t1 = sys.argv[1:12]
r = json.loads(line)
c0, c1, hz = [int(x) for x in c0.split()], [int(x) for x in c1.split()], int(hz)
n = max(r["resolved"], 1)
out = dict(setting=s, round=int(rnd), phase=ph, resolved=r["resolved"], lost=r["lost"], bad=r["bad"],
           p50_us=r["p50_us"], p99_us=r["p99_us"], seconds=r["seconds"],
           cpu_per_seed_us=((c1[0] - c0[0]) + (c1[1] - c0[1])) / hz / n * 1e6,
           idle_core_pct=100.0 * (int(i1) - int(i0)) / hz / ((int(t1) - int(t0)) / 1e9))
print(json.dumps(out))
EOP
		done
		kill -TERM "$DPPID"; wait "$DPPID"; DPPID=""
		python3 - "$OUT/dp-$s-$round.json" "$s" "$round" <<'EOP' | tee -a "$RES"
import json, sys
x = json.load(open(sys.argv[1]))["x"]
print(json.dumps(dict(setting=sys.argv[2], round=int(sys.argv[3]), phase="counters",
    **{k: x.get(k, 0) for k in ("idle_waits", "idle_wake_rx", "idle_wake_lane", "idle_wake_timer", "idle_sleeps")})))
EOP
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$RES" <<'EOP'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    if "wake_lat" in r:
        w = r["wake_lat"]
        print("thread wake-up floor (wake_lat, eventfd CPU 0 -> CPU 1, every %d us): asleep p50 %.1f / p99 %.1f us, spinning p50 %.1f / p99 %.1f us"
              % (w["gap_us"], w["sleeping_p50_us"], w["sleeping_p99_us"], w["spinning_p50_us"], w["spinning_p99_us"]))
rows = [r for r in rows if "setting" in r]
sets = list(dict.fromkeys(r["setting"] for r in rows))
rounds = sorted({r["round"] for r in rows})
def get(s, rnd, ph):
    return next((r for r in rows if r["setting"] == s and r["round"] == rnd and r["phase"] == ph), None)
print("| setting | idle CPU % of a core | gap p50 / p99 us | gap p50 cost us | gap CPU/seed us | b2b p50 / p99 us | b2b p50 cost us | b2b CPU/seed us |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for s in sets:
    f = {k: [] for k in ("idle", "gp50", "gp99", "gcost", "gcpu", "bp50", "bp99", "bcost", "bcpu")}
    for rnd in rounds:
        g, b, pg, pb = get(s, rnd, "gap"), get(s, rnd, "b2b"), get("poll", rnd, "gap"), get("poll", rnd, "b2b")
        if not g or not b:
            continue
        f["idle"].append(g["idle_core_pct"]); f["gp50"].append(g["p50_us"]); f["gp99"].append(g["p99_us"])
        f["gcpu"].append(g["cpu_per_seed_us"]); f["bp50"].append(b["p50_us"]); f["bp99"].append(b["p99_us"])
        f["bcpu"].append(b["cpu_per_seed_us"])
        if pg and pb:
            f["gcost"].append(g["p50_us"] - pg["p50_us"]); f["bcost"].append(b["p50_us"] - pb["p50_us"])
    m = {k: (st.median(v) if v else float("nan")) for k, v in f.items()}
    print(f"| {s} | {m['idle']:.1f} | {m['gp50']:.1f} / {m['gp99']:.1f} | {m['gcost']:+.1f} | {m['gcpu']:.0f} | "
          f"{m['bp50']:.1f} / {m['bp99']:.1f} | {m['bcost']:+.1f} | {m['bcpu']:.0f} |")
print("(medians over %d rounds; cost = p50 minus poll's p50 in the same round)" % len(rounds))
bad = sum(r.get("bad", 0) for r in rows) + sum(r.get("lost", 0) for r in rows if "lost" in r)
print("seeds not bit-exact or lost:", bad)
EOP
echo "raw: $RES"
exit $fail
