#!/usr/bin/env bash
# rss.sh - bench/ws: memory per idle TLS connection.
# fanogate --no-dataplane on loopback; a Python client (ssl + a real
# WebSocket upgrade on /flow with the bearer token, then silence) opens
# connections in steps (0, 100, 500, 1000 by default) and the daemon's
# VmRSS and RssAnon (/proc/PID/status) are read after each step, once the
# step's connections have all been upgraded. Reported: KiB per connection
# between steps (the slope), and the same for a Node 20 + npm ws TLS server
# (ws_bench_server.js) when node and ws are present, as the mainstream
# reference. Memory is not load-dependent, so this may run anywhere.
# OpenSSL's own share: build/bench/ws/tls_mem (tls_mem.c) measures the heap
# OpenSSL keeps per idle server connection with the same certificate; each
# fanogate row then also says kib_per_conn_beyond_openssl (the issue's goal:
# at most 8 KiB). The daemon's "receive mode" log line is printed too.
# Stops by itself: each step has a 60 s bound and the run ends after the
# last step (the idle timeout is raised to 10 min so no connection is closed
# while it runs).
# Usage: bench/ws/rss.sh [fanogate-binary] [STEPS]   (STEPS e.g. "0 100 500 1000")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fanogate=${1:-$root/build/control/daemon/fanogate}
steps=${2:-"0 100 500 1000"}
tls_mem=${TLS_MEM:-$root/build/bench/ws/tls_mem}
[ -x "$fanogate" ] || { echo "rss.sh: no fanogate binary at $fanogate" >&2; exit 77; }
ulimit -n 8192 2>/dev/null || true
tmp=$(mktemp -d /tmp/fg-wsrss.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

. "$here/common.sh" # ws_bench_certs, ws_bench_ini
ws_bench_certs
# fg_daemon_start (fanogate's --ready-fd line: the port it bound on port 0),
# fg_wait_until (a bounded poll of a condition)
. "$root/tests/lib/netns.sh"
# node_port LOG: the port ws_bench_server.js reported ("listening PORT")
node_port() { sed -n 's/^listening \([0-9][0-9]*\)$/\1/p' "$1" 2>/dev/null | head -n 1; }
node_up() { [ -n "$(node_port "$1")" ] || ! kill -0 "$2" 2>/dev/null; }

openssl_bytes=0
if [ -x "$tls_mem" ]; then
  tm=$("$tls_mem" "$tmp/srv.pem" "$tmp/srv.key" 500)
  echo "$tm"
  openssl_bytes=$(echo "$tm" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["openssl_idle_bytes_per_conn"])')
else
  echo "rss.sh: no $tls_mem (ninja -C build): OpenSSL's own share not measured"
fi

# measure NAME PID PORT: steps of idle upgraded connections, RSS after each
measure() {
  /usr/bin/python3 - "$1" "$2" "$3" "$tmp/ca.pem" "$token" "$steps" "$openssl_bytes" <<'EOPY'
import base64, json, os, socket, ssl, sys, time
name, pid, port, ca, token, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
openssl_kib = float(sys.argv[7]) / 1024
ctx = ssl.create_default_context(cafile=ca)
def rss():
    f = {}
    for line in open("/proc/%d/status" % pid):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon"):
            f[k] = int(v.split()[0])
    return f
conns, rows, prev = [], [], None
for n in [int(s) for s in steps.split()]:
    deadline = time.time() + 60
    while len(conns) < n:
        if time.time() > deadline:
            print("rss.sh: step %d timed out at %d connections" % (n, len(conns)), file=sys.stderr)
            sys.exit(1)
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(("GET /flow HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n"
                   % (key, token)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(4096)
            if not d:
                break
            head += d
        if not head.startswith(b"HTTP/1.1 101"):
            print("rss.sh: upgrade refused: %r" % head[:80], file=sys.stderr)
            sys.exit(1)
        conns.append(s)
    time.sleep(0.5)  # not readiness (every upgrade was answered): the server's buffers settle before RSS is read
    r = rss()
    row = dict(server=name, conns=n, vmrss_kib=r.get("VmRSS"), rssanon_kib=r.get("RssAnon"))
    if prev and n > prev["conns"]:
        row["kib_per_conn"] = round((r["VmRSS"] - prev["vmrss_kib"]) / (n - prev["conns"]), 2)
        if name == "fanogate" and openssl_kib > 0:
            row["kib_per_conn_beyond_openssl"] = round(row["kib_per_conn"] - openssl_kib, 2)
    rows.append(row)
    prev = row
    print(json.dumps(row))
EOPY
}

ws_bench_ini 1536 "$tmp/audit.log" "max_connections = 4096
idle_timeout_ms = 600000" "[metrics]
listen = off"
# port 0: the daemon reports the port it bound on its ready fd
if ! fg_daemon_start "$tmp/fg.log" "$tmp/fg.log" "$fanogate" --config "$tmp/fg.ini" --no-dataplane; then
  pids+=("$FG_PID"); cat "$tmp/fg.log"; echo "rss.sh: fanogate did not become ready" >&2; exit 1
fi
pids+=("$FG_PID"); fpid=$FG_PID
grep -o "receive mode: .*" "$tmp/fg.log" || true
measure fanogate "$fpid" "$FG_TLS_PORT"
kill "$fpid"; wait "$fpid" 2>/dev/null || true

if command -v node >/dev/null && [ -d "$root/tests/node_modules/ws" ]; then
  NODE_PATH="$root/tests/node_modules" node "$here/ws_bench_server.js" 0 "$tmp/srv.pem" "$tmp/srv.key" \
    "$tmp/tokens" > "$tmp/node.log" 2>&1 &
  pids+=($!); npid=$!
  fg_wait_until 20 node_up "$tmp/node.log" "$npid" || true
  port=$(node_port "$tmp/node.log")
  if [ -n "$port" ]; then measure node-ws "$npid" "$port"; else cat "$tmp/node.log"; fi
  kill "$npid"; wait "$npid" 2>/dev/null || true
else
  echo "rss.sh: node or npm ws missing: no reference row"
fi
