#!/bin/sh
# run_ir_budget.sh - the lcore's instruction budget (a count, not a time):
# bench/cap/callgrind.sh runs fanogate-dp under callgrind against cap_gen
# over memif (300 seeds, hidden 1536, Pair X, every seed delivered and
# ACKed) and prints the lcore's instructions per resolved seed; this test
# fails when that figure exceeds bench/cap/ir_budget by more than 10%.
# Instruction counts do not depend on the machine's load, so the test is as
# stable on a loaded CI runner as on a quiet one. FG_IR_BUDGET=N overrides
# the budget (to see the test fail: FG_IR_BUDGET=10000). The profile
# carries instruction positions (FG_CAP_INSTR=1: the same count), and
# cg_ir.py --paths must read them: the receive loop's row, with the
# instructions of it that ran.
#
# Usage: run_ir_budget.sh BUILD_DIR
# Exit 77 (skip) without valgrind, cap_gen or memif (callgrind.sh says why).
set -u
B=${1:?usage: run_ir_budget.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SEEDS=300
budget=${FG_IR_BUDGET:-$(awk '$1 == "ir_per_seed" {print $2}' "$ROOT/bench/cap/ir_budget")}
[ -n "$budget" ] || { echo "run_ir_budget: no ir_per_seed in bench/cap/ir_budget"; exit 1; }
OUT=$(mktemp -d /tmp/fgirbudget-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
FG_CAP_INSTR=1 "$ROOT/bench/cap/callgrind.sh" "$B" "$SEEDS" "$OUT" > "$OUT/cg.txt" 2>&1
rc=$?
cat "$OUT/cg.txt"
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || { echo "run_ir_budget: callgrind.sh failed (exit $rc)"; exit 1; }
python3 - "$OUT/ir.json" "$budget" "$SEEDS" <<'EOPY'
import json, sys
r = json.load(open(sys.argv[1]))
budget, seeds = int(sys.argv[2]), int(sys.argv[3])
n = r["ir_per_seed"]
limit = budget * 1.10
if r["seeds"] < seeds:
    print("run_ir_budget: FAIL: %d of %d seeds resolved" % (r["seeds"], seeds))
    sys.exit(1)
print("run_ir_budget: %d instructions per resolved seed, budget %d, limit %d (+10%%)" % (n, budget, limit))
if n > limit:
    print("run_ir_budget: FAIL: the lcore's work per seed grew by %.1f%% over bench/cap/ir_budget"
          % (100.0 * (n - budget) / budget))
    sys.exit(1)
EOPY
[ $? = 0 ] || exit 1
python3 "$ROOT/bench/cap/cg_ir.py" "$OUT/callgrind.out" "$OUT/dp.json" --paths 12 > "$OUT/paths.txt" || {
	cat "$OUT/paths.txt"
	echo "run_ir_budget: FAIL: cg_ir.py --paths"
	exit 1
}
sed -n '/^function (work share)/,$p' "$OUT/paths.txt"
awk '$1 == "dp_rx_work" && $5 > 0 {ok = 1} END {exit !ok}' "$OUT/paths.txt" ||
	{ echo "run_ir_budget: FAIL: --paths has no dp_rx_work row with instructions that ran"; exit 1; }
