#!/bin/bash
# run_delivery.sh SCENARIO FANOGATE_DP FANOFLEET FANORELAY - reliable
# resolved-seed delivery over UDP (dataplane/dp_dlv.h) under faults on the
# delivery path (same topology as run_faults.sh):
#
#   [namespace fgdr-n$$]                                  [root namespace]
#   fanofleet stations --> fanorelay #1 (clean) --veth---> fanogate-dp
#     127.0.0.1:14000       bind 10.93.X.2                  (af_packet on fgdr$$a,
#   fanofleet consumer <-- fanorelay #2 (faults) <--veth--  10.93.X.1:4242)
#     127.0.0.1:17001       listen 10.93.X.2:17000
#
# Relay #2 carries the resolved seeds down to the fleet's consumer ("up",
# as the relay sees it) and the consumer's ACK frames back ("down"); it
# runs --check-acks (an ACK of a frame it never delivered whole fails).
#
# Scenarios:
#   loss5     5% of the delivery datagrams lost (ACKs clean)
#   loss20    20% lost both ways (deliveries and ACKs), 5% duplicated,
#             some reordered; [consumers] resends = 20. A delivery here is
#             2 datagrams (hidden 512), so one attempt is lost with
#             p = 1 - 0.8^2 = 0.36: with 10 resends all 11 attempts of one
#             of the 427 seeds were lost in about 0.6% of runs (seen once,
#             CI 2026-12-02 08:20); with 20 it is about 2e-7 per run
#   fleet_window  the consumer ACKs like the fleet (fanofleet --consumer-acks
#             fleet: base..base+63 from its lowest held sequence, trimmed only
#             once 128 are held) with 100 tokens in flight (100 seeds per
#             layer stream), clean path: no delivered seed may be given up,
#             the seeds beyond base+63 wait (delivery_window_wait) instead
#             of burning resends
#   fleet_default  fleet_window at the default [consumers] ack_window
#             (auto): the consumer must be recognised as the fleet's
#             (delivery_window_fleet_seen) and nothing it got given up
#   bases     the fleet's consumer at the default ack_window, 5% of the
#             deliveries lost, and tests/dataplane/ack_bases.py sending
#             from the consumer's address every 100 ms a stale (500) and a
#             far-ahead (5,000,000) base for every layer: both ignored and
#             counted (delivery_ack_base_stale, delivery_ack_base_ahead),
#             the lost deliveries still resent (none held for a window),
#             every seed delivered, nothing given up
#   silent    the consumer never ACKs (fanofleet --no-consumer-ack) and
#             [consumers] pending_max = 32: every delivery must end given
#             up (resends exhausted, or the oldest evicted from the full
#             table), none pending, none ACKed
#
# Checks (any failure exits 1):
#  - fanofleet: no wrong seed; loss5/loss20: no missing seed (every seed
#    reached the consumer despite the losses); silent: every seed arrived
#    (the path is clean), each more than once;
#  - the dataplane's ledger closes: seeds_sent = delivery_acked +
#    delivery_given_up + delivery_pending (0 after the drain), and the
#    given-up reasons add up to delivery_given_up;
#  - loss5/loss20: resends happened (delivery_resent > 0); loss5 (clean
#    ACK path): nothing given up; loss20: duplicate deliveries were ACKed
#    again and those ACKs were no-ops (delivery_ack_unmatched > 0, acked
#    never exceeds sent);
#  - silent: delivery_acked = 0, delivery_given_up = seeds_sent,
#    delivery_giveup_full > 0 (the bound was hit), resends = 5 per seed that
#    was not evicted early at most;
#  - both relays: no unproven ACK, no queue overflow, no send failure.
# One JSON line with the figures goes to stdout ("RESULT ...") and is
# appended to $FG_FAULTS_RESULTS when set.
#
# Everything it creates is named fgdr* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
SCEN=${1:?usage: run_delivery.sh SCENARIO FANOGATE_DP FANOFLEET FANORELAY}
DP=${2:?fanogate-dp}
FLEET=${3:?fanofleet}
RELAY=${4:?fanorelay}
HERE=$(cd "$(dirname "$0")" && pwd)

TOKENS=${FG_FAULTS_TOKENS:-60}
R2="" RESENDS=5 PENDING=4096 CACK=() ACKWIN=""
# the consumer stays until its socket was quiet this long: 7 resend
# intervals where deliveries are lost (0.2^7 for a seed still resent at
# loss20), so it never leaves while a resend is on its way
LINGER_QUIET_MS=400
case $SCEN in
loss5)  R2="--up-loss 0.05"; LINGER_QUIET_MS=1400 ;;
loss20) R2="--loss 0.20 --dup 0.05 --reorder 0.05 --reorder-gap 2"; RESENDS=20; LINGER_QUIET_MS=1400 ;;
silent) CACK=(--no-consumer-ack); PENDING=32 ;;
fleet_window) CACK=(--consumer-acks fleet); ACKWIN=fleet; TOKENS=${FG_FAULTS_TOKENS:-100} ;;
fleet_default) CACK=(--consumer-acks fleet); ACKWIN=""; TOKENS=${FG_FAULTS_TOKENS:-100} ;;
bases)  CACK=(--consumer-acks fleet); ACKWIN=""; R2="--up-loss 0.05"; LINGER_QUIET_MS=1400 ;;
*) echo "run_delivery.sh: unknown scenario $SCEN"; exit 2 ;;
esac

. "$HERE/../lib/delivery.sh"
LCORES=${FG_FAULTS_LCORES:-1}
fg_dlv_begin fgdr 93 "$DP" "$FLEET" "$RELAY"
fg_dlv_start "$DP" "$RELAY" "$FLEET" "${ACKWIN:+ack_window = $ACKWIN}"

WINDOW=8
case $SCEN in fleet_window | fleet_default) WINDOW=$TOKENS ;; esac
if [ "$SCEN" = bases ]; then
	fg_bg INPID ip netns exec "$NS" "$PY" "$HERE/../dataplane/ack_bases.py" ${NET}1 ${NET}2 17000 60 > "$TMP/inject.log" 2>&1
	fg_wait_until 10 grep -q "^injecting" "$TMP/inject.log" ||
		{ cat "$TMP/inject.log"; echo "FAIL: the injector did not start"; exit 1; }
fi
fg_dlv_fleet "$FLEET" "$WINDOW" "${CACK[@]}"
[ "$SCEN" = bases ] && fg_stop INPID
# the consumer lingered through the last resends ((resends + 1) x resend_ms),
# ACKing them (or, silent, not); fg_dlv_drain waits for the ledger to close
# (nothing pending). fleet_window leaves the seeds beyond the consumer's
# window pending on purpose, so its ledger never closes and nothing marks
# the end of its last ACKs: it is judged on what the dataplane counted when
# stopped (no give-up, some window waits, few resends against the pending
# count; an ACK still in flight leaves one more pending, which loosens that
# bound by one seed's resends).
case $SCEN in fleet_window | fleet_default) ;; *) fg_dlv_drain ;; esac
fg_dlv_stop

PYTHONPATH="$HERE/../lib" $PY - "$SCEN" "$FRC" "$DPRC" "$TMP" "$R2" "$RESENDS" "$PENDING" "${FG_FAULTS_RESULTS:-}" "$LCORES" <<'PY'
import sys, time
from fgtest.dlv import Run
scen, frc, dprc, tmp, r2args, resends, pending, out, lcores = sys.argv[1:10]
resends, pending = int(resends), int(pending)
v = Run(tmp)
fails = v.fails
fleet, dp, c, x = v.fleet, v.dp, v.c, v.x
sent, acked, given = c.get("seeds_sent", -1), c.get("delivery_acked", -1), c.get("delivery_given_up", -1)
resent, unmatched, pend = c.get("delivery_resent", -1), c.get("delivery_ack_unmatched", -1), dp.get("delivery_pending", -1)
why = {k: x.get("delivery_" + k, 0) for k in ("giveup_resends", "giveup_reclaimed", "giveup_full", "superseded")}
v.no_wrong_seed(frc)
v.dp_exit(dprc)
r1, r2 = v.relays_clean()
# the ledger: every delivery ends ACKed or given up, counted
if sent <= 0:
    fails.append(f"seeds_sent = {sent}")
if sent != acked + given + pend:
    fails.append(f"ledger open: seeds_sent {sent} != acked {acked} + given_up {given} + pending {pend}")
if pend != 0 and scen not in ("fleet_window", "fleet_default"):
    fails.append(f"{pend} deliveries still pending after the drain")
if sum(why.values()) != given:
    fails.append(f"given-up reasons {why} do not add up to delivery_given_up {given}")
missing, dups = fleet.get("missing", -1), sum((fleet.get("dup_deliveries") or {}).values()) if isinstance(fleet.get("dup_deliveries"), dict) else fleet.get("dup_deliveries", 0)
lost_dn = r2.get("up", {}).get("lost", 0)
lost_acks = r2.get("down", {}).get("lost", 0)
if scen in ("loss5", "loss20"):
    if missing != 0:
        fails.append(f"{missing} seeds never reached the consumer ({given} given up)")
    if lost_dn == 0:
        fails.append("relay 2 dropped no delivery: the scenario tested nothing")
    if resent <= 0:
        fails.append("no resend although deliveries were lost")
    # loss5: the ACK path is clean and the consumer lingers, so six lost
    # transmissions in a row (about 1e-6 per seed) is the only way to give up
    if scen == "loss5" and given != 0:
        fails.append(f"{given} deliveries given up at {scen}")
    # loss20: a delivery whose every ACK was lost ends given up after the
    # consumer got it: counted (the ledger above), never a missing seed
if scen == "loss20":
    if unmatched <= 0:
        fails.append("no ACK of a duplicate delivery was seen (delivery_ack_unmatched 0)")
    if acked > sent:
        fails.append(f"acked {acked} > sent {sent}: a duplicate ACK retired something twice")
if scen == "fleet_default" and x.get("delivery_window_fleet_seen", 0) <= 0:
    fails.append("the fleet's consumer was not recognised (delivery_window_fleet_seen 0)")
if scen == "bases":
    stale, ahead = x.get("delivery_ack_base_stale", 0), x.get("delivery_ack_base_ahead", 0)
    if missing != 0 or given != 0:
        fails.append(f"{missing} seeds missing, {given} given up ({why}) under stale and far-ahead bases")
    if stale <= 0 or ahead <= 0:
        fails.append(f"bad bases not counted: delivery_ack_base_stale {stale}, delivery_ack_base_ahead {ahead}")
    if x.get("delivery_window_fleet_seen", 0) <= 0:
        fails.append("the fleet's consumer was not recognised (delivery_window_fleet_seen 0)")
    if lost_dn == 0 or resent <= 0:
        fails.append(f"{lost_dn} deliveries lost, {resent} resent: the scenario tested nothing")
    if x.get("delivery_window_wait", 0) != 0:
        fails.append(f"a bad base was read as the window: window_wait {x.get('delivery_window_wait')}")
if scen in ("fleet_window", "fleet_default"):
    # the fleet's consumer never ACKs beyond base+63 while it holds < 128:
    # those seeds were delivered (fanofleet got them, missing 0) and wait
    wait = x.get("delivery_window_wait", 0)
    if missing != 0:
        fails.append(f"{missing} seeds missing on a clean path")
    if given != 0:
        fails.append(f"{given} delivered seeds given up ({why}) with a fleet-style consumer")
    if wait <= 0:
        fails.append("no delivery waited for the consumer's window: the scenario tested nothing")
    # without the window every seed beyond base+63 (pend of them) would be
    # sent resends + 1 times and given up; resends of in-window seeds whose
    # ACK came late on a loaded machine are legitimate
    if pend <= 0 or resent >= pend * resends // 2:
        fails.append(f"{resent} resends of {sent} seeds ({pend} beyond the window) on a clean path: "
                     f"resends burned on the consumer's window")
if scen == "silent":
    if missing != 0:
        fails.append(f"{missing} seeds missing on a clean path")
    if acked != 0 or given != sent:
        fails.append(f"silent consumer: acked {acked}, given_up {given}, sent {sent}")
    if why["giveup_full"] <= 0:
        fails.append(f"pending_max {pending} never reached (giveup_full 0)")
    if why["giveup_resends"] <= 0:
        fails.append("no delivery ran out of resends")
    if resent > resends * sent:
        fails.append(f"{resent} resends > {resends} x {sent}")
res = {
    "scenario": "delivery_" + scen, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "relay2": r2args, "resends_max": resends, "pending_max": pending, "lcores": int(lcores),
    "slots": fleet.get("slots"), "resolved": fleet.get("resolved"), "wrong": fleet.get("wrong"), "missing": missing,
    "seeds_sent": sent, "delivery_acked": acked, "delivery_resent": resent, "delivery_given_up": given,
    "giveup_reasons": why, "delivery_ack_unmatched": unmatched, "delivery_pending": pend,
    "delivery_window_wait": x.get("delivery_window_wait", 0),
    "delivery_ack_base_stale": x.get("delivery_ack_base_stale", 0),
    "delivery_ack_base_ahead": x.get("delivery_ack_base_ahead", 0),
    "delivery_window_fleet_seen": x.get("delivery_window_fleet_seen", 0),
    "r2_deliveries_lost": lost_dn, "r2_acks_lost": lost_acks,
    "r2_dup": r2.get("up", {}).get("dup", 0) + r2.get("down", {}).get("dup", 0),
    "acks_checked": r2.get("acks", {}).get("acked_seqs", 0), "seconds": round(fleet.get("seconds", 0), 2),
}
v.finish(res, out)
PY
RC=$?
[ $RC = 0 ] || fg_dlv_dump r2
exit $RC
