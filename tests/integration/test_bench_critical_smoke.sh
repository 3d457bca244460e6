#!/usr/bin/env bash
# test_bench_critical_smoke.sh - scripts/bench.sh --critical-path --smoke:
# the relay hop is measured, every critical-path run (the canonical chain,
# Pair X jumps at each delay, the lines in shadow) finishes every token with
# every seed bit-exact, the shadow run's gate never passes and none of its
# tokens saves time, the canonical runs take no jump, and the table, JSON
# and stamped PNG appear. No timing is asserted. --no-dpdk: loopback only,
# no namespace and no hugepages (the DPDK path is the full run's, on a quiet
# machine: bench/critical/RESULTS.md gives the command).
# Env: FG_BUILD_DIR (set by meson).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${FG_BUILD_DIR:-$ROOT/build}
if [ ! -x "$B/control/daemon/fanogate" ] || [ ! -x "$B/tools/fleet/fanofleet" ] || [ ! -x "$B/tools/fanoctl" ]; then
	echo "SKIP: fanogate, fanofleet or fanoctl not built in $B"; exit 77
fi
command -v gnuplot >/dev/null || { echo "SKIP: gnuplot missing"; exit 77; }
OUT=$(mktemp -d /tmp/fgfl-critsmoke.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
timeout 600 "$ROOT/scripts/bench.sh" --critical-path --smoke --no-dpdk --build-dir "$B" --out "$OUT"
rc=$?
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
