# tests/lib/proc.sh - process helpers shared by the namespace tests that
# start fanogate or fanogate-dp (tests/dataplane/run_*.sh, tests/faults/*.sh).
# Source it: . "$(dirname "$0")/../lib/proc.sh"

# alive PID: the process exists and is not a zombie.
alive() { [ -r /proc/$1/stat ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null; }

# stop_pid PID: TERM, wait up to 5 s, then KILL; returns its exit status.
stop_pid() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 50); do alive "$1" || break; sleep 0.1; done
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
