# tests/lib/proc.sh - process helpers shared by the namespace tests that
# start fanogate or fanogate-dp (tests/dataplane/run_*.sh, tests/faults/*.sh).
# Source it: . "$(dirname "$0")/../lib/proc.sh"

# alive PID: the process exists and is not a zombie.
alive() { [ -r /proc/$1/stat ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null; }

# stop_pid PID: TERM, wait up to 5 s, then KILL; returns its exit status.
stop_pid() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 50); do alive "$1" || break; sleep 0.1; done # poll for the exit, 5 s at most
	alive "$1" && kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# dp_env_failure LOG: true when a daemon that did not start says why in a
# way that means "this machine cannot run the dataplane here" (a skip), not
# a bug (a failure). The log always shows the EAL command line, so "EAL"
# alone proves nothing.
dp_env_failure() {
	grep -qiE "EAL: (Error|Cannot|FATAL)|EAL init failed|no port was probed|rte_eal_init|No such device|ermission denied|Operation not permitted" "$1"
}

# fg_daemon_start OUT ERR CMD...: start fanogate (CMD and its options) in
# the background with --ready-fd and wait for its readiness line (no sleep,
# no log grep): sets FG_PID, FG_TLS_PORT, FG_METRICS_PORT (the bound ports:
# listeners on port 0 report theirs). Returns 0 when ready, 1 when the
# daemon exited (or closed the fd) first, or nothing came within 120 s.
# stdout goes to OUT, stderr to ERR (the same file is fine).
fg_daemon_start() {
	_out=$1 _err=$2
	shift 2
	_fifo=$(mktemp -u /tmp/fgready-XXXXXX)
	mkfifo "$_fifo" || return 1
	if [ "$_out" = "$_err" ]; then
		"$@" --ready-fd 3 3>"$_fifo" >"$_out" 2>&1 &
	else
		"$@" --ready-fd 3 3>"$_fifo" >"$_out" 2>"$_err" &
	fi
	FG_PID=$!
	# the open of the FIFO's read end lets the daemon's side open; head
	# returns at the line or at EOF (the daemon closed it or exited)
	_line=$(timeout 120 head -n 1 "$_fifo")
	rm -f "$_fifo"
	FG_TLS_PORT=$(printf '%s\n' "$_line" | sed -n 's/.* tls=\([0-9]*\).*/\1/p')
	FG_METRICS_PORT=$(printf '%s\n' "$_line" | sed -n 's/.* metrics=\([0-9]*\).*/\1/p')
	case $_line in READY=1*) return 0 ;; esac
	return 1
}
