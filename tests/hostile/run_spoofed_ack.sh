#!/bin/bash
# run_spoofed_ack.sh FANOGATE_DP FANOFLEET FANORELAY - issue 14 item 2:
# consumer ACKs count only from that layer's configured consumer address
# and port, and the work one ACK datagram costs is bounded.
#
# The topology of tests/faults/run_delivery.sh (fanofleet + relays in a
# namespace, fanogate-dp on af_packet over a veth), with a consumer that
# never ACKs (--no-consumer-ack, as its "silent" scenario) and
# spoof_ack.py beside it sending, every 20 ms, ACK frames that cover every
# delivered seed from another fleet address and from the consumer's host on
# another port, and once a second a 104-entry frame of sequences nothing is
# pending for from the consumer's own address and port.
#
# Checks (any failure exits 1): every delivery ends given up
# (delivery_acked 0, delivery_given_up = seeds_sent: no spoofed ACK retired
# one), x counter ack_foreign > 0, ack_budget > 0 (the junk frames were cut
# short), every seed reached the consumer, no wrong seed.
# Before this change the spoofed ACKs retired the deliveries (acked > 0).
#
# Everything it creates is named fgsa* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
DP=${1:?usage: run_spoofed_ack.sh FANOGATE_DP FANOFLEET FANORELAY}
FLEET=${2:?fanofleet}
RELAY=${3:?fanorelay}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

TOKENS=40
R2="" RESENDS=3 PENDING=4096 CACK=(--no-consumer-ack)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
for b in "$DP" "$FLEET" "$RELAY"; do
	[ -x "$b" ] || { echo "SKIP: '$b' not built"; exit 77; }
done

ID=$$
NS=fgsa-n$ID
VA=fgsa${ID}a
VB=fgsa${ID}b
NET=10.94.$((ID % 250)).
TMP=$(mktemp -d /tmp/fgsa-XXXXXX)
DPPID="" R1PID="" R2PID="" SPPID=""

. "$HERE/../lib/proc.sh" # alive, stop_pid, dp_env_failure
cleanup() {
	stop_pid "$SPPID"; stop_pid "$R1PID"; stop_pid "$R2PID"; stop_pid "$DPPID"
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
hidden = 512
layers = 8
[rules]
default = 1,3,5
[slots]
capacity = 8192
deadline_ms = 3000
[udp]
port = 4242
mtu = 1472
ack_interval_ms = 20
reasm_timeout_ms = 250
allow = ${NET}0/24
[consumers]
default = ${NET}2:17000
resend_ms = 200
resends = $RESENDS
pending_max = $PENDING
[dataplane]
lcores = $LCORES
profile = $ROOT/drivers-config/af_packet.ini
EOC

export FG_IFACE=$VA FG_DP_IP4=${NET}1 FG_DP_IP6= FG_IDLE_SLEEP_US=50 FG_HUGEPAGES=off
"$DP" --config "$TMP/fanogate.ini" --profile "$ROOT/drivers-config/af_packet.ini" --duration 150 \
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

ip netns exec "$NS" "$RELAY" --listen 127.0.0.1:14000 --server ${NET}1:4242 --bind ${NET}2 \
	--seed $ID --check-acks --duration 120 --quiet --stats "$TMP/r1.json" --ready-file "$TMP/r1.ready" \
	> "$TMP/r1.log" 2>&1 &
R1PID=$!
# shellcheck disable=SC2086
ip netns exec "$NS" "$RELAY" --listen ${NET}2:17000 --server 127.0.0.1:17001 \
	--seed $((ID + 1)) $R2 --check-acks --duration 120 --quiet --stats "$TMP/r2.json" --ready-file "$TMP/r2.ready" \
	> "$TMP/r2.log" 2>&1 &
R2PID=$!
for _ in $(seq 50); do [ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ] && break; sleep 0.1; done
[ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ] || { cat "$TMP/r1.log" "$TMP/r2.log"; echo "FAIL: relays did not start"; exit 1; }

# the probe token (neighbour learning; see run_faults.sh), not in the figures
ip netns exec "$NS" "$FLEET" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 --hidden 512 \
	--tokens 1 --window 1 --token-base 900000 --canonical none --quiet --slot-timeout-ms 3000 --max-missing 7 \
	"${CACK[@]}" > "$TMP/probe.log" 2>&1

ip netns exec "$NS" "$PY" "$HERE/spoof_ack.py" ${NET}1 ${NET}2 17000 ${NET}3 30 > "$TMP/spoof.log" 2>&1 &
SPPID=$!
ip netns exec "$NS" "$FLEET" "${CACK[@]}" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 \
	--hidden 512 --tokens "$TOKENS" --window 8 --seed $((ID % 1000 + 1)) --token-base 1000 --canonical none \
	--slot-timeout-ms 5000 --max-missing 1000000 --duration 100 --quiet --json "$TMP/fleet.json" \
	--linger-ms $(( (RESENDS + 1) * 200 + 500 )) > "$TMP/fleet.log" 2>&1
FRC=$?
stop_pid "$SPPID"; SPPID=""
# the consumer lingered through the last resends ((resends + 1) x resend_ms),
# ACKing them (or, silent, not); the last give-ups are done by now
sleep 0.5
stop_pid "$R1PID"; R1PID=""
stop_pid "$R2PID"; R2PID=""
stop_pid "$DPPID"; DPRC=$?; DPPID=""

$PY - "$FRC" "$DPRC" "$TMP" <<'PY'
import json, sys
frc, dprc, tmp = sys.argv[1:4]
fails = []
def load(name):
    try:
        return json.load(open(f"{tmp}/{name}"))
    except Exception as e:
        fails.append(f"{name}: {e}")
        return {}
fleet, dp = load("fleet.json"), load("dp.json")
c, x = dp.get("counters", {}), dp.get("x", {})
sent, acked, given = c.get("seeds_sent", -1), c.get("delivery_acked", -1), c.get("delivery_given_up", -1)
if int(frc) == 1 or fleet.get("wrong", 1) != 0:
    fails.append(f"fanofleet saw {fleet.get('wrong')} WRONG resolved seeds (exit {frc})")
if int(dprc) != 0:
    fails.append(f"fanogate-dp exit {dprc}")
if fleet.get("missing", -1) != 0:
    fails.append(f"{fleet.get('missing')} seeds missing on a clean path")
if sent <= 0:
    fails.append(f"seeds_sent = {sent}")
if acked != 0:
    fails.append(f"spoofed ACKs retired {acked} deliveries (the consumer never ACKed)")
if given != sent:
    fails.append(f"given_up {given} != seeds_sent {sent}")
if x.get("ack_foreign", 0) <= 0:
    fails.append(f"ack_foreign = {x.get('ack_foreign', 0)}: the spoofed entries were not refused as foreign")
if x.get("ack_budget", 0) <= 0:
    fails.append(f"ack_budget = {x.get('ack_budget', 0)}: the 6,656-seq frames were not cut short")
print("RESULT " + json.dumps({"seeds_sent": sent, "delivery_acked": acked, "delivery_given_up": given,
                               "ack_rx": x.get("ack_rx"), "ack_foreign": x.get("ack_foreign"),
                               "ack_budget": x.get("ack_budget"),
                               "ack_unmatched": c.get("delivery_ack_unmatched")}, sort_keys=True))
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
PY
RC=$?
if [ $RC != 0 ]; then
	echo "---- fleet"; tail -25 "$TMP/fleet.log"
	echo "---- relay 2"; cat "$TMP/r2.log"
	echo "---- spoofer"; cat "$TMP/spoof.log"
	echo "---- fanogate-dp"; grep -v "^TELEMETRY" "$TMP/dp.log" | tail -20
fi
exit $RC
