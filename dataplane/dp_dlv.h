/* dp_dlv.h - reliable delivery of resolved seeds to UDP consumers: the
 * table of deliveries one lcore sent and the consumer has not ACKed yet,
 * pure C (no DPDK, no I/O).
 *
 * Owns: per lcore, a bounded set of pending deliveries keyed by
 * (stream_id, sequence) = (resolved band + layer, token_seq), the same pair
 * the consumer's ACK entries name (wire.md 2.1 and 3.3), each with the slot
 * that still holds the resolved body (no copy: a resend re-encodes the seed
 * from its slot), the number of resends and when the next one is due.
 * Resend policy mirrors the fleet's sender: a frame unACKed after retry_ns
 * is sent again (under a new frame_id, by the caller), at most `retries`
 * times, then given up.
 *
 * Ledger (the "no silent loss" rule, checked by the tests): every tracked
 * delivery leaves the table exactly once, by an ACK (dp_dlv_ack), by
 * dp_dlv_drop (resends exhausted, or its slot no longer holds the seed), by
 * eviction when the table is full (the oldest entry, reported to the
 * caller), or by being superseded by a new delivery of the same key. So
 *   tracked == acked + dropped + evicted + superseded + n (pending).
 * A consumer that never ACKs therefore holds at most `capacity` entries for
 * at most (retries + 1) * retry_ns each: no slot is pinned (the slot table
 * reclaims slots as usual; a resend finds out and gives up) and no memory
 * grows after init.
 *
 * Structure: entries[capacity] on a doubly linked list in due order (every
 * (re)arm puts the entry at the tail with due = now + retry_ns, so the list
 * stays sorted without a heap), free entries on a singly linked free list,
 * and an open-addressing index (linear probing, backward-shift deletion,
 * 2 * capacity rounded up to a power of two buckets) from key to entry.
 *
 * Who may call: the owning lcore only (single writer, nothing atomic).
 * No allocation after init. */
#ifndef DP_DLV_H
#define DP_DLV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"

#define DP_DLV_NONE 0xFFFFFFFFu
#define DP_DLV_MAX (1u << 20)
/* Seqs of one consumer ACK frame that may match nothing pending before the
 * rest of the frame is ignored: bounds the lookups one datagram costs (a
 * 104-entry frame names 6,656 seqs). A consumer ACKs what it received, so
 * misses are duplicates: 128 is generous. */
#define DP_DLV_ACK_MISS_MAX 128u

struct dp_dlv_cfg {
	uint32_t capacity; /* pending deliveries, 1..DP_DLV_MAX */
	uint64_t retry_ns; /* resend an unACKed delivery after this long, > 0 */
	uint32_t retries;  /* resends before giving up, 0..255 */
};

struct dp_dlv_entry {
	uint32_t token_seq;
	uint16_t stream;
	uint16_t layer;
	uint32_t slot;        /* slot index in the owner's table at resolution */
	uint64_t fingerprint; /* of the resolved seed: a resend checks the slot still holds it */
	uint64_t due_ns;      /* next resend (or give-up) time */
	uint8_t tries;        /* resends so far */
	bool used;
	uint32_t prev, next;  /* due list, or free list (next only) */
};

struct dp_dlv {
	struct dp_dlv_cfg cfg;
	struct dp_dlv_entry *e; /* [cfg.capacity] */
	uint32_t *idx;          /* [mask + 1] entry index or DP_DLV_NONE */
	uint32_t mask;
	uint32_t head, tail;    /* due list: oldest due first */
	uint32_t free_head;
	uint32_t n;             /* pending */
};

/* What dp_dlv_track did besides tracking the new delivery. */
enum dp_dlv_track_result {
	DP_DLV_NEW = 0,        /* tracked; nothing else happened */
	DP_DLV_SUPERSEDED,     /* the same key was pending: its entry now tracks the new delivery */
	DP_DLV_EVICTED,        /* the table was full: the oldest entry (*evicted) was dropped to make room */
};

/* Bytes of memory for a table of capacity entries (64-byte aligned pieces). */
size_t dp_dlv_mem_size(uint32_t capacity);
/* Lay a table out in mem[0..len). 0, -EINVAL (bad cfg, mem not 64-byte
 * aligned) or -ENOSPC (len too small). */
FG_MUST_CHECK int dp_dlv_init(struct dp_dlv *d, void *mem, size_t len, const struct dp_dlv_cfg *cfg);

/* Track a delivery just sent (tries 0, due now + retry_ns). When the table
 * is full, the entry due first is evicted and copied to *evicted (which may
 * be NULL). Returns a dp_dlv_track_result. */
enum dp_dlv_track_result dp_dlv_track(struct dp_dlv *d, uint16_t stream, uint32_t token_seq, uint16_t layer,
				      uint32_t slot, uint64_t fingerprint, uint64_t now_ns,
				      struct dp_dlv_entry *evicted);

/* The consumer ACKed (stream, token_seq): forget it. True when it was
 * pending; false for an ACK of nothing pending (a duplicate ACK, an ACK of
 * a duplicate delivery, a late ACK after a give-up): idempotent. */
bool dp_dlv_ack(struct dp_dlv *d, uint16_t stream, uint32_t token_seq);

/* The entry due first when its time has come (due_ns <= now_ns), else
 * DP_DLV_NONE. The caller then calls dp_dlv_rearm (it resent it) or
 * dp_dlv_drop (it gave up). */
uint32_t dp_dlv_due(const struct dp_dlv *d, uint64_t now_ns);
/* Entry i was resent: tries + 1, due now + retry_ns, moved to the tail. */
void dp_dlv_rearm(struct dp_dlv *d, uint32_t i, uint64_t now_ns);
/* Entry i leaves the table without an ACK (given up). */
void dp_dlv_drop(struct dp_dlv *d, uint32_t i);
/* True when entry i has used up its resends (the caller gives up). */
static inline bool dp_dlv_exhausted(const struct dp_dlv *d, uint32_t i) { return d->e[i].tries >= d->cfg.retries; }

#endif
