/* boundary.c - the out-of-line pieces of include/fg/boundary.h: buffer pool
 * layout and initialisation, the stable names of the dataplane counters and
 * of the boundary message kinds.
 *
 * Who may call: fg_pool_mem_size / fg_pool_init from the thread that sets the
 * lanes up, before the producer and consumer threads start;
 * fg_dp_counter_name and fg_bm_kind_name from any thread. */
#include "fg/boundary.h"

#include <errno.h>

/* Pool layout in the caller's memory (64-byte aligned):
 *   [ free-list ring: fg_ring + ring_count * 4 bytes ][ pad to 64 ][ n * size bytes ]
 * ring_count is the smallest power of two >= n (and >= 2): the ring must hold
 * every index at once, which happens right after fg_pool_init. */
static uint32_t ring_count(uint32_t n)
{
	uint32_t c = 2;

	while (c < n)
		c <<= 1;
	return c;
}

static size_t align64(size_t x) { return (x + FG_CACHE_LINE - 1) & ~(size_t)(FG_CACHE_LINE - 1); }

/* n above 2^31 would make ring_count overflow; no lane needs that many */
#define POOL_N_MAX (1u << 31)

size_t fg_pool_mem_size(uint32_t n, uint32_t size)
{
	if (n == 0 || size == 0 || n > POOL_N_MAX)
		return 0;
	return align64(fg_ring_mem_size(ring_count(n), sizeof(uint32_t))) + align64((size_t)n * size);
}

int fg_pool_init(struct fg_pool *p, void *mem, uint32_t n, uint32_t size)
{
	if (!mem || n == 0 || size == 0 || n > POOL_N_MAX || ((uintptr_t)mem & (FG_CACHE_LINE - 1)))
		return -EINVAL;
	struct fg_ring *r = mem;
	uint32_t count = ring_count(n);
	if (fg_ring_init(r, count, sizeof(uint32_t)) < 0)
		return -EINVAL;
	p->free = r;
	p->bufs = (uint8_t *)mem + align64(fg_ring_mem_size(count, sizeof(uint32_t)));
	p->n = n;
	p->size = size;
	for (uint32_t i = 0; i < n; i++)
		if (!fg_ring_push(r, &i))
			return -EINVAL; /* cannot happen: count >= n */
	return 0;
}

static const char *const counter_names[FG_C__COUNT] = {
	[FG_C_RX_PKTS] = "rx_pkts",
	[FG_C_RX_BYTES] = "rx_bytes",
	[FG_C_TX_PKTS] = "tx_pkts",
	[FG_C_TX_BYTES] = "tx_bytes",
	[FG_C_DROP_MALFORMED] = "drop_malformed",
	[FG_C_DROP_NOT_ALLOWED] = "drop_not_allowed",
	[FG_C_DROP_UNKNOWN_STREAM] = "drop_unknown_stream",
	[FG_C_DROP_LATE] = "drop_late",
	[FG_C_DROP_DUPLICATE] = "drop_duplicate",
	[FG_C_DROP_CONFLICT] = "drop_conflict",
	[FG_C_DROP_NO_SLOT] = "drop_no_slot",
	[FG_C_DROP_REASM_OVERFLOW] = "drop_reasm_overflow",
	[FG_C_DROP_TX_FULL] = "drop_tx_full",
	[FG_C_DROP_NOT_UDP] = "drop_not_udp",
	[FG_C_DROP_BAD_PORT] = "drop_bad_port",
	[FG_C_DROP_EXPIRED] = "drop_expired",
	[FG_C_DROP_STALE] = "drop_stale",
	[FG_C_DROP_LANE_FULL] = "drop_lane_full",
	[FG_C_FRAGS] = "frags",
	[FG_C_FRAMES] = "frames",
	[FG_C_CONTRIB_ACCEPTED] = "contrib_accepted",
	[FG_C_SEEDS_RESOLVED] = "seeds_resolved",
	[FG_C_SLOTS_EXPIRED] = "slots_expired",
	[FG_C_ACKS_SENT] = "acks_sent",
	[FG_C_STATUS_SENT] = "status_sent",
	[FG_C_SEEDS_SENT] = "seeds_sent",
	[FG_C_CANONICAL] = "canonical",
	[FG_C_REASM_TIMEOUT] = "reasm_timeout",
	[FG_C_SLOTS_FLUSHED] = "slots_flushed",
	[FG_C_DELIVERY_ACKED] = "delivery_acked",
	[FG_C_DELIVERY_RESENT] = "delivery_resent",
	[FG_C_DELIVERY_GIVEN_UP] = "delivery_given_up",
	[FG_C_DELIVERY_ACK_UNMATCHED] = "delivery_ack_unmatched",
};

const char *fg_dp_counter_name(enum fg_dp_counter c)
{
	if ((unsigned)c >= FG_C__COUNT || !counter_names[c])
		return "unknown";
	return counter_names[c];
}

static const char *const kind_names[FG_BM__COUNT] = {
	[FG_BM_CONTRIB] = "contrib",
	[FG_BM_FLUSH] = "flush",
	[FG_BM_OUTCOME] = "outcome",
	[FG_BM_RESOLVED] = "resolved",
	[FG_BM_CANONICAL] = "canonical",
	[FG_BM_CONFLICT] = "conflict",
	[FG_BM_EXPIRED] = "expired",
	[FG_BM_PEER] = "peer",
};

const char *fg_bm_kind_name(unsigned kind)
{
	if (kind >= FG_BM__COUNT || !kind_names[kind])
		return "unknown";
	return kind_names[kind];
}
