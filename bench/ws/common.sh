# bench/ws/common.sh - sourced by run.sh, rss.sh and icount.sh: the one
# place the WebSocket benchmarks make their TLS material and fanogate's
# --no-dataplane configuration. Needs $tmp (the bench's scratch directory).

# ws_bench_certs: a P-256 CA, a server certificate for localhost/127.0.0.1
# signed by it ($tmp/ca.pem, $tmp/srv.pem, $tmp/srv.key) and one bearer
# token ($tmp/tokens, also in $token).
ws_bench_certs() {
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 -subj /CN=bench-ca 2>/dev/null
  openssl req "${ec[@]}" -keyout "$tmp/srv.key" -out "$tmp/srv.csr" -subj /CN=localhost 2>/dev/null
  echo "subjectAltName=DNS:localhost,IP:127.0.0.1" > "$tmp/ext"
  openssl x509 -req -in "$tmp/srv.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial \
    -out "$tmp/srv.pem" -days 2 -extfile "$tmp/ext" 2>/dev/null
  token=bench-token-0123456789abcdef
  echo "$token" > "$tmp/tokens"; chmod 600 "$tmp/tokens"
}

# ws_bench_ini HIDDEN AUDIT_LOG [TLS_EXTRA] [TAIL]: $tmp/fg.ini for fanogate
# --no-dataplane: the TLS listener on port 0 (the port comes back on
# --ready-fd), HIDDEN floats per position, the audit log at AUDIT_LOG.
# TLS_EXTRA lines go into [tls]; TAIL (whole sections) follows [operator].
ws_bench_ini() {
  cat > "$tmp/fg.ini" <<INI
[model]
hidden = $1
layers = 4
[tls]
listen = 127.0.0.1:0
cert = $tmp/srv.pem
key = $tmp/srv.key
tokens_file = $tmp/tokens
${3:-}
[audit]
path = $2
[operator]
socket = $tmp/op.sock
${4:-}
INI
}
