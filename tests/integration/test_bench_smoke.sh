#!/usr/bin/env bash
# test_bench_smoke.sh - scripts/bench.sh --smoke: every path of the jump
# benchmark runs a few tokens and every output (table, JSON, PNG, samples)
# appears. No timing is asserted.
# Env: FG_BUILD_DIR (set by meson). Without root the DPDK path is skipped
# by the bench itself; the rest runs on loopback.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${FG_BUILD_DIR:-$ROOT/build}
if [ ! -x "$B/control/daemon/fanogate" ] || [ ! -x "$B/tools/fleet/fanofleet" ]; then
	echo "SKIP: fanogate or fanofleet not built in $B"; exit 77
fi
command -v gnuplot >/dev/null || { echo "SKIP: gnuplot missing"; exit 77; }
OUT=$(mktemp -d /tmp/fgfl-benchsmoke.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
timeout 600 "$ROOT/scripts/bench.sh" --smoke --build-dir "$B" --out "$OUT"
rc=$?
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
