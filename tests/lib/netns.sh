# tests/lib/netns.sh - the harness the namespace shell tests share: skip
# checks, one temp dir, background processes stopped on exit, a network
# namespace with a veth pair into it, fanogate / fanogate-dp started and
# waited for (no fixed sleep), bounded polls of a condition.
# Callers: tests/*/run_*.sh, tests/faults/*.sh, tests/hostile/run_*.sh,
# tests/audit/e2e_shadow.sh, scripts/demo.sh, scripts/bench.sh.
# Source it after `set -u` (bash): . "$ROOT/tests/lib/netns.sh"
# Everything it creates is removed by the EXIT trap fg_init installs; a
# script with more to undo defines fg_cleanup_extra (run first).

. "${BASH_SOURCE[0]%/*}/proc.sh" # alive, stop_pid, dp_env_failure, fg_daemon_start

FG_PIDVARS=() FG_NETNS_LIST=() FG_LINKS=() TMP=${TMP:-}
FG_ROOT=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd) # the source tree

# fg_need_root WHAT: exit 77 (skip) unless root.
fg_need_root() { [ "$(id -u)" = 0 ] || { echo "SKIP: needs root ($1)"; exit 77; }; }
# fg_need_cmd CMD...: exit 77 when a command is missing.
fg_need_cmd() { local c; for c; do command -v "$c" >/dev/null || { echo "SKIP: $c missing"; exit 77; }; done; }
# fg_need_exec FILE...: exit 77 when a binary was not built.
fg_need_exec() { local b; for b; do [ -n "$b" ] && [ -x "$b" ] || { echo "SKIP: '$b' not built"; exit 77; }; done; }

# fg_wait_until SECONDS CMD...: run CMD every 50 ms until it succeeds
# (returns 0) or SECONDS pass (returns 1). The poll of a condition with a
# deadline: what a test waits on is CMD, never the time.
fg_wait_until() {
	local n=$(($1 * 20))
	shift
	while [ $n -gt 0 ]; do
		"$@" && return 0
		n=$((n - 1))
		sleep 0.05 # the poll interval, not a wait for readiness (CMD is)
	done
	"$@"
}

# fg_ready_files PID FILE...: true when every FILE exists, or PID (when not
# empty) has exited (the caller then checks the files again).
fg_ready_files() {
	local pid=$1 f
	shift
	[ -n "$pid" ] && ! alive "$pid" && return 0
	for f; do [ -e "$f" ] || return 1; done
}

# fg_init PREFIX: ID (this shell's pid), TMP (a fresh /tmp/PREFIX-XXXXXX)
# and the EXIT/INT/TERM traps that undo everything registered below.
fg_init() {
	ID=$$
	TMP=$(mktemp -d "/tmp/$1-XXXXXX")
	trap fg_cleanup EXIT
	trap 'exit 130' INT TERM
}

fg_cleanup() {
	local v i
	declare -F fg_cleanup_extra >/dev/null && fg_cleanup_extra
	for ((i = ${#FG_PIDVARS[@]} - 1; i >= 0; i--)); do
		v=${FG_PIDVARS[i]}
		stop_pid "${!v:-}"
	done
	for v in "${FG_NETNS_LIST[@]}"; do ip netns del "$v" 2>/dev/null; done
	for v in "${FG_LINKS[@]}"; do ip link del "$v" 2>/dev/null; done
	if [ -n "$TMP" ]; then
		[ -n "${FG_KEEP_TMP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
	fi
}

# fg_bg VAR CMD...: run CMD in the background, its pid in $VAR; stopped on
# exit unless fg_stop VAR ran first.
fg_bg() {
	local v=$1
	shift
	"$@" &
	printf -v "$v" %s $!
	FG_PIDVARS+=("$v")
}

# fg_stop VAR: stop the process in $VAR (TERM, then KILL after 5 s), clear
# VAR; returns its exit status.
fg_stop() {
	local v=$1 rc
	stop_pid "${!v:-}"
	rc=$?
	printf -v "$v" %s ""
	return $rc
}

# fg_netns NS: create network namespace NS (lo up) or exit 77.
fg_netns() {
	ip netns add "$1" 2>/dev/null || { echo "SKIP: cannot create a network namespace"; exit 77; }
	FG_NETNS_LIST+=("$1")
	ip -n "$1" link set lo up
}

# fg_veth VA VB NS [QUEUES]: a veth pair, VA up in the root namespace (IPv6
# off: no router solicitations in the captures), VB up in NS, both with
# QUEUES queue pairs (1); VB's TX checksum offload off so captures show
# final checksums. Exit 77 when veths cannot be made here.
fg_veth() {
	local q=${4:-1}
	ip link add "$1" numtxqueues "$q" numrxqueues "$q" type veth peer name "$2" \
		numtxqueues "$q" numrxqueues "$q" 2>/dev/null || { echo "SKIP: cannot create a veth pair"; exit 77; }
	FG_LINKS+=("$1")
	ip link set "$2" netns "$3"
	ip link set "$1" up
	sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1" 2>/dev/null
	ip -n "$3" link set "$2" up
	command -v ethtool >/dev/null && ip netns exec "$3" ethtool -K "$2" tx off >/dev/null 2>&1
	return 0
}

# fg_dp_started PID READYFILE LOG NAME: after a dataplane start, its verdict:
# returns when READYFILE exists; otherwise shows LOG and exits 77 when the
# log says this machine cannot run the port (dp_env_failure), 1 if not.
fg_dp_started() {
	fg_wait_until 30 fg_ready_files "$1" "$2"
	[ -e "$2" ] && alive "$1" && return 0
	tail -20 "$3"
	stop_pid "$1"
	if dp_env_failure "$3"; then
		echo "SKIP: $4 cannot run its af_packet port here (log above)"
		exit 77
	fi
	echo "FAIL: $4 did not start"
	exit 1
}

# fg_dp_start VAR CMD...: start fanogate-dp (CMD with its options; a
# --ready-file in $TMP is added), stdout to $TMP/dp.out, stderr to
# $TMP/dp.log; waits until it is ready (or exits 77/1, fg_dp_started).
fg_dp_start() {
	local v=$1
	shift
	rm -f "$TMP/dp.ready"
	fg_bg "$v" "$@" --ready-file "$TMP/dp.ready" > "$TMP/dp.out" 2> "$TMP/dp.log"
	fg_dp_started "${!v}" "$TMP/dp.ready" "$TMP/dp.log" "$(basename "$1")"
}

# fg_gate_start VAR LOG CMD...: start fanogate (CMD with its options) with
# --ready-fd (fg_daemon_start: FG_TLS_PORT, FG_METRICS_PORT set from its
# readiness line), output to LOG; exits 77 when its dataplane cannot run
# here, 1 when it did not become ready.
fg_gate_start() {
	local v=$1 log=$2
	shift 2
	if fg_daemon_start "$log" "$log" "$@"; then
		printf -v "$v" %s "$FG_PID"
		FG_PIDVARS+=("$v")
		return 0
	fi
	tail -20 "$log"
	stop_pid "$FG_PID"
	if dp_env_failure "$log"; then
		echo "SKIP: $(basename "$1") cannot run its af_packet dataplane here (log above)"
		exit 77
	fi
	echo "FAIL: $(basename "$1") did not start"
	exit 1
}

# fg_selfsigned DIR [SAN]: an EC P-256 certificate valid one day for
# CN=fanogate.test in DIR/cert.pem, DIR/key.pem (exit 1 on failure).
fg_selfsigned() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=fanogate.test \
		-addext "subjectAltName=DNS:${2:-fanogate.test}" -keyout "$1/key.pem" -out "$1/cert.pem" 2>/dev/null ||
		{ echo "FAIL: openssl req"; exit 1; }
}

# fg_veth_raw VA VB NS [QUEUES]: fg_veth for the dataplane tests that send
# full-size IPv6 fragments: MTU 1600 on both ends (a 1472-byte fragment is
# 1520 bytes; at 1500 the kernel would fragment at L3, which the dataplane
# refuses, docs/dataplane.md), and no segmentation/coalescing offloads
# (af_packet would see a coalesced or unsegmented super-packet truncated
# to its ring frame).
fg_veth_raw() {
	fg_veth "$@"
	ip link set "$1" mtu 1600
	ip -n "$3" link set "$2" mtu 1600
	if command -v ethtool >/dev/null; then
		ethtool -K "$1" gro off gso off tso off tx-udp-segmentation off >/dev/null 2>&1
		ip netns exec "$3" ethtool -K "$2" gro off gso off tso off tx-udp-segmentation off >/dev/null 2>&1
	fi
	return 0
}

# fg_private_net "$@": re-run this script (with its arguments) in a network
# namespace of its own (unshare --net as root, a user namespace otherwise),
# loopback up: fixed loopback ports there cannot collide with tests run in
# parallel, so no port is picked by bind-and-close. Call it first, before
# anything is started; inside the namespace it returns. Exit 77 when this
# machine cannot make one.
fg_private_net() {
	if [ -n "${FG_PRIVATE_NET:-}" ]; then
		ip link set lo up || { echo "SKIP: cannot bring lo up in the private namespace"; exit 77; }
		return 0
	fi
	local u=(-rn)
	[ "$(id -u)" = 0 ] && u=(--net)
	unshare "${u[@]}" true 2>/dev/null || { echo "SKIP: cannot create a network namespace (unshare ${u[*]})"; exit 77; }
	FG_PRIVATE_NET=1 exec unshare "${u[@]}" -- "$0" "$@"
}

# fg_ini_model HIDDEN LAYERS CAPACITY [RULE]: the model sections of a
# test's fanogate.ini, on stdout: [model] HIDDEN x LAYERS, [rules] default
# RULE (1,3,5: Pair X), [slots] capacity CAPACITY; the caller's [slots]
# keys follow directly.
fg_ini_model() {
	printf '[model]\nhidden = %s\nlayers = %s\n[rules]\ndefault = %s\n[slots]\ncapacity = %s\n' "$1" "$2" "${4:-1,3,5}" "$3"
}

# fg_ini_udp ALLOW [ACK_MS]: the [udp] section of a test's fanogate.ini,
# on stdout: port 4242, mtu 1472, ack_interval_ms ACK_MS (20), sources
# from ALLOW (a prefix list); the caller's [udp] keys follow directly.
fg_ini_udp() {
	printf '[udp]\nport = 4242\nmtu = 1472\nack_interval_ms = %s\nallow = %s\n' "${2:-20}" "$1"
}

# fg_ini_af_packet [LCORES]: the [dataplane] section for the af_packet
# profile (drivers-config/af_packet.ini), on stdout: LCORES lcores (1); the
# caller's [dataplane] keys follow directly.
fg_ini_af_packet() {
	printf '[dataplane]\nlcores = %s\nprofile = %s/drivers-config/af_packet.ini\n' "${1:-1}" "$FG_ROOT"
}

# fg_verdict FAILS LOG: the end of a script that is one test: with FAILS
# not 0, LOG's last 30 lines (telemetry left out) and "0 passed, 1
# failed", exit 1; else "1 passed, 0 failed", exit 0.
fg_verdict() {
	if [ "$1" != 0 ]; then
		echo "---- ${2##*/}"; grep -v "^TELEMETRY" "$2" | tail -30
		echo "0 passed, 1 failed"
		exit 1
	fi
	echo "1 passed, 0 failed"
	exit 0
}

# fg_ini_daemon DIR LISTEN [METRICS] [TOKENS]: the daemon's sections of a
# test's fanogate.ini, on stdout: [tls] on LISTEN (port 0: reported on the
# ready fd) with DIR/cert.pem and key.pem (fg_selfsigned) and DIR/tokens
# when TOKENS is "tokens", [audit] DIR/audit.log, [operator] DIR/op.sock,
# [metrics] METRICS (off). A test adds keys with a later [section] line.
fg_ini_daemon() {
	printf '[tls]\nlisten = %s\ncert = %s/cert.pem\nkey = %s/key.pem\n' "$2" "$1" "$1"
	[ "${4:-}" = tokens ] && printf 'tokens_file = %s/tokens\n' "$1"
	printf '[audit]\npath = %s/audit.log\n[operator]\nsocket = %s/op.sock\n[metrics]\nlisten = %s\n' \
		"$1" "$1" "${3:-off}"
}
