#!/bin/bash
# run_veth.sh DRIVER LCORES FANOGATE_DP - test (b): the dataplane on one end
# of a veth pair (af_packet or af_xdp), a synthetic fleet (veth_fleet.py,
# kernel UDP sockets) in a network namespace on the other end.
#
# Everything it creates is named fgdp* and removed on exit (trap): the
# namespace, the veth pair, the private hugetlbfs mount (in a private mount
# namespace), and the hugepages it added are given back (tests/lib/huge.sh).
# Exit 77 with a reason when not root or when namespaces/veth are missing.
set -u
DRIVER=${1:-af_packet}
LCORES=${2:-1}
DP=${3:?usage: run_veth.sh DRIVER LCORES FANOGATE_DP}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3

. "$HERE/../lib/netns.sh"
. "$HERE/../lib/huge.sh"
fg_need_root "namespaces, veth, AF_PACKET"
fg_need_cmd ip "$PY"

fg_init fgdp-veth
NS=fgdp-t$ID
VA=fgdp${ID}a   # dataplane side (root namespace)
VB=fgdp${ID}b   # fleet side (in $NS)
fg_cleanup_extra() {
	fg_stop DPPID
	fg_huge_release
}

fg_netns "$NS"
# as many queues as poll lcores: af_xdp binds one socket per queue and must
# see them all
fg_veth_raw "$VA" "$VB" "$NS" "$LCORES"
ip -n "$NS" addr add 10.98.0.2/24 dev "$VB"
# IPv6: the dataplane answers neighbour solicitations for fd98::1 itself
ip -n "$NS" -6 addr add fd98::2/64 dev "$VB" nodad

# Hugepages when they can be reserved: 2 MiB pages, a private hugetlbfs in a
# private mount namespace, --in-memory. Otherwise --no-huge.
[ "${FG_TEST_NO_HUGE:-}" = "" ] && fg_huge_reserve 320

cat > "$TMP/fanogate.ini" <<EOC
$(fg_ini_model 1536 28 4096)
deadline_ms = 1500
[udp]
port = 4242
mtu = 1472
ack_interval_ms = 50
reasm_timeout_ms = 250
allow = 10.98.0.0/24,fd98::/64
[consumers]
default = 10.98.0.2:7000
[dataplane]
lcores = $LCORES
EOC

export FG_IFACE=$VA FG_DP_IP4=10.98.0.1 FG_DP_IP6=fd98::1 FG_IDLE_SLEEP_US=20
PROFILE=$ROOT/drivers-config/$DRIVER.ini
DPPID=""
FG_PIDVARS+=(DPPID)
start_dp() {
	rm -f "$TMP/ready"
	if [ "$HUGE" = on ]; then
		export FG_HUGEPAGES=on FG_HUGE_DIR=$TMP/huge
		mkdir -p "$FG_HUGE_DIR"
		unshare -m sh -c "mount -t hugetlbfs -o pagesize=2M fgdphuge '$FG_HUGE_DIR' && exec '$DP' --config '$TMP/fanogate.ini' --profile '$PROFILE' --duration 60 --report '$TMP/report.json' --ready-file '$TMP/ready'" 2> "$TMP/dp.log" &
	else
		export FG_HUGEPAGES=off
		"$DP" --config "$TMP/fanogate.ini" --profile "$PROFILE" --duration 60 --report "$TMP/report.json" --ready-file "$TMP/ready" 2> "$TMP/dp.log" &
	fi
	DPPID=$!
	if [ -n "${FG_TEST_PCAP:-}" ]; then
		rm -f "$FG_TEST_PCAP"
		tshark -q -i "$VA" -w "$FG_TEST_PCAP" -a duration:8 >/dev/null 2>&1 &
		fg_wait_until 10 test -s "$FG_TEST_PCAP" # capturing once it wrote the header
	fi
	fg_wait_until 15 fg_ready_files "$DPPID" "$TMP/ready"
	[ -f "$TMP/ready" ] && return 0
	fg_stop DPPID
	return 1
}
if ! start_dp && [ "$HUGE" = on ] && grep -q "Cannot allocate memory" "$TMP/dp.log"; then
	echo "note: hugepages taken by another process meanwhile; retrying with --no-huge" >&2
	HUGE=off
	start_dp
fi
if [ ! -f "$TMP/ready" ]; then
	cat "$TMP/dp.log"
	if [ "$DRIVER" = af_xdp ] && grep -qiE "xdp|bpf|umem" "$TMP/dp.log"; then
		echo "SKIP: af_xdp is not usable on this kernel/veth (see the log above)"
		exit 77
	fi
	echo "FAIL: fanogate-dp did not start"
	exit 1
fi
V6=""
[ "${FG_TEST_V6:-1}" = 1 ] && V6="--src-ip6 fd98::2"
ip netns exec "$NS" $PY "$HERE/veth_fleet.py" send --expect "$TMP/expect.json" $V6 --slots ${FG_TEST_SLOTS:-120}
RC=$?
# The check wants every incomplete slot expired (deadline_ms 1500) and its
# reassembly contexts timed out (250 ms) in the report written at exit:
# wait for the dataplane's telemetry to count them (slots_expired and
# reasm_timeout at least the incomplete slots), 15 s at most; short of
# that, the check below reports the counts.
if [ $RC = 0 ]; then
	INC=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["incomplete"])' "$TMP/expect.json")
	PYTHONPATH="$HERE/../lib" $PY -m fgtest.telemetry at-least "$DPPID" 15 "slots_expired=$INC" "reasm_timeout=$INC"
fi
fg_stop DPPID
DPRC=$?
cat "$TMP/dp.log" | grep -v "^TELEMETRY" >&2
if [ $RC != 0 ]; then
	# show the dataplane's side of the failure (outcomes, counters)
	[ -f "$TMP/expect.json" ] && $PY "$HERE/veth_fleet.py" check --expect "$TMP/expect.json" --report "$TMP/report.json"
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('outcomes', {k:v for k,v in r['outcomes'].items() if v}, 'x', {k:v for k,v in r['x'].items() if v})" "$TMP/report.json" 2>/dev/null
	echo "FAIL: fleet checks"
	exit 1
fi
[ $DPRC = 0 ] || { echo "FAIL: fanogate-dp exited $DPRC"; exit 1; }
$PY "$HERE/veth_fleet.py" check --expect "$TMP/expect.json" --report "$TMP/report.json" || exit 1
if [ "${FG_IDLE_WAKE:-on}" = on ]; then
	# [poll] idle_wake (the profiles' default): the lcore waited in ppoll()
	# and packets woke it (a wait that only timed out would still resolve
	# every seed, 1 ms later). The run's first packet finds it asleep: it
	# has been idle since it started.
	$PY - "$TMP/report.json" <<'EOP' || exit 1
import json, sys
x = json.load(open(sys.argv[1]))["x"]
w = {k: x.get(k, 0) for k in ("idle_waits", "idle_wake_rx", "idle_wake_lane", "idle_wake_timer", "inbox_wakes")}
print("idle_wake:", w)
if w["idle_waits"] == 0 or w["idle_wake_rx"] == 0:
    sys.exit("FAIL: [poll] idle_wake on, but the lcore never waited or no packet woke it")
EOP
fi
echo "hugepages: $HUGE"
exit 0
