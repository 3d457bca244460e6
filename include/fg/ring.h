/* ring.h - single-producer single-consumer ring of fixed-size messages.
 *
 * The hand-off between shard owners and the one boundary between the control
 * plane and the dataplane use it. Pure C11 atomics, no DPDK. Exactly one
 * thread pushes and exactly one thread pops.
 *
 * Memory ordering: the producer writes the element, then publishes `head`
 * with a release store; the consumer reads `head` with an acquire load, so it
 * sees the element's bytes; symmetric for `tail`, so the producer never
 * overwrites an element the consumer is still copying out. A reservation
 * (fg_ring_reserve, then fg_ring_commit) is a push whose element the
 * producer writes in place: the consumer sees it only from the commit's
 * release store. */
#ifndef FG_RING_H
#define FG_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg/common.h"

struct fg_ring {
	alignas(FG_CACHE_LINE) _Atomic uint32_t head; /* written by the producer */
	alignas(FG_CACHE_LINE) _Atomic uint32_t tail; /* written by the consumer */
	alignas(FG_CACHE_LINE) uint32_t mask;
	uint32_t elt_size;
	alignas(FG_CACHE_LINE) uint8_t data[];
};

/* Bytes for a ring of count (a power of two) elements of elt_size bytes. */
static inline size_t fg_ring_mem_size(uint32_t count, uint32_t elt_size)
{
	return sizeof(struct fg_ring) + (size_t)count * elt_size;
}

/* Returns 0 or -22 (EINVAL) when count is not a power of two >= 2. */
static inline int fg_ring_init(struct fg_ring *r, uint32_t count, uint32_t elt_size)
{
	if (count < 2 || (count & (count - 1)) || elt_size == 0)
		return -22;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	r->mask = count - 1;
	r->elt_size = elt_size;
	return 0;
}

/* Producer only. False when full (the caller counts and decides). */
static inline bool fg_ring_push(struct fg_ring *r, const void *elt)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (h - t > r->mask)
		return false;
	memcpy(r->data + (size_t)(h & r->mask) * r->elt_size, elt, r->elt_size);
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
	return true;
}

/* Producer only: the element at head, to be written in place and then
 * published by fg_ring_commit; NULL when full (the caller counts and
 * decides). Until the commit the consumer does not see it, and a second
 * reserve returns the same element. */
static inline void *fg_ring_reserve(struct fg_ring *r)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (h - t > r->mask)
		return NULL;
	return r->data + (size_t)(h & r->mask) * r->elt_size;
}

/* Producer only, after fg_ring_reserve returned an element: publish it. */
static inline void fg_ring_commit(struct fg_ring *r)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/* Consumer only. False when empty. */
static inline bool fg_ring_pop(struct fg_ring *r, void *elt)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	if (h == t)
		return false;
	memcpy(elt, r->data + (size_t)(t & r->mask) * r->elt_size, r->elt_size);
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return true;
}

/* Either side: elements currently queued (a snapshot). */
static inline uint32_t fg_ring_count(struct fg_ring *r)
{
	return atomic_load_explicit(&r->head, memory_order_acquire) -
	       atomic_load_explicit(&r->tail, memory_order_acquire);
}

#endif
