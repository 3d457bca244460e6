# bench/cap/profile.sh - sourced by run.sh and callgrind.sh (POSIX sh): the
# drivers-config profile fanogate-dp runs with in bench/cap, per memif mode.
#
# cap_dp_profile FILE MODE MEMIF_ARGS HUGEPAGES: write the profile to FILE.
#   MODE copy: fanogate-dp is the memif server (its PMD copies every packet
#     into and out of the shared memory);
#   MODE zero-copy: fanogate-dp is the memif client with zero-copy=yes, which
#     DPDK 22.11 refuses without EAL --single-file-segments (the PMD hands the
#     peer its memseg list's file). Its mbufs are then the ring's buffers: up
#     to rsize (2048) sit in the RX ring waiting for the server and up to 2048
#     sent ones until the server has read them, so the pool is sized for both
#     rings (the computed default is ~4.8 k mbufs).
#   MEMIF_ARGS: the vdev arguments after the role (id, socket, bsize, rsize);
#   HUGEPAGES: the [eal] hugepages value (auto, on, off or ${FG_HUGEPAGES:-auto}).
cap_dp_profile() {
	_role=server _eal="" _port="" _zc=""
	if [ "$2" = zero-copy ]; then
		_role=client _eal="args = --single-file-segments" _port="mbufs = 16384" _zc=",zero-copy=yes"
	fi
	cat > "$1" <<EOP
[profile]
name = cap-$2
description = bench/cap: fanogate-dp as memif $_role for cap_gen ($2)
[eal]
hugepages = $4
log_level = *:notice
$_eal
[port]
vdev = net_memif0,role=$_role,$3$_zc
rx_desc = 1024
tx_desc = 1024
rss = off
${FG_CAP_DELIVERY_BY_REF:+delivery_by_ref = $FG_CAP_DELIVERY_BY_REF}
$_port
[net]
ip4 = 198.18.0.1
arp_reply = on
[poll]
idle_sleep_us = 0
EOP
}
