#!/bin/bash
# run_reasm_flood.sh FANOGATE_DP - reassembly-context exhaustion from the
# network: fanogate-dp on af_packet over a veth pair, [udp] reasm_contexts =
# 16 and reasm_timeout_ms = 1000; in the namespace (reasm_flood.py) a
# flooder opens 64 incomplete fragment groups, an honest station sends
# single-fragment contributions while the table is full, then two-fragment
# ones after the timeout.
#
# Checks (any failure exits 1):
#  - exactly 64 - 16 = 48 fragments refused with drop_reasm_overflow, all
#    of the flood: the station's two-fragment frame sent while the table is
#    full is admitted (the flood's oldest group gives way to another source
#    address, dp_reasm.c) and counted with the timeouts;
#  - token A (single-fragment frames) resolved bit-exact while the table
#    was full; token B (two-fragment frames) resolved after the contexts
#    came back; both reached the consumer;
#  - the 16 flood groups ended by the timeout (reasm_timeout >= 16), every
#    frame buffer returned to its pool, the fragment identity holds.
# Everything it creates is named fgdr* and removed on exit (trap); exit 77
# when not root, no namespaces/veth, or fanogate-dp cannot run here.
set -u
DP=${1:?usage: run_reasm_flood.sh FANOGATE_DP}
HERE=$(cd "$(dirname "$0")" && pwd)

. "$HERE/../lib/delivery.sh"
fg_dlv_begin fgdr 91 "$DP"
ip -n "$NS" addr add ${NET}3/24 dev "$VB"

cat > "$TMP/fanogate.ini" <<EOC
[model]
hidden = 256
layers = 4
max_seq_len = 2
[slots]
deadline_ms = 10000
$(fg_ini_udp "${NET}0/24" 50)
reasm_contexts = 16
reasm_timeout_ms = 1000
[consumers]
default = ${NET}2:7000
resends = 0
$(fg_ini_af_packet)
EOC
fg_dlv_dp_start "$DP" 60

ip netns exec "$NS" $PY "$HERE/reasm_flood.py" --src ${NET}2 --flood-src ${NET}3 --dst ${NET}1 --groups 64 \
	--hidden 256 --wait 1.5 > "$TMP/flood.json" 2> "$TMP/flood.err"
FRC=$?
fg_stop DPPID; DPRC=$?

$PY - "$TMP/dp.json" "$TMP/flood.json" "$FRC" "$DPRC" <<'PY'
import json, sys
rep, fl, frc, dprc = sys.argv[1:5]
fails = []
try:
    r = json.load(open(rep))
except Exception as e:
    print("FAIL: report: %s" % e); sys.exit(1)
try:
    f = json.loads(open(fl).read().strip().splitlines()[-1])
except Exception as e:
    f = {}
    fails.append("flood script output: %s" % e)
c, x = r["counters"], r["x"]
if int(frc) != 0 or not f.get("a_resolved") or not f.get("b_resolved"):
    fails.append("seeds: %s (exit %s)" % (f, frc))
if int(dprc) != 0:
    fails.append("fanogate-dp exit %s" % dprc)
if c["drop_reasm_overflow"] != 64 - 16:
    fails.append("drop_reasm_overflow %d, expected 48 (the flood's; the station's frame evicts the oldest flood group)" % c["drop_reasm_overflow"])
if c["reasm_timeout"] < 16:
    fails.append("reasm_timeout %d: the flood's 16 contexts did not time out" % c["reasm_timeout"])
if r["slots_resolved"] != 2:
    fails.append("slots_resolved %d, expected 2" % r["slots_resolved"])
if c["frags"] != x["frag_single"] + x["frag_taken"] + x["frag_duplicate"] + x["frag_discarded"] + \
        x["frag_nobuf"] + x["frag_malformed"] + c["drop_reasm_overflow"]:
    fails.append("fragment identity broken")
if r["xfer_pool_avail"] != r["xfer_pool_size"]:
    fails.append("frame buffers not returned: %d of %d" % (r["xfer_pool_avail"], r["xfer_pool_size"]))
print("reasm flood: overflow %d, timeouts %d, resolved %d, frags %d (single %d, taken %d)" % (
    c["drop_reasm_overflow"], c["reasm_timeout"], r["slots_resolved"], c["frags"], x["frag_single"], x["frag_taken"]))
for m in fails:
    print("FAIL: " + m)
print("%d passed, %d failed" % (0 if fails else 1, 1 if fails else 0))
sys.exit(1 if fails else 0)
PY
RC=$?
[ $RC != 0 ] && { cat "$TMP/flood.err"; grep -v "^TELEMETRY" "$TMP/dp.log" | tail -10; }
exit $RC
