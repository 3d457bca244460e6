#!/bin/bash
# run_neigh_poison.sh FANOGATE_DP FANOFLEET FANORELAY - neighbour
# poisoning. No gratuitous ARP, ARP request or UDP datagram from
# another MAC claiming the consumer's IP may redirect seed deliveries.
#
# The topology of run_spoofed_ack.sh (fanofleet + relays in a namespace,
# fanogate-dp on af_packet over a veth), with the consumer (which ACKs) on
# its own address .3 beside the fleet's .2, and spoof_neigh.py sending
# every 5 ms, from MAC 02:00:00:00:ee:ee, a gratuitous ARP, an ARP request
# and a UDP datagram, each claiming .3. The dataplane first hears the
# consumer's real ARP request (spoof_neigh.py --announce: from .3 at the
# veth's own MAC), as a host's kernel would send it. With a 4th argument
# `static` the consumer is instead pinned by [dataplane] neighbours =
# .3=<the veth's MAC> and no ARP request is sent: the same checks, and no
# delivery fell back to broadcast (neigh_miss 0).
#
# Checks (any failure exits 1): every seed reached the consumer (missing 0),
# no wrong seed, no delivery given up (a delivery sent to the spoofed MAC is
# never ACKed), x counter neigh_unsolicited > 0 (the spoofs were refused).
# Before this change the spoofs rewrote the consumer's neighbour entry and
# deliveries went to 02:00:00:00:ee:ee (given up, seeds missing).
#
# Everything it creates is named fgnp* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
DP=${1:?usage: run_neigh_poison.sh FANOGATE_DP FANOFLEET FANORELAY}
FLEET=${2:?fanofleet}
RELAY=${3:?fanorelay}
MODE=${4:-learn}
HERE=$(cd "$(dirname "$0")" && pwd)

TOKENS=40
R2="" RESENDS=3 PENDING=4096 CACK=()
. "$HERE/../lib/delivery.sh"
LCORES=${FG_FAULTS_LCORES:-1}
fg_dlv_begin fgnp 95 "$DP" "$FLEET" "$RELAY"
# the consumer at .3 (the address the spoofs claim), the stations at .2
ip -n "$NS" addr add ${NET}3/24 dev "$VB"
DLV_CONSUMER=${NET}3
STATIC=""
[ "$MODE" = static ] && STATIC="neighbours = ${NET}3=$(ip netns exec "$NS" cat /sys/class/net/$VB/address)"
fg_dlv_start "$DP" "$RELAY" "$FLEET" "" "$STATIC"

DPMAC=$(cat /sys/class/net/$VA/address)
[ "$MODE" = static ] || ip netns exec "$NS" "$PY" "$HERE/spoof_neigh.py" --announce "$VB" "$DPMAC" ${NET}1 ${NET}3 0 > "$TMP/announce.log" 2>&1 ||
	{ cat "$TMP/announce.log"; echo "FAIL: cannot send the consumer's ARP request"; exit 1; }
fg_bg SPPID ip netns exec "$NS" "$PY" "$HERE/spoof_neigh.py" "$VB" "$DPMAC" ${NET}1 ${NET}3 60 > "$TMP/spoof.log" 2>&1
# the fleet starts once the spoofs are on the wire (a fleet that ends before
# the spoofer's first round would leave nothing to refuse)
fg_wait_until 10 grep -q "^spoofing" "$TMP/spoof.log" || { cat "$TMP/spoof.log"; echo "FAIL: the spoofer did not start"; exit 1; }
fg_dlv_fleet "$FLEET" 8 "${CACK[@]}"
fg_stop SPPID
# the consumer lingered through the last resends ((resends + 1) x resend_ms),
# ACKing them (or, silent, not); the last give-ups are done by now
fg_dlv_drain
fg_dlv_stop

PYTHONPATH="$HERE/../lib" $PY - "$FRC" "$DPRC" "$TMP" "$MODE" <<'PY'
import sys
from fgtest.dlv import Run
frc, dprc, tmp, mode = sys.argv[1:5]
v = Run(tmp)
c, x, fleet = v.c, v.x, v.fleet
sent, acked, given = v.clean_path(frc, dprc)
if given != 0:
    v.fail(f"{given} deliveries given up (sent to a spoofed MAC, never ACKed)")
if x.get("neigh_unsolicited", 0) <= 0:
    v.fail(f"neigh_unsolicited = {x.get('neigh_unsolicited', 0)}: the spoofs were not refused")
if mode == "static" and x.get("neigh_miss", -1) != 0:
    v.fail(f"neigh_miss = {x.get('neigh_miss')}: the static neighbour was not used")
v.finish({"seeds_sent": sent, "delivery_acked": acked, "delivery_given_up": given,
          "neigh_unsolicited": x.get("neigh_unsolicited"), "neigh_not_allowed": x.get("neigh_not_allowed"),
          "neigh_miss": x.get("neigh_miss"), "missing": fleet.get("missing")})
PY
RC=$?
[ $RC = 0 ] || fg_dlv_dump r2 spoof
exit $RC
