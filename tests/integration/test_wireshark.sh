#!/usr/bin/env bash
# test_wireshark.sh - the Lua dissector decodes a capture this test makes
# (UDP fragmented and raw profiles, an ACK, status frames, a WebSocket
# message) and names bands, lines, orientation, token and layer correctly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
command -v tshark >/dev/null || { echo "SKIP: tshark not installed (scripts/deps.sh installs it)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
FG_TEST_DATA=${FG_TEST_DATA:-$top/tests/data} /usr/bin/python3 "$here/mkpcap.py" "$tmp/t.pcap"
tshark -X "lua_script:$top/tools/wireshark/fanogate.lua" -o aeonflow.raw_port:4300 -r "$tmp/t.pcap" \
	-T fields -E separator='|' -e frame.number -e aeonflow.band -e aeonflow.layer -e aeonflow.token \
	-e aeonflow.line -e aeonflow.triple -e aeonflow.orientation -e aeonflow.ack.base \
	-e aeonflow.status.shadow_mode -e aeonflow.status.outcome -e aeonflow.digest \
	-e aeonflow.frag.index -e aeonflow.frag.total -e aeonflow.status.bitset -e aeonflow.status.landed -e aeonflow.status.audit \
	2>/dev/null >"$tmp/out"
cat "$tmp/out"
fail=0
expect() { # frame-number expected-line
	got=$(awk -F'|' -v n="$1" '$1 == n' "$tmp/out")
	if [ "$got" != "$2" ]; then echo "FAIL frame $1: got '$got' want '$2'"; fail=1; else echo "ok frame $1"; fi
}
expect 1 '1|seed|1|42|1|(1,4,5)|+|||||0|1|||'
expect 2 '2|ack||||||100||||0|1|||'
expect 3 '3|status|1|42|1|(1,4,5)|||1|resolved||0|1|0x7f|0x02|failed'
expect 4 '4|||||||||||1|3|||'
expect 5 '5|canonical|1|42|||||||0x5e2de06ec4043aa2|||||'
expect 11 '11|seed|27|9001|6|(3,6,5)|-|||||||||'
expect 12 '12|status|1|42|1|(1,4,5)|||1|resolved||0|1|0x7f|0x02|off'
exit $fail
