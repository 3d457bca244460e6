#!/usr/bin/env bash
# icount.sh - bench/ws: instructions per WebSocket-over-TLS message, for
# fanogate (--no-dataplane) and for the C load generator (ws_load), counted
# by valgrind --tool=callgrind. Instruction counts do not depend on the
# machine's load, so this is the figure to compare on a shared machine
# (timed figures: run.sh, on a quiet machine).
#
# Differential: for each size, two runs with a fixed workload of N1 and N2
# messages per connection (ws_load's MAX_MSGS), fanogate under callgrind in
# one pair of runs and ws_load under callgrind in another; per message =
# (Ir(N2) - Ir(N1)) / (CONNS * (N2 - N1)), so start-up, the TLS handshakes
# and shutdown cancel out. With the daemon's metrics endpoint on, the loop's
# io_uring completions and submits per message are printed beside it (the
# kernel's share, which callgrind does not count). Same protocol, certificate and config as run.sh.
# seccomp is off (valgrind cannot install the filter) and the handshake
# timeout is 2 min (16 handshakes in a daemon under callgrind on a loaded
# machine can take more than the default 5 s); neither costs anything per
# message. Prints one line per (program, size) and keeps the callgrind files in
# OUT (default: a fresh /tmp directory) for callgrind_annotate.
# Usage: bench/ws/icount.sh [fanogate-binary]
#   env: HIDDEN_LIST ("252 1536"), CONNS (1), WINDOW (16), N1 (500),
#        N2 (2500), WHO ("fanogate ws_load"), OUT, WS_LOAD (its path),
#        WS_LOAD_COALESCE (passed to ws_load: 0 = one SSL_write per frame)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fanogate=${1:-${FANOGATE:-$root/build/control/daemon/fanogate}}
ws_load=${WS_LOAD:-$root/build/bench/ws/ws_load}
conns=${CONNS:-1} window=${WINDOW:-16} n1=${N1:-500} n2=${N2:-2500}
[ -x "$fanogate" ] || { echo "icount.sh: no fanogate binary at $fanogate" >&2; exit 77; }
[ -x "$ws_load" ] || { echo "icount.sh: no ws_load at $ws_load" >&2; exit 77; }
command -v valgrind >/dev/null || { echo "icount.sh: valgrind missing" >&2; exit 77; }

tmp=$(mktemp -d /tmp/fg-wsicount.XXXXXX)
out=${OUT:-$tmp/out}
mkdir -p "$out"
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp/ca.key" "$tmp/srv.key"
}
trap cleanup EXIT INT TERM

. "$here/common.sh" # ws_bench_certs, ws_bench_ini
ws_bench_certs

. "$here/../../tests/lib/netns.sh" # fg_daemon_start

cg=(valgrind --tool=callgrind --dump-instr=no)
# valgrind counts each iteration of `rep movsb` as an instruction, so
# glibc's memcpy above its rep_movsb_threshold (a 16 KiB TLS record) would
# count one instruction per byte and a vector loop below it one per 32:
# the threshold goes out of reach so every copy is counted the same way.
export GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1073741824:glibc.cpu.x86_rep_stosb_threshold=1073741824
# CG=0: no callgrind, only the loop's io_uring counts per message of the
# native daemon (counts, not times; but how many messages share a
# completion depends on the relative speed of the two sides, so they move
# with the machine's load)
[ "${CG:-1}" = 0 ] && cg=()
ir_of() { [ -f "$1" ] && sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$1" | head -n 1 || echo 0; }

# run WHO HIDDEN N: one daemon, one ws_load of N messages per connection;
# the callgrind file of WHO is $out/WHO-HIDDEN-N.cg.
run_one() {
  local who=$1 hidden=$2 n=$3 bytes=$(( 18 + 4 * $2 ))
  ws_bench_ini "$hidden" "$tmp/audit-$hidden-$n.log" "handshake_timeout_ms = 120000" "[slots]
capacity = 8192
[metrics]
listen = 127.0.0.1:0
[daemon]
seccomp = off"
  local pre=() lpre=()
  if [ ${#cg[@]} = 0 ]; then
    :
  elif [ "$who" = fanogate ]; then
    pre=("${cg[@]}" --callgrind-out-file="$out/fanogate-$hidden-$n.cg")
  else
    lpre=("${cg[@]}" --callgrind-out-file="$out/ws_load-$hidden-$n.cg")
  fi
  fg_daemon_start "$tmp/fg.log" "$tmp/fg.log" "${pre[@]}" "$fanogate" --config "$tmp/fg.ini" --no-dataplane ||
    { echo "icount.sh: fanogate did not start:"; cat "$tmp/fg.log"; exit 1; }
  pid=$FG_PID
  local r
  r=$("${lpre[@]}" "$ws_load" "$FG_TLS_PORT" "$tmp/ca.pem" "$token" "$bytes" "$conns" "$window" 0 1 "$n" 2>>"$tmp/ws_load.err") ||
    { echo "icount.sh: ws_load failed: $r"; cat "$tmp/ws_load.err"; exit 1; }
  # the loop's io_uring counters: kernel work per message, which
  # callgrind (user space only) does not see
  curl -s "http://127.0.0.1:$FG_METRICS_PORT/metrics" |
    sed -n 's/^fanogate_loop_\(completions\|submits\)_total \([0-9]*\)$/\1 \2/p' > "$out/$who-$hidden-$n.loop"
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  rm -f "$tmp/audit-$hidden-$n.log"
  echo "$r" > "$out/$who-$hidden-$n.json"
}

echo "date: $(date -u +%Y-%m-%dT%H:%MZ) fanogate: $fanogate ws_load: $ws_load coalesce: ${WS_LOAD_COALESCE:-1}"
echo "workload: $conns connection(s) x window $window, N1=$n1 N2=$n2 messages per connection"
for hidden in ${HIDDEN_LIST:-252 1536}; do
  for who in ${WHO:-fanogate ws_load}; do
    run_one "$who" "$hidden" "$n1"
    run_one "$who" "$hidden" "$n2"
    a=$(ir_of "$out/$who-$hidden-$n1.cg") b=$(ir_of "$out/$who-$hidden-$n2.cg")
    loop=
    for k in completions submits; do
      x=$(sed -n "s/^$k //p" "$out/$who-$hidden-$n1.loop") y=$(sed -n "s/^$k //p" "$out/$who-$hidden-$n2.loop")
      [ -n "$x" ] && [ -n "$y" ] &&
        loop+=" uring_${k}_per_msg=$(awk -v x="$x" -v y="$y" -v m=$(( conns * (n2 - n1) )) 'BEGIN{printf "%.3f", (y - x) / m}')"
    done
    echo "$who frame_bytes=$(( 18 + 4 * hidden )) conns=$conns Ir_N1=$a Ir_N2=$b" \
      "Ir_per_msg=$(( (b - a) / (conns * (n2 - n1)) ))$loop"
  done
done
echo "callgrind files: $out"
