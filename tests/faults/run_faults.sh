#!/bin/bash
# run_faults.sh SCENARIO FANOGATE_DP FANOFLEET FANORELAY [FANOGATE] - one
# network-fault scenario on the real UDP path:
#
#   [namespace fgft-n$$]                                  [root namespace]
#   fanofleet stations --> fanorelay #1 (faults) --veth--> fanogate-dp
#     127.0.0.1:14000       bind 10.97.X.2                  (af_packet on fgft$$a,
#   fanofleet consumer <-- fanorelay #2 (faults) <--veth--  10.97.X.1:4242)
#     127.0.0.1:17001       listen 10.97.X.2:17000
#
# Relay #1 carries the stations' fragmented contributions up and the ACKs
# and status frames down; relay #2 carries the resolved seeds from the
# dataplane to the fleet's consumer and the consumer's ACKs back. Both run
# with --check-acks: an ACK that covers a frame the relay never delivered
# whole makes the relay exit 1.
#
# Checks (any failure exits 1):
#  - fanofleet: no wrong seed, ever (it checks every resolved seed bit for
#    bit against the reduction of what it sent);
#  - both relays: no unproven ACK, no queue overflow, no send failure;
#  - scenarios with ACK-path faults only on relay #1 and a loss rate at which
#    six attempts per frame cannot all fail in practice: no missing seed;
#    otherwise every missing seed is accounted for: missing <= frames the
#    fleet gave up on + resolved-seed datagrams relay #2 dropped + slots
#    fanogate expired (counted, with the reason "expired");
#  - fanogate-dp: exits 0, resolved at least as many slots as the fleet saw
#    resolved, never answered a frame as malformed.
# Scenarios daemon_*: the daemon fanogate (control plane + the same DPDK
# dataplane) instead of fanogate-dp, with its TLS listener on a second veth
# pair; the fleet also subscribes to resolved seeds over wss:// (/flow
# ?layers=all), so a seed whose UDP delivery relay #2 dropped must still
# arrive, over the WebSocket push: no missing seed allowed.
# One JSON line with the figures goes to stdout (prefixed "RESULT ") and is
# appended to $FG_FAULTS_RESULTS when set.
#
# Everything it creates is named fgft* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
SCEN=${1:?usage: run_faults.sh SCENARIO FANOGATE_DP FANOFLEET FANORELAY [FANOGATE]}
DP=${2:?fanogate-dp}
FLEET=${3:?fanofleet}
RELAY=${4:?fanorelay}
GATE=${5:-}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

# ---- scenarios -----------------------------------------------------------
# R1: relay #1 faults (both directions unless --up-/--down-), R2: relay #2,
# STRICT=1: no missing seed allowed. Model: 8 layers x hidden 512 (frames of
# two fragments), chain mode, window 8.
TOKENS=${FG_FAULTS_TOKENS:-150}
SLOT_TO=5000 # ms the fleet waits for a resolved seed before counting it missing
DEADLINE=3000 # fanogate's [slots] deadline_ms
R1="" R2="" STRICT=1 FLEET_X=()
case $SCEN in
clean)    R1="" ;;
loss1)    R1="--loss 0.01" ;;
loss5)    R1="--loss 0.05" ;;
loss10)   R1="--loss 0.10"; STRICT=0 ;;
loss20)   R1="--loss 0.20"; STRICT=0 ;;
# issue 13: the shipped default deadline against the fleet's resend schedule
# (fanofleet's default: a 200 ms check timer + 200 ms age test, 5 resends,
# attempts ~400 ms apart, the last up to ~2 s after the first): no slot may
# expire while its sender is still resending, so every expired slot is
# accounted for by a frame its sender gave up (expired <= gave_up)
loss20_default) R1="--loss 0.20"; STRICT=0; DEADLINE=default; FLEET_X=(--check-ms 200 --rto-ms 200 --resends 5) ;;
loss30)   R1="--loss 0.30"; STRICT=0; TOKENS=${FG_FAULTS_TOKENS:-60} ;;
# the shipped default deadline (500 ms) against the fleet's RTO (200 ms):
# a contribution that needs its third attempt arrives after the slot expired
loss5_d500)  R1="--loss 0.05"; STRICT=0; DEADLINE=500 ;;
loss10_d500) R1="--loss 0.10"; STRICT=0; DEADLINE=500 ;;
# losses in bursts of 4 datagrams on average (about 7.5% of the datagrams)
burst)    R1="--loss 0.02 --burst 4"; STRICT=0 ;;
reorder)  R1="--reorder 0.2 --reorder-gap 3 --reorder-ms 20 --jitter-ms 1"; R2="--reorder 0.2 --reorder-gap 2 --reorder-ms 10" ;;
dup)      R1="--dup 0.2"; R2="--dup 0.2" ;;
mixed)    R1="--loss 0.05 --dup 0.05 --reorder 0.1 --delay-ms 1 --jitter-ms 2" ;;
# resolved seeds lost between the dataplane and the consumer: nothing resends
# them over UDP, so each lost delivery is a missing seed (chain mode stalls a
# token for the slot timeout: keep the run short)
delivery) R2="--up-loss 0.05"; STRICT=0; TOKENS=${FG_FAULTS_TOKENS:-60}; SLOT_TO=1000 ;;
# the daemon: the same seeds also pushed over wss://, which must cover every
# UDP delivery relay #2 drops
daemon_delivery) R1="--loss 0.05"; R2="--up-loss 0.2 --reorder 0.1" ;;
daemon_mixed) R1="--loss 0.05 --dup 0.05 --reorder 0.1 --jitter-ms 2"; R2="--up-loss 0.05 --dup 0.05" ;;
*) echo "run_faults.sh: unknown scenario $SCEN"; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
DAEMON=0
case $SCEN in daemon_*) DAEMON=1; DP=$GATE ;; esac
command -v openssl >/dev/null || [ $DAEMON = 0 ] || { echo "SKIP: openssl missing (daemon certificate)"; exit 77; }
for b in "$DP" "$FLEET" "$RELAY"; do
	[ -n "$b" ] && [ -x "$b" ] || { echo "SKIP: '$b' not built"; exit 77; }
done

ID=$$
NS=fgft-n$ID
VA=fgft${ID}a # dataplane side (root namespace)
VB=fgft${ID}b # fleet side (in $NS)
CA=fgft${ID}c # daemon scenarios: TLS, root side
CB=fgft${ID}d # ... fleet side
NET=10.97.$((ID % 250)).
CNET=10.96.$((ID % 250)).
TMP=$(mktemp -d /tmp/fgft-XXXXXX)
DPPID="" R1PID="" R2PID=""

. "$(dirname "$0")/../lib/proc.sh" # alive, stop_pid, dp_env_failure
cleanup() {
	stop_pid "$R1PID"; stop_pid "$R2PID"; stop_pid "$DPPID"; stop_pid "${TSPID:-}"
	ip netns del "$NS" 2>/dev/null
	ip link del "$VA" 2>/dev/null
	ip link del "$CA" 2>/dev/null
	[ -n "${FG_KEEP_TMP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS" 2>/dev/null || { echo "SKIP: cannot create a network namespace"; exit 77; }
# FG_FAULTS_LCORES=N: dataplane poll lcores (1); the veth gets 4 queue pairs
# so af_packet's fanout spreads the relay's per-station flows over them
LCORES=${FG_FAULTS_LCORES:-1}
ip link add "$VA" numtxqueues 4 numrxqueues 4 type veth peer name "$VB" numtxqueues 4 numrxqueues 4 2>/dev/null ||
	{ echo "SKIP: cannot create a veth pair"; exit 77; }
ip link set "$VB" netns "$NS"
ip link set "$VA" up
sysctl -qw net.ipv6.conf.$VA.disable_ipv6=1 2>/dev/null
ip -n "$NS" link set lo up
ip -n "$NS" addr add ${NET}2/24 dev "$VB"
ip -n "$NS" link set "$VB" up
# the dataplane does not verify checksums, but a capture should show final ones
command -v ethtool >/dev/null && ip netns exec "$NS" ethtool -K "$VB" tx off >/dev/null 2>&1
if [ $DAEMON = 1 ]; then
	ip link add "$CA" type veth peer name "$CB" 2>/dev/null || { echo "SKIP: cannot create a second veth pair"; exit 77; }
	ip link set "$CB" netns "$NS"
	ip addr add ${CNET}1/24 dev "$CA"
	ip link set "$CA" up
	ip -n "$NS" addr add ${CNET}2/24 dev "$CB"
	ip -n "$NS" link set "$CB" up
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=fanogate.test \
		-addext "subjectAltName=DNS:fanogate.test" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null ||
		{ echo "FAIL: openssl req"; exit 1; }
	(umask 077; echo "fgft$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n') fleet" > "$TMP/tokens")
fi

cat > "$TMP/fanogate.ini" <<EOC
[model]
hidden = 512
layers = 8
[rules]
default = 1,3,5
[slots]
capacity = 8192
; 3000 unless the scenario says otherwise: longer than the fleet's six
; attempts (RTO 200 ms) so retransmissions can still complete a slot;
; expiries are counted by the report ("default": the shipped default)
$([ "$DEADLINE" = default ] || echo "deadline_ms = $DEADLINE")
[udp]
port = 4242
mtu = 1472
ack_interval_ms = 20
reasm_timeout_ms = 250
allow = ${NET}0/24
[consumers]
default = ${NET}2:17000
[dataplane]
lcores = $LCORES
profile = $ROOT/drivers-config/af_packet.ini
EOC
if [ $DAEMON = 1 ]; then
	cat >> "$TMP/fanogate.ini" <<EOC
[tls]
listen = ${CNET}1:8443
cert = $TMP/cert.pem
key = $TMP/key.pem
tokens_file = $TMP/tokens
[audit]
path = $TMP/audit.log
[operator]
socket = $TMP/op.sock
[metrics]
listen = off
EOC
fi

export FG_IFACE=$VA FG_DP_IP4=${NET}1 FG_DP_IP6= FG_IDLE_SLEEP_US=50 FG_HUGEPAGES=off
if [ $DAEMON = 1 ]; then
	"$DP" --config "$TMP/fanogate.ini" > "$TMP/dp.out" 2> "$TMP/dp.log" &
	DPPID=$!
	for _ in $(seq 200); do
		kill -0 $DPPID 2>/dev/null || break
		if (exec 3<>"/dev/tcp/${CNET}1/8443") 2>/dev/null; then touch "$TMP/dp.ready"; break; fi
		sleep 0.1
	done
else
	"$DP" --config "$TMP/fanogate.ini" --profile "$ROOT/drivers-config/af_packet.ini" --duration 150 \
		--report "$TMP/dp.json" --ready-file "$TMP/dp.ready" > "$TMP/dp.out" 2> "$TMP/dp.log" &
	DPPID=$!
	for _ in $(seq 200); do
		[ -f "$TMP/dp.ready" ] && break
		kill -0 $DPPID 2>/dev/null || break
		sleep 0.1
	done
fi
if [ ! -f "$TMP/dp.ready" ]; then
	tail -20 "$TMP/dp.log"
	wait $DPPID 2>/dev/null; DPPID=""
	if dp_env_failure "$TMP/dp.log"; then
		echo "SKIP: $(basename "$DP") cannot run its af_packet port here (log above)"; exit 77
	fi
	echo "FAIL: $(basename "$DP") did not start"; exit 1
fi

# shellcheck disable=SC2086
ip netns exec "$NS" "$RELAY" --listen 127.0.0.1:14000 --server ${NET}1:4242 --bind ${NET}2 \
	--seed $ID $R1 --check-acks --duration 120 --quiet --stats "$TMP/r1.json" --ready-file "$TMP/r1.ready" \
	> "$TMP/r1.log" 2>&1 &
R1PID=$!
# shellcheck disable=SC2086
ip netns exec "$NS" "$RELAY" --listen ${NET}2:17000 --server 127.0.0.1:17001 \
	--seed $((ID + 1)) $R2 --check-acks --duration 120 --quiet --stats "$TMP/r2.json" --ready-file "$TMP/r2.ready" \
	> "$TMP/r2.log" 2>&1 &
R2PID=$!
for _ in $(seq 50); do [ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ] && break; sleep 0.1; done
[ -f "$TMP/r1.ready" ] && [ -f "$TMP/r2.ready" ] || { cat "$TMP/r1.log" "$TMP/r2.log"; echo "FAIL: relays did not start"; exit 1; }

# FG_FAULTS_PCAP=FILE: capture the dataplane's veth for the whole run
TSPID=""
if [ -n "${FG_FAULTS_PCAP:-}" ] && command -v tshark >/dev/null; then
	tshark -q -i "$VA" -w "$FG_FAULTS_PCAP" -a duration:150 >/dev/null 2>&1 &
	TSPID=$!
	sleep 2
fi

# A probe token first: the first datagrams into a fresh veth are sometimes
# lost while the dataplane learns the neighbour (as scripts/demo.sh found);
# its own token range, not part of the figures.
ip netns exec "$NS" "$FLEET" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 --hidden 512 \
	--tokens 1 --window 1 --token-base 900000 --canonical none --quiet --slot-timeout-ms 3000 --max-missing 7 \
	> "$TMP/probe.log" 2>&1

# The run. Missing seeds are judged here, not by fanofleet's exit code.
TLS=()
[ $DAEMON = 1 ] && TLS=(--tls ${CNET}1:8443 --sni fanogate.test --ca "$TMP/cert.pem" --token-file "$TMP/tokens")
ip netns exec "$NS" "$FLEET" "${TLS[@]}" "${FLEET_X[@]}" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 --hidden 512 \
	--tokens "$TOKENS" --window 8 --seed $((ID % 1000 + 1)) --token-base 1000 --canonical digest --canonical-via udp \
	--slot-timeout-ms $SLOT_TO --max-missing 1000000 --duration 100 --quiet --json "$TMP/fleet.json" \
	> "$TMP/fleet.log" 2>&1
FRC=$?
sleep 0.5 # the last ACKs through the relays
# (the relays' own verdicts are read from their --stats files)
stop_pid "$R1PID"; R1PID=""
stop_pid "$R2PID"; R2PID=""
stop_pid "$DPPID"; DPRC=$?; DPPID=""

$PY - "$SCEN" "$STRICT" "$FRC" "$DPRC" "$TMP" "$R1" "$R2" "${FG_FAULTS_RESULTS:-}" "$DAEMON" "$DEADLINE" "$LCORES" <<'PY'
import json, re, sys, time
scen, strict, frc, dprc, tmp, r1args, r2args, out, daemon, deadline, lcores = sys.argv[1:12]
daemon = daemon == "1"
strict = strict == "1"
fails = []
def load(name):
    try:
        return json.load(open(f"{tmp}/{name}"))
    except Exception as e:
        fails.append(f"{name}: {e}")
        return {}
fleet, r1, r2 = load("fleet.json"), load("r1.json"), load("r2.json")
dp = {} if daemon else load("dp.json")
log = open(f"{tmp}/fleet.log").read()
m = re.search(r"udp sender: frames (\d+) fragments (\d+) resends (\d+) gave-up (\d+) acks (\d+) acked-frames (\d+)", log)
frames, fragments, resends, gave_up, acks, acked = (int(x) for x in m.groups()) if m else (0,) * 6
if not m:
    fails.append("no udp sender line in the fleet's summary")
if int(frc) == 1 or fleet.get("wrong", 1) != 0:
    fails.append(f"fanofleet saw {fleet.get('wrong')} WRONG resolved seeds (exit {frc})")
if int(frc) not in (0, 2):
    fails.append(f"fanofleet exit {frc}")
for name, r in (("relay1", r1), ("relay2", r2)):
    a = r.get("acks", {})
    if a.get("ack_unproven", 1) != 0:
        fails.append(f"{name}: {a.get('ack_unproven')} ACKed sequences never went through whole")
    for d in ("up", "down"):
        x = r.get(d, {})
        if x.get("queue_full", 1) or x.get("send_failed", 1):
            fails.append(f"{name} {d}: queue_full {x.get('queue_full')} send_failed {x.get('send_failed')}")
if r1.get("acks", {}).get("ack_proven", 0) == 0:
    fails.append("relay1 checked no ACK at all")
missing = fleet.get("missing", -1)
delivery_lost = r2.get("up", {}).get("lost", 0)
if strict and missing != 0:
    fails.append(f"{missing} missing seeds at {scen}")
# expired with a reason: fanogate's report (fanogate-dp) or the "expired"
# status frames the fleet received (the daemon writes no report)
expired = max(dp.get("slots_expired", 0), (fleet.get("outcomes") or {}).get("expired", 0))
if missing > gave_up + delivery_lost + expired:
    fails.append(f"{missing} missing seeds but only {gave_up} frames given up + {delivery_lost} deliveries "
                 f"dropped + {expired} slots expired")
if int(dprc) != 0:
    fails.append(f"{'fanogate' if daemon else 'fanogate-dp'} exit {dprc}")
if deadline == "default" and expired > gave_up:
    fails.append(f"{expired} slots expired but the fleet gave up only {gave_up} frames: slots expired while "
                 f"their senders were still resending (the default deadline is shorter than the fleet's schedule)")
if deadline == "default" and resends == 0:
    fails.append("no resend at 20% loss: the scenario tested nothing")
paths = fleet.get("latency_by_delivery_path", {})
if daemon and paths.get("wss-push", {}).get("deliveries", 0) == 0:
    fails.append("no seed arrived over the wss:// subscription")
if dp:
    if dp.get("slots_resolved", 0) < fleet.get("resolved", 0):
        fails.append(f"fanogate-dp resolved {dp.get('slots_resolved')} slots < {fleet.get('resolved')} seen by the fleet")
    if dp.get("malformed"):
        fails.append(f"fanogate-dp malformed: {dp.get('malformed')}")
res = {
    "scenario": scen, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "relay1": r1args, "relay2": r2args, "deadline_ms": int(deadline) if deadline.isdigit() else deadline, "lcores": int(lcores),
    "slots": fleet.get("slots"), "resolved": fleet.get("resolved"), "bit_exact": fleet.get("bit_exact"),
    "wrong": fleet.get("wrong"), "missing": missing, "late": fleet.get("late"),
    "frames": frames, "fragments": fragments, "resends": resends, "gave_up": gave_up,
    "acked_frames": acked, "seconds": round(fleet.get("seconds", 0), 2),
    "r1_up_lost": r1.get("up", {}).get("lost"), "r1_down_lost": r1.get("down", {}).get("lost"),
    "r1_dup": r1.get("up", {}).get("dup", 0) + r1.get("down", {}).get("dup", 0),
    "r1_reordered": r1.get("up", {}).get("reordered", 0) + r1.get("down", {}).get("reordered", 0),
    "r2_up_lost": delivery_lost,
    "r2_reordered": r2.get("up", {}).get("reordered", 0) + r2.get("down", {}).get("reordered", 0),
    "r2_dup": r2.get("up", {}).get("dup", 0) + r2.get("down", {}).get("dup", 0),
    "acks_checked": r1.get("acks", {}).get("acked_seqs", 0) + r2.get("acks", {}).get("acked_seqs", 0),
    "acks_unproven": r1.get("acks", {}).get("ack_unproven", 0) + r2.get("acks", {}).get("ack_unproven", 0),
    "dp_slots_resolved": dp.get("slots_resolved"), "dp_slots_expired": dp.get("slots_expired"),
    "expired": expired,
    "dp_outcomes": {k: v for k, v in dp.get("outcomes", {}).items() if v},
    "fleet_outcomes": fleet.get("outcomes"),
    "deliveries": {k: v.get("deliveries") for k, v in paths.items()},
    "result": "pass" if not fails else "fail",
}
line = json.dumps(res, sort_keys=True)
print("RESULT " + line)
if out:
    with open(out, "a") as f:
        f.write(line + "\n")
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
PY
RC=$?
if [ $RC != 0 ]; then
	echo "---- fleet"; tail -25 "$TMP/fleet.log"
	echo "---- relay 1"; cat "$TMP/r1.log"
	echo "---- relay 2"; cat "$TMP/r2.log"
	echo "---- fanogate-dp"; grep -v "^TELEMETRY" "$TMP/dp.log" | tail -20
fi
exit $RC
