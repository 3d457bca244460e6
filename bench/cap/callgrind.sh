#!/bin/sh
# bench/cap/callgrind.sh - load-independent cost of the dataplane's lcore:
# fanogate-dp under callgrind, cap_gen feeding it SEEDS seeds (hidden 1536,
# Pair X, memif, every seed delivered and ACKed), then cg_ir.py prints
#   fanogate instructions per resolved seed: N
# the lcore's work for the packets it received and the seeds it resolved,
# delivered and acknowledged, inclusive of everything it calls but the PMD,
# divided by the seeds resolved, and a per-stage table beside it. The work
# is the cost of the calls the poll loop makes only when it has work
# (dp_rx_work for a non-empty RX burst, dp_tx_send with packets waiting,
# dp_shard_ack_flush with ACKs noted, dp_shard_handed, dp_lane_wake):
# empty polls call none of them, so their number (which follows the
# machine's load) does not enter N. The once-a-millisecond housekeeping
# timer is printed apart and not counted. See cg_ir.py for the details.
#
# The memif PMD's own cost is not counted: its object has no symbols, and
# its RX self cost includes every empty poll (load-dependent); its share of
# the lcore comes from perf (bench/cap/RESULTS.md).
#
# Usage: bench/cap/callgrind.sh BUILD_DIR [SEEDS] [OUT_DIR]
#   FG_CAP_STATUS_ACCEPTED=false: [udp] status_accepted = false
#   FG_CAP_DELIVERY_BY_REF=on: [port] delivery_by_ref = on (memif sends
#     resolved seeds by reference; unset, the key is not written and the
#     default, auto, copies on a virtual device)
#   FG_CAP_MEMIF_MODE=copy (default; fanogate-dp the memif server) or
#     zero-copy (fanogate-dp the zero-copy client, cap_gen the server;
#     see run.sh)
#   FG_CAP_INSTR=1: instruction positions in the profile as well
#     (--dump-instr=yes; the counts are the same), for
#     `cg_ir.py OUT/callgrind.out OUT/dp.json --paths N`: each hot
#     function's cost a call beside the instructions of it that ran
#   FG_CAP_LCORES=2: two poll lcores, two memif queue pairs; cap_gen puts
#     each flow on queue (source port mod 2), as RSS would: the workers of
#     lines 1 and 5 (ports 5001, 5003) on queue 1, line 3's (5002) and the
#     consumer's ACKs (7000) on queue 0, so every slot's contributions come
#     to both lcores and the frames for the other lcore's shard are handed
#     over whole
# Output: OUT_DIR/callgrind.out, OUT_DIR/ir.json and a table on stdout.
# Takes about a minute (valgrind runs the dataplane ~50x slower).
set -u
B=$(cd "${1:?usage: callgrind.sh BUILD_DIR [SEEDS] [OUT_DIR]}" && pwd) || exit 2
SEEDS=${2:-2000}
OUT=${3:-$(mktemp -d /tmp/fgcapcg-XXXXXX)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
command -v valgrind >/dev/null || { echo "callgrind.sh: SKIP: no valgrind"; exit 77; }
[ -x "$B/bench/cap/cap_gen" ] || { echo "callgrind.sh: SKIP: cap_gen not built"; exit 77; }
MODE=${FG_CAP_MEMIF_MODE:-copy}
LCORES=${FG_CAP_LCORES:-1}
case $LCORES in 1 | 2) ;; *) echo "callgrind.sh: FG_CAP_LCORES=$LCORES: 1 or 2"; exit 2 ;; esac
# Every thread under valgrind shares its one lock, and a poll lcore never
# stops spinning: fair scheduling always, or the spinning lcore starves
# the EAL's interrupt thread (which accepts the memif connection) for
# minutes on a busy machine. Two lcores also need timeouts long enough
# that nothing expires while a thread waits its turn. Neither changes a
# count of the work itself (no slot or group expires in either run).
DEADLINE=2500 REASM="" VG_SCHED=--fair-sched=yes
if [ "$LCORES" = 2 ]; then
	DEADLINE=60000 REASM="reasm_timeout_ms = 20000"
fi
case $MODE in copy | zero-copy) ;; *) echo "callgrind.sh: FG_CAP_MEMIF_MODE=$MODE: copy or zero-copy"; exit 2 ;; esac
VPID="" GPID=""
cleanup() {
	for p in $GPID $VPID; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cat > "$OUT/fg.ini" <<EOC
[model]
hidden = 1536
layers = 28
[rules]
default = 1,3,5
[slots]
capacity = 8192
deadline_ms = $DEADLINE
[udp]
port = 4242
mtu = 1472
$REASM
${FG_CAP_STATUS_ACCEPTED:+status_accepted = $FG_CAP_STATUS_ACCEPTED}
[consumers]
default = 198.18.0.2:7000
# valgrind slows the lcore ~50x: a generous resend timer, so that the
# instruction counts are not those of resends
resend_ms = 5000
[dataplane]
lcores = $LCORES
EOC
MEMIF_ARGS="id=0,socket=$OUT/memif.sock,bsize=2048,rsize=11"
GEN_ROLE=client
[ "$MODE" = zero-copy ] && GEN_ROLE=server # fanogate-dp the zero-copy client (profile.sh)
. "$HERE/profile.sh"
cap_dp_profile "$OUT/memif.ini" "$MODE" "$MEMIF_ARGS" off
rm -f "$OUT/ready" "$OUT/callgrind.out" "$OUT/gen.json" "$OUT/dp.json" # a reused OUT_DIR
# --idle-seconds 30: under valgrind on a loaded machine the lcore can pause
# for more than cap_gen's default of 1 s, which would count the window lost
start_gen() {
	"$B/bench/cap/cap_gen" -l 0 --no-huge -m 256 --no-shconf --file-prefix "fgcapcg$$" --no-pci --log-level '*:warning' \
		--vdev="net_memif0,role=$GEN_ROLE,$MEMIF_ARGS" -- --hidden 1536 --seeds "$SEEDS" --window 32 --warmup 64 \
		--queues "$LCORES" \
		--idle-seconds 30 --max-seconds 300 --link-timeout 300 --peer-exit-wait 60 --json "$OUT/gen.json" 2> "$OUT/gen.log" &
	GPID=$!
}
wait_for() { # wait_for PID FILE: until FILE exists or PID exited, at most 600 s
	t_end=$(($(date +%s) + 600))
	while [ ! -e "$2" ] && kill -0 "$1" 2>/dev/null && [ "$(date +%s)" -lt $t_end ]; do sleep 0.1; done
	[ -e "$2" ]
}
if [ "$MODE" = zero-copy ]; then
	start_gen # the memif server first
	# its socket is abstract (DPDK's default): "@PATH" in /proc/net/unix
	i=0
	while ! grep -q " @$OUT/memif.sock\$" /proc/net/unix && kill -0 $GPID 2>/dev/null && [ $i -lt 1200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q " @$OUT/memif.sock\$" /proc/net/unix || { echo "cap_gen is not listening:"; tail -5 "$OUT/gen.log"; exit 1; }
fi
VG_INSTR=""
[ "${FG_CAP_INSTR:-0}" = 1 ] && VG_INSTR=--dump-instr=yes
valgrind --tool=callgrind $VG_SCHED $VG_INSTR --callgrind-out-file="$OUT/callgrind.out" "$B/dataplane/fanogate-dp" \
	--config "$OUT/fg.ini" --profile "$OUT/memif.ini" --duration 600 --report "$OUT/dp.json" \
	--ready-file "$OUT/ready" > "$OUT/dp.log" 2>&1 &
VPID=$!
wait_for $VPID "$OUT/ready" || { echo "fanogate-dp did not start under valgrind:"; tail -5 "$OUT/dp.log"; exit 1; }
[ "$MODE" = copy ] && start_gen
# cap_gen writes its results, then waits for fanogate-dp to stop first (one
# memif disconnect per process at a time: see cap_gen.c --peer-exit-wait)
i=0
while [ ! -e "$OUT/gen.json" ] && kill -0 $GPID 2>/dev/null && [ $i -lt 6000 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $VPID; wait $VPID; VPID=""
wait $GPID
grc=$?
GPID=""
[ $grc = 0 ] || { echo "cap_gen exit $grc"; tail -5 "$OUT/gen.log"; exit 1; }
echo "$MODE" > "$OUT/mode"
python3 - "$OUT" <<'EOPY'
import json, sys
out = sys.argv[1]
c = json.load(open(out + "/dp.json"))["counters"]
mode = open(out + "/mode").read().strip()
print("fanogate-dp under callgrind (memif %s): %d packets received, %d sent (%d statuses, %d ACKs), %d seeds resolved"
      % (mode, c["rx_pkts"], c["tx_pkts"], c["status_sent"], c["acks_sent"], c["seeds_resolved"]))
EOPY
python3 "$HERE/cg_ir.py" "$OUT/callgrind.out" "$OUT/dp.json" --json "$OUT/ir.json" || exit 1
echo "wrote $OUT/ir.json"
