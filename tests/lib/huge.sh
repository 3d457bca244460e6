# tests/lib/huge.sh - 2 MiB hugepages for one run, sourced after netns.sh
# (fg_wait_until): the pages a run adds to the pool are the pages it gives
# back, exactly (another run, or the host, may hold pages too).
# Used by scripts/demo.sh, scripts/bench.sh, tests/dataplane/run_veth.sh
# and bench/dp/run.sh.
FG_HP=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
HUGE=off HUGE_ADDED=0 HUGE_MOUNT=

# fg_huge_reserve N [DIR]: add N pages to the pool. HUGE=on when all N
# came and, with DIR, a hugetlbfs is mounted (one is mounted at DIR when
# none is: a run given DIR needs a mount DPDK finds; one without DIR
# mounts its own private one). Otherwise what came is given back and
# HUGE=off. HUGE_ADDED: the pages this run holds; HUGE_MOUNT: what it
# mounted. Returns 0 when HUGE=on.
fg_huge_reserve() {
	local want=$1 dir=${2:-} before
	HUGE=off HUGE_ADDED=0
	[ -w "$FG_HP" ] || return 1
	before=$(cat "$FG_HP")
	echo $((before + want)) >"$FG_HP" 2>/dev/null
	HUGE_ADDED=$(($(cat "$FG_HP") - before))
	[ "$HUGE_ADDED" -lt 0 ] && HUGE_ADDED=0
	if [ "$HUGE_ADDED" -ge "$want" ]; then
		HUGE=on
		if [ -n "$dir" ] && ! grep -q ' hugetlbfs ' /proc/mounts; then
			if mkdir -p "$dir" && mount -t hugetlbfs nodev "$dir"; then
				HUGE_MOUNT=$dir
			else
				HUGE=off
			fi
		fi
	fi
	[ "$HUGE" = on ] || fg_huge_release
	[ "$HUGE" = on ]
}

# fg_huge_release: unmount what fg_huge_reserve mounted and give back the
# pages it added, retried for up to 2 s while a stopped dataplane's pages
# are being released. Returns 1 when the pool did not shrink.
fg_huge_release() {
	if [ -n "$HUGE_MOUNT" ]; then
		umount "$HUGE_MOUNT" 2>/dev/null
		HUGE_MOUNT=
	fi
	[ "$HUGE_ADDED" -gt 0 ] || return 0
	local t=$(($(cat "$FG_HP") - HUGE_ADDED))
	[ $t -lt 0 ] && t=0
	fg_wait_until 2 eval "echo $t > $FG_HP 2>/dev/null; [ \"\$(cat $FG_HP)\" -le $t ]" || return 1
	HUGE_ADDED=0
}
