#!/bin/sh
# bench/cluster/run.sh - what [cluster] costs etcd for 2, 10 and 30 nodes
# (docs/cluster.md "How it scales"; cluster_bench.py says what is measured).
# Builds the daemon if needed, runs as root (network namespace), stops by
# itself. Usage: bench/cluster/run.sh [N...]   (default: 2 10 30)
# Environment: BUILD (default build), WINDOW (s, default 20), KILLS (3).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[ -x "$BUILD/control/daemon/fanogate" ] || ninja -C "$BUILD" control/daemon/fanogate
[ $# -gt 0 ] || set -- 2 10 30
FANOGATE="$BUILD/control/daemon/fanogate" exec /usr/bin/python3 "$ROOT/bench/cluster/cluster_bench.py" \
	--window "${WINDOW:-20}" --kills "${KILLS:-3}" "$@"
