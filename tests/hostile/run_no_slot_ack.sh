#!/bin/bash
# run_no_slot_ack.sh FANOGATE_DP - a frame refused no_slot
# is not ACKed as received; its status says no_slot instead, so a sender
# that resends only unACKed frames resends it.
#
# fanogate-dp on af_packet over a veth into a namespace, [slots] capacity
# 4; no_slot_client.py sends 64 seed frames (distinct tokens, one line of
# three, so no slot resolves) and collects ACKs and statuses.
# Checks: some frames were refused no_slot; none of those was ACKed; every
# frame placed was ACKed. Before this change every no_slot frame was ACKed.
#
# Everything it creates is named fgns* and removed on exit (trap).
# Exit 77 with a reason when not root, no namespaces/veth, or no binaries.
set -u
DP=${1:?usage: run_no_slot_ack.sh FANOGATE_DP}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/delivery.sh"
fg_dlv_begin fgns 95 "$DP"

cat > "$TMP/fanogate.ini" <<EOC
$(fg_ini_model 8 4 4)
deadline_ms = 30000
$(fg_ini_udp "${NET}0/24")
$(fg_ini_af_packet)
EOC
fg_dlv_dp_start "$DP" 60

OUT=$(ip netns exec "$NS" "$PY" "$HERE/no_slot_client.py" ${NET}1 64)
echo "RESULT $OUT"
fg_stop DPPID
$PY - "$OUT" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
fails = []
if r["statuses"] != r["sent"]:
    fails.append(f"{r['statuses']} statuses for {r['sent']} frames")
if r["outcomes"].get("no_slot", 0) <= 0:
    fails.append("no frame was refused no_slot: the scenario tested nothing")
if r["no_slot_acked"]:
    fails.append(f"{len(r['no_slot_acked'])} frames refused no_slot were ACKed as received: {r['no_slot_acked'][:10]}")
if r["placed_unacked"]:
    fails.append(f"placed frames never ACKed: {r['placed_unacked'][:10]}")
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
PY
RC=$?
[ $RC != 0 ] && { echo "---- fanogate-dp"; grep -v "^TELEMETRY" "$TMP/dp.log" | tail -20; }
exit $RC
