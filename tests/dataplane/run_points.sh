#!/bin/bash
# run_points.sh FANOGATE FANOCTL - Fano point liveness from UDP sources
# ([points] in the configuration; control/cp_points.c) on the real path:
# the daemon with its DPDK dataplane on af_packet over a veth pair, two
# peers in a network namespace with kernel UDP sockets:
#
#   [namespace fgdr-p$$]                            [root namespace]
#   10.92.X.3  "ATTN worker", [points] e2 = 10.92.X.3/32  --veth-->  fanogate
#   10.92.X.2  an unmapped fleet station                      (10.92.X.1:4242)
#
# Steps and checks (any failure exits 1):
#  1. line 3 (2,4,6) is forced active, the others stay shadow; the e2 peer
#     sends: no line is degraded;
#  2. the e2 peer stops: within peer_timeout_ms (800) + a tick the three
#     lines through e2 - 0 (1,2,3), 3 (2,4,6), 4 (2,5,7) - are degraded
#     (fanoctl lines), the four others are not; points_down shows e2;
#  3. the unmapped station sends on line 3: every status frame it gets
#     says degraded (and its datagrams do not revive e2);
#  4. the e2 peer resumes: the lines come back to their previous state
#     (3 active, 0 and 4 shadow); the station's status frames on line 3
#     no longer say degraded;
#  5. the audit log holds the six line changes (three down, three up),
#     each naming point e2.
# Everything it creates is named fgdr* and removed on exit (trap). Exit 77
# when not root, no namespaces/veth, openssl or binaries missing, or the
# dataplane cannot run its af_packet port here.
set -u
GATE=${1:?usage: run_points.sh FANOGATE FANOCTL}
FANOCTL=${2:?fanoctl}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl missing (daemon certificate)"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
for b in "$GATE" "$FANOCTL"; do [ -x "$b" ] || { echo "SKIP: '$b' not built"; exit 77; }; done

ID=$$
NS=fgdr-p$ID
VA=fgdr${ID}p
VB=fgdr${ID}q
NET=10.92.$((ID % 250)).
TMP=$(mktemp -d /tmp/fgdr-XXXXXX)
GPID="" BGPID=""

. "$(dirname "$0")/../lib/proc.sh" # alive, stop_pid, dp_env_failure
cleanup() {
	stop_pid "$BGPID"; stop_pid "$GPID"
	ip netns del "$NS" 2>/dev/null
	ip link del "$VA" 2>/dev/null
	[ -n "${FG_KEEP_TMP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

ip netns add "$NS" 2>/dev/null || { echo "SKIP: cannot create a network namespace"; exit 77; }
ip link add "$VA" type veth peer name "$VB" 2>/dev/null || { echo "SKIP: cannot create a veth pair"; exit 77; }
ip link set "$VB" netns "$NS"
ip link set "$VA" up
sysctl -qw net.ipv6.conf.$VA.disable_ipv6=1 2>/dev/null
ip -n "$NS" link set lo up
ip -n "$NS" addr add ${NET}2/24 dev "$VB"
ip -n "$NS" addr add ${NET}3/24 dev "$VB"
ip -n "$NS" link set "$VB" up
command -v ethtool >/dev/null && ip netns exec "$NS" ethtool -K "$VB" tx off >/dev/null 2>&1

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=fanogate.test \
	-keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null || { echo "FAIL: openssl req"; exit 1; }
cat > "$TMP/fanogate.ini" <<EOC
[model]
hidden = 16
layers = 4
[slots]
capacity = 4096
deadline_ms = 500
[udp]
port = 4242
ack_interval_ms = 20
allow = ${NET}0/24
[points]
e2 = ${NET}3/32
peer_timeout_ms = 800
[dataplane]
lcores = 1
profile = $ROOT/drivers-config/af_packet.ini
[tls]
listen = 127.0.0.1:0
cert = $TMP/cert.pem
key = $TMP/key.pem
[audit]
path = $TMP/audit.log
group_commit_us = 0
[operator]
socket = $TMP/op.sock
[metrics]
listen = off
EOC

export FG_IFACE=$VA FG_DP_IP4=${NET}1 FG_DP_IP6= FG_IDLE_SLEEP_US=50 FG_HUGEPAGES=off
fg_daemon_start "$TMP/gate.out" "$TMP/gate.log" "$GATE" --config "$TMP/fanogate.ini"
ready=$?
GPID=$FG_PID
if [ $ready != 0 ]; then
	tail -20 "$TMP/gate.log"
	stop_pid "$GPID"; GPID=""
	if dp_env_failure "$TMP/gate.log"; then
		echo "SKIP: fanogate cannot run its af_packet dataplane here (log above)"; exit 77
	fi
	echo "FAIL: fanogate did not start"; exit 1
fi
CTL=("$FANOCTL" --socket "$TMP/op.sock")

# effective states of the seven lines, space separated
states() { "${CTL[@]}" lines --json | $PY -c 'import json,sys; print(" ".join(l["state"] for l in json.load(sys.stdin)["lines"]))'; }
# wait up to $1 tenths of a second for states == $2
wait_states() {
	local want=$2 got=""
	for _ in $(seq "$1"); do
		got=$(states)
		[ "$got" = "$want" ] && return 0
		sleep 0.1
	done
	echo "  lines: '$got', wanted '$want'"
	return 1
}
peer() { # SRC SECONDS TOKEN_BASE
	ip netns exec "$NS" $PY "$HERE/points_peer.py" --src "$1" --dst ${NET}1 --seconds "$2" --token-base "$3" --line 3
}
jget() { $PY -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

"${CTL[@]}" lines active 3 --why "run_points: line 3 active before the outage" >/dev/null || fail "fanoctl lines active 3"

# 1. e2 alive
out=$(peer ${NET}3 1.0 1000)
echo "e2 peer: $out"
[ "$(jget "$out" status)" -gt 0 ] || fail "the e2 peer got no status frame (dataplane not reached)"
wait_states 10 "shadow shadow shadow active shadow shadow shadow" || fail "before the outage: a line is not in its state"

# 2. e2 silent -> lines 0, 3, 4 degraded
wait_states 50 "degraded shadow shadow degraded degraded shadow shadow" || fail "e2 silent: lines 0, 3, 4 did not degrade"
"${CTL[@]}" peers --json > "$TMP/peers.json" 2>&1
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if 2 in [p if isinstance(p,int) else int(str(p).lstrip("e")) for p in d["points_down"]] else 1)' "$TMP/peers.json" ||
	fail "fanoctl peers: e2 not in points_down ($(cat "$TMP/peers.json"))"

# 3. the unmapped station: its status frames on line 3 say degraded, e2 stays down
out=$(peer ${NET}2 0.6 2000)
echo "station while e2 is down: $out"
[ "$(jget "$out" status)" -gt 0 ] || fail "the station got no status frame"
[ "$(jget "$out" degraded)" = "$(jget "$out" status)" ] || fail "status frames on line 3 while e2 is down: not all say degraded ($out)"
wait_states 1 "degraded shadow shadow degraded degraded shadow shadow" || fail "an unmapped source revived e2"

# 4. e2 resumes -> previous states; status frames not degraded
peer ${NET}3 4.0 3000 > "$TMP/e2_again.json" &
BGPID=$!
wait_states 30 "shadow shadow shadow active shadow shadow shadow" || fail "e2 back: the lines did not recover to their previous state"
out=$(peer ${NET}2 0.6 4000)
echo "station after recovery: $out"
[ "$(jget "$out" status)" -gt 0 ] && [ "$(jget "$out" degraded)" = 0 ] || fail "status frames on line 3 after recovery still say degraded ($out)"
wait $BGPID; BGPID=""

"${CTL[@]}" stats --json > "$TMP/stats.json" 2>/dev/null
stop_pid "$GPID"; GPID=""

# 5. the audit trail
"$FANOCTL" audit tail --json -n 200 "$TMP/audit.log" > "$TMP/audit.json" 2>&1 || fail "fanoctl audit tail ($(head -3 "$TMP/audit.json"))"
n_down=$(grep -c 'point e2 down (UDP sources)' "$TMP/audit.json")
n_up=$(grep -c 'point e2 up (UDP sources)' "$TMP/audit.json")
echo "audit: $n_down records 'point e2 down', $n_up 'point e2 up'"
[ "$n_down" -ge 3 ] && [ "$n_up" -ge 3 ] || { fail "audit: expected 3 line changes down and 3 up naming point e2"; head -40 "$TMP/audit.json"; }

if [ $FAILS != 0 ]; then
	echo "---- fanogate log"; grep -v "^TELEMETRY" "$TMP/gate.log" | tail -30
	echo "0 passed, 1 failed"
	exit 1
fi
echo "1 passed, 0 failed"
exit 0
