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
HERE=$(cd "$(dirname "$0")" && pwd)

. "$HERE/../lib/delivery.sh"
fg_dlv_begin_daemon fgdr 92 "$GATE" "$FANOCTL"

FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

ip -n "$NS" addr add ${NET}3/24 dev "$VB"
cat > "$TMP/fanogate.ini" <<EOC
[model]
hidden = 16
layers = 4
[slots]
capacity = 4096
deadline_ms = 500
$(fg_ini_udp "${NET}0/24")
[points]
e2 = ${NET}3/32
peer_timeout_ms = 800
$(fg_ini_af_packet)
$(fg_ini_daemon "$TMP" 127.0.0.1:0)
[audit]
group_commit_us = 0
EOC

fg_dlv_env
fg_gate_start GPID "$TMP/gate.log" "$GATE" --config "$TMP/fanogate.ini"
CTL=("$FANOCTL" --socket "$TMP/op.sock")

# effective states of the seven lines, space separated
states() { "${CTL[@]}" lines --json | $PY -c 'import json,sys; print(" ".join(l["state"] for l in json.load(sys.stdin)["lines"]))'; }
states_are() { [ "$(states)" = "$1" ]; }
# wait up to $1 seconds (0: look once) for states == $2
wait_states() {
	fg_wait_until "$1" states_are "$2" && return 0
	echo "  lines: '$(states)', wanted '$2'"
	return 1
}
peer() { # SRC SECONDS TOKEN_BASE
	ip netns exec "$NS" $PY "$HERE/points_peer.py" --src "$1" --dst ${NET}1 --seconds "$2" --token-base "$3" --line 3
}
jget() { $PY -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

"${CTL[@]}" lines active 3 --why "run_points: line 3 active before the outage" >/dev/null || fail "fanoctl lines active 3"

# 1. e2 alive
# (the states are read while the peer still sends: once it stops, e2 is
# down again after peer_timeout_ms, sooner than a loaded box runs fanoctl)
fg_bg BGPID peer ${NET}3 3.0 1000 > "$TMP/e2_first.json"
wait_states 3 "shadow shadow shadow active shadow shadow shadow" || fail "before the outage: a line is not in its state"
wait_exit $BGPID 30 || { fail "the e2 peer (3 s) did not end"; kill -KILL $BGPID; }
wait $BGPID; BGPID=""
out=$(cat "$TMP/e2_first.json")
echo "e2 peer: $out"
[ "$(jget "$out" status)" -gt 0 ] || fail "the e2 peer got no status frame (dataplane not reached)"

# 2. e2 silent -> lines 0, 3, 4 degraded
wait_states 5 "degraded shadow shadow degraded degraded shadow shadow" || fail "e2 silent: lines 0, 3, 4 did not degrade"
"${CTL[@]}" peers --json > "$TMP/peers.json" 2>&1
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if 2 in [p if isinstance(p,int) else int(str(p).lstrip("e")) for p in d["points_down"]] else 1)' "$TMP/peers.json" ||
	fail "fanoctl peers: e2 not in points_down ($(cat "$TMP/peers.json"))"

# 3. the unmapped station: its status frames on line 3 say degraded, e2 stays down
out=$(peer ${NET}2 0.6 2000)
echo "station while e2 is down: $out"
[ "$(jget "$out" status)" -gt 0 ] || fail "the station got no status frame"
[ "$(jget "$out" degraded)" = "$(jget "$out" status)" ] || fail "status frames on line 3 while e2 is down: not all say degraded ($out)"
wait_states 0 "degraded shadow shadow degraded degraded shadow shadow" || fail "an unmapped source revived e2"

# 4. e2 resumes -> previous states; status frames not degraded
fg_bg BGPID peer ${NET}3 4.0 3000 > "$TMP/e2_again.json"
wait_states 3 "shadow shadow shadow active shadow shadow shadow" || fail "e2 back: the lines did not recover to their previous state"
out=$(peer ${NET}2 0.6 4000)
echo "station after recovery: $out"
[ "$(jget "$out" status)" -gt 0 ] && [ "$(jget "$out" degraded)" = 0 ] || fail "status frames on line 3 after recovery still say degraded ($out)"
wait_exit $BGPID 30 || { fail "the e2 peer (4 s) did not end"; kill -KILL $BGPID; }
wait $BGPID; BGPID=""

"${CTL[@]}" stats --json > "$TMP/stats.json" 2>/dev/null
fg_stop GPID

# 5. the audit trail
"$FANOCTL" audit tail --json -n 200 "$TMP/audit.log" > "$TMP/audit.json" 2>&1 || fail "fanoctl audit tail ($(head -3 "$TMP/audit.json"))"
n_down=$(grep -c 'point e2 down (UDP sources)' "$TMP/audit.json")
n_up=$(grep -c 'point e2 up (UDP sources)' "$TMP/audit.json")
echo "audit: $n_down records 'point e2 down', $n_up 'point e2 up'"
[ "$n_down" -ge 3 ] && [ "$n_up" -ge 3 ] || { fail "audit: expected 3 line changes down and 3 up naming point e2"; head -40 "$TMP/audit.json"; }

fg_verdict $FAILS "$TMP/gate.log"
