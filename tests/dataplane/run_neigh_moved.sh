#!/bin/bash
# run_neigh_moved.sh FANOGATE_DP FANOFLEET FANORELAY - a consumer that moves
# (a failover, a replaced NIC: its MAC changes, its address stays) is
# reached again without a restart (dataplane/dp_neigh.c).
#
# The delivery topology (tests/lib/delivery.sh): fanofleet and the relays
# in a namespace behind veth $VB (${NET}2, the consumer's address too),
# fanogate-dp on af_packet over $VA. A first run of 20 tokens is delivered
# (the dataplane asked for ${NET}2 at first use and learnt $VB's MAC); then
# $VB's MAC changes (ip link set dev $VB address ...), and a second run of
# 20 tokens (token_seq from 5000) must get every seed within its 5 s slot
# timeout: the deliveries to the old MAC go unanswered, the dataplane asks
# again, the namespace's kernel answers with the new MAC, the resends
# reach it. Meanwhile a gratuitous ARP from a third MAC claiming ${NET}2
# (spoof_neigh.py, tests/hostile) must still be refused.
#
# Checks (any failure exits 1): both runs: every seed, none wrong, none
# given up; neigh_moved >= 1 (the answer changed the entry), neigh_requests
# >= 2, neigh_unsolicited >= 1 (the spoofs). Before the dataplane asked for
# its neighbours, the second run's seeds all went to the old MAC: missing,
# given up.
#
# Everything it creates is named fgnm* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
DP=${1:?usage: run_neigh_moved.sh FANOGATE_DP FANOFLEET FANORELAY}
FLEET=${2:?fanofleet}
RELAY=${3:?fanorelay}
HERE=$(cd "$(dirname "$0")" && pwd)

TOKENS=20
R2="" RESENDS=5 PENDING=4096 CACK=()
. "$HERE/../lib/delivery.sh"
LCORES=${FG_FAULTS_LCORES:-1}
fg_dlv_begin fgnm 96 "$DP" "$FLEET" "$RELAY"
fg_dlv_start "$DP" "$RELAY" "$FLEET"

fg_dlv_fleet "$FLEET" 8
FRC1=$FRC
cp "$TMP/fleet.json" "$TMP/fleet1.json" 2>/dev/null
OLD=$(ip netns exec "$NS" cat /sys/class/net/$VB/address)
NEW=$(printf '02:00:00:96:%02x:%02x' $((ID / 256 % 256)) $((ID % 256)))
ip -n "$NS" link set dev "$VB" address "$NEW" || { echo "FAIL: cannot change $VB's MAC"; exit 1; }
DPMAC=$(cat /sys/class/net/$VA/address)
fg_bg SPPID ip netns exec "$NS" "$PY" "$HERE/../hostile/spoof_neigh.py" "$VB" "$DPMAC" ${NET}1 ${NET}2 30 \
	> "$TMP/spoof.log" 2>&1
fg_wait_until 10 grep -q "^spoofing" "$TMP/spoof.log" || { cat "$TMP/spoof.log"; echo "FAIL: the spoofer did not start"; exit 1; }
ip netns exec "$NS" "$FLEET" --udp 127.0.0.1:14000 --consumer 127.0.0.1:17001 --mix udp=1 --layers 8 \
	--hidden 512 --tokens "$TOKENS" --window 8 --seed $((ID % 1000 + 2)) --token-base 5000 \
	--canonical none --slot-timeout-ms 5000 --max-missing 1000000 --duration 100 --quiet \
	--json "$TMP/fleet.json" --linger-ms 1700 > "$TMP/fleet.log" 2>&1
FRC=$?
fg_stop SPPID
fg_dlv_drain
fg_dlv_stop

PYTHONPATH="$HERE/../lib" $PY - "$FRC1" "$FRC" "$DPRC" "$TMP" "$OLD" "$NEW" <<'PY'
import json, sys
from fgtest.dlv import Run
frc1, frc, dprc, tmp, old, new = sys.argv[1:7]
v = Run(tmp)
c, x = v.c, v.x
first = v.load("fleet1.json")
if int(frc1) == 1 or first.get("wrong", 1) != 0 or first.get("missing", -1) != 0:
    v.fail(f"run 1 (before the move): wrong {first.get('wrong')}, missing {first.get('missing')}")
sent, acked, given = v.clean_path(frc, dprc)  # run 2: every seed within its 5 s slot timeout
if given != 0:
    v.fail(f"{given} deliveries given up (sent to {old} after the consumer moved to {new})")
if x.get("neigh_moved", 0) < 1:
    v.fail(f"neigh_moved = {x.get('neigh_moved', 0)}: no answer moved the consumer's entry")
if x.get("neigh_requests", 0) < 1:
    v.fail(f"neigh_requests = {x.get('neigh_requests', 0)}: the dataplane did not ask again")
if x.get("neigh_unsolicited", 0) < 1:
    v.fail(f"neigh_unsolicited = {x.get('neigh_unsolicited', 0)}: the spoofed claims were not refused")
v.finish({"old_mac": old, "new_mac": new, "seeds_sent": sent, "delivery_acked": acked, "delivery_given_up": given,
          "delivery_resent": c.get("delivery_resent"), "neigh_requests": x.get("neigh_requests"),
          "neigh_answers": x.get("neigh_answers"), "neigh_moved": x.get("neigh_moved"),
          "neigh_unsolicited": x.get("neigh_unsolicited"), "neigh_miss": x.get("neigh_miss"),
          "missing_run1": first.get("missing"), "missing_run2": v.fleet.get("missing"),
          "seconds_run2": v.fleet.get("seconds")})
PY
RC=$?
[ $RC = 0 ] || fg_dlv_dump r2 spoof
exit $RC
