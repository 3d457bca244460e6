#!/bin/bash
# run_spoofed_ack.sh FANOGATE_DP FANOFLEET FANORELAY - consumer
# ACKs count only from that layer's configured consumer address
# and port, and the work one ACK datagram costs is bounded.
#
# The topology of tests/faults/run_delivery.sh (fanofleet + relays in a
# namespace, fanogate-dp on af_packet over a veth), with a consumer that
# never ACKs (--no-consumer-ack, as its "silent" scenario) and
# spoof_ack.py beside it sending, every 20 ms, ACK frames that cover every
# delivered seed from another fleet address and from the consumer's host on
# another port, and once a second a 104-entry frame of sequences nothing is
# pending for from the consumer's own address and port.
#
# Checks (any failure exits 1): every delivery ends given up
# (delivery_acked 0, delivery_given_up = seeds_sent: no spoofed ACK retired
# one), x counter ack_foreign > 0, ack_budget > 0 (the junk frames were cut
# short), every seed reached the consumer, no wrong seed.
# Before this change the spoofed ACKs retired the deliveries (acked > 0).
#
# Everything it creates is named fgsa* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
DP=${1:?usage: run_spoofed_ack.sh FANOGATE_DP FANOFLEET FANORELAY}
FLEET=${2:?fanofleet}
RELAY=${3:?fanorelay}
HERE=$(cd "$(dirname "$0")" && pwd)

TOKENS=40
R2="" RESENDS=3 PENDING=4096 CACK=(--no-consumer-ack)
. "$HERE/../lib/delivery.sh"
LCORES=${FG_FAULTS_LCORES:-1}
fg_dlv_begin fgsa 94 "$DP" "$FLEET" "$RELAY"
fg_dlv_start "$DP" "$RELAY" "$FLEET"

fg_bg SPPID ip netns exec "$NS" "$PY" "$HERE/spoof_ack.py" ${NET}1 ${NET}2 17000 ${NET}3 30 > "$TMP/spoof.log" 2>&1
# the fleet starts once the first spoofs (and the first junk frame) are sent
fg_wait_until 10 grep -q "^spoofing" "$TMP/spoof.log" || { cat "$TMP/spoof.log"; echo "FAIL: the spoofer did not start"; exit 1; }
fg_dlv_fleet "$FLEET" 8 "${CACK[@]}"
fg_stop SPPID
# the consumer lingered through the last resends ((resends + 1) x resend_ms),
# ACKing them (or, silent, not); the last give-ups are done by now
fg_dlv_drain
fg_dlv_stop

PYTHONPATH="$HERE/../lib" $PY - "$FRC" "$DPRC" "$TMP" <<'PY'
import sys
from fgtest.dlv import Run
frc, dprc, tmp = sys.argv[1:4]
v = Run(tmp)
c, x, fleet = v.c, v.x, v.fleet
sent, acked, given = v.clean_path(frc, dprc)
if acked != 0:
    v.fail(f"spoofed ACKs retired {acked} deliveries (the consumer never ACKed)")
if given != sent:
    v.fail(f"given_up {given} != seeds_sent {sent}")
if x.get("ack_foreign", 0) <= 0:
    v.fail(f"ack_foreign = {x.get('ack_foreign', 0)}: the spoofed entries were not refused as foreign")
if x.get("ack_budget", 0) <= 0:
    v.fail(f"ack_budget = {x.get('ack_budget', 0)}: the 6,656-seq frames were not cut short")
v.finish({"seeds_sent": sent, "delivery_acked": acked, "delivery_given_up": given, "ack_rx": x.get("ack_rx"),
          "ack_foreign": x.get("ack_foreign"), "ack_budget": x.get("ack_budget"),
          "ack_unmatched": c.get("delivery_ack_unmatched")})
PY
RC=$?
[ $RC = 0 ] || fg_dlv_dump r2 spoof
exit $RC
