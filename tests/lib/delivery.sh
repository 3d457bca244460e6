# tests/lib/delivery.sh - the fleet/relays/dataplane topology the fault and
# hostile delivery tests share (tests/faults/run_faults.sh, run_delivery.sh,
# tests/hostile/run_*.sh):
#
#   [namespace $NS]                                       [root namespace]
#   fanofleet stations --> fanorelay r1 -----------veth--> fanogate-dp
#     127.0.0.1:14000       bind ${NET}2                  (af_packet on $VA,
#   fanofleet consumer <-- fanorelay r2 <----------veth--  ${NET}1:4242)
#     127.0.0.1:17001       listen $DLV_CONSUMER:17000 (${NET}2 by default)
#
# Source it after `set -u` (it sources tests/lib/netns.sh). Sets PY (the
# Python the tests run), and through fg_dlv_setup ID, TMP, NS, VA, VB, NET.
# Caller: the test script's main shell.

. "${BASH_SOURCE[0]%/*}/netns.sh"
PY=/usr/bin/python3 # Debian's, with the packages the helpers use

# fg_dlv_begin PREFIX OCTET BINARY...: fg_dlv_require BINARY..., then
# fg_dlv_setup PREFIX OCTET: how a delivery test starts.
fg_dlv_begin() {
	local prefix=$1 octet=$2
	shift 2
	fg_dlv_require "$@"
	fg_dlv_setup "$prefix" "$octet"
}

# fg_dlv_begin_daemon PREFIX OCTET BINARY...: fg_dlv_begin for a test that
# runs the daemon (its TLS listener): skips without openssl, then makes
# $TMP/cert.pem and key.pem (fg_selfsigned).
fg_dlv_begin_daemon() {
	fg_need_cmd openssl
	fg_dlv_begin "$@"
	fg_selfsigned "$TMP"
}

# fg_dlv_setup PREFIX OCTET: fg_init PREFIX, namespace PREFIX-n$ID, veth
# PREFIX${ID}a (root side, 4 queue pairs so af_packet's fanout spreads the
# relay's per-station flows) and PREFIX${ID}b (${NET}2 in the namespace),
# NET=10.OCTET.(ID % 250).
fg_dlv_setup() {
	fg_init "$1"
	NS=$1-n$ID VA=$1${ID}a VB=$1${ID}b NET=10.$2.$((ID % 250)).
	fg_netns "$NS"
	fg_veth "$VA" "$VB" "$NS" 4
	ip -n "$NS" addr add "${NET}2/24" dev "$VB"
}

# fg_dlv_ini SLOTS_LINES CONSUMERS_LINES [DATAPLANE_LINES] [MORE]:
# $TMP/fanogate.ini for the topology: 8 layers of 512, rules 1,3,5, UDP on
# 4242 from ${NET}0/24, the consumer at $DLV_CONSUMER:17000 (${NET}2 unless
# set), af_packet, $LCORES lcores (1); the caller's extra [slots],
# [consumers] and [dataplane] lines, and MORE sections at the end.
fg_dlv_ini() {
	cat > "$TMP/fanogate.ini" <<EOC
$(fg_ini_model 512 8 8192)
$1
$(fg_ini_udp "${NET}0/24")
reasm_timeout_ms = 250
[consumers]
default = ${DLV_CONSUMER:-${NET}2}:17000
$2
$(fg_ini_af_packet "${LCORES:-1}")
${3:-}
${4:-}
EOC
}

# fg_dlv_start DP RELAY FLEET [CONSUMERS_LINES] [DATAPLANE_LINES]: a
# delivery run up to its measured part, after fg_dlv_setup: fanogate.ini
# (deadline_ms 3000; resend_ms 200, $RESENDS resends, $PENDING pending_max
# and CONSUMERS_LINES; DATAPLANE_LINES), fanogate-dp, the relays ($R2 on
# the consumer side) and the probe token (fleet options "${CACK[@]}").
fg_dlv_start() {
	fg_dlv_ini "deadline_ms = 3000" "resend_ms = 200
resends = $RESENDS
pending_max = $PENDING
${4:-}" "${5:-}"
	fg_dlv_dp_start "$1"
	fg_dlv_relays "$2" "" "$R2"
	fg_dlv_probe "$3" "${CACK[@]}"
}

# fg_dlv_env: the dataplane's environment for the topology's veth.
fg_dlv_env() { export FG_IFACE=$VA FG_DP_IP4=${NET}1 FG_DP_IP6= FG_IDLE_SLEEP_US=50 FG_HUGEPAGES=off; }

# fg_dlv_dp_start DP [SECONDS]: fanogate-dp on the topology for up to
# SECONDS (150), its report in $TMP/dp.json; DPPID; waits for readiness
# (fg_dp_start).
fg_dlv_dp_start() {
	fg_dlv_env
	fg_dp_start DPPID "$1" --config "$TMP/fanogate.ini" --profile "$FG_ROOT/drivers-config/af_packet.ini" \
		--duration "${2:-150}" --report "$TMP/dp.json"
	# FG_DELIVERY_BY_REF=on (af_packet.ini's [port] delivery_by_ref): the
	# run must really send by reference, or it proves nothing about it
	if [ "${FG_DELIVERY_BY_REF:-}" = on ] && ! grep -q "deliveries by reference" "$TMP/dp.log"; then
		tail -20 "$TMP/dp.log"
		echo "FAIL: FG_DELIVERY_BY_REF=on but the dataplane copies its deliveries"
		exit 1
	fi
}

# fg_dlv_relays RELAY "R1_ARGS" "R2_ARGS": the two relays (fault options
# word-split), --check-acks, stats in $TMP/r1.json and r2.json; R1PID,
# R2PID; waits for both to bind (exit 1 when they do not).
fg_dlv_relays() {
	# shellcheck disable=SC2086
	fg_bg R1PID ip netns exec "$NS" "$1" --listen 127.0.0.1:14000 --server "${NET}1:4242" --bind "${NET}2" \
		--seed "$ID" $2 --check-acks --duration 120 --quiet --stats "$TMP/r1.json" --ready-file "$TMP/r1.ready" \
		> "$TMP/r1.log" 2>&1
	# shellcheck disable=SC2086
	fg_bg R2PID ip netns exec "$NS" "$1" --listen "${DLV_CONSUMER:-${NET}2}:17000" --server 127.0.0.1:17001 \
		--seed $((ID + 1)) $3 --check-acks --duration 120 --quiet --stats "$TMP/r2.json" --ready-file "$TMP/r2.ready" \
		> "$TMP/r2.log" 2>&1
	fg_wait_until 10 fg_ready_files "" "$TMP/r1.ready" "$TMP/r2.ready" ||
		{ cat "$TMP/r1.log" "$TMP/r2.log"; echo "FAIL: relays did not start"; exit 1; }
}

# fg_dlv_probe FLEET [FLEET_ARGS...]: one token before the run, its own
# token range, not in the figures: the first datagrams into a fresh veth
# are sometimes lost while the dataplane learns the neighbour.
fg_dlv_probe() {
	local fleet=$1
	shift
	ip netns exec "$NS" "$fleet" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 \
		--hidden 512 --tokens 1 --window 1 --token-base 900000 --canonical none --quiet --slot-timeout-ms 3000 \
		--max-missing 7 "$@" > "$TMP/probe.log" 2>&1
}

# fg_dlv_stop: stop the relays and the dataplane (it writes its report on
# TERM); DPRC is the dataplane's exit status.
fg_dlv_stop() {
	fg_stop R1PID
	fg_stop R2PID
	fg_stop DPPID
	DPRC=$?
}

# fg_dlv_drain: after the fleet's last token, wait (10 s at most) until
# the dataplane's delivery ledger closes: every seed it sent was ACKed or
# given up (seeds_sent = delivery_acked + delivery_given_up, read from its
# DPDK telemetry, fgtest/telemetry.py), so the last ACKs through the relays
# and the last give-ups are in its counters before it is stopped. When it
# does not close, says so and returns: the verdict then reports the
# deliveries still pending. A run that leaves deliveries pending on
# purpose (run_delivery.sh fleet_window) does not call it.
fg_dlv_drain() {
	PYTHONPATH="${BASH_SOURCE[0]%/*}" "${PY:-python3}" -m fgtest.telemetry ledger-closed "$DPPID" 10 || true
}

# fg_dlv_dump [NAME...]: after a failed verdict, the logs a person needs:
# the fleet's last lines, each named relay's log (r1, r2), the dataplane's
# last lines (telemetry left out), and any other $TMP/NAME.log named.
fg_dlv_dump() {
	local n
	echo "---- fleet"; tail -25 "$TMP/fleet.log"
	for n in "$@"; do echo "---- $n"; cat "$TMP/$n.log"; done
	echo "---- fanogate-dp"; grep -v "^TELEMETRY" "$TMP/dp.log" | tail -20
}

# fg_dlv_require BINARY...: the topology's skip checks (root, ip,
# python3, each BINARY built).
fg_dlv_require() {
	fg_need_root "namespace, veth, AF_PACKET"
	fg_need_cmd ip "$PY"
	fg_need_exec "$@"
}

# fg_dlv_fleet FLEET WINDOW [FLEET_ARGS...]: the measured run: $TOKENS
# tokens (token_seq from 1000), WINDOW in flight, the consumer lingering
# through the last resends ((RESENDS + 1) x 200 ms resend_ms + 500 ms, or
# until quiet for LINGER_QUIET_MS, default 400: on a lossy path set it
# longer than the resends the path can lose in a row, or the consumer
# leaves while a seed is still resent to it);
# figures in $TMP/fleet.json; FRC is fanofleet's exit status.
fg_dlv_fleet() {
	local fleet=$1 window=$2
	shift 2
	ip netns exec "$NS" "$fleet" "$@" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 \
		--hidden 512 --tokens "$TOKENS" --window "$window" --seed $((ID % 1000 + 1)) --token-base 1000 \
		--canonical none --slot-timeout-ms 5000 --max-missing 1000000 --duration 100 --quiet \
		--json "$TMP/fleet.json" --linger-ms $(( (RESENDS + 1) * 200 + 500 )) \
		--linger-quiet-ms "${LINGER_QUIET_MS:-400}" > "$TMP/fleet.log" 2>&1
	FRC=$?
}
