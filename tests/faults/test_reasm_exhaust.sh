#!/bin/bash
# test_reasm_exhaust.sh FANOGATE FANOCTL - overload: reassembly
# contexts exhausted, end to end. The daemon fanogate with its DPDK
# dataplane on af_packet over a veth pair, [udp] reasm_contexts = 64,
# reasm_timeout_ms = 500; two sources in a network namespace:
#
#   [namespace fgrx-n$$]                                  [root namespace]
#   X.3 flood: one datagram per fragment group,            fanogate
#       64 source ports, groups never complete  --veth-->  (af_packet on fgrx$$a,
#   X.2 good station: whole 3-fragment contributions,       X.1:4242; TLS and the
#       resends, its own consumer (:7000)                   operator socket local)
#
# The driver (test_reasm_exhaust.py, run in the namespace) checks, through
# the EAL telemetry socket (/fanogate/counters), /proc and fanoctl stats:
#  - a quiet table of 64 takes exactly 64 groups of a 256-group burst; the
#    other 192 and a good frame sent while full are refused, counted in
#    drop_reasm_overflow (exactly 192 + 3), the refused frame is not ACKed
#    (or, with per-source fairness, the good frame is admitted in place of
#    the flood's oldest group: exactly 192 refused, the frame ACKed, and then
#    every good frame must get through during the sustained flood too);
#  - after reasm_timeout_ms all 64 time out (reasm_timeout += 64) and a new
#    burst gets all 64 again (the contexts came back);
#  - under a sustained flood (FG_REASM_PPS, default 10000/s for
#    FG_REASM_SECONDS, default 4 s) the good station's 40 slots all resolve
#    bit-exact (during the flood or through resends after it), refusals are
#    at least the flood minus what 64 contexts could hold; the share of its
#    attempts that got through during the flood is reported (fairness);
#  - afterwards all 64 contexts are free again (no leak); the packet and
#    fragment identities close, no datagram counted twice, no frame
#    buffer ran out, fanoctl stats shows the same refusals, RSS growth under
#    the flood stays under 32 MiB.
# One "RESULT {json}" line with the figures; appended to $FG_FAULTS_RESULTS
# when set. Everything it creates is named fgrx* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, openssl or the
# binaries missing, or the dataplane cannot run its af_packet port here.
set -u
GATE=${1:?usage: test_reasm_exhaust.sh FANOGATE FANOCTL}
FANOCTL=${2:?fanoctl}
HERE=$(cd "$(dirname "$0")" && pwd)
CONTEXTS=64
TIMEOUT_MS=500

. "$HERE/../lib/delivery.sh"
fg_dlv_begin_daemon fgrx 89 "$GATE" "$FANOCTL" # dataplane side $VA (root namespace), sources on $VB
ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
ip -n "$NS" addr add ${NET}3/24 dev "$VB"
# deadline_ms: the good station's slots must outlive the flood (they resolve
# through resends once it ends); the flood's own slots are never completed
cat > "$TMP/fanogate.ini" <<EOC
$(fg_ini_model 768 8 4096)
deadline_ms = 30000
$(fg_ini_udp "${NET}0/24")
reasm_contexts = $CONTEXTS
reasm_timeout_ms = $TIMEOUT_MS
[consumers]
default = ${NET}2:7000
$(fg_ini_af_packet)
$(fg_ini_daemon "$TMP" 127.0.0.1:0)
EOC

fg_dlv_env
fg_gate_start GPID "$TMP/gate.log" "$GATE" --config "$TMP/fanogate.ini"
TEL=/var/run/dpdk/fgdp$GPID/dpdk_telemetry.v2
[ -S "$TEL" ] || { tail -20 "$TMP/gate.log"; echo "FAIL: no EAL telemetry socket at $TEL"; exit 1; }

ip netns exec "$NS" $PY "$HERE/test_reasm_exhaust.py" --good-src ${NET}2 --flood-src ${NET}3 --dst ${NET}1 \
	--contexts $CONTEXTS --timeout-ms $TIMEOUT_MS --pps "${FG_REASM_PPS:-10000}" --seconds "${FG_REASM_SECONDS:-4}" \
	--telemetry "$TEL" --gate-pid $GPID --fanoctl "$FANOCTL" --op-sock "$TMP/op.sock" > "$TMP/drv.log" 2>&1
RC=$?
cat "$TMP/drv.log"
alive "$GPID" || { echo "FAIL: fanogate died during the run"; RC=1; }
fg_stop GPID; GRC=$?
if [ "$GRC" != 0 ]; then echo "FAIL: fanogate exit $GRC"; RC=1; fi
if [ -n "${FG_FAULTS_RESULTS:-}" ]; then
	grep '^RESULT ' "$TMP/drv.log" | sed 's/^RESULT //' >> "$FG_FAULTS_RESULTS"
fi
fg_verdict $RC "$TMP/gate.log"
