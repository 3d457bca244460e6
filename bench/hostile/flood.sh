#!/bin/bash
# bench/hostile/flood.sh [BUILD] - the speed goal: under each flood
# (fragment 0, ACK, garbage, canonical digests, conflicts) the fleet
# emulator keeps at least 50% of its no-flood seed rate. The same run as the
# test hostile_flood_fleet (tests/hostile/run_flood_fleet.sh), with the rate
# judged (FG_FLOOD_RATE_BAR=1): run it on a quiet machine, nothing else
# running, and note the load average it prints before and after. The test
# itself asserts only correctness (wrong, lost, late, counted, unchanged
# state) and prints the rates, since a timed bar in a shared test run
# measures the other tests.
#
# Prints the RESULT line (rates per phase, baselines) and exits non-zero
# when a flood costs more than half the seed rate twice in a row.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
GATE=$BUILD/control/daemon/fanogate
FLEET=$BUILD/tools/fleet/fanofleet
for b in "$GATE" "$FLEET"; do
	[ -x "$b" ] || { echo "flood.sh: $b not built (ninja -C $BUILD)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "flood.sh: needs root (namespaces, DPDK, raw sockets)" >&2; exit 2; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)  $(date -u '+%F %T UTC')  $(git -C "$ROOT" rev-parse --short HEAD)"
FG_FLOOD_RATE_BAR=1 bash "$ROOT/tests/hostile/run_flood_fleet.sh" "$GATE" "$FLEET"
rc=$?
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)  $(date -u '+%F %T UTC')  exit $rc"
exit $rc
