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
#  - strict scenarios (faults on relay #1 at a loss rate the fleet's six
#    attempts per frame nearly always survive): a seed is missing or a slot
#    expired only for a frame the fleet gave up, and it gave up no more
#    frames than relay #1's random loss explains (tests/lib/fgtest/
#    giveup.py: more happen by chance with probability < 1e-6; none
#    without loss); at 5% loss a run of 4,200 frames gives one up in
#    about 3.5% of runs. Otherwise every missing seed is accounted for:
#    missing <= frames the fleet gave up on + resolved-seed datagrams relay
#    #2 dropped + slots fanogate expired (counted, with the reason "expired");
#  - fanogate-dp: exits 0, resolved at least as many slots as the fleet saw
#    resolved, never answered a frame as malformed.
# Scenarios daemon_*: the daemon fanogate (control plane + the same DPDK
# dataplane) instead of fanogate-dp, with its TLS listener on a second veth
# pair; the fleet also subscribes to resolved seeds over wss:// (/flow
# ?layers=all), so a seed whose UDP delivery relay #2 dropped must still
# arrive, over the WebSocket push (judged strictly, as above).
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
HERE=$(cd "$(dirname "$0")" && pwd)

# ---- scenarios -----------------------------------------------------------
# R1: relay #1 faults (both directions unless --up-/--down-), R2: relay #2,
# STRICT=1: no missing seed but for a frame the fleet gave up by chance.
# Model: 8 layers x hidden 512 (frames of two fragments), chain mode,
# window 8.
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
# the shipped default deadline against the fleet's resend schedule
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

. "$HERE/../lib/delivery.sh"
fg_need_root "namespace, veth, AF_PACKET"
fg_need_cmd ip "$PY"
DAEMON=0
case $SCEN in daemon_*) DAEMON=1; DP=$GATE ;; esac
[ $DAEMON = 0 ] || fg_need_cmd openssl
fg_need_exec "$DP" "$FLEET" "$RELAY"

# FG_FAULTS_LCORES=N: dataplane poll lcores (1)
LCORES=${FG_FAULTS_LCORES:-1}
fg_dlv_setup fgft 97
CNET=10.96.$((ID % 250)).
CA=fgft${ID}c # daemon scenarios: TLS, root side
CB=fgft${ID}d # ... fleet side
if [ $DAEMON = 1 ]; then
	fg_veth "$CA" "$CB" "$NS"
	ip addr add ${CNET}1/24 dev "$CA"
	ip -n "$NS" addr add ${CNET}2/24 dev "$CB"
	fg_selfsigned "$TMP"
	(umask 077; echo "fgft$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n') fleet" > "$TMP/tokens")
fi

# [slots] deadline_ms 3000 unless the scenario says otherwise: longer than
# the fleet's six attempts (RTO 200 ms) so retransmissions can still
# complete a slot; expiries are counted by the report ("default": the
# shipped default)
MORE=""
[ $DAEMON = 1 ] && MORE="$(fg_ini_daemon "$TMP" "${CNET}1:8443" off tokens)
[shadow]
; the fleet's coordinator sends canonical reports over UDP (--canonical-via udp)
canonical_sources = ${NET}0/24"
fg_dlv_ini "$([ "$DEADLINE" = default ] || echo "deadline_ms = $DEADLINE")" "" "" "$MORE"
if [ $DAEMON = 1 ]; then
	fg_dlv_env
	fg_gate_start DPPID "$TMP/dp.log" "$DP" --config "$TMP/fanogate.ini"
else
	fg_dlv_dp_start "$DP"
fi
fg_dlv_relays "$RELAY" "$R1" "$R2"

# FG_FAULTS_PCAP=FILE: capture the dataplane's veth for the whole run
if [ -n "${FG_FAULTS_PCAP:-}" ] && command -v tshark >/dev/null; then
	rm -f "$FG_FAULTS_PCAP"
	fg_bg TSPID tshark -q -i "$VA" -w "$FG_FAULTS_PCAP" -a duration:150 >/dev/null 2>&1
	# capturing once it wrote the file's header
	fg_wait_until 10 test -s "$FG_FAULTS_PCAP" || echo "warning: tshark wrote no capture header"
fi

# A probe token first (fg_dlv_probe: neighbour learning, as scripts/demo.sh
# found), not part of the figures.
fg_dlv_probe "$FLEET"

# The run. Missing seeds are judged here, not by fanofleet's exit code.
TLS=()
[ $DAEMON = 1 ] && TLS=(--tls ${CNET}1:8443 --sni fanogate.test --ca "$TMP/cert.pem" --token-file "$TMP/tokens")
ip netns exec "$NS" "$FLEET" "${TLS[@]}" "${FLEET_X[@]}" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 --hidden 512 \
	--tokens "$TOKENS" --window 8 --seed $((ID % 1000 + 1)) --token-base 1000 --canonical digest --canonical-via udp \
	--slot-timeout-ms $SLOT_TO --max-missing 1000000 --duration 100 --quiet --json "$TMP/fleet.json" \
	> "$TMP/fleet.log" 2>&1
FRC=$?
fg_dlv_drain # the last ACKs through the relays
# (the relays' own verdicts are read from their --stats files)
fg_dlv_stop

PYTHONPATH="$HERE/../lib" $PY - "$SCEN" "$STRICT" "$FRC" "$DPRC" "$TMP" "$R1" "$R2" "${FG_FAULTS_RESULTS:-}" "$DAEMON" "$DEADLINE" "$LCORES" <<'PY'
import re, sys, time
from fgtest import giveup
from fgtest.dlv import Run
scen, strict, frc, dprc, tmp, r1args, r2args, out, daemon, deadline, lcores = sys.argv[1:12]
daemon = daemon == "1"
strict = strict == "1"
run = Run(tmp, dp=not daemon)
fails, fleet, dp = run.fails, run.fleet, run.dp
log = open(f"{tmp}/fleet.log").read()
m = re.search(r"udp sender: frames (\d+) fragments (\d+) resends (\d+) gave-up (\d+) acks (\d+) acked-frames (\d+)", log)
frames, fragments, resends, gave_up, acks, acked = (int(x) for x in m.groups()) if m else (0,) * 6
if not m:
    fails.append("no udp sender line in the fleet's summary")
run.no_wrong_seed(frc)
if int(frc) not in (0, 2):
    fails.append(f"fanofleet exit {frc}")
r1, r2 = run.relays_clean()
if r1.get("acks", {}).get("ack_proven", 0) == 0:
    fails.append("relay1 checked no ACK at all")
missing = fleet.get("missing", -1)
delivery_lost = r2.get("up", {}).get("lost", 0)
# expired with a reason: fanogate's report (fanogate-dp) or the "expired"
# status frames the fleet received (the daemon writes no report)
expired = max(dp.get("slots_expired", 0), (fleet.get("outcomes") or {}).get("expired", 0))
# strict: a seed may be missing only for a contribution its sender gave up
# after six attempts, no slot expired but for such a frame, and no more
# give-ups than relay #1's random loss explains (fgtest.giveup: more than
# `allowed` happen by chance with probability < 1e-6; 0 without loss)
fault = [r1.get(d, {}).get("fault", {}) for d in ("up", "down")]
bursts = any(f.get("burst", 0) > 1 for f in fault)
allowed, mean = (None, None) if bursts else giveup.allowed(frames, frames + resends, fragments,
                                                           *(f.get("loss", 0.0) for f in fault))
if strict:
    if bursts:
        fails.append("a strict scenario with loss bursts: the give-up model assumes independent losses")
    elif gave_up > allowed:
        fails.append(f"the fleet gave up {gave_up} frames at {scen}; relay #1's loss explains at most {allowed} "
                     f"(mean {mean:.3g})")
    if missing > gave_up:
        fails.append(f"{missing} missing seeds at {scen} but the fleet gave up only {gave_up} frames")
    if expired > gave_up:
        fails.append(f"{expired} slots expired at {scen} but the fleet gave up only {gave_up} frames")
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
    "gave_up_allowed": allowed, "gave_up_mean": None if mean is None else round(mean, 4),
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
}
run.finish(res, out)
PY
RC=$?
[ $RC = 0 ] || fg_dlv_dump r1 r2
exit $RC
