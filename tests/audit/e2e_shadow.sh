#!/usr/bin/env bash
# e2e_shadow.sh - the shadow audit end to end with the real daemon and the
# real fleet emulator, over HTTPS on loopback (no dataplane, no namespace):
#  1. fanogate --no-dataplane starts, writes GENESIS;
#  2. the operator forces line 1 active over the operator socket (fanoctl);
#  3. fanofleet decodes 40 tokens with full canonical reports and one flipped
#     low bit (token 31, layer 14, line 3): the divergence must be recorded
#     (verdict with 1 differing element, 1 ULP), line 1 demoted by the audit,
#     the alert command run with the figures in its environment;
#  4. fanogate is SIGKILLed in the middle of a second run and restarted:
#     the log verifies from genesis, line 1 starts in shadow (its last
#     recorded state), and a clean restart appends its start-up record only.
# usage: e2e_shadow.sh FANOGATE FANOCTL FANOFLEET   (exit 77 when a tool is missing)
set -euo pipefail
GATE=$1 CTL=$2 FLEET=$3
for b in "$GATE" "$CTL" "$FLEET"; do [ -x "$b" ] || { echo "skip: $b not built"; exit 77; }; done
command -v openssl >/dev/null || { echo "skip: openssl missing"; exit 77; }
PY=/usr/bin/python3
[ -x $PY ] || { echo "skip: /usr/bin/python3 missing"; exit 77; }

DIR=$(mktemp -d /tmp/fg-e2e-audit.XXXXXX)
GPID=
FPID=
cleanup() {
	[ -n "$FPID" ] && kill -KILL "$FPID" 2>/dev/null || true
	[ -n "$GPID" ] && kill -KILL "$GPID" 2>/dev/null && wait "$GPID" 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 1' TERM
fail() { echo "FAIL: $*"; echo "--- daemon log:"; tail -20 "$DIR/gate.log" || true; exit 1; }

. "$(dirname "$0")/../lib/netns.sh" # fg_daemon_start, fg_wait_until, fg_selfsigned, fg_ini_daemon, wait_exit
# Each step says when it starts (the log of a test that fails or times out
# shows where it stood); the pids of what runs go to $DIR/pids.
stage() { echo "[${SECONDS}s] $*"; echo "$*" >"$DIR/stage"; }
pids() { echo "$GPID $FPID" >"$DIR/pids"; }
# The test's own deadline, before meson's (300 s): say which step hangs and
# what the daemon and the fleet are doing, then end the test.
# It waits for the test's end (tail --pid), bounded by the deadline.
(
	if timeout "${E2E_DEADLINE_S:-270}" tail -s 0.2 --pid=$$ -f /dev/null </dev/null >/dev/null 2>&1; then
		exit 0
	fi
	echo "DEADLINE: ${E2E_DEADLINE_S:-270} s in step: $(cat "$DIR/stage" 2>/dev/null)"
	for p in $(cat "$DIR/pids" 2>/dev/null); do alive "$p" && proc_dump "$p"; done
	echo "--- daemon log:"
	tail -30 "$DIR/gate.log" 2>/dev/null
	kill -TERM $$
) &
fg_selfsigned "$DIR"
TOKEN=e2e-audit-token-0123456789
echo "$TOKEN coordinator" >"$DIR/tokens"
chmod 600 "$DIR/tokens"
cat >"$DIR/fg.ini" <<EOF
$(fg_ini_daemon "$DIR" 127.0.0.1:0 127.0.0.1:0 tokens)
[audit]
group_commit_us = 0
alert_command = env | grep ^FG_ | sort > $DIR/alert.tmp && mv $DIR/alert.tmp $DIR/alert.\$FG_EVENT
alert_min_interval_ms = 0
[slots]
# generous: under a sanitizer on a loaded box a slot must not expire
deadline_ms = 10000
[lines]
auto_promote = true
promote_count = 100000
EOF

start_gate() {
	cat "$DIR/gate.log" >>"$DIR/gate.all.log" 2>/dev/null || true
	: >"$DIR/gate.log"
	# listeners on port 0: each start reports its own (FG_TLS_PORT)
	fg_daemon_start "$DIR/gate.log" "$DIR/gate.log" "$GATE" --config "$DIR/fg.ini" --no-dataplane || {
		GPID=$FG_PID
		fail "fanogate exited at start or was not ready within 120 s"
	}
	GPID=$FG_PID
	pids
}
stop_gate() {
	kill -TERM "$GPID"
	wait_exit "$GPID" 60 || fail "fanogate did not exit within 60 s of SIGTERM"
	wait "$GPID" || fail "fanogate exit status $?"
	GPID=
}

stage "start"
start_gate
stage "force line 1 active"
"$CTL" --socket "$DIR/op.sock" lines active 1 --why "e2e: force" >/dev/null || fail "fanoctl lines active 1"
stage "fleet: 40 tokens, one corrupted"
timeout -k 10 120 "$FLEET" --tokens 40 --mix https=1 --tls 127.0.0.1:$FG_TLS_PORT --insecure --token "$TOKEN" \
	--canonical full --corrupt-at 30 --corrupt-line 3 --corrupt-layer 14 --corrupt-index 7 >"$DIR/fleet.log" 2>&1 ||
	{ cat "$DIR/fleet.log"; fail "fanofleet"; }
grep -q "result: PASS" "$DIR/fleet.log" || { cat "$DIR/fleet.log"; fail "fleet result"; }
fg_wait_until 5 test -f "$DIR/alert.divergence" || true # checked below
stage "stop"
stop_gate
stage "check the log"

"$CTL" audit verify "$DIR/audit.log" >"$DIR/verify.txt" || { cat "$DIR/verify.txt"; fail "verify"; }
"$CTL" audit tail --json -n 100000 "$DIR/audit.log" >"$DIR/all.json"
grep -q '"line":1,"from":"shadow","to":"active","event":"op_active"' "$DIR/all.json" ||
	fail "operator's line change not recorded"
grep '"verdict":"divergent"' "$DIR/all.json" | grep -q '"token_seq":31,"dst_layer":14,' ||
	fail "no divergent verdict for token 31 layer 14"
grep '"verdict":"divergent"' "$DIR/all.json" | grep -q '"count":1,"nan":0,"max_abs":9.53674316e-0*7,"max_ulp":1,' ||
	{ grep divergent "$DIR/all.json"; fail "divergence figures"; }
grep -q '"line":1,"from":"active","to":"shadow","event":"divergence","uid":4294967295' "$DIR/all.json" ||
	fail "line 1 not demoted by the audit"
clean=$(grep -c '"verdict":"clean"' "$DIR/all.json" || true)
[ "$clean" -ge 1000 ] || fail "only $clean clean verdicts for 1080 shadow slots"
[ -f "$DIR/alert.divergence" ] || fail "no divergence alert"
for kv in FG_EVENT=divergence FG_TOKEN=31 FG_LAYER=14 FG_LINE=1 FG_DIFF_COUNT=1 FG_DIFF_MAX_ULP=1; do
	grep -qx "$kv" "$DIR/alert.divergence" || { cat "$DIR/alert.divergence"; fail "alert lacks $kv"; }
done

# SIGKILL in the middle of traffic, restart, verify; a clean restart appends
# its START record and nothing else.
stage "restart, fleet: 400 tokens"
start_gate
timeout -k 10 120 "$FLEET" --tokens 400 --mix https=1 --tls 127.0.0.1:$FG_TLS_PORT --insecure --token "$TOKEN" \
	--canonical full >"$DIR/fleet2.log" 2>&1 &
FPID=$!
pids
# in the middle of traffic: once the log grew by 16 KiB of verdicts
size0=$(stat -c %s "$DIR/audit.log")
grew() { [ "$(stat -c %s "$DIR/audit.log")" -gt $((size0 + 16384)) ]; }
fg_wait_until 60 grew || fail "the second run wrote no verdicts within 60 s"
stage "SIGKILL in the middle"
kill -KILL "$GPID"
wait "$GPID" 2>/dev/null || true
GPID=
kill -TERM "$FPID" 2>/dev/null || true
wait_exit "$FPID" 30 || fail "the fleet did not exit within 30 s of SIGTERM"
wait "$FPID" 2>/dev/null || true
FPID=
stage "restart after SIGKILL"
start_gate
stage "stop after SIGKILL"
stop_gate
stage "verify after SIGKILL"
"$CTL" audit verify "$DIR/audit.log" >"$DIR/verify2.txt" || { cat "$DIR/verify2.txt"; fail "verify after SIGKILL"; }
grep -q 'line 1 (1,4,5) starts shadow' "$DIR/gate.log" || fail "line 1 did not start from its recorded (shadow) state"
"$CTL" audit tail --json -n 1 "$DIR/audit.log" | grep -q '"type":"start"' || fail "the restart wrote no START record"
n1=$("$CTL" audit tail --json -n 100000 "$DIR/audit.log" | wc -l)
stage "clean restart"
start_gate
stop_gate
stage "verify after the clean restart"
n2=$("$CTL" audit tail --json -n 100000 "$DIR/audit.log" | wc -l)
[ "$n2" = "$((n1 + 1))" ] || fail "a clean restart appended $((n2 - n1)) records, not 1"
"$CTL" audit tail --json -n 1 "$DIR/audit.log" | grep -q '"type":"start"' || fail "the clean restart's record is not START"
"$CTL" audit verify "$DIR/audit.log" >/dev/null || fail "verify after the clean restart"
tail -1 "$DIR/verify2.txt"
echo "e2e_shadow: ok ($clean clean verdicts, divergence recorded, demoted, alerted; SIGKILL + restart verified)"
