#!/usr/bin/env bash
# test_demo_short.sh - scripts/demo.sh --short against the built tree: every
# resolved seed bit-exact, the injected corruption detected (verdict,
# demotion, alert, audit record), nothing left behind. The demo itself
# decides pass/fail (its exit status); this wrapper only maps "cannot run
# here" to 77.
# Env: FG_BUILD_DIR (set by meson). Needs root (namespace, veth, hugepages).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: the demo needs root (network namespace)"; exit 77; fi
if ! command -v ip >/dev/null; then echo "SKIP: iproute2 missing"; exit 77; fi
B=${FG_BUILD_DIR:-$ROOT/build}
if [ ! -x "$B/control/daemon/fanogate" ] || [ ! -x "$B/tools/fleet/fanofleet" ]; then
	echo "SKIP: fanogate or fanofleet not built in $B"; exit 77
fi
FG_BUILD_DIR=$B timeout 600 "$ROOT/scripts/demo.sh" --short --no-build
rc=$?
echo "demo exit $rc"
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
