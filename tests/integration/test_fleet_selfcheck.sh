#!/usr/bin/env bash
# test_fleet_selfcheck.sh - fanofleet checks itself, then fanogate.
#
# 1. fanofleet's encoder against the core decoders: the loopback fake
#    receiver (fanofleet --fake-receiver) decodes every datagram with the
#    fg_* codecs and resolves Pair X slots with its own, separate reduction;
#    the emulator must get every resolved seed back bit for bit, see the one
#    injected corruption in the resolved seed, and the fake must flag exactly
#    that slot as divergent and count no malformed frame. Run with injected
#    loss and duplication (retransmits under new frame_ids must heal it).
# 2. The retransmit path: a fake that never ACKs must make the sender resend
#    (and still see every seed, since the first attempt lands).
# 3. A negative control: a fake that drops most fragments with a short slot
#    timeout must make fanofleet fail (exit 2), so the checks above can fail.
#    3b. The fleet split across two fakes (--udp-node): each resolves exactly
#    its layers' slots; SIGUSR1 drains the run (exit 0 on the tokens issued).
# 4. Against the daemon when it is built: fanogate --no-dataplane on
#    loopback, fanofleet over wss:// and HTTPS POST with a Bearer token and a
#    self-signed CA, a corruption injected on line 3: exit 0, every seed bit
#    exact, divergence visible.
#
# Usage: test_fleet_selfcheck.sh [FANOFLEET [FANOGATE]]
#        (or FANOFLEET / FANOGATE, or FG_BUILD_DIR, in the environment;
#        fanogate may be absent: its part is then skipped)
# Loopback only; every process is bounded in time and killed on exit.
set -uo pipefail

B=${FG_BUILD_DIR:-}
FLEET=${1:-${FANOFLEET:-${B:+$B/tools/fleet/fanofleet}}}
GATE=${2:-${FANOGATE:-${B:+$B/control/daemon/fanogate}}}
if [ -z "$FLEET" ] || [ ! -x "$FLEET" ]; then
	echo "SKIP: fanofleet binary not found (arg 1, FANOFLEET or FG_BUILD_DIR)"; exit 77
fi
. "$(dirname "$0")/../lib/netns.sh" # fg_private_net, fg_daemon_start, fg_wait_until, fg_selfsigned, fg_ini_daemon, wait_exit
fg_private_net "$@" # fixed loopback ports below, in a namespace of this run's own
T=$(mktemp -d /tmp/fgfl-selfcheck.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass=0 fail=0
ok()  { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }
jget() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }


start_fake() { # listen consumer log [extra...]
	local l=$1 c=$2 log=$3; shift 3
	"$FLEET" --fake-receiver --listen "127.0.0.1:$l" --consumer "127.0.0.1:$c" --duration 120 "$@" >"$log" 2>&1 &
	pids+=($!)
	fg_wait_until 10 grep -q "fake: receiving" "$log" 2>/dev/null
}
# SIGINT ends a fake receiver; one that has not ended 10 s later is shown
# (proc_dump) and killed, so a hang fails here, named, not at meson's timeout
stop_fake() {
	kill -INT "$1" 2>/dev/null
	wait_exit "$1" 10 || { bad "fake receiver $1 did not end on SIGINT"; kill -KILL "$1" 2>/dev/null; }
	wait "$1" 2>/dev/null
}

# ---- 1. encoder vs decoders, loss and duplication ----------------------
L=15001 C=15002 # in this run's own namespace (fg_private_net)
start_fake "$L" "$C" "$T/fake1.log" || bad "fake receiver did not start"
fake=${pids[-1]}
timeout 120 "$FLEET" --udp "127.0.0.1:$L" --consumer "127.0.0.1:$C" --mix udp=1 --tokens 40 --window 8 \
	--loss 0.01 --dup 0.02 --corrupt-at 20 --corrupt-line 5 --json "$T/r1.json" --quiet >"$T/fleet1.log" 2>&1
rc=$?
stop_fake "$fake"
[ $rc -eq 0 ] && ok "self-check over UDP with loss and duplication exits 0" || { bad "self-check exit $rc"; cat "$T/fleet1.log"; }
if [ -f "$T/r1.json" ]; then
	[ "$(jget "$T/r1.json" 'd["bit_exact"] == d["slots"] == 40*27')" = True ] && ok "1080 slots, all bit-exact" || bad "not all slots bit-exact: $(cat "$T/r1.json")"
	[ "$(jget "$T/r1.json" 'd["divergence_seen"]')" = 1 ] && ok "injected corruption visible in the resolved seed" || bad "divergence_seen != 1"
	[ "$(jget "$T/r1.json" 'd["wrong"]')" = 0 ] && ok "no wrong seed" || bad "wrong seeds"
fi
grep -q "malformed 0" "$T/fake1.log" && ok "core decoders accept every frame fanofleet encodes" || { bad "fake counted malformed frames"; cat "$T/fake1.log"; }
[ "$(grep -c '^fake: DIVERGENCE' "$T/fake1.log")" = 1 ] && ok "fake flags exactly one divergent slot" || bad "fake divergence count: $(grep -c DIVERGENCE "$T/fake1.log")"
grep -q "canonical match 1079 divergence 1" "$T/fake1.log" && ok "1079 canonical matches + 1 divergence" || bad "canonical counts: $(tail -1 "$T/fake1.log")"

# ---- 2. retransmits when nobody ACKs -----------------------------------
L=15003 C=15004
start_fake "$L" "$C" "$T/fake2.log" --no-ack || bad "fake (no-ack) did not start"
fake=${pids[-1]}
timeout 60 "$FLEET" --udp "127.0.0.1:$L" --consumer "127.0.0.1:$C" --mix udp=1 --tokens 4 --window 4 --rto-ms 50 \
	--json "$T/r2.json" >"$T/fleet2.log" 2>&1
rc=$?
stop_fake "$fake"
[ $rc -eq 0 ] && ok "no-ACK receiver: every seed still resolves" || bad "no-ACK run exit $rc"
resends=$(sed -n 's/.*resends \([0-9]*\).*/\1/p' "$T/fleet2.log" | head -1)
[ "${resends:-0}" -gt 0 ] && ok "sender retransmits without ACKs ($resends resends)" || bad "no resends without ACKs"
seeds=$(sed -n 's/.* seeds \([0-9]*\) .*/\1/p' "$T/fake2.log")
[ "${seeds:-0}" -gt 324 ] && ok "resends reach the receiver ($seeds seed frames for 324 contributions)" || bad "fake saw ${seeds:-0} seed frames, expected more than 324"

# ---- 3. negative control -----------------------------------------------
L=15005 C=15006
start_fake "$L" "$C" "$T/fake3.log" --fake-drop 0.6 || bad "fake (drop) did not start"
fake=${pids[-1]}
timeout 60 "$FLEET" --udp "127.0.0.1:$L" --consumer "127.0.0.1:$C" --mix udp=1 --tokens 2 --window 2 \
	--mode burst --slot-timeout-ms 300 --rto-ms 1000 --quiet >"$T/fleet3.log" 2>&1
rc=$?
stop_fake "$fake"
[ $rc -eq 2 ] && ok "missing seeds make fanofleet exit 2" || bad "lossy run exit $rc, expected 2"

# ---- 3b. split across two receivers, drained ---------------------------
# --udp-node: layers 4-7 to the second fake, 1-3 to the first; SIGUSR1 once
# the run is under way: no new token, exit 0 on those issued
LA=15007 LB=15009 C=15008
start_fake "$LA" "$C" "$T/fakeA.log" --layers 8 --hidden 64 || bad "fake A did not start"
fakeA=${pids[-1]}
start_fake "$LB" "$C" "$T/fakeB.log" --layers 8 --hidden 64 || bad "fake B did not start"
fakeB=${pids[-1]}
"$FLEET" --udp "127.0.0.1:$LA" --udp-node "4-7=127.0.0.1:$LB" --consumer "127.0.0.1:$C" --mix udp=1 --duration 60 \
	--layers 8 --hidden 64 --tokens 1000000 --rate 100 --canonical none --json "$T/r3b.json" >"$T/fleet3b.log" 2>&1 &
fl=$!
pids+=("$fl")
fg_wait_until 10 grep -q "^fleet: " "$T/fleet3b.log" # its first progress line: under way
kill -USR1 "$fl"
# drained: the tokens issued end within the slot timeout (the run's own
# bound is --duration 60)
wait_exit "$fl" 60 || { bad "split run: fanofleet did not end 60 s after SIGUSR1"; kill -KILL "$fl"; }
wait "$fl"
rc=$?
stop_fake "$fakeA"
stop_fake "$fakeB"
n=$(jget "$T/r3b.json" 'd["tokens_done"]' 2>/dev/null || echo 0)
[ $rc -eq 0 ] && [ "$(jget "$T/r3b.json" 'd["drained"] and d["bit_exact"] == d["slots"] == 7 * d["tokens_done"] > 0')" = True ] &&
	ok "split run drained by SIGUSR1: exit 0, $n tokens, every seed bit-exact" || { bad "split run exit $rc"; tail -5 "$T/fleet3b.log"; }
grep -q "resolved $((3 * n)) " "$T/fakeA.log" && grep -q "resolved $((4 * n)) " "$T/fakeB.log" &&
	ok "--udp-node: layers 1-3 on the first receiver ($((3 * n)) slots), 4-7 on the second ($((4 * n)))" ||
	bad "split: $(tail -1 "$T/fakeA.log") / $(tail -1 "$T/fakeB.log")"

# ---- 4. against fanogate ------------------------------------------------
if [ -z "$GATE" ] || [ ! -x "$GATE" ]; then
	echo "note: fanogate not built; daemon part skipped"
else
	D="$T/gate"; mkdir -p "$D"
	fg_selfsigned "$D"
	tok=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077; echo "$tok coordinator" >"$D/tokens")
	cat >"$D/gate.ini" <<INI
[model]
hidden = 1536
layers = 28
[lines]
line.1,4,5 = active
line.2,4,6 = active
line.3,4,7 = active
shadow_sample = 1.0
$(fg_ini_daemon "$D" 127.0.0.1:0 127.0.0.1:0 tokens)
[audit]
alert_command = echo "\$FG_EVENT line=\$FG_LINE layer=\$FG_LAYER token=\$FG_TOKEN" >> $D/alerts.log
alert_min_interval_ms = 0
INI
	up=0
	fg_daemon_start "$D/gate.log" "$D/gate.log" timeout 120 "$GATE" --no-dataplane --config "$D/gate.ini" && up=1
	pids+=("$FG_PID")
	TP=$FG_TLS_PORT # the listener on port 0 reports the port it got
	if [ $up -eq 0 ]; then
		bad "fanogate did not become ready"; tail -20 "$D/gate.log"
	else
		timeout 120 "$FLEET" --tls "127.0.0.1:$TP" --sni fanogate.test --ca "$D/cert.pem" --token-file "$D/tokens" \
			--mix wss=1,https=1 --assign slot --tokens 20 --corrupt-at 10 --corrupt-line 3 \
			--json "$T/r4.json" --quiet >"$T/fleet4.log" 2>&1
		rc=$?
		[ $rc -eq 0 ] && ok "fanogate: every seed over wss/https bit-exact, corruption seen" || { bad "fanofleet vs fanogate exit $rc"; tail -25 "$T/fleet4.log"; tail -20 "$D/gate.log"; }
		fg_wait_until 5 test -s "$D/alerts.log"
		[ -s "$D/alerts.log" ] && ok "fanogate ran the alert command: $(head -1 "$D/alerts.log")" || bad "no alert from fanogate"
	fi
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
