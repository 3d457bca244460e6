#!/bin/bash
# run_flood_fleet.sh FANOGATE FANOFLEET - under each
# flood (fragment 0, ACK, garbage, canonical digests, conflicts) the fleet
# emulator loses no seed it would otherwise have got (and, judged only with
# FG_FLOOD_RATE_BAR=1 as bench/hostile/flood.sh runs it, keeps at least 50%
# of its no-flood seed rate); one spoofed datagram changes no line state,
# epoch or delivery.
#
#   [namespace fgff-n$$]                          [root namespace]
#   fanofleet stations, consumer  --veth-->  fanogate (its DPDK dataplane,
#     bind ${NET}2, consumer :17000           af_packet on fgff$$a, ${NET}1:4242;
#   spoof_flood.py (raw socket,               TLS and metrics on 127.0.0.1)
#     forged ${NET}3 / the consumer)
#
# The daemon, not fanogate-dp: conflicts and canonical reports reach the
# control plane (epoch guard, shadow audit). The fleet's address ${NET}2 is
# its coordinator source ([shadow] canonical_sources) and serves every
# point ([points] e1..e7), so its own canonical digests are judged and a
# conflict from it would be attributed; the spoofer's ${NET}3 is inside
# [udp] allow and nothing else. This script builds the topology and starts
# the daemon; hostile_flood_fleet.py runs the phases and judges them.
#
# Everything it creates is named fgff* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
GATE=${1:?usage: run_flood_fleet.sh FANOGATE FANOFLEET}
FLEET=${2:?fanofleet}
HERE=$(cd "$(dirname "$0")" && pwd)

. "$HERE/../lib/delivery.sh"
fg_dlv_begin_daemon fgff 93 "$GATE" "$FLEET" # root also for the raw sockets
(umask 077; echo "fgff$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n') fleet" > "$TMP/tokens")
POINTS=""
for p in 1 2 3 4 5 6 7; do POINTS="${POINTS}e$p = ${NET}2/32
"; done
fg_dlv_ini "deadline_ms = 3000" "" "" "$(fg_ini_daemon "$TMP" 127.0.0.1:0 127.0.0.1:0 tokens)
[shadow]
canonical_sources = ${NET}2/32
[points]
${POINTS}peer_timeout_ms = 600000"
fg_dlv_env
fg_gate_start DPPID "$TMP/dp.log" "$GATE" --config "$TMP/fanogate.ini"
[ -n "$FG_METRICS_PORT" ] || { echo "FAIL: the daemon reported no metrics port"; exit 1; }

FG_NS=$NS FG_NET=$NET FG_TMP=$TMP FG_METRICS_PORT=$FG_METRICS_PORT FG_FLEET=$FLEET FG_GATE_PID=$DPPID \
	PYTHONPATH="$HERE/../lib" $PY "$HERE/hostile_flood_fleet.py"
RC=$?
fg_stop DPPID || { echo "FAIL: fanogate exit $?"; RC=1; }
if [ $RC != 0 ]; then
	echo "---- fanogate (last lines)"
	grep -v "^TELEMETRY" "$TMP/dp.log" | tail -30
fi
exit $RC
