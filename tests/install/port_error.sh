#!/usr/bin/env bash
# port_error.sh - [dataplane] port names the NIC: a port that is not on this
# host stops the daemon before the EAL with an error naming the port and
# what to check (not "No such device" alone), and exits 1; a port given to a
# profile that drives no NIC by name (ring) is refused naming both. Both as
# journald sees them: the DPDK-side line comes through the daemon's logger
# at error ("<3>").
# Usage: port_error.sh FANOGATE
set -u
GATE=$1
T=$(mktemp -d /tmp/fg-port-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

run() { # port profile -> $T/out, $T/rc
	cat >"$T/fanogate.ini" <<EOF
[dataplane]
profile = $2
port = $1
[tls]
listen = 127.0.0.1:0
[metrics]
listen = 127.0.0.1:0
[operator]
socket = $T/fanoctl.sock
[audit]
path = $T/audit.log
EOF
	: >"$T/out"
	local st
	st=$(stat -c '%d:%i' "$T/out")
	JOURNAL_STREAM=$st timeout 60 "$GATE" --config "$T/fanogate.ini" >>"$T/out" 2>&1
	echo $? >"$T/rc"
}

PORT=fgno$$
run "$PORT" af_xdp
[ "$(cat "$T/rc")" = 1 ] && ok "a missing port: exit 1" || bad "a missing port: exit $(cat "$T/rc")"
grep -q "^<3>dataplane: \[dataplane\] port = $PORT: no such network interface; check ip link show" "$T/out" &&
	ok "the error names the port and what to check, at error" || bad "no port error line: $(cat "$T/out")"
grep -q "^<3>dataplane: init failed: No such device (\[dataplane\] profile af_xdp, port $PORT;" "$T/out" &&
	ok "the daemon's last word names profile and port" || bad "no final line naming the port: $(cat "$T/out")"
grep -q "EAL: " "$T/out" && bad "the EAL started for a port that does not exist" || ok "stopped before the EAL"

run 0000:ff:1f.7 af_xdp
grep -q "port = 0000:ff:1f.7: no such PCI device" "$T/out" && ok "a PCI address that is not on this host" ||
	bad "no PCI error line: $(cat "$T/out")"

run lo ring
grep -q "^<3>dataplane: \[dataplane\] port = lo: profile .*ring.ini does not drive a NIC by name" "$T/out" &&
	ok "a port the profile would ignore is refused" || bad "ring with a port: $(cat "$T/out")"

echo "$(( 6 - fails )) passed, $fails failed"
[ $fails -eq 0 ]
