#!/bin/bash
# run_no_slot_ack.sh FANOGATE_DP - issue 14 item 6b: a frame refused no_slot
# is not ACKed as received; its status says no_slot instead, so a sender
# that resends only unACKed frames resends it.
#
# fanogate-dp on af_packet over a veth into a namespace, [slots] capacity
# 4; no_slot_client.py sends 64 seed frames (distinct tokens, one line of
# three, so no slot resolves) and collects ACKs and statuses.
# Checks: some frames were refused no_slot; none of those was ACKed; every
# frame placed was ACKed. Before this change every no_slot frame was ACKed.
#
# Everything it creates is named fgns* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
DP=${1:?usage: run_no_slot_ack.sh FANOGATE_DP}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
for b in "$DP"; do
	[ -x "$b" ] || { echo "SKIP: '$b' not built"; exit 77; }
done

ID=$$
NS=fgns-n$ID
VA=fgns${ID}a
VB=fgns${ID}b
NET=10.95.$((ID % 250)).
TMP=$(mktemp -d /tmp/fgns-XXXXXX)
DPPID=""

. "$HERE/../lib/proc.sh" # alive, stop_pid, dp_env_failure
cleanup() {
	stop_pid "$DPPID"
	ip netns del "$NS" 2>/dev/null
	ip link del "$VA" 2>/dev/null
	[ -n "${FG_KEEP_TMP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS" 2>/dev/null || { echo "SKIP: cannot create a network namespace"; exit 77; }
LCORES=${FG_FAULTS_LCORES:-1}
ip link add "$VA" numtxqueues 4 numrxqueues 4 type veth peer name "$VB" numtxqueues 4 numrxqueues 4 2>/dev/null ||
	{ echo "SKIP: cannot create a veth pair"; exit 77; }
ip link set "$VB" netns "$NS"
ip link set "$VA" up
sysctl -qw net.ipv6.conf.$VA.disable_ipv6=1 2>/dev/null
ip -n "$NS" link set lo up
ip -n "$NS" addr add ${NET}2/24 dev "$VB"
ip -n "$NS" link set "$VB" up
command -v ethtool >/dev/null && ip netns exec "$NS" ethtool -K "$VB" tx off >/dev/null 2>&1

cat > "$TMP/fanogate.ini" <<EOC
[model]
hidden = 8
layers = 4
[rules]
default = 1,3,5
[slots]
capacity = 4
deadline_ms = 30000
[udp]
port = 4242
ack_interval_ms = 20
allow = ${NET}0/24
[dataplane]
lcores = 1
profile = $ROOT/drivers-config/af_packet.ini
EOC

export FG_IFACE=$VA FG_DP_IP4=${NET}1 FG_DP_IP6= FG_IDLE_SLEEP_US=50 FG_HUGEPAGES=off
"$DP" --config "$TMP/fanogate.ini" --profile "$ROOT/drivers-config/af_packet.ini" --duration 60 \
	--report "$TMP/dp.json" --ready-file "$TMP/dp.ready" > "$TMP/dp.out" 2> "$TMP/dp.log" &
DPPID=$!
for _ in $(seq 200); do
	[ -f "$TMP/dp.ready" ] && break
	kill -0 $DPPID 2>/dev/null || break
	sleep 0.1
done
if [ ! -f "$TMP/dp.ready" ]; then
	tail -20 "$TMP/dp.log"
	wait $DPPID 2>/dev/null; DPPID=""
	if dp_env_failure "$TMP/dp.log"; then
		echo "SKIP: fanogate-dp cannot run its af_packet port here (log above)"; exit 77
	fi
	echo "FAIL: fanogate-dp did not start"; exit 1
fi

OUT=$(ip netns exec "$NS" "$PY" "$HERE/no_slot_client.py" ${NET}1 64)
echo "RESULT $OUT"
stop_pid "$DPPID"; DPPID=""
$PY - "$OUT" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
fails = []
if r["statuses"] != r["sent"]:
    fails.append(f"{r['statuses']} statuses for {r['sent']} frames")
if r["outcomes"].get("no_slot", 0) <= 0:
    fails.append("no frame was refused no_slot: the scenario tested nothing")
if r["no_slot_acked"]:
    fails.append(f"{len(r['no_slot_acked'])} frames refused no_slot were ACKed as received: {r['no_slot_acked'][:10]}")
if r["placed_unacked"]:
    fails.append(f"placed frames never ACKed: {r['placed_unacked'][:10]}")
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
PY
RC=$?
[ $RC != 0 ] && { echo "---- fanogate-dp"; grep -v "^TELEMETRY" "$TMP/dp.log" | tail -20; }
exit $RC
