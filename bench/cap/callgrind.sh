#!/bin/sh
# bench/cap/callgrind.sh - load-independent per-packet cost of the dataplane:
# fanogate-dp under callgrind, cap_gen feeding it SEEDS seeds
# (hidden 1536, Pair X, ACKed), then the inclusive instruction count (Ir) of
# each per-packet function divided by the fragments received and by the seeds
# resolved. Those functions only run per packet, so their counts do not
# depend on the machine's load or on how many idle polls the lcore made
# (dp_lcore_main's own count does, and is not reported).
#
# The memif PMD's own cost is not counted here: its object has no symbols,
# and its self cost includes every empty poll (load-dependent); its share
# of the lcore comes from perf (bench/cap/RESULTS.md).
#
# Usage: bench/cap/callgrind.sh BUILD_DIR [SEEDS] [OUT_DIR]
#   FG_CAP_STATUS_ACCEPTED=false: [udp] status_accepted = false
#   FG_CAP_MEMIF_MODE=copy (default; fanogate-dp the memif server) or
#     zero-copy (fanogate-dp the zero-copy client, cap_gen the server;
#     see run.sh)
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
deadline_ms = 2500
[udp]
port = 4242
mtu = 1472
${FG_CAP_STATUS_ACCEPTED:+status_accepted = $FG_CAP_STATUS_ACCEPTED}
[consumers]
default = 198.18.0.2:7000
# valgrind slows the lcore ~50x: a generous resend timer, so that the
# instruction counts are not those of resends
resend_ms = 5000
[dataplane]
lcores = 1
EOC
MEMIF_ARGS="id=0,socket=$OUT/memif.sock,bsize=2048,rsize=11"
GEN_ROLE=client
[ "$MODE" = zero-copy ] && GEN_ROLE=server # fanogate-dp the zero-copy client (profile.sh)
. "$HERE/profile.sh"
cap_dp_profile "$OUT/memif.ini" "$MODE" "$MEMIF_ARGS" off
rm -f "$OUT/ready" "$OUT/callgrind.out"
start_gen() {
	"$B/bench/cap/cap_gen" -l 0 --no-huge -m 256 --no-shconf --file-prefix "fgcapcg$$" --no-pci --log-level '*:warning' \
		--vdev="net_memif0,role=$GEN_ROLE,$MEMIF_ARGS" -- --hidden 1536 --seeds "$SEEDS" --window 32 --warmup 64 \
		--max-seconds 300 --link-timeout 300 --peer-exit-wait 60 --json "$OUT/gen.json" 2> "$OUT/gen.log" &
	GPID=$!
}
wait_for() { # wait_for PID FILE: up to 120 s, until FILE exists or PID exited
	i=0
	while [ ! -e "$2" ] && kill -0 "$1" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
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
valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" "$B/dataplane/fanogate-dp" \
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
callgrind_annotate --inclusive=yes --threshold=100 "$OUT/callgrind.out" > "$OUT/inclusive.txt" 2>/dev/null
python3 - "$OUT" <<'EOPY'
import json, re, sys
out = sys.argv[1]
d = json.load(open(out + "/dp.json"))
c = d["counters"]
frags, seeds, tx = c["rx_pkts"], c["seeds_resolved"], c["tx_pkts"]
# inclusive Ir per function of fanogate-dp's own files (the entries that
# name the object; the others group code inlined elsewhere)
ir = {}
for line in open(out + "/inclusive.txt"):
    m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(\S+):(\S+) \[(\S+)\]", line)
    if not m or not m.group(4).endswith("fanogate-dp"):
        continue
    if "/dataplane/" not in m.group(2) and "/core/" not in m.group(2):
        continue
    ir.setdefault(m.group(3), int(m.group(1).replace(",", "")))
# functions that run only per packet or per seed (never per idle poll);
# names before and after the dp_lcore.c split (daa8705) and the shard's I/O
# interface (dp_shard_dgram: fragment decode + everything after) all listed
fns = ["rx_packet", "dp_pkt_parse", "dp_pkt_addr_check", "dp_peer_hash", "fg_frag_decode", "dp_shard_dgram", "dp_shard_fragment", "on_fragment", "dp_reasm_push", "first_fragment", "fg_slot_begin", "fg_slot_place",
       "fg_reduce.avx2", "on_outcome", "dp_deliver_seed", "deliver", "dp_reply_status", "send_status",
       "dp_tx_frame", "tx_frame", "dp_tx_dgram", "tx_dgram", "dp_pkt_build_udp"]
mode = open(out + "/mode").read().strip()
res = dict(memif_mode=mode, rx_pkts=frags, tx_pkts=tx, seeds=seeds, status_sent=c["status_sent"], acks_sent=c["acks_sent"],
           ir_per_rx_pkt={f: round(ir[f] / frags, 1) for f in fns if f in ir},
           ir_per_seed={f: round(ir[f] / seeds) for f in fns if f in ir})
json.dump(res, open(out + "/ir.json", "w"), indent=1)
print("fanogate-dp under callgrind (memif %s): %d packets received, %d sent (%d statuses, %d ACKs), %d seeds resolved"
      % (mode, frags, tx, c["status_sent"], c["acks_sent"], seeds))
print("%-20s %14s %12s %10s" % ("function (incl.)", "Ir total", "Ir/rx pkt", "Ir/seed"))
for f in fns:
    if f in ir:
        print("%-20s %14d %12.1f %10.0f" % (f, ir[f], ir[f] / frags, ir[f] / seeds))
EOPY
echo "wrote $OUT/ir.json"
