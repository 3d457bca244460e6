#!/bin/bash
# bench/cap/run.sh - one poll lcore's capacity with no kernel in the path.
#
#   cap_gen (CPU 0: a DPDK memif peer playing the three Pair X workers and
#   the consumer, ACKing every resolved seed)  <== net_memif ==>  fanogate-dp
#   (one poll lcore on CPU 1, reliable delivery on)
#
# Two memif modes (--memif-mode), so both can be compared in one run:
#   copy       fanogate-dp is the memif server, cap_gen the client: the
#              server PMD copies every packet out of the client's shared
#              memory into an mbuf on RX, and out of the mbuf on TX, on the
#              lcore (what DPDK 22.11's server role always does);
#   zero-copy  fanogate-dp is the memif client with zero-copy=yes (DPDK
#              22.11 offers it to the client only; EAL --single-file-segments)
#              and cap_gen the server: fanogate's mbufs are the shared
#              buffers, cap_gen's PMD copies into and out of them, and the
#              lcore receives like from a NIC's DMA (no copy of its own).
#
# Fresh slots (token_seq advancing), hidden 1536 and 4096, 1468-byte chunks,
# every resolved seed checked bit for bit by cap_gen. Beside it, cap_memcpy:
# the cost of copying the same bytes on the same core (hot, cold, and cold
# between random places as the dataplane's copies go: scatter), and
# of a load that lands on a 4 KiB page the TLB does not hold (the chase:
# in a VM whose host maps its memory in 4 KiB pages, hugepages in the guest
# do not make that cost go away).
# Per run it reports fragments/s, seeds/s, contribution bytes/s, cycles per
# fragment on the lcore (wall: the lcore spins on its own core, so every TSC
# cycle of the measured window is its; busy: the dataplane's own busy-cycle
# counter) and fanogate's packets per seed (received, sent, ACKs, statuses).
#
# Usage: bench/cap/run.sh [--smoke] [--runs N] [--seeds N] [--hidden "1536 4096"]
#                         [--memif-mode "zero-copy copy"] [--window N]
#                         [--status-accepted true|false] [--capacity N] [--rsize N]
#                         [--rx-stall "US EVERY_MS"] [--tx-hold-ms N]
#                         [--ab OLD_BUILD_DIR] [--out DIR] BUILD_DIR
#   --smoke   CI: hidden 1536, 2000 seeds, one run per mode, no memcpy
#             timing; fails unless every seed came back bit-exact, ACKed,
#             none lost
#   --memif-mode: the modes to run, in this order within each run number
#             (alternating, so both see the same moment of the machine);
#             default both, "zero-copy copy"
#   --capacity N: [slots] capacity (default 8192: with fresh tokens the
#             lcore sweeps every slot's buffers, about 25 KiB each at hidden
#             1536, so this sets the memory the placements walk through)
#   --rsize N: memif ring size 2^N descriptors (default 11)
#   --ab OLD_BUILD_DIR: an A/B within this one invocation: every run of
#             every mode runs OLD_BUILD_DIR's fanogate-dp, then BUILD_DIR's,
#             against the same cap_gen (BUILD_DIR's); labels of the old
#             runs end in "-old", and the report adds new/old per pair.
#             Pairs back to back see the same moment of the machine; on this
#             VM an A/A (--ab with the same build) still spreads
#             several percent (RESULTS.md gives the measured spread), so
#             read a difference inside it as none
#   --tx-hold-ms N: [port] tx_hold_ms = N in fanogate-dp's profile (the
#             longest RX pause while its TX queue refuses packets; 0 = no
#             pause, drop at once; default: the key is not written, so the
#             daemon's default (50) holds and older builds run too)
#   --rx-stall "US EVERY_MS": cap_gen reads nothing for US microseconds
#             every EVERY_MS ms (0: once, when the measured phase starts;
#             a consumer that stalls), so fanogate's TX queue fills (the
#             smoke then keeps 64 seeds in flight, not 32, so that a stall
#             has enough replies to fill it). With --smoke the run must then show TX
#             back-pressure (tx_held > 0) and drop nothing (drop_tx_full 0,
#             every seed delivered): tests/dataplane dp_memif_tx_backpressure.
#             With --tx-hold-ms 0: add --expect-no-hold (the smoke then
#             wants no hold, packets dropped, and every seed still delivered
#             by the resends: dp_memif_tx_nohold).
#             A stall longer than fanogate's 50 ms hold: add
#             --expect-hold-expired (the smoke then wants a hold that ran
#             out, and every seed still delivered by the resends)
#   --status-accepted false: [udp] status_accepted = false (1 status per
#             seed instead of 3; default: the key is not written, so the
#             daemon's default (true) holds and older builds run too)
#   default   3 runs x hidden 1536 and 4096 x both modes x 300000 seeds
#             (bounded: each run stops after its seeds or 60 s, whichever
#             comes first)
# Output: OUT/results.json (every run with its memif_mode, the memcpy
# baseline, the load average before and after) and a table on stdout.
# Timing figures only mean something on a quiet machine: the script prints
# the load average it saw.
# Hugepages: FG_HUGEPAGES=auto|on|off for both modes (default auto: used
# when a 2 MiB hugetlbfs is mounted with enough free pages, else
# --no-huge; the smoke: off). The table and results.json say per run.
# Needs no network: the packets only exist in the memif shared memory
# (addresses from 198.18.0.0/15, the benchmarking range).
set -u
SMOKE=0 RUNS=3 SEEDS=300000 HIDDENS="1536 4096" WINDOW=512 CAPACITY=8192 RSIZE=11 RX_STALL= EXPECT=--tx-held TX_HOLD_MS= AB= OUT= STATUS_ACCEPTED= MODES="zero-copy copy"
while [ $# -gt 1 ]; do
	case $1 in
	--smoke) SMOKE=1 ;;
	--runs) RUNS=$2; shift ;;
	--seeds) SEEDS=$2; shift ;;
	--hidden) HIDDENS=$2; shift ;;
	--memif-mode) MODES=$2; shift ;;
	--window) WINDOW=$2; shift ;;
	--capacity) CAPACITY=$2; shift ;;
	--rsize) RSIZE=$2; shift ;;
	--rx-stall) RX_STALL=$2; shift ;;
	--expect-hold-expired) EXPECT=--tx-hold-expired ;;
	--expect-no-hold) EXPECT=--tx-no-hold ;;
	--tx-hold-ms) TX_HOLD_MS=$2; shift ;;
	--ab) AB=$2; shift ;;
	--out) OUT=$2; shift ;;
	--status-accepted) STATUS_ACCEPTED=$2; shift ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ $# -eq 1 ] || { sed -n '2,/^set -u/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }
for m in $MODES; do
	case $m in
	copy | zero-copy) ;;
	*) echo "run.sh: --memif-mode: $m is neither copy nor zero-copy" >&2; exit 2 ;;
	esac
done
[ -n "$MODES" ] || { echo "run.sh: --memif-mode: no mode given" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../tests/lib/netns.sh" # fg_wait_until, fg_ready_files
DP=$B/dataplane/fanogate-dp
GEN=$B/bench/cap/cap_gen
MEMCPY=$B/bench/cap/cap_memcpy
WHO=new DP_new=$DP
if [ -n "$AB" ]; then
	WHO="old new" DP_old=$(cd "$AB" 2>/dev/null && pwd)/dataplane/fanogate-dp
	[ -x "$DP_old" ] || { echo "run.sh: --ab: no fanogate-dp in $AB/dataplane" >&2; exit 2; }
fi
for x in "$DP" "$GEN" "$MEMCPY"; do
	[ -x "$x" ] || { echo "run.sh: SKIP: $x not built (DPDK missing?)"; exit 77; }
done
pmd=$(pkg-config --variable=pmdsdir libdpdk 2>/dev/null)
if [ -n "$pmd" ] && ! ls "$pmd"/librte_net_memif.so* >/dev/null 2>&1; then
	echo "run.sh: SKIP: no net_memif PMD in $pmd"; exit 77
fi
if [ -n "$RX_STALL" ]; then
	set -- $RX_STALL "$1"
	[ $# = 3 ] || { echo "run.sh: --rx-stall wants \"US EVERY_MS\"" >&2; exit 2; }
	GEN_STALL="--rx-stall-us $1 --rx-stall-every-ms $2"
	shift 2
fi
if [ $SMOKE = 1 ]; then
	RUNS=1 SEEDS=2000 HIDDENS=1536 WINDOW=${RX_STALL:+64}
	WINDOW=${WINDOW:-32}
	: "${FG_HUGEPAGES:=off}"
fi
# Hugepages, as the product runs: auto (used when a 2 MiB hugetlbfs is
# mounted with enough free pages, else --no-huge; the table says per run).
# With --no-huge every slot access also walks 4 KiB page tables: at 8,192
# slots (200 MB) that costs a large share of the lcore (RESULTS.md).
# zero-copy works with hugepages because fanogate-dp starts its port after
# its last allocation (slots allocated after the memif connection would
# race the PMD closing the memseg file).
export FG_HUGEPAGES=${FG_HUGEPAGES:-auto}
OUT=${OUT:-$(mktemp -d /tmp/fgcap-XXXXXX)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
DPPID="" GENPID=""
stop() { # stop PID: TERM it and reap it (empty: nothing to stop)
	if [ -n "$1" ]; then kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; fi
}
cleanup() {
	stop "$GENPID"
	stop "$DPPID"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

: > "$OUT/runs.jsonl"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"
# auto without a hugetlbfs falls back to --no-huge: say so before the runs
# (the product's figures are with hugepages; this script changes nothing
# on the host)
if [ "$FG_HUGEPAGES" = auto ] && ! grep -q ' hugetlbfs ' /proc/mounts; then
	echo "hugepages: no hugetlbfs mounted, so every run uses --no-huge; for the figures as the product runs:" \
		"mount -t hugetlbfs nodev /dev/hugepages and reserve pages (echo 256 > /proc/sys/vm/nr_hugepages)"
fi
if [ $SMOKE = 0 ]; then
	echo "copy baseline on CPU 1 (cap_memcpy):"
	taskset -c 1 "$MEMCPY" 1.0 1468 | tee "$OUT/memcpy.json"
else
	echo '{}' > "$OUT/memcpy.json"
fi

# The memif port of each side, by mode (profile.sh): copy, fanogate-dp
# serves and cap_gen connects; zero-copy, cap_gen serves and fanogate-dp
# connects with zero-copy=yes.
. "$HERE/profile.sh"
MEMIF_ARGS="id=0,socket=$OUT/memif.sock,bsize=2048,rsize=$RSIZE"
for m in $MODES; do
	cap_dp_profile "$OUT/memif-$m.ini" "$m" "$MEMIF_ARGS" '${FG_HUGEPAGES:-auto}'
	[ -z "$TX_HOLD_MS" ] || sed -i "s/^\[port\]\$/[port]\ntx_hold_ms = $TX_HOLD_MS/" "$OUT/memif-$m.ini"
done

# start_dp TAG MODE: fanogate-dp in the background (DPPID), ready or exit 1
start_dp() {
	rm -f "$OUT/ready"
	"$DP_NOW" --config "$OUT/fg-$H.ini" --profile "$OUT/memif-$2.ini" --duration 120 \
		--report "$OUT/dp-$1.json" --ready-file "$OUT/ready" 2> "$OUT/dp-$1.log" &
	DPPID=$!
	fg_wait_until 30 fg_ready_files "$DPPID" "$OUT/ready"
	if [ ! -f "$OUT/ready" ]; then
		echo "fanogate-dp did not start ($2):"; tail -5 "$OUT/dp-$1.log"
		exit 1
	fi
}

# start_gen TAG MODE: cap_gen in the background (GENPID)
start_gen() {
	local role=client
	rm -f "$OUT/gen-$1.json" # gen_done waits for it: not a file of an earlier run in the same OUT
	[ "$2" = zero-copy ] && role=server
	taskset -c 0 "$GEN" -l 0 --no-huge -m 256 --no-shconf --file-prefix "fgcapgen$$" --no-pci \
		--log-level '*:warning' --vdev="net_memif0,role=$role,$MEMIF_ARGS" -- \
		--hidden "$H" --seeds "$SEEDS" --window "$WINDOW" --max-seconds 60 --link-timeout 30 --peer-exit-wait 30 ${GEN_STALL:-} \
		--label "memif-$2-$H$([ "$STATUS_ACCEPTED" = false ] && echo -st1)$([ "$CAPACITY" != 8192 ] && echo "-c$CAPACITY")$([ "$WHO_NOW" = old ] && echo -old)" \
		--json "$OUT/gen-$1.json" 2> "$OUT/gen-$1.log" &
	GENPID=$!
}

# memif's socket is abstract (DPDK's default, socket-abstract=yes): no
# file, but a listening entry "@PATH" in /proc/net/unix
memif_listening() { grep -q " @$OUT/memif.sock\$" /proc/net/unix; }
gen_listening() { ! kill -0 "$GENPID" 2>/dev/null || memif_listening; } # or cap_gen exited
gen_done() { ! kill -0 "$GENPID" 2>/dev/null || [ -e "$1" ]; }         # results written, or exited

fail=0
for H in $HIDDENS; do
	cat > "$OUT/fg-$H.ini" <<EOC
[model]
hidden = $H
layers = 28
[rules]
default = 1,3,5
[slots]
capacity = $CAPACITY
deadline_ms = 2500
[udp]
port = 4242
mtu = 1472
${STATUS_ACCEPTED:+status_accepted = $STATUS_ACCEPTED}
[consumers]
default = 198.18.0.2:7000
[dataplane]
lcores = 1
EOC
	r=1
	while [ $r -le $RUNS ]; do
		for mode in $MODES; do for WHO_NOW in $WHO; do # WHO: "new", or with --ab "old new"
			eval DP_NOW=\$DP_$WHO_NOW
			tag=$H-$mode-$r$([ -n "$AB" ] && echo "-$WHO_NOW")
			if [ $mode = copy ]; then
				start_dp "$tag" $mode # the server first: cap_gen connects to it
				start_gen "$tag" $mode
			else
				start_gen "$tag" $mode # the server: its EAL creates the socket
				fg_wait_until 30 gen_listening
				if ! memif_listening; then
					if kill -0 $GENPID 2>/dev/null; then
						stop $GENPID
						grc="none, still running after 30 s"
					else
						wait $GENPID
						grc=$?
					fi
					GENPID=""
					[ "$grc" = 77 ] && { cat "$OUT/gen-$tag.log"; exit 77; }
					echo "cap_gen (memif server) is not listening (exit $grc):"; tail -5 "$OUT/gen-$tag.log"
					exit 1
				fi
				start_dp "$tag" $mode
			fi
			# The end, in this order: cap_gen has written its results and
			# waits (--peer-exit-wait) with its port untouched; fanogate-dp
			# stops and disconnects; cap_gen sees the link go down and exits.
			# One memif disconnect per process, never two at once (cap_gen.c).
			fg_wait_until 200 gen_done "$OUT/gen-$tag.json"
			kill -TERM $DPPID; wait $DPPID; DPPID=""
			wait $GENPID
			grc=$?
			GENPID=""
			if [ $grc = 77 ]; then cat "$OUT/gen-$tag.log"; exit 77; fi
			[ $grc = 0 ] || { echo "cap_gen exit $grc ($mode):"; tail -5 "$OUT/gen-$tag.log"; fail=1; }
			python3 "$HERE/summarize.py" run "$OUT/gen-$tag.json" "$OUT/dp-$tag.json" "$mode" >> "$OUT/runs.jsonl" ||
				fail=1
		done; done
		r=$((r + 1))
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
python3 "$HERE/summarize.py" report "$OUT" $([ $SMOKE = 1 ] && echo --smoke) $([ $SMOKE = 1 ] && [ -n "$RX_STALL" ] && echo $EXPECT) || fail=1
echo "wrote $OUT/results.json"
exit $fail
