#!/usr/bin/env bash
# bench.sh - jump delivery, side by side in one run (bench/jump):
#   dpdk-udp    fanofleet -> UDP fragmented profile -> fanogate's DPDK dataplane
#               (af_xdp, else af_packet, on a veth into namespace fgfl-bench)
#   kernel-udp  the same traffic to a kernel-socket receiver (bench/dp's
#               kudp_rx when it is built, else fanofleet --fake-receiver)
#   wss         fanofleet -> wss:///flow -> fanogate, seeds pushed over wss
#   https       fanofleet -> HTTPS POST /residual-seed -> fanogate, pushed over wss
#   https-pull  HTTPS POST in, GET /residual-seed/L/T (long poll) out: all-HTTPS
#   wss-local, https-local   the same with fanogate --no-dataplane (no lanes)
#   relay       the canonical chain's extra hop: DOWN -> coordinator -> next
#               ATTN over HTTPS keep-alive on loopback (fanofleet --relay-bench)
#   resolution  bench/core's bench_core --json: reduce + fingerprint vs memcpy
# Latency = last contribution sent -> the next layer's input received, one
# token in flight (window 1, chain mode), 28 layers x hidden 1536, on two
# clocks: from the return of the write that handed the last contribution
# over (the main table), and from that write's start (on a CPU the gate
# shares with the generator the gate may run inside the write, and then
# the first clock starts after the gate's work). Per path also the gate's
# control-thread CPU time per seed.
# Output: a terminal table, OUT/jump.json, OUT/jump.png (CDF per path,
# titled with the commit, date, mode and machine), OUT/table.txt and the raw
# samples. No timing is asserted anywhere; no picture is committed.
#
# With --critical-path (bench/critical) it measures the per-token critical
# path instead: fanofleet --critical-path with stage compute times (a, g, d
# per layer, 0.9-2 ms a layer: the seed's 90-200 ms scaled down) and a
# one-way network delay per hop, the same tokens through the coordinator
# (its relay hop, measured first with --relay-bench) and by Pair X jumps
# through fanogate with the fleet's gate (the status for each layer's last
# contribution decides: passed, the hop is skipped and the next layer waits
# for the jumped seed however late; not passed, the relay, not before that
# status), at each loss (UDP path only) and each delay; then once with the
# lines in shadow (the gate never passes: the relay waits for the status,
# a cost). Method: bench/critical/RESULTS.md. Output: OUT/table.txt,
# OUT/critical.json, OUT/critical.png (default OUT: BUILD/bench-critical).
#
# Usage: scripts/bench.sh [--smoke] [--tokens N] [--out DIR] [--build-dir DIR] [--answer-spin-us N]
#                         [--fleet-cpus LIST] [--eal-lcores MAP] [--local-cpus LIST]
#                         [--af-xdp-busy-budget N] [--idle-wake on|off] [--idle-wake-after-us N]
#                         [--rounds N] [--warmup-tokens N]
#   --critical-path   the critical-path bench (above) instead of the jump paths
#   --delays "D..."   its one-way delays per hop, us (default "100 1000")
#   --losses "L..."   its injected loss per UDP fragment (default "0 0.05 0.2")
#   --no-dpdk    even as root: no namespace, no hugepages, no DPDK dataplane;
#                the TLS paths on loopback only
#   --smoke      CI: a few tokens per path; checks that every output exists
#   --tokens N   tokens per path (default 300 = 8100 seeds; smoke 4)
#   --out DIR    output directory (default BUILD/bench-jump)
#   --answer-spin-us N   fanogate's [dataplane] answer_spin_us (default: the
#                daemon's own, 50); 0 compares with sleeping at once
#   --fleet-cpus LIST   run the load generator (fanofleet) on these CPUs only
#                (taskset -c LIST). Default: every CPU but the last, where
#                the dataplane's poll lcore spins (the fleet runs on other
#                machines in production; on a small box it would otherwise
#                take the poll lcore's CPU from it); "all" = unpinned
#   --eal-lcores MAP    the dataplane's [eal] lcores (default: the daemon's,
#                control thread floating, poll lcore on the last CPU)
#   --local-cpus LIST   run fanogate --no-dataplane on these CPUs only: with
#                the same LIST as the CPUs the dataplane mode leaves to its
#                control plane, both modes get the same CPUs
#   --af-xdp-busy-budget N   net_af_xdp's busy_budget (default: none
#                given, and fanogate picks 0 on the veth; the PMD's own
#                default, 64, makes a recvfrom() on every empty RX burst)
#   --idle-wake on|off   the dataplane's [poll] idle_wake (default on, as
#                in the shipped af_xdp and af_packet profiles: the poll
#                lcore waits in ppoll() after 1 ms without work, and a seed
#                that finds it asleep pays one thread wake-up; off: it
#                spins; docs/dataplane.md "Idle, woken")
#   --idle-wake-after-us N   [poll] idle_wake_after_us: how long without
#                work before that wait (default 1000)
#   --rounds N   the wss and https paths in N interleaved rounds (default 1):
#                both gates (dataplane and --no-dataplane) stay up side by
#                side, each round runs the four paths against them (the
#                mode that goes first alternates), and the report pools the
#                rounds, dropping each round's first --warmup-tokens tokens
#                (default 20): a fleet process's first tokens, on a new TLS
#                connection, run 2-3x slower in both modes. It also prints
#                every round's p50 ratio, so drift shows instead of
#                deciding the result
# Needs root for the namespace and the dataplane; without root the dpdk-udp
# path is skipped and the others run on loopback. Cleans up on exit and on
# Ctrl-C (processes, namespace fgfl-bench, veths, hugepages it reserved).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/netns.sh" # stop_pid, fg_veth, fg_daemon_start, fg_wait_until, fg_private_net, fg_ini_daemon
. "$ROOT/tests/lib/huge.sh"  # fg_huge_reserve, fg_huge_release
# Without root everything runs on loopback: in a network namespace of this
# run's own (a user namespace), so the kernel UDP path's fixed ports below
# cannot collide with anything else on the box.
[ "$(id -u)" -eq 0 ] || fg_private_net "$@"
BUILD=${FG_BUILD_DIR:-build}
CRIT=0 DELAYS="100 1000" LOSSES="0 0.05 0.2" NO_DPDK=0
SMOKE=0 TOKENS= OUT= ANSWER_SPIN= FLEET_CPUS= EAL_LCORES= LOCAL_CPUS= XDP_BUSY_BUDGET= IDLE_WAKE=on IDLE_WAKE_AFTER= ROUNDS=1 WARMUP=20
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=1 ;;
	--critical-path) CRIT=1 ;;
	--no-dpdk) NO_DPDK=1 ;;
	--delays) DELAYS=$2; shift ;;
	--losses) LOSSES=$2; shift ;;
	--tokens) TOKENS=$2; shift ;;
	--out) OUT=$2; shift ;;
	--build-dir) BUILD=$2; shift ;;
	--answer-spin-us) ANSWER_SPIN=$2; shift ;;
	--fleet-cpus) FLEET_CPUS=$2; shift ;;
	--eal-lcores) EAL_LCORES=$2; shift ;;
	--local-cpus) LOCAL_CPUS=$2; shift ;;
	--af-xdp-busy-budget)
		case $2 in ''|*[!0-9]*) echo "bench.sh: --af-xdp-busy-budget wants a number of packets (0 = no busy polling), not '$2'" >&2; exit 2 ;; esac
		XDP_BUSY_BUDGET=$2; shift ;;
	--idle-wake)
		case $2 in on|off) ;; *) echo "bench.sh: --idle-wake wants on or off, not '$2'" >&2; exit 2 ;; esac
		IDLE_WAKE=$2; shift ;;
	--idle-wake-after-us)
		case $2 in ''|*[!0-9]*) echo "bench.sh: --idle-wake-after-us wants a number of microseconds, not '$2'" >&2; exit 2 ;; esac
		IDLE_WAKE_AFTER=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--warmup-tokens) WARMUP=$2; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case $ROUNDS in '' | *[!0-9]* | 0) echo "bench: --rounds takes a whole number >= 1, not '$ROUNDS'" >&2; exit 2 ;; esac
case $WARMUP in '' | *[!0-9]*) echo "bench: --warmup-tokens takes a whole number, not '$WARMUP'" >&2; exit 2 ;; esac
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
NCPU=$(nproc)
[ -n "$FLEET_CPUS" ] || { [ "$NCPU" -ge 2 ] && FLEET_CPUS="0-$((NCPU - 2))" || FLEET_CPUS=all; }
for d in $DELAYS; do case $d in *[!0-9]*) echo "bench: --delays takes whole microseconds, not '$d'" >&2; exit 2 ;; esac; done
for l in $LOSSES; do case $l in 0|0.[0-9]*) ;; *) echo "bench: --losses takes fractions 0..0.9, not '$l'" >&2; exit 2 ;; esac; done
[ -n "$TOKENS" ] || { [ $SMOKE -eq 1 ] && TOKENS=4 || TOKENS=300; }
[ $CRIT -eq 1 ] && [ $SMOKE -eq 1 ] && [ "$TOKENS" -lt 2 ] && TOKENS=2
[ $SMOKE -eq 1 ] && WARMUP=1
if [ "$ROUNDS" -gt 1 ] && [ "$WARMUP" -ge "$TOKENS" ]; then
	echo "bench: --warmup-tokens ($WARMUP) must be below --tokens ($TOKENS): nothing would be left to measure" >&2
	exit 2
fi
if [ -z "$OUT" ]; then [ $CRIT -eq 1 ] && OUT=$BUILD/bench-critical || OUT=$BUILD/bench-jump; fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/path-* "$OUT"/cdf-* "$OUT"/relay.* "$OUT"/core.json "$OUT"/jump.* "$OUT"/table.txt "$OUT"/crit-* \
	"$OUT"/critical.*

GATE=$BUILD/control/daemon/fanogate
FLEET=$BUILD/tools/fleet/fanofleet
CORE=$BUILD/bench/core/bench_core
KRX=$BUILD/bench/dp/kudp_rx # bench/dp's kernel receiver (same reassembler, ACK table and slot work)
[ -x "$KRX" ] || KRX=
if [ ! -x "$FLEET" ] || [ ! -x "$GATE" ]; then
	echo "bench: build first (ninja -C ${BUILD#"$ROOT"/}): need fanogate and fanofleet" >&2
	exit 1
fi

NS=fgfl-bench VH=fgfl-bd0 VN=fgfl-bd1 CH=fgfl-bc0 CN=fgfl-bc1
FLEET_IP=10.214.0.2 DP_IP=10.214.0.3 HOST_IP=10.214.1.1 FLEET_CIP=10.214.1.2
ROOTED=0; [ "$(id -u)" -eq 0 ] && [ $NO_DPDK -eq 0 ] && ROOTED=1
T=$(mktemp -d /tmp/fgfl-bench.XXXXXX)
GATE_PID= LOCAL_PID= KPID= DP_GATE=()
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for p in $KPID $GATE_PID $LOCAL_PID ${DP_GATE[0]:-}; do stop_pid "$p" || true; done
	if [ $ROOTED -eq 1 ]; then
		ip netns del "$NS" 2>/dev/null || true
		ip link del "$VH" 2>/dev/null || true
		ip link del "$CH" 2>/dev/null || true
		fg_huge_release || echo "bench: LEFT BEHIND: $HUGE_ADDED hugepages" >&2
		if ip netns list | grep -qw "$NS" || ip link show "$VH" >/dev/null 2>&1; then
			echo "bench: LEFT BEHIND: namespace or veth" >&2; [ $rc -eq 0 ] && rc=3
		fi
	fi
	rm -rf "$T"
	exit $rc
}
trap cleanup EXIT
trap 'echo "bench: interrupted"; exit 130' INT TERM
say() { printf '== %s\n' "$*"; }
skip() { echo "$2" >"$OUT/path-$1.skip"; say "$1: skipped: $2"; }

# ---- metadata ---------------------------------------------------------------
/usr/bin/python3 - "$OUT/meta.json" "$ROOT" "$TOKENS" "$SMOKE" "$FLEET_CPUS" "$EAL_LCORES" "$LOCAL_CPUS" \
	"$ROUNDS" "$WARMUP" "$IDLE_WAKE" "$IDLE_WAKE_AFTER" "$CRIT" "$DELAYS" "$LOSSES" <<'PY'
import json, os, platform, subprocess, sys, time
crit = sys.argv[12] == "1"
out, root, tokens, smoke = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
placement = {"fleet_cpus": sys.argv[5] or None, "eal_lcores": sys.argv[6] or None, "local_cpus": sys.argv[7] or None}
def sh(*a):
    try: return subprocess.check_output(a, cwd=root, stderr=subprocess.DEVNULL).decode().strip()
    except Exception: return None
cpu = None
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"): cpu = l.split(":", 1)[1].strip(); break
json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": sh("git", "rev-parse", "--short", "HEAD"),
           "kernel": platform.release(), "cpu": cpu, "cpus": os.cpu_count(), "tokens_per_path": tokens,
           "layers": 28, "hidden": 1536, "window": 1, "mode": "chain", "smoke": smoke, "placement": placement,
           "rounds": int(sys.argv[8]), "warmup_tokens": int(sys.argv[9]) if int(sys.argv[8]) > 1 else 0,
           "idle_wake": sys.argv[10], "idle_wake_after_us": sys.argv[11] or None,
           **({"bench": "critical", "mode": "critical path, window 1", "delays_us": sys.argv[13].split(),
               "losses": sys.argv[14].split(), "stage_us": "300-670 each"} if crit else {})},
          open(out, "w"), indent=2)
PY

# ---- TLS material, config ----------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=fanogate.bench \
	-addext "subjectAltName=DNS:fanogate.bench,IP:127.0.0.1,IP:$HOST_IP" -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
# the critical path's fleet also plays the coordinator (its canonical reports)
(umask 077; printf '%s %s\n' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
	"$([ $CRIT -eq 1 ] && echo coordinator || echo bench)" >"$T/tokens")
if [ $ROOTED -eq 1 ]; then TLS_IP=$HOST_IP; else TLS_IP=127.0.0.1; fi
# the TLS and metrics listeners on port 0: fanogate reports the ports it
# bound (start_gate sets TLS_PORT and TLSARGS)
TLS_PORT= TLSARGS=()
# The UDP consumer only where a path has one: the TLS paths' seeds go to
# their wss subscriber, and a UDP consumer nobody ACKs would add an encode,
# five datagrams and resends per seed to the dataplane runs only (the
# --no-dataplane runs send no UDP at all): not the same work.
# The gate's files (config, audit, operator socket, log) live in GD: $T,
# or $T/local for the --no-dataplane gate that --rounds runs beside it.
GD=$T
write_config() { # profile [udp-consumer: yes|no]
	local consumers=
	[ "${2:-yes}" = yes ] && consumers="[consumers]
default = $FLEET_IP:5000"
	cat >"$GD/fanogate.ini" <<EOF
[lines]
line.1,4,5 = active
line.2,4,6 = active
line.3,4,7 = active
$consumers
[dataplane]
profile = ${1:-af_xdp}
${ANSWER_SPIN:+answer_spin_us = $ANSWER_SPIN}
$(fg_ini_daemon "$GD" "$TLS_IP:0" 127.0.0.1:0 tokens)
EOF
}
start_gate() {
	rm -f "$GD/audit.log"
	local rc=0
	local pin=()
	[ "${1:-}" = --no-dataplane ] && [ -n "$LOCAL_CPUS" ] && pin=(taskset -c "$LOCAL_CPUS")
	fg_daemon_start "$GD/fanogate.log" "$GD/fanogate.log" "${pin[@]}" "$GATE" --config "$GD/fanogate.ini" "$@" || rc=1
	use_gate "$FG_PID" "$FG_TLS_PORT" "${FG_METRICS_PORT:-}"
	return $rc
}
# use_gate PID TLS-PORT METRICS-PORT: the gate the next paths talk to
use_gate() {
	GATE_PID=$1 TLS_PORT=$2 METRICS_PORT=$3
	TLSARGS=(--tls "$TLS_IP:$TLS_PORT" --sni fanogate.bench --ca "$T/cert.pem" --token-file "$T/tokens")
}
stop_gate() {
	stop_pid "$GATE_PID" || true
	GATE_PID=
}
INNS=()
[ $ROOTED -eq 1 ] && INNS=(ip netns exec "$NS")
[ "$FLEET_CPUS" = all ] || INNS+=(taskset -c "$FLEET_CPUS")
# The gate's engine figures around one path (report.py: where the time
# went, fanogate_engine_hop_seconds and the lane wake-ups and spins).
scrape() { # file
	# the control thread's (the gate's main thread) CPU time and run-queue
	# wait so far (ns; /proc/PID/schedstat): report.py gives them per seed,
	# a meter the scheduler's choices between gate and generator do not move
	[ -n "${GATE_PID:-}" ] && cat "/proc/$GATE_PID/schedstat" >"$1.cpu" 2>/dev/null
	[ -n "${METRICS_PORT:-}" ] || return 0
	curl -s --max-time 5 "http://127.0.0.1:$METRICS_PORT/metrics" |
		grep -E '^fanogate_(engine_hop_seconds|lane_wakeups|lane_lcore_wakeups_total|dp_idle_wa[a-z_]*total|lane_answer_spin|loop_(submits|completions)_total)' >"$1" || true
}
run_fleet() { # name args...
	local name=$1; shift
	say "$name: fanofleet $TOKENS tokens"
	scrape "$OUT/path-$name.m0"
	if "${INNS[@]}" "$FLEET" --tokens "$TOKENS" --window 1 --canonical none --quiet \
		--json "$OUT/path-$name.json" --samples "$OUT/path-$name.samples" "$@" >"$OUT/path-$name.log" 2>&1; then
		grep -E '^  (udp|wss|https) ' "$OUT/path-$name.log" || true
	else
		echo "   fanofleet exit $? (see $OUT/path-$name.log):"; tail -4 "$OUT/path-$name.log" | sed 's/^/   /'
	fi
	scrape "$OUT/path-$name.m1"
}

# ---- namespace, hugepages ------------------------------------------------------
MODE=none
if [ $ROOTED -eq 1 ]; then
	ip netns del "$NS" 2>/dev/null || true; ip link del "$VH" 2>/dev/null || true; ip link del "$CH" 2>/dev/null || true
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	fg_veth "$VH" "$VN" "$NS"
	fg_veth "$CH" "$CN" "$NS"
	ip addr add "$HOST_IP/24" dev "$CH"
	ip -n "$NS" addr add "$FLEET_IP/24" dev "$VN"; ip -n "$NS" addr add "$FLEET_CIP/24" dev "$CN"
	fg_huge_reserve 512 "$T/huge" || true
	if ldd "$GATE" 2>/dev/null | grep librte_eal >/dev/null; then
		for kind in af_xdp af_packet; do
			case $kind in
			af_xdp) vdev="net_af_xdp0,iface=$VH,start_queue=0,queue_count=1${XDP_BUSY_BUDGET:+,busy_budget=$XDP_BUSY_BUDGET}" ;;
			af_packet) vdev="net_af_packet0,iface=$VH,qpairs=1" ;;
			esac
			printf '[eal]\nhugepages = %s\nlog_level = *:error\n%s[port]\nvdev = %s\nmtu = 1500\n[net]\nip4 = %s\n' \
				"$HUGE" "${EAL_LCORES:+lcores = $EAL_LCORES
}" "$vdev" "$DP_IP" >"$T/dp-$kind.ini"
			printf '[poll]\nidle_wake = %s\n%s' "$IDLE_WAKE" "${IDLE_WAKE_AFTER:+idle_wake_after_us = $IDLE_WAKE_AFTER
}" >>"$T/dp-$kind.ini"
			write_config "$T/dp-$kind.ini"
			# The probe is also the warm-up: the first datagrams into a
			# fresh veth are sometimes lost for about a second.
			if start_gate && { "${INNS[@]}" "$FLEET" --udp "$DP_IP:4242" --consumer "$FLEET_IP:5000" --mix udp=1 \
				--tokens 1 --window 1 --token-base 3000000 --canonical none --quiet --slot-timeout-ms 3000 \
				>"$T/probe.log" 2>&1 || "${INNS[@]}" "$FLEET" --udp "$DP_IP:4242" --consumer "$FLEET_IP:5000" \
				--mix udp=1 --tokens 1 --window 1 --token-base 3000100 --canonical none --quiet \
				--slot-timeout-ms 3000 >"$T/probe.log" 2>&1; }; then
				MODE=$kind; break
			fi
			cp "$T/fanogate.log" "$OUT/fanogate-$kind.log" 2>/dev/null || true
			cp "$T/probe.log" "$OUT/probe-$kind.log" 2>/dev/null || true
			stop_gate
		done
	fi
fi

# ---- the critical path (--critical-path) ------------------------------------------
if [ $CRIT -eq 1 ]; then
	# crit_run NAME ARGS...: one fanofleet --critical-path run of TOKENS tokens
	crit_run() {
		local name=$1; shift
		say "$name: fanofleet --critical-path, $TOKENS tokens"
		if "${INNS[@]}" "$FLEET" --tokens "$TOKENS" --window 1 --quiet --json "$OUT/crit-$name.json" \
			--relay-samples "$OUT/relay.samples" --max-missing 100000000 "$@" >"$OUT/crit-$name.log" 2>&1; then
			grep -E '^  critical path' "$OUT/crit-$name.log" | sed 's/^ */   /' || true
		else
			echo "   fanofleet exit $? (see $OUT/crit-$name.log):"; tail -4 "$OUT/crit-$name.log" | sed 's/^/   /'
		fi
	}
	# the coordinator's relay hop, measured (HTTPS keep-alive on loopback)
	HOPS=$((TOKENS * 27)); [ $HOPS -gt 5000 ] && HOPS=5000
	say "relay: DOWN -> coordinator -> ATTN over HTTPS keep-alive (loopback), $HOPS hops"
	"$FLEET" --relay-bench --cert "$T/cert.pem" --key "$T/key.pem" --hops "$HOPS" --warmup $((HOPS / 10 + 1)) \
		--samples "$OUT/relay.samples" >"$OUT/relay.txt" 2>&1 || { cat "$OUT/relay.txt"; echo "bench: relay failed" >&2; exit 1; }
	if [ $MODE != none ]; then
		say "fanogate up with the DPDK dataplane over $MODE: the contributions over UDP, seeds to the consumer"
		CPATH=(--udp "$DP_IP:4242" --consumer "$FLEET_IP:5000" --mix udp=1)
		PATHNAME="UDP -> DPDK dataplane ($MODE)"
	else
		write_config "" no
		start_gate --no-dataplane || { echo "bench: fanogate did not start"; tail "$T/fanogate.log"; exit 1; }
		say "fanogate up with --no-dataplane: the contributions over wss (no loss injection there)"
		CPATH=("${TLSARGS[@]}" --mix wss=1 --wss-conns 1)
		PATHNAME="wss -> fanogate --no-dataplane"
	fi
	/usr/bin/python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); m["path"] = sys.argv[2]
json.dump(m, open(sys.argv[1], "w"), indent=2)' "$OUT/meta.json" "$PATHNAME"
	BASE=1000000
	for D in $DELAYS; do
		crit_run "canonical-d$D" --critical-path canonical --net-delay-us "$D" --token-base $BASE "${CPATH[@]}"
		BASE=$((BASE + TOKENS + 100))
		for L in $LOSSES; do
			if [ $MODE = none ] && [ "$L" != 0 ]; then
				echo "loss is injected on the UDP path only (no dataplane in this run)" >"$OUT/crit-jump-d$D-l$L.skip"
				continue
			fi
			crit_run "jump-d$D-l$L" --critical-path jump --net-delay-us "$D" --loss "$L" --token-base $BASE "${CPATH[@]}"
			BASE=$((BASE + TOKENS + 100))
		done
	done
	# When the jump saves nothing: the lines in shadow, the fleet's gate never passes.
	D0=${DELAYS%% *}
	for l in 1 3 5; do
		FANOCTL_SOCKET=$GD/op.sock "$BUILD/tools/fanoctl" lines shadow "$l" --why "bench: shadow" >/dev/null ||
			echo "bench: fanoctl lines shadow $l failed" >&2
	done
	crit_run "shadow-d$D0" --critical-path jump --net-delay-us "$D0" --token-base $BASE "${CPATH[@]}"
	stop_gate
	say "report"
	/usr/bin/python3 "$ROOT/bench/critical/report.py" "$OUT"
	if [ $SMOKE -eq 1 ]; then
		missing=()
		for f in critical.json critical.png table.txt relay.samples; do [ -s "$OUT/$f" ] || missing+=("$f"); done
		for D in $DELAYS; do
			[ -s "$OUT/crit-canonical-d$D.json" ] || missing+=("crit-canonical-d$D.json")
			for L in $LOSSES; do
				[ -s "$OUT/crit-jump-d$D-l$L.json" ] || [ -s "$OUT/crit-jump-d$D-l$L.skip" ] || missing+=("crit-jump-d$D-l$L.json")
			done
		done
		[ -s "$OUT/crit-shadow-d$D0.json" ] || missing+=("crit-shadow-d$D0.json")
		if [ ${#missing[@]} -gt 0 ]; then echo "bench smoke: MISSING ${missing[*]}" >&2; exit 1; fi
		# every run: every token's chain ended, every seed bit-exact (none
		# wrong, none missing: the smoke injects no loss); the shadow run's
		# gate never passed and no token saved anything; the canonical runs
		# took no jump; the plot is stamped with commit, date and mode
		/usr/bin/python3 - "$OUT" <<'PY' || exit 1
import glob, json, os, sys
out = sys.argv[1]
bad = []
for f in sorted(glob.glob(os.path.join(out, "crit-*.json"))):
    j = json.load(open(f))
    cp = j.get("critical_path", {})
    n = os.path.basename(f)
    if len(cp.get("tokens", [])) != j.get("tokens_requested"):
        bad.append("%s: %d of %s tokens finished" % (n, len(cp.get("tokens", [])), j.get("tokens_requested")))
    if j.get("wrong") or j.get("missing") or j.get("bit_exact") != j.get("slots"):
        bad.append("%s: seeds bit-exact %s of %s, wrong %s, missing %s" % (n, j.get("bit_exact"), j.get("slots"),
                                                                          j.get("wrong"), j.get("missing")))
    if n.startswith("crit-shadow") and (cp.get("layers_gate_passed") != 0 or cp.get("layers_jumped") != 0):
        bad.append("%s: gate passed on %s layers, %s jumped, with the lines in shadow" % (
            n, cp.get("layers_gate_passed"), cp.get("layers_jumped")))
    if n.startswith("crit-shadow") and any(t["saving_ns"] > 0 for t in cp.get("tokens", [])):
        bad.append("%s: a token saved time with the lines in shadow" % n)
    if n.startswith("crit-canonical") and (cp.get("layers_jumped") or cp.get("layers_gate_passed")):
        bad.append("%s: the canonical run took a jump" % n)
m, c = (json.load(open(os.path.join(out, x))) for x in ("meta.json", "critical.json"))
st = c.get("plot", {}).get("stamp", "")
if not (str(m["commit"] or "unknown") in st and m["date"][:10] in st and m["mode"] in st):
    bad.append("the plot's title lacks the commit, date or mode")
for b in bad:
    print("bench smoke: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
		echo "bench smoke: all outputs present in $OUT, every seed bit-exact"
	fi
	exit 0
fi

# ---- 1. DPDK UDP ------------------------------------------------------------------
if [ $MODE != none ]; then
	say "fanogate up with the DPDK dataplane over $MODE (hugepages $HUGE)"
	run_fleet dpdk-udp --udp "$DP_IP:4242" --consumer "$FLEET_IP:5000" --mix udp=1 --token-base 100000
	# Throughput: all layers of a token at once, 16 tokens in flight (the
	# window that fills cwnd); latency here includes queueing.
	LOAD_ARGS=(--mode burst --window 16 --tokens $((TOKENS * 2)))
	run_fleet load-dpdk-udp --udp "$DP_IP:4242" --consumer "$FLEET_IP:5000" --mix udp=1 --token-base 150000 \
		"${LOAD_ARGS[@]}"
	# the TLS paths: the same dataplane without the UDP consumer (write_config)
	stop_gate
	write_config "$T/dp-$MODE.ini" no
	start_gate || { echo "bench: fanogate did not start again"; tail "$T/fanogate.log"; exit 1; }
else
	if [ $ROOTED -eq 0 ]; then skip dpdk-udp "needs root (namespace, DPDK)"
	else skip dpdk-udp "the DPDK dataplane did not come up (af_xdp, af_packet); see $OUT/fanogate-*.log"; fi
	write_config "" no
	start_gate --no-dataplane || { echo "bench: fanogate did not start"; tail "$T/fanogate.log"; exit 1; }
	say "fanogate up with --no-dataplane (TLS paths only)"
fi

# ---- 2. wss, https -----------------------------------------------------------------
# tls_pass SUFFIX TOKEN-OFFSET [ROUND]: the wss and https paths against the
# gate in TLSARGS (SUFFIX -local: the --no-dataplane one)
tls_pass() {
	local sfx=$1 off=$2 r=${3:+.r$3} wb=200000 hb=300000
	[ "$sfx" = -local ] && wb=500000 hb=600000
	run_fleet "wss$sfx$r" "${TLSARGS[@]}" --mix wss=1 --wss-conns 1 --token-base $((wb + off))
	run_fleet "https$sfx$r" "${TLSARGS[@]}" --mix https=1 --https-conns 3 --token-base $((hb + off))
}
if [ "$ROUNDS" -gt 1 ] && [ $MODE != none ]; then
	# Both gates up side by side (the --no-dataplane one in $T/local, on
	# its own ports), the paths interleaved round by round: a drift of
	# the machine over the run falls on both modes alike.
	DP_GATE=("$GATE_PID" "$TLS_PORT" "${METRICS_PORT:-}")
	mkdir -p "$T/local"
	cp "$T/cert.pem" "$T/key.pem" "$T/tokens" "$T/local/" # fg_ini_daemon names them in GD
	GD=$T/local
	write_config "" no
	start_gate --no-dataplane || { echo "bench: fanogate --no-dataplane did not start"; tail "$GD/fanogate.log"; exit 1; }
	LOCAL_PID=$GATE_PID LOCAL_GATE=("$GATE_PID" "$TLS_PORT" "${METRICS_PORT:-}")
	GD=$T
	say "wss, https: $ROUNDS interleaved rounds against both gates ($TOKENS tokens per path and round, the first $WARMUP dropped in the report)"
	for r in $(seq 1 "$ROUNDS"); do
		if [ $((r % 2)) -eq 1 ]; then order="dp local"; else order="local dp"; fi
		for m in $order; do
			if [ $m = dp ]; then use_gate "${DP_GATE[@]}"; tls_pass "" $(((r - 1) * TOKENS)) "$r"
			else use_gate "${LOCAL_GATE[@]}"; tls_pass -local $(((r - 1) * TOKENS)) "$r"; fi
		done
	done
	use_gate "${LOCAL_GATE[@]}"; stop_gate; LOCAL_PID=
	use_gate "${DP_GATE[@]}"; DP_GATE=()
	run_fleet https-pull "${TLSARGS[@]}" --mix https=1 --https-conns 3 --no-subscribe --pull 2 --token-base 350000
	stop_gate
else
	tls_pass "" 0
	run_fleet https-pull "${TLSARGS[@]}" --mix https=1 --https-conns 3 --no-subscribe --pull 2 --token-base 350000
	stop_gate
	# The same TLS paths with the control plane owning the slots itself
	# (--no-dataplane): no dataplane lanes between TLS and the slot table.
	if [ $MODE != none ]; then
		write_config "" no
		if start_gate --no-dataplane; then
			say "fanogate --no-dataplane (TLS paths, slots in the control plane)"
			tls_pass -local 0
		else
			skip wss-local "fanogate --no-dataplane did not start"; skip https-local "fanogate --no-dataplane did not start"
		fi
		stop_gate
	else
		skip wss-local "same as wss (no dataplane in this run)"; skip https-local "same as https (no dataplane in this run)"
	fi
fi

# ---- 3. kernel UDP ------------------------------------------------------------------
# fixed ports: on this run's own veth addresses (root) or in its own
# network namespace (fg_private_net above)
KPORT=14242 KCONS=5001
if [ $ROOTED -eq 1 ]; then KIP=$HOST_IP KCIP=$FLEET_CIP; else KIP=127.0.0.1 KCIP=127.0.0.1; fi
if [ -n "$KRX" ]; then
	KDESC="bench/dp kudp_rx (recvmmsg, the dataplane's reassembler, ACK table and slot engine, one thread)"
	printf '[udp]\nport = %s\n[consumers]\ndefault = %s:%s\n' "$KPORT" "$KCIP" "$KCONS" >"$T/kudp.ini"
	"$KRX" --config "$T/kudp.ini" --bind "$KIP" >"$OUT/kernel-rx.log" 2>&1 &
else
	KDESC="fanofleet --fake-receiver (kernel socket, own reassembly and reduction)"
	"$FLEET" --fake-receiver --listen "$KIP:$KPORT" --consumer "$KCIP:$KCONS" --duration 600 >"$OUT/kernel-rx.log" 2>&1 &
fi
KPID=$!
# both receivers print their line once bound
fg_wait_until 30 grep -qE "listening on|receiving on" "$OUT/kernel-rx.log" ||
	{ cat "$OUT/kernel-rx.log"; echo "bench: the kernel UDP receiver did not start" >&2; exit 1; }
say "kernel-udp: $KDESC"
# Warm-up (discarded): the first datagrams into a fresh veth/namespace are
# sometimes lost for about a second; the measured run must not start there.
"${INNS[@]}" "$FLEET" --udp "$KIP:$KPORT" --consumer "$KCIP:$KCONS" --mix udp=1 --tokens 1 --window 1 \
	--token-base 3100000 --canonical none --quiet --slot-timeout-ms 4000 >"$T/warm.log" 2>&1 || true
run_fleet kernel-udp --udp "$KIP:$KPORT" --consumer "$KCIP:$KCONS" --mix udp=1 --token-base 400000
run_fleet load-kernel-udp --udp "$KIP:$KPORT" --consumer "$KCIP:$KCONS" --mix udp=1 --token-base 450000 \
	--mode burst --window 16 --tokens $((TOKENS * 2))
stop_pid "$KPID" || true; KPID=
echo "$KDESC" >"$OUT/kernel-udp.receiver"

# ---- 4. the coordinator hop ------------------------------------------------------------
say "relay: DOWN -> coordinator -> ATTN over HTTPS keep-alive (loopback)"
HOPS=$((TOKENS * 27))
"$FLEET" --relay-bench --cert "$T/cert.pem" --key "$T/key.pem" --hops "$HOPS" --warmup $((HOPS / 10 + 1)) \
	--samples "$OUT/relay.samples" | tee "$OUT/relay.txt" | sed 's/^/   /' || echo "   relay failed"

# ---- 5. resolution vs memcpy ----------------------------------------------------------
if [ -x "$CORE" ]; then
	say "resolution throughput vs memcpy (bench_core)"
	"$CORE" --seconds "$([ $SMOKE -eq 1 ] && echo 0.02 || echo 0.5)" --json "$OUT/core.json" >"$OUT/core.txt" 2>&1 || echo "   bench_core failed"
else
	say "bench_core not built: resolution throughput skipped"
fi

# ---- report ------------------------------------------------------------------------------
say "report"
/usr/bin/python3 "$ROOT/bench/jump/report.py" "$OUT"

if [ $SMOKE -eq 1 ]; then
	missing=()
	for f in jump.json jump.png table.txt relay.samples path-wss.json path-https.json path-https-pull.json \
		path-kernel-udp.json; do
		[ -s "$OUT/$f" ] || missing+=("$f")
	done
	[ $MODE = none ] || [ -s "$OUT/path-dpdk-udp.json" ] || missing+=(path-dpdk-udp.json)
	[ -x "$CORE" ] && { [ -s "$OUT/core.json" ] || missing+=(core.json); }
	if [ ${#missing[@]} -gt 0 ]; then echo "bench smoke: MISSING ${missing[*]}" >&2; exit 1; fi
	# every seed's sample carries both clocks (report.py), in order
	for f in "$OUT"/path-*.samples; do
		awk 'NF != 4 || $4 < $3 { bad++ } END { exit bad > 0 || NR == 0 }' "$f" ||
			{ echo "bench smoke: $f lacks the write-start clock or has it after the return" >&2; exit 1; }
	done
	# the plot says what it shows: the commit and date of meta.json in its title
	/usr/bin/python3 -c 'import json, sys; m, j = (json.load(open(f)) for f in sys.argv[1:3])
st = j.get("plot", {}).get("stamp", "")
sys.exit(0 if str(m["commit"] or "unknown") in st and m["date"][:10] in st and m["mode"] in st else 1)' "$OUT/meta.json" "$OUT/jump.json" ||
		{ echo "bench smoke: the plot's title lacks the commit, date or mode" >&2; exit 1; }
	echo "bench smoke: all outputs present in $OUT"
	# bench/cap: one lcore over net_memif (no kernel in the path), functional check only
	if [ -x "$BUILD/bench/cap/cap_gen" ]; then
		rc=0; "$ROOT/bench/cap/run.sh" --smoke --out "$OUT/cap" "$BUILD" || rc=$?
		case $rc in 0) ;; 77) echo "bench smoke: bench/cap skipped" ;; *) echo "bench smoke: bench/cap FAILED" >&2; exit 1 ;; esac
	fi
fi
