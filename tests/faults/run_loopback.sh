#!/bin/bash
# run_loopback.sh FANOFLEET FANORELAY - the fault path without root, on
# loopback, against fanofleet's own fake receiver (an independent
# implementation of the fragmented profile and the Pair X resolution, not
# fanogate): fanofleet -> fanorelay #1 (loss 5%, duplication 5%, reordering
# 10%, jitter both ways) -> fake receiver -> fanorelay #2 (reordering,
# duplication) -> fanofleet's consumer. Checks that the fleet's
# retransmissions get every seed resolved bit-exact, and that both relays
# proved every ACK they saw. This exercises fanorelay and the fleet's
# reliability; tests/faults/run_faults.sh does the same against fanogate-dp.
set -u
FLEET=${1:?usage: run_loopback.sh FANOFLEET FANORELAY}
RELAY=${2:?fanorelay}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
. "$(dirname "$0")/../lib/netns.sh" # fg_private_net, fg_wait_until
fg_private_net "$@" # fixed loopback ports below, in a namespace of this run's own
TMP=$(mktemp -d /tmp/fgft-lo-XXXXXX)
BASE=21000
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${FG_KEEP_TMP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$FLEET" --fake-receiver --listen 127.0.0.1:$BASE --consumer 127.0.0.1:$((BASE + 2)) --layers 6 --hidden 512 \
	--duration 120 > "$TMP/fake.log" 2>&1 &
PIDS+=($!)
"$RELAY" --listen 127.0.0.1:$((BASE + 1)) --server 127.0.0.1:$BASE --seed 11 --loss 0.05 --dup 0.05 \
	--reorder 0.1 --jitter-ms 1 --check-acks --duration 110 --quiet --stats "$TMP/r1.json" \
	--ready-file "$TMP/r1.ready" > "$TMP/r1.log" 2>&1 &
PIDS+=($!)
"$RELAY" --listen 127.0.0.1:$((BASE + 2)) --server 127.0.0.1:$((BASE + 3)) --seed 12 --dup 0.1 --reorder 0.1 \
	--check-acks --duration 110 --quiet --stats "$TMP/r2.json" --ready-file "$TMP/r2.ready" > "$TMP/r2.log" 2>&1 &
PIDS+=($!)
# the fake receiver allocates its slot table before it binds (seconds here)
all_up() { grep -q "receiving on" "$TMP/fake.log" && [ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ]; }
fg_wait_until 30 all_up
grep -q "receiving on" "$TMP/fake.log" || { cat "$TMP/fake.log"; echo "FAIL: fake receiver did not start"; exit 1; }
[ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ] || { cat "$TMP/r1.log" "$TMP/r2.log"; echo "FAIL: relays"; exit 1; }

"$FLEET" --udp 127.0.0.1:$((BASE + 1)) --consumer 127.0.0.1:$((BASE + 3)) --mix udp=1 --layers 6 --hidden 512 \
	--tokens 120 --window 8 --canonical none --slot-timeout-ms 5000 --duration 90 --quiet \
	--json "$TMP/fleet.json" --samples "$TMP/samples" > "$TMP/fleet.log" 2>&1
FRC=$?
# Nothing to wait for once the fleet has exited: the verdict reads the
# fleet's figures (final) and the relays' fault counts and ACK proofs. A
# datagram still in flight through a relay cannot turn them: an ACK the
# relay has not seen yet is neither proven nor unproven, and what a relay
# still holds at exit is counted dropped_at_exit, which is not judged.
for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
PIDS=()
$PY - "$TMP" "$FRC" <<'PY'
import json, sys
tmp, frc = sys.argv[1], int(sys.argv[2])
fails = []
fleet = json.load(open(f"{tmp}/fleet.json"))
r1, r2 = json.load(open(f"{tmp}/r1.json")), json.load(open(f"{tmp}/r2.json"))
if frc != 0 or fleet["wrong"] or fleet["missing"]:
    fails.append(f"fanofleet exit {frc}: wrong {fleet['wrong']} missing {fleet['missing']}")
for name, r in (("relay1", r1), ("relay2", r2)):
    a = r["acks"]
    if a["ack_unproven"] or a["ack_proven"] == 0:
        fails.append(f"{name}: proven {a['ack_proven']} unproven {a['ack_unproven']}")
    for d in ("up", "down"):
        if r[d]["queue_full"] or r[d]["send_failed"]:
            fails.append(f"{name} {d}: queue_full {r[d]['queue_full']} send_failed {r[d]['send_failed']}")
# latency samples: both clocks on every line, the one from the start of the
# last contribution's write never shorter than the one from its return
bad, n = 0, 0
for ln in open(f"{tmp}/samples"):
    p = ln.split()
    n += 1
    if len(p) != 4 or int(p[3]) < int(p[2]):
        bad += 1
if n == 0 or bad:
    fails.append(f"samples: {n} lines, {bad} without two ordered clocks")
if r1["up"]["lost"] == 0 or r1["up"]["reordered"] == 0 or r2["up"]["dup"] == 0:
    fails.append("the relays injected no faults")
print("loopback: slots %d resolved %d bit-exact %d wrong %d missing %d; relay1 lost %d/%d dup %d reordered %d; "
      "ACKs proven %d unproven %d" % (fleet["slots"], fleet["resolved"], fleet["bit_exact"], fleet["wrong"],
      fleet["missing"], r1["up"]["lost"], r1["down"]["lost"], r1["up"]["dup"] + r1["down"]["dup"],
      r1["up"]["reordered"] + r1["down"]["reordered"], r1["acks"]["ack_proven"] + r2["acks"]["ack_proven"],
      r1["acks"]["ack_unproven"] + r2["acks"]["ack_unproven"]))
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
PY
RC=$?
[ $RC = 0 ] || { tail -15 "$TMP/fleet.log"; cat "$TMP/r1.log" "$TMP/r2.log" "$TMP/fake.log"; }
exit $RC
