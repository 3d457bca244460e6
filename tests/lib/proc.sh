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

# proc_dump PID: what a process that does not exit is doing, on stdout
# (the test's log): each thread's name, state and kernel wait channel, and
# every thread's stack when gdb is installed; then the same for each of
# its children (a `timeout` wrapper's command).
proc_dump() {
	local t c
	echo "--- process $1: $(tr '\0' ' ' </proc/$1/cmdline 2>/dev/null)"
	for t in /proc/$1/task/*; do
		[ -d "$t" ] || continue
		echo "  thread ${t##*/} $(cat $t/comm 2>/dev/null) state=$(awk '{print $3}' $t/stat 2>/dev/null) wchan=$(cat $t/wchan 2>/dev/null)"
	done
	command -v gdb >/dev/null &&
		timeout 60 gdb -p "$1" -batch -nx -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread|#)' | head -200
	for c in $(pgrep -P "$1" 2>/dev/null); do proc_dump "$c"; done
	return 0
}

# wait_exit PID SECS: wait (polling) up to SECS for PID to exit; when it
# has not, print proc_dump and return 124 (PID is left running).
wait_exit() {
	local n=$(($2 * 20))
	while alive "$1"; do
		if [ $n -le 0 ]; then
			proc_dump "$1"
			return 124
		fi
		n=$((n - 1))
		sleep 0.05 # the poll interval, not a wait for readiness
	done
	return 0
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
