#!/usr/bin/env bash
# test_fleet_critical_gate.sh - fanofleet --critical-path jump against
# fanogate --no-dataplane (wss on loopback): the fleet's gate decides each
# layer on the status fanogate really sent for its last contribution, and
# a skipped hop leaves nothing to fall back on (fleet_crit.h).
#
# 1. Lines active, a 20 ms relay: the gate passes, the next layers start
#    on the jumped seeds, the median token saves time (the positive
#    control: the checks below can tell a saving from a cost).
# 2. Lines active, a zero relay: the jump is slower than the chain by
#    fanogate's own time; the gate still passes and the hop is skipped, so
#    every token reports a saving <= 0 and the median a negative one (a
#    cost). With a model that takes the earlier of jump and chain, no
#    saving could be negative.
# 3. Lines in shadow (fanoctl lines shadow), the 20 ms relay: the statuses
#    say shadow, the gate never passes, no layer starts on a jumped seed
#    although seeds came in time, and every token pays a cost: each relay
#    waited for the status of ffn_l, which cannot come before ffn_l left.
# Only signs and counts are asserted, no timing band: they hold on a loaded
# machine (a seed later than 20 ms moves a token's saving in 1, rarely the
# median's sign; in 2 and 3 the signs follow from the order of events).
# Env: FG_BUILD_DIR (set by meson).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${FG_BUILD_DIR:-$ROOT/build}
FLEET=$B/tools/fleet/fanofleet GATE=$B/control/daemon/fanogate CTL=$B/tools/fanoctl
. "$ROOT/tests/lib/netns.sh" # fg_need_exec, fg_private_net, fg_init, fg_daemon_start, fg_selfsigned, fg_ini_daemon, fg_verdict
fg_need_exec "$FLEET" "$GATE" "$CTL"
fg_need_cmd openssl
fg_private_net "$@" # the daemon's listeners on loopback in a namespace of this run's own
fg_init fgfl-critgate
LOG=$TMP/test.log
: >"$LOG"

fails=0
ok()  { echo "ok   - $*" | tee -a "$LOG"; }
bad() { echo "FAIL - $*" | tee -a "$LOG"; fails=$((fails + 1)); }
# jq-like: evaluate a Python expression on the run's JSON as d
jget() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }

fg_selfsigned "$TMP"
(umask 077; echo "$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n') coordinator" >"$TMP/tokens")
LAYERS=6 HIDDEN=256
cat >"$TMP/gate.ini" <<INI
[model]
hidden = $HIDDEN
layers = $LAYERS
[lines]
line.1,4,5 = active
line.2,4,6 = active
line.3,4,7 = active
$(fg_ini_daemon "$TMP" 127.0.0.1:0 off tokens)
INI
fg_daemon_start "$TMP/gate.log" "$TMP/gate.log" "$GATE" --no-dataplane --config "$TMP/gate.ini" ||
	{ bad "fanogate did not become ready"; fg_verdict 1 "$TMP/gate.log"; }
GATE_PID=$FG_PID
FG_PIDVARS+=(GATE_PID)

# run NAME ARGS...: one critical-path run of 12 tokens x 5 layers over wss,
# on token_seqs of its own (a slot the gate resolved before answers "late")
BASE=1000
run() {
	local name=$1
	shift
	BASE=$((BASE + 1000))
	timeout 120 "$FLEET" --tls "127.0.0.1:$FG_TLS_PORT" --sni fanogate.test --ca "$TMP/cert.pem" \
		--token-file "$TMP/tokens" --mix wss=1 --wss-conns 1 --layers $LAYERS --hidden $HIDDEN --tokens 12 \
		--window 1 --stage-a-us 200 --stage-g-us 200 --stage-d-us 200 --net-delay-us 100 --critical-path jump \
		--token-base $BASE --quiet --json "$TMP/$name.json" "$@" >"$TMP/$name.log" 2>&1
	local rc=$?
	cat "$TMP/$name.log" >>"$LOG"
	[ $rc -eq 0 ] && [ -s "$TMP/$name.json" ] && return 0
	bad "$name: fanofleet exit $rc"
	tail -5 "$TMP/$name.log"
	return 1
}
# every run: all 12 tokens through 5 layers, every seed bit-exact
complete() {
	[ "$(jget "$1" 'len(d["critical_path"]["tokens"]) == 12 and d["critical_path"]["layers"] == 60 and d["bit_exact"] == d["slots"] == 60 and d["wrong"] == 0')" = True ]
}
p50() { jget "$1" 'sorted(t["saving_ns"] for t in d["critical_path"]["tokens"])[5]'; }

# ---- 1. active lines, a 20 ms relay: the jump saves ----------------------------
if run active-slow-relay --relay-us 20000; then
	J=$TMP/active-slow-relay.json
	complete "$J" && ok "active, relay 20 ms: 12 tokens, 60 layers, every seed bit-exact" || bad "active, relay 20 ms: incomplete run"
	[ "$(jget "$J" 'd["critical_path"]["layers_gate_passed"] > 0 and d["critical_path"]["layers_jumped"] > 0')" = True ] &&
		ok "active: the gate passed on $(jget "$J" 'd["critical_path"]["layers_gate_passed"]') of 60 layers, the hop skipped" ||
		bad "active: the gate never passed ($(grep '^  critical path' "$TMP/active-slow-relay.log"))"
	s=$(p50 "$J")
	[ "$s" -gt 0 ] && ok "active, relay 20 ms: the median token saves ($s ns)" || bad "active, relay 20 ms: median saving $s ns, not > 0"
fi

# ---- 2. active lines, no relay: the jump costs -----------------------------------
if run active-no-relay --relay-us 0; then
	J=$TMP/active-no-relay.json
	complete "$J" && ok "active, relay 0: 12 tokens, 60 layers, every seed bit-exact" || bad "active, relay 0: incomplete run"
	[ "$(jget "$J" 'd["critical_path"]["layers_jumped"] > 0')" = True ] &&
		ok "active, relay 0: the hop was skipped on $(jget "$J" 'd["critical_path"]["layers_jumped"]') layers" ||
		bad "active, relay 0: no layer jumped"
	[ "$(jget "$J" 'all(t["saving_ns"] <= 0 for t in d["critical_path"]["tokens"])')" = True ] &&
		ok "active, relay 0: no token saves anything" || bad "active, relay 0: a token saved time with a jump slower than the chain"
	s=$(p50 "$J")
	[ "$s" -lt 0 ] && ok "active, relay 0: the median token pays a cost ($s ns)" || bad "active, relay 0: median saving $s ns, not < 0"
	[ "$(jget "$J" 'd["critical_path"]["saving_jumped_ns"] < 0')" = True ] &&
		ok "active, relay 0: the jumped layers cost time in sum" || bad "active, relay 0: jumped layers did not cost"
fi

# ---- 3. lines in shadow: the gate never passes -----------------------------------
for l in 1 3 5; do
	FANOCTL_SOCKET=$TMP/op.sock "$CTL" lines shadow "$l" --why "test: shadow" >>"$LOG" 2>&1 || bad "fanoctl lines shadow $l"
done
if run shadow --relay-us 20000; then
	J=$TMP/shadow.json
	complete "$J" && ok "shadow: 12 tokens, 60 layers, every seed bit-exact" || bad "shadow: incomplete run"
	[ "$(jget "$J" 'd["facts"]["shadow_mode"] > 0')" = True ] && ok "shadow: the statuses said shadow_mode" ||
		bad "shadow: no status said shadow_mode"
	[ "$(jget "$J" 'd["critical_path"]["layers_gate_passed"] == 0 and d["critical_path"]["layers_jumped"] == 0')" = True ] &&
		ok "shadow: the gate never passed, no hop skipped" ||
		bad "shadow: $(grep '^  critical path layers' "$TMP/shadow.log")"
	[ "$(jget "$J" 'd["critical_path"]["layers_in_time"] > 0')" = True ] &&
		ok "shadow: $(jget "$J" 'd["critical_path"]["layers_in_time"]') seeds were in time and unused (the gate, not the timing, kept the hop)" ||
		bad "shadow: no seed in time with a 20 ms relay"
	[ "$(jget "$J" 'all(t["saving_ns"] < 0 and t["jumped"] == 0 for t in d["critical_path"]["tokens"])')" = True ] &&
		ok "shadow: every token pays a cost (each relay waited for its status, which follows ffn_l)" ||
		bad "shadow: a token saved time, or lost none, with the gate closed"
fi

fg_verdict "$fails" "$LOG"
