#!/bin/bash
# run_neigh_poison.sh FANOGATE_DP FANOFLEET FANORELAY - issue 14 item 4:
# neighbour poisoning. No gratuitous ARP, ARP request or UDP datagram from
# another MAC claiming the consumer's IP may redirect seed deliveries.
#
# The topology of run_spoofed_ack.sh (fanofleet + relays in a namespace,
# fanogate-dp on af_packet over a veth), with the consumer (which ACKs) on
# its own address .3 beside the fleet's .2, and spoof_neigh.py sending
# every 5 ms, from MAC 02:00:00:00:ee:ee, a gratuitous ARP, an ARP request
# and a UDP datagram, each claiming .3. The dataplane first hears the
# consumer's real ARP request (spoof_neigh.py --announce: from .3 at the
# veth's own MAC), as a host's kernel would send it. With a 4th argument
# `static` the consumer is instead pinned by [dataplane] neighbours =
# .3=<the veth's MAC> and no ARP request is sent: the same checks, and no
# delivery fell back to broadcast (neigh_miss 0).
#
# Checks (any failure exits 1): every seed reached the consumer (missing 0),
# no wrong seed, no delivery given up (a delivery sent to the spoofed MAC is
# never ACKed), x counter neigh_unsolicited > 0 (the spoofs were refused).
# Before this change the spoofs rewrote the consumer's neighbour entry and
# deliveries went to 02:00:00:00:ee:ee (given up, seeds missing).
#
# Everything it creates is named fgnp* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
DP=${1:?usage: run_neigh_poison.sh FANOGATE_DP FANOFLEET FANORELAY}
FLEET=${2:?fanofleet}
RELAY=${3:?fanorelay}
MODE=${4:-learn}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

TOKENS=40
R2="" RESENDS=3 PENDING=4096 CACK=()
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
for b in "$DP" "$FLEET" "$RELAY"; do
	[ -x "$b" ] || { echo "SKIP: '$b' not built"; exit 77; }
done

ID=$$
NS=fgnp-n$ID
VA=fgnp${ID}a
VB=fgnp${ID}b
NET=10.95.$((ID % 250)).
TMP=$(mktemp -d /tmp/fgnp-XXXXXX)
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
ip -n "$NS" addr add ${NET}3/24 dev "$VB"
ip -n "$NS" link set "$VB" up
STATIC=""
[ "$MODE" = static ] && STATIC="neighbours = ${NET}3=$(ip netns exec "$NS" cat /sys/class/net/$VB/address)"
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
default = ${NET}3:17000
resend_ms = 200
resends = $RESENDS
pending_max = $PENDING
[dataplane]
lcores = $LCORES
$STATIC
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
ip netns exec "$NS" "$RELAY" --listen ${NET}3:17000 --server 127.0.0.1:17001 \
	--seed $((ID + 1)) $R2 --check-acks --duration 120 --quiet --stats "$TMP/r2.json" --ready-file "$TMP/r2.ready" \
	> "$TMP/r2.log" 2>&1 &
R2PID=$!
for _ in $(seq 50); do [ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ] && break; sleep 0.1; done
[ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ] || { cat "$TMP/r1.log" "$TMP/r2.log"; echo "FAIL: relays did not start"; exit 1; }

# the probe token (neighbour learning; see run_faults.sh), not in the figures
ip netns exec "$NS" "$FLEET" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 --hidden 512 \
	--tokens 1 --window 1 --token-base 900000 --canonical none --quiet --slot-timeout-ms 3000 --max-missing 7 \
	"${CACK[@]}" > "$TMP/probe.log" 2>&1

DPMAC=$(cat /sys/class/net/$VA/address)
[ "$MODE" = static ] || ip netns exec "$NS" "$PY" "$HERE/spoof_neigh.py" --announce "$VB" "$DPMAC" ${NET}1 ${NET}3 0 > "$TMP/announce.log" 2>&1 ||
	{ cat "$TMP/announce.log"; echo "FAIL: cannot send the consumer's ARP request"; exit 1; }
ip netns exec "$NS" "$PY" "$HERE/spoof_neigh.py" "$VB" "$DPMAC" ${NET}1 ${NET}3 60 > "$TMP/spoof.log" 2>&1 &
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

$PY - "$FRC" "$DPRC" "$TMP" "$MODE" <<'PY'
import json, sys
frc, dprc, tmp, mode = sys.argv[1:5]
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
if given != 0:
    fails.append(f"{given} deliveries given up (sent to a spoofed MAC, never ACKed)")
if x.get("neigh_unsolicited", 0) <= 0:
    fails.append(f"neigh_unsolicited = {x.get('neigh_unsolicited', 0)}: the spoofs were not refused")
if mode == "static" and x.get("neigh_miss", -1) != 0:
    fails.append(f"neigh_miss = {x.get('neigh_miss')}: the static neighbour was not used")
print("RESULT " + json.dumps({"seeds_sent": sent, "delivery_acked": acked, "delivery_given_up": given,
                               "neigh_unsolicited": x.get("neigh_unsolicited"),
                               "neigh_not_allowed": x.get("neigh_not_allowed"),
                               "neigh_miss": x.get("neigh_miss"), "missing": fleet.get("missing")}, sort_keys=True))
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
