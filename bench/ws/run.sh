#!/usr/bin/env bash
# run.sh - bench/ws: WebSocket-over-TLS messages/s and latency (p50/p99) of
# fanogate against a Node `ws` TLS server doing the same 10-byte header
# decode + one status reply per frame (ws_bench_server.js), in the same run,
# with the same core budget: each server pinned to CPU 0 (taskset), the one
# load generator (LOADGEN below) pinned to CPU 1. Sizes: 1 KiB (hidden
# 252 -> 1026-byte frames) and 6 KiB (hidden 1536 -> 6162 bytes, Pair X).
# Prints a markdown table and the raw JSON lines; nothing is asserted.
# Usage: bench/ws/run.sh [fanogate-binary]
#   env: ROUNDS (default 3: interleaved rounds, medians reported),
#        CONNS_LIST ("1 16"), WINDOW, WARM_S, RUN_S, HIDDEN_LIST ("252 1536"),
#        LOADGEN (c: build/bench/ws/ws_load, one thread per connection, the
#        default when built; node: ws_bench_client.js), WS_LOAD (its path),
#        WS_LOAD_COALESCE (1: ws_load sends a window's frames in one
#        SSL_write, the default; 0: one SSL_write and record per frame)
# Instruction counts per message (valid on a loaded machine): icount.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fanogate=${1:-${FANOGATE:-$root/build/control/daemon/fanogate}}
window=${WINDOW:-16} warm=${WARM_S:-1} run=${RUN_S:-5}
ws_load=${WS_LOAD:-$root/build/bench/ws/ws_load}
loadgen=${LOADGEN:-c}
[ "$loadgen" = c ] && [ ! -x "$ws_load" ] && loadgen=node
[ -x "$fanogate" ] || { echo "run.sh: no fanogate binary at $fanogate" >&2; exit 77; }
[ -d "$root/tests/node_modules/ws" ] || { echo "run.sh: npm ws missing (cd tests && npm ci)" >&2; exit 77; }
ncpu=$(nproc)
srv_cpu=0 cli_cpu=$(( ncpu > 1 ? 1 : 0 ))

tmp=$(mktemp -d /tmp/fg-wsbench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

. "$here/common.sh" # ws_bench_certs, ws_bench_ini
ws_bench_certs

. "$here/../../tests/lib/netns.sh" # fg_daemon_start, fg_wait_until
wait_for() { # file pattern
  fg_wait_until 10 grep -q "$2" "$1" 2>/dev/null && return 0
  echo "run.sh: server did not start:"; cat "$1"; return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks
client() { # port frame_bytes
  if [ "$loadgen" = c ]; then
    taskset -c "$cli_cpu" "$ws_load" "$1" "$tmp/ca.pem" "$token" "$2" "$conns" "$window" "$warm" "$run"
  else
    taskset -c "$cli_cpu" node "$here/ws_bench_client.js" "$1" "$tmp/ca.pem" "$token" "$2" "$conns" "$window" "$warm" "$run"
  fi
}

results=()
for round in $(seq 1 "${ROUNDS:-3}"); do
for conns in ${CONNS_LIST:-1 16}; do
for hidden in ${HIDDEN_LIST:-252 1536}; do
  bytes=$(( 18 + 4 * hidden ))
  ws_bench_ini "$hidden" "$tmp/audit-$hidden.log" "" "[slots]
capacity = 8192
[metrics]
listen = off"
  # listener on port 0: fanogate reports the bound port on --ready-fd
  fg_daemon_start "$tmp/fg.log" "$tmp/fg.log" taskset -c "$srv_cpu" "$fanogate" --config "$tmp/fg.ini" --no-dataplane ||
    { echo "run.sh: fanogate did not start:"; cat "$tmp/fg.log"; exit 1; }
  pids+=("$FG_PID"); fpid=$FG_PID port=$FG_TLS_PORT
  t0=$(cpu_ticks "$fpid"); r=$(client "$port" "$bytes"); t1=$(cpu_ticks "$fpid")
  results+=("fanogate $(( t1 - t0 )) $r")
  kill "$fpid"; wait "$fpid" 2>/dev/null || true

  taskset -c "$srv_cpu" node "$here/ws_bench_server.js" 0 "$tmp/srv.pem" "$tmp/srv.key" > "$tmp/node.log" 2>&1 &
  pids+=($!); npid=$!
  wait_for "$tmp/node.log" "listening"
  port=$(sed -n 's/^listening //p' "$tmp/node.log")
  t0=$(cpu_ticks "$npid"); r=$(client "$port" "$bytes"); t1=$(cpu_ticks "$npid")
  results+=("node-ws $(( t1 - t0 )) $r")
  kill "$npid"; wait "$npid" 2>/dev/null || true
done
done
done

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load ($loadgen generator): ${CONNS_LIST:-1 16} connections x $window messages in flight, warm-up ${warm}s, measured ${run}s; servers on CPU $srv_cpu, client on CPU $cli_cpu; ${ROUNDS:-3} interleaved rounds, medians"
echo
/usr/bin/python3 "$here/summarize.py" "$(getconf CLK_TCK)" "${results[@]}"
echo
printf '%s\n' "${results[@]}"
