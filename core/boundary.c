/* boundary.c - the out-of-line pieces of include/fg/boundary.h: buffer pool
 * layout and initialisation, the stable names of the dataplane counters and
 * of the boundary message kinds.
 *
 * Who may call: fg_pool_mem_size / fg_pool_init from the thread that sets the
 * lanes up, before the producer and consumer threads start;
 * fg_dp_counter_name and fg_bm_kind_name from any thread. */
#include "fg/boundary.h"
#include "fg/counters.h"

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

const char *fg_dp_counter_name(enum fg_dp_counter c)
{
	/* the registry (fg/counters.h) declares every counter once */
	if ((unsigned)c >= FG_C__COUNT || !fg_dp_counter_defs[c].name)
		return "unknown";
	return fg_dp_counter_defs[c].name;
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
